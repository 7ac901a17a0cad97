"""HBM parameter sets: organisation, timing and address mapping of the memory model.

A preset is the single source of the numbers both memory models use (the Amaranth RTL model
``hw/hbm_model/hbm.py`` and the Python reference ``hw/hbm_model/reference.py``); the meaning of
every field is the table of ``docs/hbm_model.md`` §1. Timings are in memory clock cycles (tCK);
:meth:`HbmPreset.unit_timing` converts them to cycles of the access unit's clock.

Sources (read from the simulators' configuration files; see ``../shared/data/hbm_parameters.md``):

* ``HBM2``: DRAMSim3 ``configs/HBM2_8Gb_x128.ini`` at commit 29817593 (legacy mode, 8 channels of
  128 bits, BL4, 2.0 Gb/s per pin). Where Ramulator 2.1's ``HBM2`` disagrees (tCCD_L, tRRD_L, tFAW,
  tWL, pseudo-channels) DRAMSim3 is followed, because the issue asks this model to land near
  DRAMSim3's HBM2 on the same traces.
* ``HBM3``: Ramulator 2.1 (commit c5b1c3a4) ``HBM3`` device with the ``HBM3_16Gb_8hi`` organisation
  and ``HBM3_6400Mbps`` timing; its 32 pseudo-channels (16 channels x 2) are modelled as 32
  channels, and its two stack IDs (SID) are folded into the bank-group field (8 bank groups =
  2 SID x 4 bank groups).
* ``simple``: not a DRAM; the slice's fixed-latency memory (``FixedLatencyMemory``).

Queue depth (``queue_depth``, per channel) is two rows' worth of accesses (HBM2 64, HBM3 32),
not DRAMSim3's ``trans_queue_size = 32``: requests enter in order through one port, so while a
channel's queue is full the port blocks every other channel (head-of-line). With one row of
accesses per queue, a sequential stream (32 accesses per row and channel under ``rorabgbachco``)
reaches only ~79 % of HBM2's peak (HBM3 with 16: ~60 %), with two rows ~99 % / ~97 % (refresh
off; ``tests/hbm``). DRAMSim3 itself buffers more than its 32 transactions (per-bank command
queues of 8 behind them), and Ramulator 2.1's HBM2 configuration has a 64-entry read buffer.

What is NOT modelled here: per-bank refresh, separate RD/WR tRCD (one tRCD), tRTW other than
through tRTRS, the 2-cycle ACT of Ramulator's HBM2/HBM3 command bus, tPPD.
"""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass
from fractions import Fraction


__all__ = ["HbmTiming", "HbmPreset", "PRESETS", "get_preset", "MAPPING_FIELDS"]


#: Address-mapping tokens (DRAMSim3's ``address_mapping`` syntax) and the field each selects.
MAPPING_FIELDS = {"ro": "row", "ra": "rank", "bg": "bank_group", "ba": "bank",
                  "ch": "channel", "co": "column"}


@dataclass(frozen=True)
class HbmTiming:
    """DRAM timing parameters, in clock cycles (memory tCK, or unit cycles after conversion).

    Names follow JEDEC / DRAMSim3: ``tRCD`` ACT to RD/WR, ``tCL`` RD to first data, ``tWL`` WR to
    first data, ``tRP`` PRE to ACT, ``tRAS`` ACT to PRE, ``tRC`` ACT to ACT (same bank),
    ``tCCD_S``/``tCCD_L`` column to column (other / same bank group), ``tRRD_S``/``tRRD_L`` ACT to
    ACT (other / same bank group), ``tFAW`` window of four ACTs, ``tWR`` end of write data to PRE,
    ``tWTR_S``/``tWTR_L`` end of write data to RD (other / same bank group), ``tRTP`` RD to PRE,
    ``tBURST`` data-bus cycles of one access (``access_bytes``), ``tRTRS`` bus turnaround added
    between the end of read data and the start of write data, ``tREFI`` refresh interval,
    ``tRFC`` REF to ACT. Every field is a positive ``int`` except ``tRTRS`` (>= 0).
    """

    tRCD: int
    tCL: int
    tWL: int
    tRP: int
    tRAS: int
    tRC: int
    tCCD_S: int
    tCCD_L: int
    tRRD_S: int
    tRRD_L: int
    tFAW: int
    tWR: int
    tWTR_S: int
    tWTR_L: int
    tRTP: int
    tBURST: int
    tRTRS: int
    tREFI: int
    tRFC: int

    def __post_init__(self):
        for f in dataclasses.fields(self):
            v = getattr(self, f.name)
            least = 0 if f.name == "tRTRS" else 1
            if not isinstance(v, int) or isinstance(v, bool) or v < least:
                rule = "a non-negative integer" if least == 0 else "a positive integer"
                raise ValueError(f"{f.name} must be {rule} (cycles), not {v!r}")

    def replace(self, **changes) -> "HbmTiming":
        """A copy with ``changes`` applied (validated like the constructor)."""
        return dataclasses.replace(self, **changes)


