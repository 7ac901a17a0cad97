"""Core-only baseline: an out-of-order core doing the gathers itself, against the HBM reference model.

The comparison the DAE unit must win (BRIEF §9-10, issue 11; the Ember paper's characterisation,
arXiv 2504.09870 Figs. 3-4): the same kernel's sequential form (``sim.core_trace``) runs on a core
whose memory-level parallelism is limited by its L1 miss-status holding registers (MSHRs) and by
the dependence of each address on a loaded index, on the same memory model
(``hw.hbm_model.reference.HbmReference``, stepped once per memory cycle, so the memory sees
exactly the requests and timing a trace run with those acceptance cycles would see).

Pipeline, per core cycle ``c`` (in this order):

1. fills: a line whose data arrive at ``c`` is written to L1 and L2, its MSHR is freed, and every
   load merged on it gets the line; a load completes when its last line has arrived
   (``c``) and its L1 hits are done (issue + ``l1_latency``);
2. memory (when ``c`` is a memory cycle ``m = c / clock_ratio``): the oldest line requests whose
   ready time is ``<= c`` are offered (at most ``ports``) in MSHR-allocation order; a response
   transferred in memory cycle ``m`` fills its line at core cycle ``(m + 1) * clock_ratio``;
3. wake-up: instructions completing at ``c`` wake their dependents, which may issue at ``c``;
4. issue, oldest ready first, at most ``width`` instructions and ``load_ports`` loads: an ALU
   instruction completes at ``c + latency``, a store at ``c + 1`` (it writes its lines into L1/L2
   without memory traffic: stores drain from the store buffer off the critical path — generous
   to the core); a load whose addresses an earlier store wrote is forwarded from the store
   (completes at ``c + l1_latency``, no lookup); any other load looks up each of its lines:
   L1 hit (``c + l1_latency``); merge into the MSHR already fetching the line; else it needs a
   free MSHR: an L2 hit fills at ``c + l2_latency``, an L2 miss becomes a memory request ready
   at ``c + l2_latency + uncore_latency``. Lines that find no free MSHR stay pending and the
   load retries (without an issue slot) when one frees;
5. retire, in order, at most ``width`` completed instructions;
6. dispatch, in program order, at most ``width`` instructions into the reorder buffer (at most
   ``rob_entries``, and at most ``load_buffer`` loads in it).

So a chain of dependent loads that miss everywhere costs ``l2_latency + uncore_latency +
memory latency + 1`` cycles per load (``clock_ratio`` 1), and ``M`` MSHRs sustain at most ``M``
lines per that round trip (Little's law). Branches are predicted perfectly and stores cost no
memory traffic: both favour the core, so the DAE ratio measured against this model is a lower
bound on the real one.

Defaults (:class:`CoreConfig`) are Intel's Golden Cove as used in Sapphire Rapids (server): see
the class docstring for each figure and its source.
"""

from __future__ import annotations

import heapq
from collections import OrderedDict, deque
from dataclasses import dataclass, field, fields

from hw.hbm_model.presets import HbmPreset
from hw.hbm_model.reference import HbmReference, Request

from .core_trace import ALU, LINE_BYTES, LOAD, STORE, Trace

__all__ = ["CoreConfig", "CoreResult", "run_core", "MemoryAccess"]

_INF = 1 << 62


