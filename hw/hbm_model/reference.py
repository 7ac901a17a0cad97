"""Cycle-level Python reference of the HBM memory model (``docs/hbm_model.md`` §2–§5).

The RTL model (``hw/hbm_model/hbm.py``) implements the same contract; the cocotb differential test
requires both to complete every request in the same cycle. This module is also the engine of
``ember hbm-trace --model reference`` and of ``scripts/bench_hbm.py``.

Two ways to drive it:

* :meth:`HbmReference.step` / :meth:`HbmReference.step_ports` — one unit cycle per call, every
  channel evaluated every cycle (the literal reading of §2);
* :func:`run_requests` — a request trace, with idle cycles skipped: a channel is evaluated only
  when something can happen in it (a request arrived, a response left, a refresh became due, or
  the earliest cycle at which one of its commands becomes legal). The result is identical to
  stepping each cycle (``skip_idle=False``; tested in ``tests/hbm``).

Ports (§2 "Ingress" and "Response ports"; the RTL has the same parameter): with ``ports = P``
the model has P request ports, served in port order (port ``k`` is accepted iff it is valid, its
channel has room after the requests of the valid ports below it, and no valid port below it is
refused), and P response ports: port ``k`` presents the head of the ``k``-th non-empty response
FIFO at or after the round-robin pointer (one per channel); each is transferred when its port's
``resp.ready`` is high, and the pointer moves past the channel of the highest-numbered port that
transferred. With ``P = 1`` these are the single ports of §2. ``line_bytes`` (8 = one 64-bit
word, up to the preset's ``access_bytes``) is the data width of a port: a read returns the aligned
line containing the address, a write carries a line and a byte enable per byte of it.

What is NOT modelled: see docs/hbm_model.md §9 (one command of each kind per channel per cycle, no
command-bus sharing between pseudo-channels, all-bank refresh of all channels at once, no tRTW
other than through tRTRS, one tRCD for reads and writes).
"""

from __future__ import annotations

import math
from collections import deque
from dataclasses import dataclass, field
from typing import Sequence

import numpy as np

from .presets import HbmPreset

__all__ = ["Request", "Response", "Completion", "TraceResult", "HbmReference", "run_requests",
           "HIST_BIN_CYCLES", "HIST_BINS", "hist_percentile", "ReadyStream", "check_line_bytes",
           "check_refresh_restarts"]

#: Read-latency histogram: bin width (unit cycles) and number of bins (last bin open), §5.
HIST_BIN_CYCLES = 4
HIST_BINS = 64

_NEG = -(1 << 40)   # "minus infinity" for the times of past commands
_INF = 1 << 62      # "never"
_MASK64 = (1 << 64) - 1


def check_line_bytes(preset: HbmPreset, line_bytes) -> int:
    """Check a port's data width: a power of two from 8 (one 64-bit word) to the preset's
    ``access_bytes`` (64 for a fixed-latency preset). Returns it; raises ``ValueError`` naming
    ``line_bytes`` otherwise."""
    top = preset.access_bytes if preset.fixed_latency is None else max(64, preset.access_bytes)
    if not isinstance(line_bytes, int) or isinstance(line_bytes, bool) or line_bytes < 8 \
            or line_bytes & (line_bytes - 1) or line_bytes > top:
        raise ValueError(f"line_bytes must be a power of two from 8 to {top} (the preset's "
                         f"access_bytes), not {line_bytes!r}")
    return line_bytes


@dataclass(frozen=True)
class Request:
    """One 64-byte-access request.

    Attributes
    ----------
    addr : int
        Byte address (>= 0). Timing uses the access containing it; storage the aligned line
        (``line_bytes`` of the model, default one 64-bit word) containing it.
    write : bool
        Write (``data`` under ``wstrb`` into the line) instead of read.
    issue_cycle : int
        Earliest unit cycle at which :func:`run_requests` offers it (the trace's issue cycle).
    data : int
        Write data, ``8 * line_bytes`` bits (word ``i`` of the line in bits ``64i..64i+63``).
    wstrb : int
        Byte enables of ``data`` (bit i: byte i of the line), ``line_bytes`` bits.
    """

    addr: int
    write: bool = False
    issue_cycle: int = 0
    data: int = 0
    wstrb: int = 0xFF


@dataclass(frozen=True)
class Response:
    """A response on the response port.

    ``index`` is the request's acceptance number (0, 1, ... in acceptance order, ports in port
    order within a cycle; the RTL carries ``index mod 2**tag_bits`` as the tag); ``data`` the line
    (``line_bytes``; default one 64-bit word) read at acceptance (0 for a write); ``channel`` the
    channel it came from; ``port`` the response port that presents it.
    """

    index: int
    data: int
    write: bool
    channel: int
    port: int = 0