def _is_pow2(v) -> bool:
    return isinstance(v, int) and not isinstance(v, bool) and v >= 1 and v & (v - 1) == 0


def _parse_mapping(mapping) -> list[str]:
    if not isinstance(mapping, str) or len(mapping) % 2:
        raise ValueError(f"address_mapping must be a string of two-letter fields "
                         f"(ro ra bg ba ch co), not {mapping!r}")
    tokens = [mapping[i:i + 2] for i in range(0, len(mapping), 2)]
    for t in tokens:
        if t not in MAPPING_FIELDS:
            raise ValueError(f"address_mapping {mapping!r} has an unknown field {t!r} "
                             f"(fields: ro ra bg ba ch co)")
    for t in MAPPING_FIELDS:
        n = tokens.count(t)
        if n > 1 or (n == 0 and t != "ra"):
            rule = "at most once" if t == "ra" else "exactly once"
            raise ValueError(f"address_mapping {mapping!r} must contain {t!r} {rule}, "
                             f"not {n} times")
    return tokens


@dataclass(frozen=True)
class HbmPreset:
    """One memory configuration: organisation, timing, mapping, controller sizes.

    Parameters
    ----------
    name : str
    channels : int
        Channels as modelled (HBM pseudo-channels count as channels); power of two.
    bank_groups, banks_per_group : int
        Per channel; powers of two.
    rows : int
        Rows per bank; power of two.
    columns : int
        Accesses per row (row bytes / ``access_bytes``); power of two.
    access_bytes : int
        Bytes of one request = one column command; power of two (64).
    bus_bits, burst_length : int
        Data-bus width per channel (bits) and JEDEC burst length (documentation and peak
        arithmetic: one access is ``access_bytes * 8 / bus_bits`` beats).
    tck_ps : int
        Memory clock period, picoseconds.
    clock_ratio : fractions.Fraction
        f_mem / f_unit (> 0); 1: the access unit runs at the memory clock.
    timing : HbmTiming
        Memory cycles.
    address_mapping : str
        DRAMSim3 field string, most significant field first (``ro ra bg ba ch co``, each once,
        ``ra`` optional with 0 bits); below the fields, ``log2(access_bytes)`` offset bits.
    queue_depth : int
        Request-queue entries per channel (>= 1).
    response_depth : int
        Issued-but-undelivered column commands per channel (>= 1).
    page_policy : str
        ``"open"`` or ``"closed"``.
    refresh : bool
        All-bank refresh every tREFI, all channels at once.
    fixed_latency : int or None
        ``simple`` only: cycles from acceptance to response valid (docs/hbm_model.md §3).

    Raises
    ------
    ValueError
        A field violates its rule; the message names the field and the value.
    """

    name: str
    channels: int
    bank_groups: int
    banks_per_group: int
    rows: int
    columns: int
    access_bytes: int
    bus_bits: int
    burst_length: int
    tck_ps: int
    clock_ratio: Fraction
    timing: HbmTiming
    address_mapping: str
    queue_depth: int = 32
    response_depth: int = 16
    page_policy: str = "open"
    refresh: bool = True
    fixed_latency: int | None = None

    def __post_init__(self):
        for f in ("channels", "bank_groups", "banks_per_group", "rows", "columns", "access_bytes"):
            v = getattr(self, f)
            if not _is_pow2(v):
                raise ValueError(f"{f} must be a power of two (the address mapping slices bits), "
                                 f"not {v!r}")
        if self.access_bytes < 8:
            raise ValueError(f"access_bytes must be at least 8 (one 64-bit word), "
                             f"not {self.access_bytes!r}")
        for f in ("bus_bits", "burst_length", "tck_ps", "queue_depth", "response_depth"):
            v = getattr(self, f)
            if not isinstance(v, int) or isinstance(v, bool) or v < 1:
                raise ValueError(f"{f} must be a positive integer, not {v!r}")
        r = self.clock_ratio
        if isinstance(r, int) and not isinstance(r, bool):
            object.__setattr__(self, "clock_ratio", Fraction(r))
        elif not isinstance(r, Fraction) or r <= 0:
            raise ValueError(f"clock_ratio must be a positive fractions.Fraction (f_mem / f_unit), "
                             f"not {r!r}")
        if not isinstance(self.timing, HbmTiming):
            raise ValueError(f"timing must be an HbmTiming, not {self.timing!r}")
        _parse_mapping(self.address_mapping)
        if self.page_policy not in ("open", "closed"):
            raise ValueError(f"page_policy must be 'open' or 'closed', not {self.page_policy!r}")
        if not isinstance(self.refresh, bool):
            raise ValueError(f"refresh must be a bool, not {self.refresh!r}")
        if self.refresh and self.unit_timing().tRFC >= self.unit_timing().tREFI:
            raise ValueError(f"tREFI must exceed tRFC, not tREFI={self.timing.tREFI!r} "
                             f"with tRFC={self.timing.tRFC!r}")
        fl = self.fixed_latency
        if fl is not None and (not isinstance(fl, int) or isinstance(fl, bool) or fl < 1):
            raise ValueError(f"fixed_latency must be None or a positive integer, not {fl!r}")

    # -- derived -------------------------------------------------------------------------------

    def replace(self, **changes) -> "HbmPreset":
        """A copy with ``changes`` applied; validated like the constructor (``ValueError``)."""
        return dataclasses.replace(self, **changes)

    @property
    def banks(self) -> int:
        """Banks per channel (``bank_groups * banks_per_group``)."""
        return self.bank_groups * self.banks_per_group

    @property
    def capacity_bytes(self) -> int:
        """Bytes addressed by the mapping: channels x banks x rows x columns x access_bytes."""
        return self.channels * self.banks * self.rows * self.columns * self.access_bytes

    def unit_timing(self) -> HbmTiming:
        """Timing in unit cycles: ``ceil(t_mem / clock_ratio)`` per field (docs §1)."""
        r = self.clock_ratio
        return HbmTiming(**{f.name: math.ceil(Fraction(getattr(self.timing, f.name)) / r)
                            for f in dataclasses.fields(HbmTiming)})

    @property
    def unit_cycle_ps(self) -> Fraction:
        """Period of one unit cycle in picoseconds: ``tck_ps * clock_ratio``."""
        return self.tck_ps * self.clock_ratio

    @property
    def unit_cycle_ns(self) -> float:
        """Period of one unit cycle in nanoseconds (for reports: ns = cycles x this)."""
        return float(self.unit_cycle_ps) / 1000.0

    @property
    def peak_bytes_per_cycle(self) -> Fraction:
        """Peak data rate of the model in bytes per unit cycle.

        DRAM presets: every channel moves one access per ``max(tBURST, tCCD_S)`` unit cycles
        (``channels * access_bytes / max(tBURST, tCCD_S)``); ``simple``: one access per cycle.
        """
        if self.fixed_latency is not None:
            return Fraction(self.access_bytes)
        t = self.unit_timing()
        return Fraction(self.channels * self.access_bytes, max(t.tBURST, t.tCCD_S))

    @property
    def peak_gbps(self) -> float:
        """Peak data rate in GB/s (10^9 bytes/s): ``peak_bytes_per_cycle / unit_cycle_ns``."""
        return float(self.peak_bytes_per_cycle / (self.unit_cycle_ps / 1000))

    # -- address mapping -----------------------------------------------------------------------

    def field_bits(self) -> dict[str, tuple[int, int]]:
        """Bit position of each address field: name -> (lsb, width), byte-address bits.

        Names: ``offset``, ``column``, ``channel``, ``bank``, ``bank_group``, ``rank`` (width 0
        when absent or present: one rank), ``row``. Fields are laid out from ``address_mapping``
        (most significant first) above ``log2(access_bytes)`` offset bits; address bits above
        the row field are ignored (the address wraps at :attr:`capacity_bytes`).
        """
        widths = {"row": self.rows, "rank": 1, "bank_group": self.bank_groups,
                  "bank": self.banks_per_group, "channel": self.channels, "column": self.columns}
        out = {"offset": (0, self.access_bytes.bit_length() - 1)}
        lsb = out["offset"][1]
        for tok in reversed(_parse_mapping(self.address_mapping)):
            name = MAPPING_FIELDS[tok]
            w = widths[name].bit_length() - 1
            out[name] = (lsb, w)
            lsb += w
        out.setdefault("rank", (lsb, 0))
        return out

    def decode(self, addr: int) -> tuple[int, int, int, int, int]:
        """Split a byte address into ``(channel, bank_group, bank, row, column)``.

        ``bank`` is the bank within its group; the flat bank index used by the scheduler is
        ``bank_group * banks_per_group + bank``.

        Raises
        ------
        ValueError
            ``addr`` is negative or not an integer.
        """
        if not isinstance(addr, int) or isinstance(addr, bool) or addr < 0:
            raise ValueError(f"addr must be a non-negative integer byte address, not {addr!r}")
        fb = self.field_bits()
        return tuple((addr >> fb[n][0]) & ((1 << fb[n][1]) - 1)
                     for n in ("channel", "bank_group", "bank", "row", "column"))

    def encode(self, channel: int, bank_group: int, bank: int, row: int, column: int) -> int:
        """Byte address (offset 0) of an access; the inverse of :meth:`decode`.

        Raises
        ------
        ValueError
            A coordinate is outside its field (named in the message).
        """
        fb = self.field_bits()
        addr = 0
        for n, v in (("channel", channel), ("bank_group", bank_group), ("bank", bank),
                     ("row", row), ("column", column)):
            lsb, w = fb[n]
            if not isinstance(v, int) or not 0 <= v < (1 << w):
                raise ValueError(f"{n} must be in [0, {1 << w}), not {v!r}")
            addr |= v << lsb
        return addr