@dataclass(frozen=True)
class CoreConfig:
    """Parameters of the out-of-order core (core cycles, bytes, entries).

    Defaults: Intel Golden Cove (Alder Lake P-core; Sapphire Rapids' core), from Intel
    Architecture Day 2021 as reported by Chips and Cheese, "Popping the Hood on Golden Cove"
    (2021-12-02) and "Sapphire Rapids: Golden Cove Hits Servers" (2023):

    mshrs : int
        L1D misses in flight (MSHRs / fill buffers): Golden Cove has 16 (up from 12 in Sunny
        Cove); the benchmark sweeps 8, 16, 32. Misses to the same 64-byte line merge.
    rob_entries : int
        Reorder buffer: 512.
    width : int
        Instructions dispatched, issued and retired per cycle: 6 (6-wide decode/rename).
    load_ports : int
        Loads per cycle: 2 (three 256-bit or two 512-bit loads per cycle).
    load_buffer : int
        Loads in the reorder buffer at most: 192.
    l1_bytes, l1_ways, l1_latency : int
        L1D: 48 KiB, 12-way, 5 cycles load-to-use (0 bytes: no L1).
    l2_bytes, l2_ways, l2_latency : int
        L2: 2 MiB, 16-way (Sapphire Rapids), about 16 cycles (0 bytes: no L2; the latency is then
        the time from an L1 miss to the memory request). >= 1.
    uncore_latency : int
        Extra cycles from an L2 miss to the memory request (mesh, LLC lookup, memory controller);
        0 by default, i.e. the core talks to the memory model as directly as the access unit does
        (generous to the core).
    clock_ratio : int
        Core cycles per memory (unit) cycle: 1 (the access unit and its execute core run at the
        memory's clock in this project's cycle counts; Sapphire Rapids runs ~2-4x faster than
        HBM2's 1 GHz command clock — set 3 for that).

    Raises
    ------
    ValueError
        A field out of range (named in the message).
    """
    mshrs: int = 16
    rob_entries: int = 512
    width: int = 6
    load_ports: int = 2
    load_buffer: int = 192
    l1_bytes: int = 48 * 1024
    l1_ways: int = 12
    l1_latency: int = 5
    l2_bytes: int = 2 * 1024 * 1024
    l2_ways: int = 16
    l2_latency: int = 16
    uncore_latency: int = 0
    clock_ratio: int = 1

    def __post_init__(self):
        for f in fields(self):
            v = getattr(self, f.name)
            low = 0 if f.name in ("l1_bytes", "l2_bytes", "uncore_latency") else 1
            if not isinstance(v, int) or isinstance(v, bool) or v < low:
                raise ValueError(f"{f.name} must be an integer >= {low}, not {v!r}")
        for size, ways, name in ((self.l1_bytes, self.l1_ways, "l1"), (self.l2_bytes, self.l2_ways, "l2")):
            if size and size % (ways * LINE_BYTES):
                raise ValueError(f"{name}_bytes must be a multiple of {name}_ways x {LINE_BYTES}, "
                                 f"not {size!r}")


@dataclass(frozen=True)
class MemoryAccess:
    """One line request: its line address, the memory cycles it was accepted and its response
    transferred (``HbmReference`` acceptance and completion)."""
    line: int
    accept_cycle: int
    complete_cycle: int


@dataclass
class CoreResult:
    """Outcome of :func:`run_core`.

    ``cycles``: memory (unit) cycles from 0 to the last retirement, inclusive; ``core_cycles``
    the same in core cycles. ``load_bytes``: useful bytes of the kernel's loads;
    ``bytes_per_cycle`` = load_bytes / cycles. ``mshr_mean``/``mshr_peak``: MSHRs occupied per
    core cycle. ``memory_requests``: lines fetched from memory; ``l1_hits``, ``l2_hits``,
    ``merged`` (line lookups merged into an in-flight MSHR) count line lookups; ``forwarded``
    loads served by store-to-load forwarding (``Trace.forwarded``).
    ``mshr_wait_cycles``: core cycles in which some load waited for an MSHR. ``stats``: the
    memory model's statistics (docs/hbm_model.md §5). ``accesses``: every line request.
    ``retire_cycles``: with ``run_core(..., record_retire=True)``, the core cycle in which each
    instruction retired, in program order (else empty).
    """
    cycles: int
    core_cycles: int
    instructions: int
    loads: int
    load_bytes: int
    memory_requests: int
    l1_hits: int
    l2_hits: int
    merged: int
    forwarded: int
    mshr_mean: float
    mshr_peak: int
    mshr_wait_cycles: int
    stats: dict
    accesses: list = field(default_factory=list)
    retire_cycles: list = field(default_factory=list)

    @property
    def bytes_per_cycle(self) -> float:
        return self.load_bytes / self.cycles if self.cycles else 0.0