@dataclass
class Completion:
    """Timing of one request of a trace: accepted in ``accept_cycle``, response transferred in
    ``complete_cycle`` (unit cycles); ``data`` as in :class:`Response`."""

    index: int
    accept_cycle: int
    complete_cycle: int
    data: int
    write: bool = False

    @property
    def latency(self) -> int:
        """``complete_cycle - accept_cycle`` (unit cycles)."""
        return self.complete_cycle - self.accept_cycle


def hist_percentile(hist: Sequence[int], q: float, width: int = HIST_BIN_CYCLES) -> int:
    """Percentile ``q`` (0..100) from a latency histogram: the upper edge ``(i + 1) * width`` of
    the first bin at which the cumulative count reaches ``q`` % of the total (§5); 0 if empty."""
    total = sum(hist)
    if total == 0:
        return 0
    need = q / 100.0 * total
    acc = 0
    for i, n in enumerate(hist):
        acc += n
        if acc >= need and acc > 0:
            return (i + 1) * width
    return len(hist) * width


@dataclass
class TraceResult:
    """Outcome of a trace run (reference or RTL).

    Attributes
    ----------
    completions : list[Completion]
        One per request, in trace order.
    stats : dict
        The statistics of docs/hbm_model.md §5.
    cycles : int
        Unit cycles from cycle 0 to the last response, inclusive (last ``complete_cycle`` + 1).
    preset : HbmPreset or None
        For the helpers' unit conversions (may also be passed to them).
    """

    completions: list[Completion]
    stats: dict
    cycles: int
    preset: HbmPreset | None = None

    def _p(self, preset):
        p = preset if preset is not None else self.preset
        if p is None:
            raise ValueError("preset must be given (the TraceResult has none)")
        return p

    @property
    def bytes_moved(self) -> int:
        """``bytes_read + bytes_written``."""
        return int(self.stats["bytes_read"]) + int(self.stats["bytes_written"])

    def bytes_per_cycle(self) -> float:
        """Achieved bytes per unit cycle over ``cycles``."""
        return self.bytes_moved / self.cycles if self.cycles else 0.0

    def bandwidth_gbps(self, preset: HbmPreset | None = None) -> float:
        """Achieved bandwidth in GB/s (10^9 B/s): bytes moved / (cycles x unit cycle)."""
        return self.bytes_per_cycle() / self._p(preset).unit_cycle_ns

    def fraction_of_peak(self, preset: HbmPreset | None = None) -> float:
        """Achieved bytes per cycle / the preset's ``peak_bytes_per_cycle``."""
        return self.bytes_per_cycle() / float(self._p(preset).peak_bytes_per_cycle)

    def read_latencies(self) -> np.ndarray:
        """Latencies of the reads (unit cycles), int64, in trace order."""
        return np.array([c.latency for c in self.completions if not c.write], dtype=np.int64)

    def read_latency_percentile(self, q: float) -> int:
        """Exact percentile ``q`` of the read latencies (unit cycles): the smallest latency that at
        least ``q`` % of the reads do not exceed (NumPy ``inverted_cdf``); 0 without reads."""
        lat = self.read_latencies()
        if lat.size == 0:
            return 0
        return int(np.percentile(lat, q, method="inverted_cdf"))

    def read_latency_mean(self) -> float:
        """Mean read latency (unit cycles); 0.0 without reads."""
        lat = self.read_latencies()
        return float(lat.mean()) if lat.size else 0.0

    def row_hit_rate(self) -> float:
        """``row_hits / (row_hits + row_misses + row_conflicts)`` (0.0 if none classified)."""
        s = self.stats
        n = s["row_hits"] + s["row_misses"] + s["row_conflicts"]
        return s["row_hits"] / n if n else 0.0

    def activates_per_request(self) -> float:
        """``activates / (reads + writes)``."""
        n = self.stats["reads"] + self.stats["writes"]
        return self.stats["activates"] / n if n else 0.0


class ReadyStream:
    """``resp.ready`` per cycle for :func:`run_requests` (the draw order the RTL runner mirrors).

    Cycle ``t`` uses the ``t``-th double ``u_t`` of ``numpy.random.default_rng(seed).random()``
    (one draw per cycle from cycle 0, whether or not a response is presented); ``resp.ready`` is
    ``u_t >= resp_backpressure``. With ``resp_backpressure == 0`` it is always 1 (no draws needed).
    """

    _CHUNK = 1 << 16

    def __init__(self, resp_backpressure: float = 0.0, seed: int = 0):
        if not isinstance(resp_backpressure, (int, float)) or not 0.0 <= resp_backpressure < 1.0:
            raise ValueError(f"resp_backpressure must be a probability in [0, 1), "
                             f"not {resp_backpressure!r}")
        self.p = float(resp_backpressure)
        self._rng = np.random.default_rng(seed)
        self._ready = np.zeros(0, dtype=bool)

    def _extend(self, t):
        while t >= self._ready.size:
            self._ready = np.concatenate([self._ready, self._rng.random(self._CHUNK) >= self.p])

    def __call__(self, t: int) -> bool:
        if self.p == 0.0:
            return True
        self._extend(t)
        return bool(self._ready[t])

    def next_ready(self, t: int) -> int:
        """The first cycle >= ``t`` with ``resp.ready``."""
        if self.p == 0.0:
            return t
        while True:
            self._extend(t)
            idx = np.flatnonzero(self._ready[t:])
            if idx.size:
                return t + int(idx[0])
            t = self._ready.size


