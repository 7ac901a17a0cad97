"""Build-time parameters of the access unit and of the simulated system around it."""

from dataclasses import asdict, dataclass, replace


__all__ = ["TmuConfig", "FEATURES"]


#: ISA v1 features a unit can be built with (``docs/isa.md`` §7.7, ``sw.runtime.isa.Feature``).
FEATURES = ("block", "broadcast", "lockstep", "pack")


def _is_pow2(n):
    return n > 0 and (n & (n - 1)) == 0


@dataclass(frozen=True)
class TmuConfig:
    """Parameters of one built access unit (and of the system it is simulated in).

    Parameters
    ----------
    layers : int
        Traversal layers (one TU each in ISA version 0). Default 4, legal 1..255.
    streams : int
        Stream slots. Default 16, legal 1..255.
    actions : int
        Marshaling action slots. Default 16, legal 1..255.
    regions : int
        Granted memory regions. Default 4, legal 1..255.
    args : int
        64-bit argument registers. Default 16, legal 1..255.
    max_inflight : int
        Reorder-buffer entries, i.e. marshaled tokens (loads in flight or waiting to drain) the
        unit keeps between marshaling and the output queues; a load's entry holds one memory line.
        Default 512 (32 KiB of lines: Little's law for one line per cycle at HBM2's loaded
        latency, plus room for the latency tail that holds the in-order drain;
        ``docs/performance.md``, issue 10), a power of two >= 2.
    data_queue_depth : int
        Depth of the core interface's data output queue, in beats of up to ``output_tokens``
        64-bit tokens (``hw/core_if``). Default 256 (16 KiB at the 512-bit output), >= 2.
    ctrl_queue_depth : int
        Depth of the core interface's 16-bit control output queue, entries. Default 512, >= 2.
        The two depths set how far the unit may run ahead of a core whose pace varies from
        callback to callback (a bag of many rows takes it longer): with 64 and 64 the unit
        waited on a full control queue, 68 bags ahead, while its reorder buffer had room for
        hundreds more lookups (``make sim``: 14,563 DAE cycles against 13,932 with 256 and 512;
        ``docs/performance.md``, "Output queues deep enough for the core's pace"). Both map to
        block RAM whose count the width sets, not the depth, up to 512 entries.
    watchdog_cycles : int
        Reset value of the ``WATCHDOG`` register: cycles without a delivered token or a
        completed load before the unit faults with ``WATCHDOG``. 0 disables. Default 2**20.
    mem_latency : int
        Fixed latency of the memory model, cycles from request accepted to response valid.
        Default 32, legal 1..1024. (A property of the simulated system, not of the unit.)
    prefetchers : int
        Run-ahead engines for blocking memory streams whose address is affine in their layer's
        index (``docs/rtl.md``). Default 5 (a CSR of CSR has five such index streams: two pointer
        pairs and its items; with four, one pointer load per group waits a whole memory
        latency, ``docs/performance.md``, "Dependent index chains"), legal 0..16;
        ``prefetchers * prefetch_depth`` must not exceed ``max_inflight``.
    prefetch_depth : int
        Loads one engine keeps ahead of the traversal. Default 32, a power of two >= 2.
    chain_engines : int
        Chain engines (``hw/tmu/chain_engine.py``): run-ahead engines for a blocking memory
        stream whose index is an affine stream of its layer through up to two ALU operations
        (``examples/hashed_gather.mlir``'s ``remap[h(ids[i])]``). 0 or 1; each holds two stages
        of ``prefetch_depth`` loads. Default 1 (0 in ``small()``).
    versions : tuple of int
        ISA versions the decoder accepts (``docs/isa.md`` §7.9): ``(0,)`` or ``(0, 1)``.
        Default ``(0, 1)``.
    features : tuple of str
        ISA v1 features built in, names from ``FEATURES`` (``docs/isa.md`` §7.7): ``"pack"``
        (operand packing and ``JOIN``), ``"block"`` (BLOCK memory streams), ``"lockstep"``
        (LOCKSTEP layers), ``"broadcast"`` (BROADCAST layers). A program that uses a feature
        the unit lacks faults ``RESOURCES``. Empty when 1 is not in ``versions``. Default
        ``("block", "broadcast", "lockstep", "pack")``. (A BROADCAST layer runs as a SINGLE
        one: its values are scalars, which is what the lanes read.)
    lanes : int
        Most lanes of a LOCKSTEP layer, 1..64; > 1 only with ``"lockstep"``. Default 8
        (a lane-affine layer is evaluated once per vector iteration, any other lane by lane:
        ``docs/rtl.md`` §9.3).
    max_block : int
        Most elements of one BLOCK stream's row (a larger run-time count faults
        ``BLOCK_LENGTH``), 1..2**20 with ``"block"``, else 0. Default 1024.
    line_bytes : int
        Width of the memory port, bytes: every load is a request for the aligned line of this
        many bytes that holds it, and all elements of a BLOCK row or contiguous vector that fall
        in one line are served by one request (``docs/rtl.md`` §2.4). A power of two, 8..64.
        Default 64 (a cache line, the HBM model's access granularity).
    memory_ports : int
        Request and response ports to the memory, 1..8: up to this many line requests leave and
        this many responses arrive per cycle (the traversal's, the row issue block's and the
        run-ahead engines', in that priority); the row issue block sends up to one line of a
        BLOCK row or contiguous vector per port per cycle (``row_lines``). Default 2 (two lines
        of a row per cycle, or a line and an index load).
    output_tokens : int
        Width of the data output, 64-bit tokens per cycle: the packer and the data queue move a
        beat of up to this many tokens per cycle (the token sequence is the one of
        ``docs/isa.md``; ``docs/rtl.md`` §2.5). A power of two, 1..32. Default 8 (512 bits);
        16 is a 1024-bit beat (two 512-bit vectors per cycle), 32 a 2048-bit one (HBM2's peak,
        256 B/cycle), drained from the reorder buffer at ``drain_lines`` entries per cycle.
    drain_entries : int
        Reorder-buffer entries drained into the packer per cycle, in order, 1..4 (at most
        ``max_inflight``), or 0 (the default): automatic, ``max(2, min(4, 8 * output_tokens /
        line_bytes))`` -- enough lines to fill a beat, and at least 2, so that an immediate
        operand beside a line (a sparse matrix's value beside its dense row, SpMV's value beside
        ``x[col]``) does not cost a cycle of its own (``docs/rtl.md`` §2.5). Read the value in
        use from ``drain_lines``.
    uop_stages : int
        Pipeline stages of a traversal uop, 1 or 2. Default 2: a uop's evaluation (sources,
        address, checks) is registered and it executes the next cycle
        (``hw/tmu/evaluate_stage.py``): the uop's logic path cut in two; the uop predicted to
        follow is evaluated during this one's execution (``hw/tmu/ahead_fetch.py``) with what
        this one writes forwarded to it, so a uop completes per cycle except after a blocking
        load, an ``ENTER`` or a misprediction (HBM2: every workload within 1.6 % of one stage's
        cycles at ``-O3``, within 1.09x at ``-O0..-O2`` but SpMV's program, 1.18x; placed
        1.4-1.7x faster per ns: ``docs/rtl.md`` §2.2 "Two-stage uop", ``docs/performance.md``
        "Two stages at every ``-O`` level", ``docs/synthesis.md``). 1: a uop is evaluated and
        executed in one cycle (the same tokens and faults; the unit before session 28).
    """
    layers: int = 4
    streams: int = 16
    actions: int = 16
    regions: int = 4
    args: int = 16
    max_inflight: int = 512
    data_queue_depth: int = 256
    ctrl_queue_depth: int = 512
    watchdog_cycles: int = 1 << 20
    mem_latency: int = 32
    prefetchers: int = 5
    prefetch_depth: int = 32
    chain_engines: int = 1
    versions: tuple = (0, 1)
    features: tuple = ("block", "broadcast", "lockstep", "pack")
    lanes: int = 8
    max_block: int = 1024
    line_bytes: int = 64
    memory_ports: int = 2
    output_tokens: int = 8
    drain_entries: int = 0
    uop_stages: int = 2

    def __post_init__(self):
        for name in ("layers", "streams", "actions", "regions", "args"):
            value = getattr(self, name)
            if not isinstance(value, int) or not 1 <= value <= 255:
                raise ValueError(f"{name} must be an integer in 1..255, not {value!r}")
        if not isinstance(self.max_inflight, int) or self.max_inflight < 2 or \
                not _is_pow2(self.max_inflight):
            raise ValueError(f"max_inflight must be a power of two >= 2, not {self.max_inflight!r}")
        for name in ("data_queue_depth", "ctrl_queue_depth"):
            value = getattr(self, name)
            if not isinstance(value, int) or value < 2:
                raise ValueError(f"{name} must be an integer >= 2, not {value!r}")
        if not isinstance(self.watchdog_cycles, int) or not 0 <= self.watchdog_cycles < 1 << 32:
            raise ValueError(f"watchdog_cycles must be an integer in 0..2**32-1, "
                             f"not {self.watchdog_cycles!r}")
        if not isinstance(self.mem_latency, int) or not 1 <= self.mem_latency <= 1024:
            raise ValueError(f"mem_latency must be an integer in 1..1024, not {self.mem_latency!r}")
        if not isinstance(self.prefetchers, int) or not 0 <= self.prefetchers <= 16:
            raise ValueError(f"prefetchers must be an integer in 0..16, not {self.prefetchers!r}")
        if not isinstance(self.prefetch_depth, int) or self.prefetch_depth < 2 or \
                not _is_pow2(self.prefetch_depth):
            raise ValueError(f"prefetch_depth must be a power of two >= 2, "
                             f"not {self.prefetch_depth!r}")
        if not isinstance(self.versions, tuple) or self.versions not in ((0,), (0, 1)):
            raise ValueError(f"versions must be (0,) or (0, 1), not {self.versions!r}")
        if not isinstance(self.features, tuple) or any(f not in FEATURES for f in self.features) \
                or len(set(self.features)) != len(self.features):
            raise ValueError(f"features must be a tuple of distinct names from {FEATURES}, "
                             f"not {self.features!r}")
        if self.features and 1 not in self.versions:
            raise ValueError(f"features must be empty without ISA version 1, not {self.features!r}")
        if not isinstance(self.lanes, int) or not 1 <= self.lanes <= 64:
            raise ValueError(f"lanes must be an integer in 1..64, not {self.lanes!r}")
        if self.lanes > 1 and "lockstep" not in self.features:
            raise ValueError(f"lanes must be 1 without the 'lockstep' feature, not {self.lanes!r}")
        if "block" in self.features:
            if not isinstance(self.max_block, int) or not 1 <= self.max_block <= 1 << 20:
                raise ValueError(f"max_block must be an integer in 1..2**20 with the 'block' "
                                 f"feature, not {self.max_block!r}")
        elif self.max_block != 0:
            raise ValueError(f"max_block must be 0 without the 'block' feature, "
                             f"not {self.max_block!r}")
        if not isinstance(self.line_bytes, int) or self.line_bytes not in (8, 16, 32, 64):
            raise ValueError(f"line_bytes must be 8, 16, 32 or 64, not {self.line_bytes!r}")
        if not isinstance(self.memory_ports, int) or isinstance(self.memory_ports, bool) or \
                not 1 <= self.memory_ports <= 8:
            raise ValueError(f"memory_ports must be an integer in 1..8, not {self.memory_ports!r}")
        if not isinstance(self.output_tokens, int) or isinstance(self.output_tokens, bool) or \
                self.output_tokens not in (1, 2, 4, 8, 16, 32):
            raise ValueError(f"output_tokens must be 1, 2, 4, 8, 16 or 32, "
                             f"not {self.output_tokens!r}")
        if not isinstance(self.drain_entries, int) or isinstance(self.drain_entries, bool) or \
                not 0 <= self.drain_entries <= min(4, self.max_inflight):
            raise ValueError(f"drain_entries must be 0 (automatic) or an integer in "
                             f"1..{min(4, self.max_inflight)}, not {self.drain_entries!r}")
        if not isinstance(self.chain_engines, int) or isinstance(self.chain_engines, bool) or \
                self.chain_engines not in (0, 1):
            raise ValueError(f"chain_engines must be 0 or 1, not {self.chain_engines!r}")
        if not isinstance(self.uop_stages, int) or isinstance(self.uop_stages, bool) or \
                self.uop_stages not in (1, 2):
            raise ValueError(f"uop_stages must be 1 or 2, not {self.uop_stages!r}")
        if self.prefetchers * self.prefetch_depth > self.max_inflight:
            raise ValueError(f"prefetchers * prefetch_depth must be at most max_inflight "
                             f"({self.max_inflight}), not {self.prefetchers * self.prefetch_depth}")

    @classmethod
    def small(cls):
        """A small configuration that builds and simulates fast (tests; no chain engine: the
        chain engine's own tests add it, ``tb/tmu/test_chain_engine.py``)."""
        return cls(layers=3, streams=8, actions=8, regions=3, args=8, max_inflight=16,
                   data_queue_depth=4, ctrl_queue_depth=4, mem_latency=8, prefetchers=2,
                   prefetch_depth=4, chain_engines=0, lanes=4, max_block=64, line_bytes=16,
                   output_tokens=2)

    def with_max_inflight(self, max_inflight):
        """This configuration with ``max_inflight`` lines in flight and the engines' depth that
        fits them: ``prefetch_depth`` kept, or lowered to the largest power of two (at least 2)
        with ``prefetchers * prefetch_depth <= max_inflight`` (sweeps over lines in flight:
        ``scripts/sweep.py``, ``scripts/bench_bandwidth.py``). Raises ``ValueError`` as the
        constructor does (e.g. ``max_inflight`` below ``2 * prefetchers``)."""
        share = max_inflight // max(1, self.prefetchers) if isinstance(max_inflight, int) else 0
        depth = min(self.prefetch_depth, max(2, 1 << (max(share, 1).bit_length() - 1)))
        return replace(self, max_inflight=max_inflight, prefetch_depth=depth)

    def has(self, feature):
        """Whether the ISA v1 ``feature`` (a name from ``FEATURES``) is built in."""
        if feature not in FEATURES:
            raise ValueError(f"feature must be one of {FEATURES}, not {feature!r}")
        return feature in self.features

    def as_dict(self):
        return asdict(self)

    # Derived sizes ------------------------------------------------------------------------

    @property
    def rob_bits(self):
        """Bits of a reorder-buffer slot number."""
        return (self.max_inflight - 1).bit_length()

    @property
    def line_offset_bits(self):
        """Bits of a byte offset inside a memory line."""
        return (self.line_bytes - 1).bit_length()

    @property
    def row_chunk_lines(self):
        """Most reorder-buffer entries (memory lines) the traversal reserves for a BLOCK row or
        contiguous vector in one cycle; a longer row takes several cycles."""
        return max(1, min(8, self.max_inflight // 4))

    @property
    def row_chunk_elements(self):
        """Most elements of one such reservation (1-byte elements filling its lines)."""
        return self.row_chunk_lines * self.line_bytes

    @property
    def row_lines(self):
        """Line requests of BLOCK rows and contiguous vectors the row issue block offers per
        cycle: one per memory port, at most ``row_chunk_lines`` (a reservation's lines)."""
        return max(1, min(self.memory_ports, self.row_chunk_lines))

    @property
    def drain_lines(self):
        """Reorder-buffer entries (memory lines or immediate operands) drained into the packer
        per cycle, in order: ``drain_entries``, or when that is 0 enough lines to fill a beat,
        ``output_tokens * 8 / line_bytes``, at least 2 and at most 4 (2 for the default
        512-bit beat of 64-byte lines: a line and the immediate beside it; 4 for a 2048-bit
        beat), never more than ``max_inflight``."""
        if self.drain_entries:
            return self.drain_entries
        return min(self.max_inflight, max(2, min(4, self.output_tokens * 8 // self.line_bytes)))

    @property
    def tag_index_bits(self):
        """Bits of a memory request tag's index: a reorder-buffer slot, or a run-ahead slot
        ``engine * prefetch_depth + slot``, the chain engine's two stages counting as engines
        ``prefetchers`` and ``prefetchers + 1``; ``rob_bits`` unless the engines need more."""
        engine_slots = (self.prefetchers + 2 * self.chain_engines) * self.prefetch_depth
        return max(self.rob_bits, (engine_slots - 1).bit_length())

    @property
    def tag_bits(self):
        """Bits of a memory request tag: ``{epoch, kind[1:0], index[tag_index_bits-1:0]}`` with
        kind 0 a ROB slot, 1 the blocking load, 2 a run-ahead slot, and ``epoch`` the parity of
        the run (responses to an earlier run's requests are dropped)."""
        return self.tag_index_bits + 3

    @property
    def program_words(self):
        """Longest program that fits the configuration, in 32-bit words."""
        return 4 + 4 * (self.layers + self.regions + self.streams + self.actions)

    @property
    def engines(self):
        """Run-ahead engines the traversal pops, at least 1 (its engine ports are arrays):
        ``prefetchers`` affine engines, then the chain engine (index ``prefetchers``)."""
        return max(1, self.prefetchers + self.chain_engines)

    @property
    def ucode_depth(self):
        """Entries of the traversal microcode: ENTER + NEXT per layer, streams, actions, DONE,
        PREFETCH per engine, LANE (the LOCKSTEP layer)."""
        return (2 * self.layers + self.streams + self.actions + 2 + self.prefetchers
                + self.chain_engines)