class _Cache:
    """Set-associative LRU cache of line addresses (no data)."""

    def __init__(self, size: int, ways: int):
        self.sets = size // (ways * LINE_BYTES)
        self.ways = ways
        self._s = [OrderedDict() for _ in range(self.sets)]

    def hit(self, line: int) -> bool:
        if not self.sets:
            return False
        s = self._s[(line // LINE_BYTES) % self.sets]
        if line in s:
            s.move_to_end(line)
            return True
        return False

    def insert(self, line: int) -> None:
        if not self.sets:
            return
        s = self._s[(line // LINE_BYTES) % self.sets]
        s[line] = True
        s.move_to_end(line)
        if len(s) > self.ways:
            s.popitem(last=False)


def run_core(trace: Trace, preset: HbmPreset, config: CoreConfig | None = None, *,
             ports: int = 1, max_cycles: int | None = None,
             record_retire: bool = False) -> CoreResult:
    """Simulate the core on ``trace`` against ``HbmReference(preset, ports=ports)``.

    Parameters
    ----------
    trace : Trace
        From :func:`sim.core_trace.trace_kernel` (or built by hand: tests).
    preset : HbmPreset
        ``hw.hbm_model.presets`` (HBM2, HBM3, simple).
    config : CoreConfig, optional
    ports : int
        Request/response ports of the memory model (the access unit's RTL has 1).
    max_cycles : int, optional
        Stop with ``RuntimeError`` after this many core cycles (a guard; default: none).
    record_retire : bool
        Record each instruction's retirement cycle (``CoreResult.retire_cycles``).

    Returns
    -------
    CoreResult

    Raises
    ------
    ValueError
        A bad argument (named). ``RuntimeError``: ``max_cycles`` exceeded.
    """
    cfg = config or CoreConfig()
    if not isinstance(cfg, CoreConfig):
        raise ValueError(f"config must be a CoreConfig, not {config!r}")
    if not isinstance(trace, Trace):
        raise ValueError(f"trace must be a sim.core_trace.Trace, not {trace!r}")
    mem = HbmReference(preset, ports=ports)   # validates preset and ports
    kind, lat, deps, lines = trace.kind, trace.latency, trace.deps, trace.lines
    fwd = trace.forwarded if len(trace.forwarded) == len(kind) else [False] * len(kind)
    N = len(kind)
    R = cfg.clock_ratio
    l1, l2 = _Cache(cfg.l1_bytes, cfg.l1_ways), _Cache(cfg.l2_bytes, cfg.l2_ways)
    fin = [_INF] * N               # completion cycle once known
    waiters: dict[int, list] = {}  # instruction -> dispatched instructions waiting for it
    pend: dict[int, int] = {}      # dispatched instruction -> unfinished dependences
    ready: list = []               # heap of instruction numbers
    events: list = []              # heap of (cycle, instruction) completions
    fills: list = []               # heap of (cycle, line)
    mshr: dict[int, list] = {}     # line -> loads waiting for it
    todo: dict[int, list] = {}     # load -> its lines not yet looked up / allocated
    need: dict[int, int] = {}      # load -> lines still to arrive
    ldone: dict[int, int] = {}     # load -> earliest completion from its hits / fills
    blocked: list = []             # loads waiting for an MSHR
    outq: deque = deque()          # (ready core cycle, line) memory requests in order
    accepted: list = []            # line of each accepted request, by acceptance index
    accept_at: list = []
    accesses: list = []
    rob: deque = deque()
    retire_log: list = []          # retirement core cycle per instruction (record_retire)
    loads_in_rob = 0
    nxt = 0
    retired = 0
    n_l1 = n_l2 = n_merge = n_forwarded = 0
    occ_sum = occ_peak = wait_cycles = 0
    c = 0
    last = 0

    def complete(i, t):
        fin[i] = t
        heapq.heappush(events, (t, i))

    while retired < N:
        if max_cycles is not None and c > max_cycles:
            raise RuntimeError(f"core model exceeded max_cycles={max_cycles} "
                               f"({retired} of {N} instructions retired)")
        # 1. fills
        while fills and fills[0][0] <= c:
            _, line = heapq.heappop(fills)
            l1.insert(line)
            l2.insert(line)
            for i in mshr.pop(line):
                need[i] -= 1
                if ldone[i] < c:
                    ldone[i] = c
                if need[i] == 0 and i not in todo:
                    del need[i]
                    complete(i, ldone.pop(i))
            if blocked:
                for i in blocked:
                    heapq.heappush(ready, i)
                blocked.clear()
        # 2. memory cycle
        if c % R == 0:
            m = c // R
            offered = []
            k = 0
            while k < len(outq) and len(offered) < ports and outq[k][0] <= c:
                offered.append(Request(outq[k][1]))
                k += 1
            n, out = mem.step_ports(offered, True)
            for _ in range(n):
                line = outq.popleft()[1]
                accepted.append(line)
                accept_at.append(m)
            for resp in out:
                line = accepted[resp.index]
                accesses.append(MemoryAccess(line, accept_at[resp.index], m))
                heapq.heappush(fills, ((m + 1) * R, line))
        # 3. wake-up
        while events and events[0][0] <= c:
            _, i = heapq.heappop(events)
            for w in waiters.pop(i, ()):
                pend[w] -= 1
                if pend[w] == 0:
                    del pend[w]
                    heapq.heappush(ready, w)
        # 4. issue
        issued = loads_issued = 0
        retry = []
        while ready and issued < cfg.width:
            i = ready[0]
            k = kind[i]
            if k == LOAD:
                if loads_issued >= cfg.load_ports:
                    # younger non-loads may still issue this cycle
                    retry.append(heapq.heappop(ready))
                    continue
                heapq.heappop(ready)
                if fwd[i]:
                    issued += 1
                    loads_issued += 1
                    n_forwarded += 1
                    complete(i, c + cfg.l1_latency)
                    continue
                first = i not in todo
                if first:
                    todo[i] = list(lines[i])
                    need[i] = 0
                    ldone[i] = c + cfg.l1_latency
                    issued += 1
                    loads_issued += 1
                left = []
                for line in todo[i]:
                    if line in mshr:
                        mshr[line].append(i)
                        need[i] += 1
                        n_merge += 1
                    elif l1.hit(line):
                        n_l1 += 1
                    elif len(mshr) < cfg.mshrs:
                        mshr[line] = [i]
                        need[i] += 1
                        if l2.hit(line):
                            n_l2 += 1
                            heapq.heappush(fills, (c + cfg.l2_latency, line))
                        else:
                            outq.append((c + cfg.l2_latency + cfg.uncore_latency, line))
                    else:
                        left.append(line)
                if left:
                    todo[i] = left
                    blocked.append(i)
                else:
                    del todo[i]
                    if need[i] == 0:
                        del need[i]
                        complete(i, ldone.pop(i))
            else:
                heapq.heappop(ready)
                issued += 1
                if k == STORE:
                    for line in lines[i]:
                        l1.insert(line)
                        l2.insert(line)
                    complete(i, c + 1)
                else:
                    complete(i, c + lat[i])
        for i in retry:
            heapq.heappush(ready, i)
        if blocked:
            wait_cycles += 1
        occ = len(mshr)
        occ_sum += occ
        if occ > occ_peak:
            occ_peak = occ
        # 5. retire
        r = 0
        while rob and r < cfg.width and fin[rob[0]] <= c:
            i = rob.popleft()
            if record_retire:
                retire_log.append(c)
            if kind[i] == LOAD:
                loads_in_rob -= 1
            r += 1
            last = c
        retired += r
        # 6. dispatch
        d = 0
        while nxt < N and d < cfg.width and len(rob) < cfg.rob_entries:
            i = nxt
            if kind[i] == LOAD:
                if loads_in_rob >= cfg.load_buffer:
                    break
                loads_in_rob += 1
            rob.append(i)
            cnt = 0
            for dep in deps[i]:
                if fin[dep] > c:
                    waiters.setdefault(dep, []).append(i)
                    cnt += 1
            if cnt:
                pend[i] = cnt
            else:
                heapq.heappush(ready, i)
            nxt += 1
            d += 1
        c += 1
    core_cycles = last + 1
    cycles = -(-core_cycles // R)
    stats = mem.stats
    return CoreResult(cycles=cycles, core_cycles=core_cycles, instructions=N,
                      loads=sum(1 for k in kind if k == LOAD), load_bytes=trace.load_bytes,
                      memory_requests=len(accepted), l1_hits=n_l1, l2_hits=n_l2, merged=n_merge,
                      forwarded=n_forwarded,
                      mshr_mean=occ_sum / max(c, 1), mshr_peak=occ_peak,
                      mshr_wait_cycles=wait_cycles, stats=stats, accesses=accesses,
                      retire_cycles=retire_log)