class _Channel:
    __slots__ = ("queue", "open_row", "act", "pre", "rd", "wr", "last_col", "last_col_g",
                 "last_rd", "last_wr", "last_wr_g", "last_act", "last_act_g", "acts", "last_ref",
                 "inflight", "resp", "pending_ref", "prea_all", "wake", "occ_since", "new")

    def __init__(self, banks, groups):
        self.queue = []                  # entries (index, bank, group, row, write), oldest first
        self.open_row = [-1] * banks     # -1: closed
        self.act = [_NEG] * banks
        self.pre = [_NEG] * banks
        self.rd = [_NEG] * banks
        self.wr = [_NEG] * banks
        self.last_col = _NEG
        self.last_col_g = [_NEG] * groups
        self.last_rd = _NEG
        self.last_wr = _NEG
        self.last_wr_g = -1
        self.last_act = _NEG
        self.last_act_g = [_NEG] * groups
        self.acts = deque([_NEG] * 4, maxlen=4)   # last four ACTs, acts[0] the fourth-last
        self.last_ref = _NEG
        self.inflight = 0
        self.resp = deque()              # [complete_cycle, index, data, write], completion order
        self.pending_ref = False
        self.prea_all = False            # a restart's refresh: PREA of every bank before REF
        self.wake = _INF
        self.occ_since = 0
        self.new = []