# --- the presets --------------------------------------------------------------------------------

#: DRAMSim3 ``configs/HBM2_8Gb_x128.ini`` (commit 29817593), all values tCK = 1 ns.
#: tCCD_S 1 / tCCD_L 2 as in the ini (effective 2/2 with tBURST 2); tRTP 5 (the code reads
#: ``tRTP``; the ini's tRTP_L/tRTP_S are ignored, so DRAMSim3's default 5 applies); tRTRS 2.
#: tBURST 2: BL4 on a 128-bit legacy channel at DDR = 64 B in 2 tCK.
HBM2_TIMING = HbmTiming(tRCD=14, tCL=14, tWL=4, tRP=14, tRAS=34, tRC=48, tCCD_S=1, tCCD_L=2,
                        tRRD_S=4, tRRD_L=6, tFAW=30, tWR=16, tWTR_S=6, tWTR_L=8, tRTP=5,
                        tBURST=2, tRTRS=2, tREFI=3900, tRFC=260)

HBM2 = HbmPreset(
    name="HBM2",
    channels=8,              # DRAMSim3: channels = 8 (legacy mode, no pseudo-channels)
    bank_groups=4,           # DRAMSim3: bankgroups = 4
    banks_per_group=4,       # DRAMSim3: banks_per_group = 4
    rows=32768,              # DRAMSim3: rows = 32768
    columns=32,              # DRAMSim3: 2 KiB page (columns 64 x device width) / 64 B
    access_bytes=64,         # DRAMSim3: BL4 x 128 bit = 64 B per transaction
    bus_bits=128,            # DRAMSim3: bus_width = 128
    burst_length=4,          # DRAMSim3: BL = 4
    tck_ps=1000,             # DRAMSim3: tCK = 1.0 ns (2.0 Gb/s per pin)
    clock_ratio=Fraction(1),
    timing=HBM2_TIMING,
    address_mapping="rorabgbachco",  # DRAMSim3: address_mapping = rorabgbachco
    queue_depth=64,          # two rows of accesses; Ramulator HBM2 read buffer 64 (module doc)
    response_depth=16,
    page_policy="open",      # DRAMSim3: row_buf_policy = OPEN_PAGE
    refresh=True,            # DRAMSim3: all-bank refresh, all channels in the same cycle
)

#: Ramulator 2.1 (commit c5b1c3a4) ``HBM3`` with ``HBM3_6400Mbps`` timing, tCK = 0.625 ns.
#: tRCD 31 is the read tRCD (Ramulator's tRCDWR 15 is not modelled: one tRCD, conservative for
#: writes). tBURST 4: one 64-B access on a 32-bit pseudo-channel at 6.4 Gb/s (16 B per tCK) is
#: two BL8 bursts (Ramulator nBL = 2 each) to the same row, back to back, modelled as one column
#: command. tRTRS 8: Ramulator's RD-to-WR command spacing tRTW = 20 expressed as
#: tCL + nBL + tRTRS - tWL = 20 + 2 + 8 - 10 (docs/hbm_model.md §2 wr_ok).
HBM3_TIMING = HbmTiming(tRCD=31, tCL=20, tWL=10, tRP=26, tRAS=45, tRC=72, tCCD_S=2, tCCD_L=4,
                        tRRD_S=4, tRRD_L=5, tFAW=24, tWR=33, tWTR_S=7, tWTR_L=10, tRTP=9,
                        tBURST=4, tRTRS=8, tREFI=6240, tRFC=560)

HBM3 = HbmPreset(
    name="HBM3",
    channels=32,             # Ramulator HBM3_16Gb_8hi: 16 channels x 2 pseudo-channels
    bank_groups=8,           # Ramulator: 4 bank groups per SID x 2 SIDs, SID folded in (MSB)
    banks_per_group=4,       # Ramulator: 4 banks per bank group
    rows=16384,              # Ramulator: 16384 rows
    columns=16,              # Ramulator: 1 KiB page per pseudo-channel / 64 B
    access_bytes=64,
    bus_bits=32,             # Ramulator: 32-bit pseudo-channel
    burst_length=8,          # Ramulator: BL8
    tck_ps=625,              # Ramulator HBM3_6400Mbps: tCK = 0.625 ns
    clock_ratio=Fraction(1),
    timing=HBM3_TIMING,
    address_mapping="rorababgchco",
    queue_depth=32,          # two rows of accesses (Ramulator: 128; smaller for the RTL's size)
    response_depth=16,
    page_policy="open",      # Ramulator: open page, FRFCFS-RowHit
    refresh=True,            # Ramulator: AllBank refresh
)