class HbmReference:
    """The reference model, one unit cycle per :meth:`step`.

    Parameters
    ----------
    preset : HbmPreset
    ports : int
        Request ports and response ports (>= 1; §2 "Ingress", "Response ports").
    storage_words : int
        64-bit words of storage (>= 0); bytes at or beyond ``8 * storage_words`` read as 0 and
        writes there are dropped (§4).
    line_bytes : int
        Data width of a port in bytes: 8 (one 64-bit word, the default) or a larger power of two
        up to ``preset.access_bytes``; reads return the aligned line containing the address.

    Raises
    ------
    ValueError
        ``ports``, ``storage_words`` or ``line_bytes`` out of range, or ``preset`` not an
        :class:`HbmPreset`.
    """

    def __init__(self, preset: HbmPreset, *, ports: int = 1, storage_words: int = 0,
                 line_bytes: int = 8):
        if not isinstance(preset, HbmPreset):
            raise ValueError(f"preset must be an HbmPreset, not {preset!r}")
        if not isinstance(ports, int) or isinstance(ports, bool) or ports < 1:
            raise ValueError(f"ports must be a positive integer, not {ports!r}")
        if not isinstance(storage_words, int) or isinstance(storage_words, bool) or storage_words < 0:
            raise ValueError(f"storage_words must be a non-negative integer, not {storage_words!r}")
        check_line_bytes(preset, line_bytes)
        self.preset = preset
        self.ports = ports
        self.line_bytes = line_bytes
        self.storage = np.zeros(storage_words, dtype=np.uint64)
        self.cycle = 0                        # the next cycle to simulate
        self._eager = True                    # step(): evaluate every channel every cycle
        self._n_accepted = 0
        self._accept_cycle = []               # by index
        self._simple = preset.fixed_latency is not None
        t = preset.unit_timing()
        self._t = t
        self._ccds = max(t.tCCD_S, t.tBURST)
        self._ccdl = max(t.tCCD_L, t.tBURST)
        self._rl = t.tCL + t.tBURST
        self._wl = t.tWL + t.tBURST
        self._wr_pre = t.tWL + t.tBURST + t.tWR
        self._rd_wr = t.tCL + t.tBURST + t.tRTRS - t.tWL
        self._wr_rd_s = t.tWL + t.tBURST + t.tWTR_S
        self._wr_rd_l = t.tWL + t.tBURST + t.tWTR_L
        fb = preset.field_bits()
        self._fb = {k: (lsb, (1 << w) - 1) for k, (lsb, w) in fb.items()}
        C = 1 if self._simple else preset.channels
        self._C = C
        self._bpg = preset.banks_per_group
        self._ch = [_Channel(preset.banks, preset.bank_groups) for _ in range(C)]
        self._rr = 0
        self._next_ref = t.tREFI if (preset.refresh and not self._simple) else _INF
        self._restart_due = False             # the refresh due at _next_ref follows a restart
        # simple preset: the fixed-latency pipe (§3)
        self._pipe = deque()                  # [advance count at acceptance, index, data, write]
        self._adv = 0                         # advancing cycles so far
        self._st = {
            "reads": 0, "writes": 0, "bytes_read": 0, "bytes_written": 0,
            "row_hits": 0, "row_misses": 0, "row_conflicts": 0,
            "activates": 0, "precharges": 0, "refreshes": 0,
            "read_latency_sum": 0, "read_latency_min": 0, "read_latency_max": 0,
            "read_latency_hist": [0] * HIST_BINS,
            "busy": [0] * C, "queue_occupancy_sum": [0] * C, "queue_occupancy_max": [0] * C,
        }
        self._n_lat = 0

    # -- back door -------------------------------------------------------------------------------

    def load(self, word_addr: int, words) -> None:
        """Write ``words`` (uint64 array) into the storage from 64-bit word ``word_addr``.

        Raises ``ValueError`` if the range leaves the storage."""
        words = np.asarray(words, dtype=np.uint64).ravel()
        if not isinstance(word_addr, int) or word_addr < 0 or word_addr + words.size > self.storage.size:
            raise ValueError(f"word_addr must place {words.size} words inside the storage of "
                             f"{self.storage.size} words, not {word_addr!r}")
        self.storage[word_addr:word_addr + words.size] = words

    def dump(self, word_addr: int, n: int) -> np.ndarray:
        """Copy of ``n`` 64-bit words (uint64) from word ``word_addr``; ``ValueError`` if out of range."""
        if not isinstance(word_addr, int) or not isinstance(n, int) or word_addr < 0 or n < 0 \
                or word_addr + n > self.storage.size:
            raise ValueError(f"word_addr, n must be a range inside the storage of "
                             f"{self.storage.size} words, not {word_addr!r}, {n!r}")
        return self.storage[word_addr:word_addr + n].copy()

    # -- statistics ------------------------------------------------------------------------------

    @property
    def stats(self) -> dict:
        """The §5 statistics up to the current cycle (a fresh dict; lists are copies)."""
        s = {k: (list(v) if isinstance(v, list) else v) for k, v in self._st.items()}
        s["cycles"] = self.cycle
        for c, ch in enumerate(self._ch):
            s["queue_occupancy_sum"][c] += len(ch.queue) * max(0, self.cycle - ch.occ_since)
        return s

    def _set_occ(self, c, ch, t):
        """The occupancy of ``ch`` changes at the end of cycle ``t``: account for it so far."""
        self._st["queue_occupancy_sum"][c] += len(ch.queue) * (t + 1 - ch.occ_since)
        ch.occ_since = t + 1

    # -- one cycle -------------------------------------------------------------------------------

    def peek_response(self) -> Response | None:
        """What ``resp`` shows in the current cycle (the first port's response) or ``None``."""
        out = self._present(self.cycle)
        return out[0] if out else None

    def peek_responses(self) -> list[Response]:
        """The responses the response ports present in the current cycle (port 0 first; ports
        without a response are not listed, and they are always the highest-numbered ones)."""
        return self._present(self.cycle)

    def queue_free(self, addr: int) -> bool:
        """Whether a request to ``addr`` would be accepted now as the only one offered (req.ready)."""
        if self._simple:
            return not self._pipe or self._pipe[0][0] + self.preset.fixed_latency > self._adv
        c = (addr >> self._fb["channel"][0]) & self._fb["channel"][1]
        return len(self._ch[c].queue) < self.preset.queue_depth

    def step(self, offered: Sequence[Request] = (), resp_ready: bool = True,
             refresh_restart: bool = False) -> tuple[int, Response | None]:
        """Simulate one unit cycle (``ports == 1``).

        Parameters
        ----------
        offered : sequence of Request
            The requests presented this cycle, in order (only the first is considered with one
            port). ``issue_cycle`` is ignored here.
        resp_ready : bool
            ``resp.ready`` this cycle.
        refresh_restart : bool
            The RTL's ``refresh_restart`` input this cycle (:meth:`restart_refresh`).

        Returns
        -------
        (accepted, response)
            How many of ``offered`` were accepted (their indices continue the acceptance count),
            and the response transferred this cycle or ``None``.
        """
        if self.ports != 1:
            raise ValueError(f"step() serves one port; use step_ports() with ports={self.ports!r}")
        n, out = self.step_ports(offered, resp_ready, refresh_restart)
        return n, (out[0] if out else None)

    def restart_refresh(self, t: int) -> None:
        """``refresh_restart`` high in cycle ``t`` (``docs/hbm_model.md`` §2 "Refresh restart"): a
        refresh becomes due in cycle ``t + 1`` in every channel (merged with one already due and
        not yet issued), preceded by a PREA of every bank, open or not, and the next ones in
        ``t + 1 + k * tREFI``. Call it after simulating cycle
        ``t`` and before cycle ``t + 1`` (``step``/``step_ports`` do, given ``refresh_restart``).
        No effect without refresh or on a fixed-latency preset."""
        if self.preset.refresh and not self._simple:
            self._next_ref = t + 1
            self._restart_due = True

    def step_ports(self, offered: Sequence[Request | None] = (), resp_ready=True,
                   refresh_restart: bool = False) -> tuple[int, list[Response]]:
        """Simulate one unit cycle with up to ``ports`` requests and responses.

        Parameters
        ----------
        offered : sequence of Request or None
            Entry ``k`` is request port ``k``'s request, ``None`` if that port is not valid
            (entries beyond ``ports`` are ignored).
        resp_ready : bool or sequence of bool
            ``resp.ready`` of every response port, or one per port.
        refresh_restart : bool
            The RTL's ``refresh_restart`` input this cycle (:meth:`restart_refresh`).

        Returns
        -------
        (accepted, responses)
            How many of the valid ports were accepted (always the first ones, §2 "Ingress";
            their indices continue the acceptance count in port order) and the responses
            transferred this cycle (``Response.port`` tells the port).
        """
        t = self.cycle
        n, out = self._cycle(t, offered, resp_ready)
        if refresh_restart:
            self.restart_refresh(t)
        self.cycle = t + 1
        return n, out

    def _present(self, t) -> list[Response]:
        if self._simple:
            if self._pipe and self._pipe[0][0] + self.preset.fixed_latency <= self._adv:
                e = self._pipe[0]
                return [Response(e[1], e[2], e[3], 0)]
            return []
        out = []
        C = self._C
        for k in range(C):
            c = (self._rr + k) % C
            q = self._ch[c].resp
            if q and q[0][0] <= t:
                e = q[0]
                out.append(Response(e[1], e[2], e[3], c, len(out)))
                if len(out) == self.ports:
                    break
        return out

    def _storage_access(self, r: Request) -> int:
        lw = self.line_bytes >> 3
        base = (r.addr >> 3) & ~(lw - 1)
        size = self.storage.size
        if base >= size:
            return 0
        if r.write:
            for k in range(min(lw, size - base)):
                strb = (r.wstrb >> (8 * k)) & 0xFF
                if not strb:
                    continue
                m = 0
                for i in range(8):
                    if (strb >> i) & 1:
                        m |= 0xFF << (8 * i)
                old = int(self.storage[base + k])
                word = (r.data >> (64 * k)) & _MASK64
                self.storage[base + k] = np.uint64((old & ~m & _MASK64) | (word & m))
            return 0
        out = 0
        for k in range(min(lw, size - base)):
            out |= int(self.storage[base + k]) << (64 * k)
        return out

    def _cycle(self, t, offered, resp_ready) -> tuple[int, list[Response]]:
        st = self._st
        if self._simple:
            return self._cycle_simple(t, offered, resp_ready)
        # refresh becomes due (all channels at once)
        if t >= self._next_ref:
            for ch in self._ch:
                ch.pending_ref = True
                ch.prea_all = ch.prea_all or self._restart_due
                ch.wake = min(ch.wake, t)
            self._next_ref += self._t.tREFI
            self._restart_due = False
        # response port: state at the start of t
        presented = self._present(t)
        accepted = self._admit(offered)
        # commands, from the state at the start of t (queues without this cycle's arrivals)
        eager = self._eager
        for c, ch in enumerate(self._ch):
            if eager or ch.wake <= t:
                self._schedule(c, ch, t)
        # end of t: responses leave
        out = []
        if presented:
            if isinstance(resp_ready, (bool, int, np.bool_)):
                presented = presented if resp_ready else []
            else:
                presented = [resp for resp in presented if resp_ready[resp.port]]
        if presented:
            for resp in presented:
                ch = self._ch[resp.channel]
                ch.resp.popleft()
                ch.inflight -= 1
                if ch.wake > t + 1:
                    ch.wake = t + 1
                self._deliver(resp.index, resp.write, t)
            self._rr = (presented[-1].channel + 1) % self._C
            out = presented
        # end of t: arrivals enter their queues, classified against the bank state at t + 1
        fb = self._fb
        for c, r in accepted:
            ch = self._ch[c]
            idx = self._n_accepted
            self._n_accepted += 1
            self._accept_cycle.append(t)
            data = self._storage_access(r)
            bank = ((r.addr >> fb["bank_group"][0]) & fb["bank_group"][1]) * self._bpg \
                + ((r.addr >> fb["bank"][0]) & fb["bank"][1])
            row = (r.addr >> fb["row"][0]) & fb["row"][1]
            orow = ch.open_row[bank]
            if orow == row:
                st["row_hits"] += 1
            elif orow < 0:
                st["row_misses"] += 1
            else:
                st["row_conflicts"] += 1
            if r.write:
                st["writes"] += 1
            else:
                st["reads"] += 1
            self._set_occ(c, ch, t)
            ch.queue.append((idx, bank, bank // self._bpg, row, bool(r.write), data))
            if len(ch.queue) > st["queue_occupancy_max"][c]:
                st["queue_occupancy_max"][c] = len(ch.queue)
            if ch.wake > t + 1:
                ch.wake = t + 1
        return len(accepted), out

    def _admit(self, offered) -> list:
        """§2 Ingress: [(channel, request)] accepted this cycle, in port order. Occupancy at the
        start of the cycle plus the requests of lower ports accepted to the same channel; the
        first refused valid port refuses every port above it."""
        accepted = []
        fch_lsb, fch_m = self._fb["channel"]
        qd = self.preset.queue_depth
        added = {}
        for r in offered[:self.ports]:
            if r is None:
                continue
            c = (r.addr >> fch_lsb) & fch_m
            k = added.get(c, 0)
            if len(self._ch[c].queue) + k >= qd:
                break
            added[c] = k + 1
            accepted.append((c, r))
        return accepted

    def _deliver(self, index, write, t):
        st = self._st
        if write:
            st["bytes_written"] += self.preset.access_bytes
            return
        st["bytes_read"] += self.preset.access_bytes
        lat = t - self._accept_cycle[index]
        st["read_latency_sum"] += lat
        if self._n_lat == 0 or lat < st["read_latency_min"]:
            st["read_latency_min"] = lat
        if lat > st["read_latency_max"]:
            st["read_latency_max"] = lat
        st["read_latency_hist"][min(lat // HIST_BIN_CYCLES, HIST_BINS - 1)] += 1
        self._n_lat += 1

    def _pre_earliest(self, ch, b):
        t = self._t
        return max(ch.act[b] + t.tRAS, ch.rd[b] + t.tRTP, ch.wr[b] + self._wr_pre)

    def _schedule(self, c, ch, t):
        """Choose and issue this cycle's row and column command of channel ``c`` (§2)."""
        T = self._t
        st = self._st
        open_row = ch.open_row
        if ch.pending_ref:
            opened = [b for b, r in enumerate(open_row) if r >= 0]
            if opened or ch.prea_all:
                e = max((self._pre_earliest(ch, b) for b in opened), default=_NEG)
                if e <= t:                                   # PREA (after a restart: every bank)
                    for b in (range(len(open_row)) if ch.prea_all else opened):
                        open_row[b] = -1
                        ch.pre[b] = t
                    ch.prea_all = False
                    st["precharges"] += 1
                    ch.wake = t + 1
                else:
                    ch.wake = e
            else:
                e = max(max(ch.pre[b] + T.tRP, ch.act[b] + T.tRC) for b in range(len(open_row)))
                if e <= t:                                   # REF
                    ch.last_ref = t
                    ch.pending_ref = False
                    st["refreshes"] += 1
                    ch.wake = t + 1
                else:
                    ch.wake = e
            return
        q = ch.queue
        hitmask = 0
        for e in q:
            if open_row[e[1]] == e[3]:
                hitmask |= 1 << e[1]
        col = None
        row = None           # (kind, entry or bank)
        wake = _INF
        col_possible = ch.inflight < self.preset.response_depth
        for e in q:
            b = e[1]
            r = open_row[b]
            if r == e[3]:
                if col is None and col_possible:
                    g = e[2]
                    ce = max(ch.act[b] + T.tRCD, ch.last_col + self._ccds,
                             ch.last_col_g[g] + self._ccdl)
                    if e[4]:
                        ce = max(ce, ch.last_rd + self._rd_wr)
                    else:
                        ce = max(ce, ch.last_wr + (self._wr_rd_l if ch.last_wr_g == g
                                                   else self._wr_rd_s))
                    if ce <= t:
                        col = e
                    elif ce < wake:
                        wake = ce
            elif row is None:
                if r < 0:
                    g = e[2]
                    ae = max(ch.pre[b] + T.tRP, ch.act[b] + T.tRC, ch.last_act + T.tRRD_S,
                             ch.last_act_g[g] + T.tRRD_L, ch.acts[0] + T.tFAW,
                             ch.last_ref + T.tRFC)
                    if ae <= t:
                        row = ("ACT", e)
                    elif ae < wake:
                        wake = ae
                elif not (hitmask >> b) & 1:
                    pe = self._pre_earliest(ch, b)
                    if pe <= t:
                        row = ("PRE", b)
                    elif pe < wake:
                        wake = pe
        if row is None and self.preset.page_policy == "closed":
            for b, r in enumerate(open_row):
                if r >= 0 and not (hitmask >> b) & 1:
                    pe = self._pre_earliest(ch, b)
                    if pe <= t:
                        row = ("PRE", b)
                        break
                    if pe < wake:
                        wake = pe
        issued = False
        if col is not None:
            idx, b, g, _, write, data = col
            self._set_occ(c, ch, t)          # the queue shrinks at the end of t
            q.remove(col)
            if write:
                ch.wr[b] = t
                ch.last_wr = t
                ch.last_wr_g = g
                done = t + self._wl
            else:
                ch.rd[b] = t
                ch.last_rd = t
                done = t + self._rl
            ch.last_col = t
            ch.last_col_g[g] = t
            ch.inflight += 1
            ch.resp.append([done, idx, data, write])
            st["busy"][c] += T.tBURST
            issued = True
        if row is not None:
            if row[0] == "ACT":
                e = row[1]
                b = e[1]
                open_row[b] = e[3]
                ch.act[b] = t
                ch.last_act = t
                ch.last_act_g[e[2]] = t
                ch.acts.append(t)
                st["activates"] += 1
            else:
                b = row[1]
                open_row[b] = -1
                ch.pre[b] = t
                st["precharges"] += 1
            issued = True
        ch.wake = t + 1 if issued else wake

    def _cycle_simple(self, t, offered, resp_ready):
        st = self._st
        L = self.preset.fixed_latency
        pipe = self._pipe
        head_valid = bool(pipe) and pipe[0][0] + L <= self._adv
        if not isinstance(resp_ready, (bool, int, np.bool_)):
            resp_ready = bool(resp_ready[0])
        advance = (not head_valid) or resp_ready
        out = []
        n = 0
        if advance:
            if head_valid:
                e = pipe.popleft()
                out.append(Response(e[1], e[2], e[3], 0))
                self._deliver(e[1], e[3], t)
            if offered and offered[0] is not None:
                r = offered[0]
                idx = self._n_accepted
                self._n_accepted += 1
                self._accept_cycle.append(t)
                data = self._storage_access(r)
                st["writes" if r.write else "reads"] += 1
                st["busy"][0] += 1
                pipe.append([self._adv, idx, data, bool(r.write)])
                n = 1
            self._adv += 1
        return n, out


def run_requests(preset: HbmPreset, requests: Sequence[Request], *, max_outstanding: int | None = None,
                 ports: int = 1, resp_backpressure: float = 0.0, seed: int = 0,
                 storage_words: int = 0, storage: np.ndarray | None = None,
                 skip_idle: bool = True, line_bytes: int = 8,
                 refresh_restarts: Sequence[int] = ()) -> TraceResult:
    """Run a request trace through the reference model.

    Trace-issue semantics (the RTL trace runner mirrors them): requests are offered in trace
    order. In cycle ``t`` the offered requests are the first not-yet-accepted ones, at most
    ``ports`` of them, stopping before the first whose ``issue_cycle > t``, and at most
    ``max_outstanding - outstanding`` of them, where ``outstanding`` is the number of requests
    accepted but whose response has not been transferred, counted at the start of ``t``. The
    model accepts a prefix of them (§2 Ingress). With one port this means: request ``i`` is
    offered from cycle ``max(issue_cycle_i, accept_cycle_{i-1} + 1)`` until accepted, while fewer
    than ``max_outstanding`` requests are outstanding. ``resp.ready`` in cycle ``t`` is
    :class:`ReadyStream` ``(resp_backpressure, seed)(t)``. Request indices (tags) are trace
    positions, because acceptance is in trace order.

    Parameters
    ----------
    preset : HbmPreset
    requests : sequence of Request
    max_outstanding : int or None
        Limit of accepted-but-untransferred requests (>= 1); ``None``: no limit.
    ports : int
        Request and response ports (>= 1); the offered requests go to ports 0, 1, ... in
        trace order; one ``resp.ready`` for all response ports.
    resp_backpressure : float
        Probability in [0, 1) that ``resp.ready`` is low in a cycle.
    seed : int
        Seed of the ``resp.ready`` draws.
    storage_words : int
        Storage size in 64-bit words (0: timing only).
    storage : numpy.ndarray of uint64, optional
        Initial image (loaded at word 0; ``storage_words`` defaults to its size).
    skip_idle : bool
        Skip cycles in which nothing can happen (default); ``False`` steps every cycle with every
        channel evaluated (:meth:`HbmReference.step_ports`) — same result, slower.
    line_bytes : int
        Data width of a port (:class:`HbmReference`); ``Completion.data`` is that line.
    refresh_restarts : sequence of int
        Cycles in which ``refresh_restart`` is high (:meth:`HbmReference.restart_refresh`),
        strictly increasing, each >= 0; the run ends when the last request completes, whatever
        restarts are left.

    Returns
    -------
    TraceResult
        ``cycles`` = last completion cycle + 1 (0 for an empty trace); ``stats["cycles"]`` equal.

    Raises
    ------
    ValueError
        A bad argument, or a request with a negative or non-integer address / issue cycle
        (the message gives its index).
    """
    if max_outstanding is not None and (not isinstance(max_outstanding, int)
                                        or isinstance(max_outstanding, bool) or max_outstanding < 1):
        raise ValueError(f"max_outstanding must be None or a positive integer, not {max_outstanding!r}")
    for i, r in enumerate(requests):
        if not isinstance(r, Request):
            raise ValueError(f"requests[{i}] must be a Request, not {r!r}")
        if not isinstance(r.addr, int) or r.addr < 0:
            raise ValueError(f"requests[{i}].addr must be a non-negative integer, not {r.addr!r}")
        if not isinstance(r.issue_cycle, int) or r.issue_cycle < 0:
            raise ValueError(f"requests[{i}].issue_cycle must be a non-negative integer, "
                             f"not {r.issue_cycle!r}")
    restarts = check_refresh_restarts(refresh_restarts)
    if storage is not None:
        storage = np.asarray(storage, dtype=np.uint64).ravel()
        storage_words = max(storage_words, storage.size)
    model = HbmReference(preset, ports=ports, storage_words=storage_words, line_bytes=line_bytes)
    if storage is not None:
        model.load(0, storage)
    model._eager = not skip_idle
    ready = ReadyStream(resp_backpressure, seed)
    N = len(requests)
    limit = max_outstanding if max_outstanding is not None else N + 1
    completions: list[Completion | None] = [None] * N
    nxt = 0           # first request not yet accepted
    done = 0
    outstanding = 0
    t = 0
    P = ports
    ri = 0            # next refresh restart
    while done < N:
        # offered requests in cycle t
        room = min(P, limit - outstanding)
        offered = []
        i = nxt
        while len(offered) < room and i < N and requests[i].issue_cycle <= t:
            offered.append(requests[i])
            i += 1
        model.cycle = t
        restart = ri < len(restarts) and restarts[ri] == t
        ri += restart
        n, out = model.step_ports(offered, ready(t), restart)
        for k in range(n):
            completions[nxt + k] = Completion(nxt + k, t, -1, 0, bool(requests[nxt + k].write))
        nxt += n
        outstanding += n - len(out)
        for resp in out:
            c = completions[resp.index]
            c.complete_cycle = t
            c.data = resp.data
            done += 1
        if not skip_idle or done == N:
            t += 1
            continue
        t = _next_event(model, requests, t, nxt, outstanding, limit, ready)
        if ri < len(restarts) and restarts[ri] < t and not model._simple:
            t = restarts[ri]          # a restart before the next event (no-op on a fixed-latency pipe)
    cycles = t
    model.cycle = cycles
    stats = model.stats
    return TraceResult(completions=completions, stats=stats, cycles=cycles, preset=preset)


def check_refresh_restarts(refresh_restarts) -> list[int]:
    """``refresh_restarts`` as a list (strictly increasing non-negative integer cycles); raises
    ``ValueError`` naming the argument and the first bad value otherwise."""
    out, last = [], -1
    for c in refresh_restarts:
        if not isinstance(c, (int, np.integer)) or isinstance(c, bool) or c <= last:
            raise ValueError(f"refresh_restarts must be strictly increasing non-negative integer "
                             f"cycles, not {c!r} (after {last})")
        out.append(int(c))
        last = int(c)
    return out


def _next_event(model: HbmReference, requests, t, nxt, outstanding, limit, ready) -> int:
    """The first cycle after ``t`` in which something can happen (see :func:`run_requests`)."""
    nt = _INF
    if model._simple:
        # the pipe advances in every cycle whose output is empty, and holds while its output is
        # valid and resp.ready is low (then nothing can be accepted either)
        L = model.preset.fixed_latency
        pipe = model._pipe
        t_in = _INF
        if nxt < len(requests) and outstanding < limit:
            t_in = max(t + 1, requests[nxt].issue_cycle)
        if pipe:
            h = pipe[0][0] + L - model._adv
            if h <= 0:
                return ready.next_ready(t + 1)
            t_valid = t + 1 + h
            if t_in < t_valid:
                model._adv += t_in - (t + 1)
                return t_in
            model._adv += h
            return ready.next_ready(t_valid)
        if t_in == _INF:
            return t + 1
        model._adv += t_in - (t + 1)
        return t_in
    for ch in model._ch:
        if ch.wake < nt:
            nt = ch.wake
        if ch.resp:
            h = max(ch.resp[0][0], t + 1)
            if h < nt:
                h = ready.next_ready(h)
                if h < nt:
                    nt = h
    if nxt < len(requests) and outstanding < limit:
        r = requests[nxt]
        c = (r.addr >> model._fb["channel"][0]) & model._fb["channel"][1]
        if len(model._ch[c].queue) < model.preset.queue_depth:
            nt = min(nt, max(t + 1, r.issue_cycle))
    nt = min(nt, model._next_ref)
    return max(nt, t + 1)