#: The slice's fixed-latency memory: one channel, in order, 32-cycle latency. The timing is
#: unused (every field 1 except tREFI/tRFC, and refresh is off); access_bytes 64 for statistics.
SIMPLE = HbmPreset(
    name="simple", channels=1, bank_groups=1, banks_per_group=1, rows=1 << 28, columns=1,
    access_bytes=64, bus_bits=512, burst_length=1, tck_ps=1000, clock_ratio=Fraction(1),
    timing=HbmTiming(tRCD=1, tCL=1, tWL=1, tRP=1, tRAS=1, tRC=1, tCCD_S=1, tCCD_L=1, tRRD_S=1,
                     tRRD_L=1, tFAW=1, tWR=1, tWTR_S=1, tWTR_L=1, tRTP=1, tBURST=1, tRTRS=0,
                     tREFI=2, tRFC=1),
    address_mapping="rorabgbachco", queue_depth=1, response_depth=32, page_policy="open",
    refresh=False, fixed_latency=32)

#: The presets by name (``ember hbm-trace --preset``, ``make sim``).
PRESETS: dict[str, HbmPreset] = {"HBM2": HBM2, "HBM3": HBM3, "simple": SIMPLE}


def get_preset(name: str) -> HbmPreset:
    """The preset called ``name``.

    Raises
    ------
    ValueError
        Unknown name; the message lists the known ones.
    """
    try:
        return PRESETS[name]
    except (KeyError, TypeError):
        raise ValueError(f"preset must be one of {', '.join(PRESETS)}, not {name!r}") from None
