"""A layer's run-ahead engines started by its ``ENTER`` uop (``Uop.start_engines``, ``docs/rtl.md``
§9.5 B): an engine whose stream's base is an IMM or ARG latches its parameters once per run (a
``PREFETCH`` with ``arm`` before ``ENTER 0``) and every non-empty entry of its layer starts it in
the ``ENTER`` cycle; the other engines keep their ``PREFETCH`` uop after ``ENTER``.

* The engine (``hw/tmu/prefetch.py``): an armed start takes base, offset, stride, size, sign
  and region from ``arm``, not from its inputs, and continues a sequence like a plain start.
* Structure: the compiled ``-O3`` SpMV, SpMM and EmbeddingBag have no ``PREFETCH`` after any
  ``ENTER``: ``ENTER k`` carries exactly the engines of layer ``k``, each armed once at the top.
* Tokens and faults, token for token against the golden model (``sw/runtime/golden.py``) with
  random back-pressure, on the compiled SpMM (empty rows, ``col`` cut: an armed engine stops
  before a faulting address), the compiled EmbeddingBag (empty bags, ``indices`` cut) and a
  hand-written CSR whose inner layer has an armed engine and one with a stream base (a
  ``PREFETCH`` after ``ENTER``; a base past its region: that engine faults). Every memory
  request the unit makes lies in a granted region (its line overlaps one), and no engine starts
  on an empty range (``lb >= ub``; tokens would not show it: starting the engines whatever the
  range failed only this check).
"""

import numpy as np

import hw.tmu.tmu as tmu_module
import tb.tmu.amaranth_bench as amaranth_bench
from hw.tmu.layouts import UopKind
from hw.tmu.prefetch import Prefetcher
from sw.compiler import compile_mlir
from sw.runtime.image import MemoryImage
from sw.runtime.isa import (Action, ActionKind, AluOp, Event, Layer, Program, Region, Source,
                            SrcKind, Stream, StreamKind)
from sw.workloads import WORKLOADS
from tb.golden_compare import assert_matches
from tb.programs import Case, random_case
from tb.seeds import fresh_seed
from tb.sim_helpers import run_sim
from tb.tmu.amaranth_bench import run_on_amaranth
from tb.tmu.test_chain import _compiled_bag
from tb.tmu.builder_bench import run_builder
from tb.tmu.test_spmm_rate import CONFIG, LIMITS, _spmm_case

MASK64 = (1 << 64) - 1


# ------------------------------------------------------------------------------ the engine
def test_armed_start_uses_the_armed_parameters():
    """``arm`` with one stream's parameters, then starts with ``p_armed`` and other values on
    the inputs: the engine issues and delivers the armed stream's elements, continues a
    contiguous range, and a plain start afterwards uses its inputs again."""
    dut = Prefetcher(4)
    words = {0x200 + 8 * n: 500 + n for n in range(16)}
    issued, popped = [], []

    async def testbench(ctx):
        pending = []

        async def cycle(n, take):
            """``n`` cycles; pop the head while fewer than ``take`` values were popped."""
            for _ in range(n):
                due = [p for p in pending if p[0] <= 0]
                for p in pending:
                    p[0] -= 1
                if due:
                    pending.remove(due[0])
                    ctx.set(dut.resp_valid, 1)
                    ctx.set(dut.resp_slot[0], due[0][1])
                    ctx.set(dut.resp_data[0], words.get(due[0][2], 0))
                else:
                    ctx.set(dut.resp_valid, 0)
                ctx.set(dut.req_grant, 1)
                if ctx.get(dut.req_valid):
                    issued.append(ctx.get(dut.req_addr))
                    pending.append([2, ctx.get(dut.req_slot), ctx.get(dut.req_addr)])
                pop = ctx.get(dut.head_valid) and len(popped) < take
                if pop:
                    popped.append(ctx.get(dut.head_data))
                ctx.set(dut.pop, pop)
                await ctx.tick()
                ctx.set(dut.pop, 0)

        def inputs(**kw):
            for name, value in kw.items():
                ctx.set(getattr(dut, f"p_{name}"), value)

        ctx.set(dut.mem_limit, MASK64)
        # a = 0x200, element i + 1, 8-byte elements, region 0x200..0x280
        inputs(base=0x200, c=1, stride=8, log2=3, sign=0, region_base=0x200, region_size=0x80)
        ctx.set(dut.arm, 1)
        await ctx.tick()
        ctx.set(dut.arm, 0)
        # garbage on the run-constant inputs: the armed start must not use them
        inputs(base=0x1000, c=5, stride=16, log2=2, sign=1, region_base=0, region_size=8,
               lb=2, ub=5, step=1)
        ctx.set(dut.p_armed, 1)
        assert ctx.get(dut.idle)
        ctx.set(dut.start, 1)
        await ctx.tick()
        ctx.set(dut.start, 0)
        await cycle(12, 3)
        assert popped == [500 + 3, 500 + 4, 500 + 5]
        # the next range continues the sequence (its lb is the head's index): no new start
        inputs(lb=5, ub=7)
        assert ctx.get(dut.idle)
        ctx.set(dut.start, 1)
        await ctx.tick()
        ctx.set(dut.start, 0)
        await cycle(12, 5)
        assert popped[3:] == [500 + 6, 500 + 7]
        # a plain start uses its inputs
        ctx.set(dut.p_armed, 0)
        inputs(base=0x200, c=0, stride=16, log2=3, sign=0, region_base=0x200, region_size=0x80,
               lb=0, ub=3, step=1)
        await cycle(6, 5)
        assert ctx.get(dut.idle)
        ctx.set(dut.start, 1)
        await ctx.tick()
        ctx.set(dut.start, 0)
        await cycle(12, 8)
        assert popped[5:] == [500, 502, 504]

    run_sim(dut, testbench)
    assert issued[0] == 0x200 + 8 * 3                  # armed: a + (lb + c) * stride


# ------------------------------------------------------------------------------ structure
def _microcode(case):
    prog = Program.decode(case.program, LIMITS)
    [(fault, _, _, writes, engines, pcs)] = run_builder(CONFIG, [(case, prog, None)],
                                                       ready_probability=1.0, seed=0)
    assert fault == 0
    return prog, [u for _, u in writes], engines, pcs


def _enter_layer(u):
    """The layer an ``ENTER`` uop, or a ``STREAM`` uop's fused ``ENTER`` (``docs/rtl.md``
    §9.5 E), enters; None for any other uop."""
    if u.kind == UopKind.ENTER:
        return u.id
    if u.kind == UopKind.STREAM and u.fuse_enter:
        return u.next_layer
    return None


def _check_enters(prog, uops, engines, pcs, *, body_follows=False):
    """Engines whose stream's base is an IMM or ARG are armed once before ``ENTER 0`` and
    started by their layer's ``ENTER`` (``start_engines``); the others have one ``PREFETCH``
    after it. ``body_follows``: each layer's body starts right after its ``ENTER``."""
    global_base = {SrcKind.IMM, SrcKind.ARG}
    armed = [e for e, (s, _, _) in enumerate(engines) if prog.streams[s].a.kind in global_base]
    first_enter = next(i for i, u in enumerate(uops) if u.kind == UopKind.ENTER)
    arms = [u.id for u in uops[:first_enter] if u.kind == UopKind.PREFETCH and u.arm]
    assert sorted(arms) == armed
    late = [u for u in uops[first_enter:] if u.kind == UopKind.PREFETCH]
    assert not any(u.arm for u in late)
    assert sorted(u.id for u in late) == [e for e in range(len(engines)) if e not in armed]
    for i, u in enumerate(uops):
        k = _enter_layer(u)
        if k is not None:
            assert u.start_engines == sum(1 << e for e in armed if engines[e][1] == k), i
            if body_follows:
                assert pcs[0][k] == i + 1, i
        else:
            assert u.start_engines == 0, i
    return armed


def _spmv_program():
    w = WORKLOADS["spmv_csr"]
    k = compile_mlir(w.path.read_text(), filename=w.example, opt_level=3, limits=LIMITS)
    return Case("spmv_O3", k.program.encode(), b"", [])


def test_compiled_kernels_start_their_engines_in_enter():
    seed = fresh_seed("fused enter structure")
    rng = np.random.default_rng(seed)
    for case in (_spmv_program(), _spmm_case(seed, rows=3)[0], _compiled_bag(rng, bags=3)[0]):
        prog, uops, engines, pcs = _microcode(case)
        # rowptr[i], rowptr[i + 1], col[j] / indices[j] (and val[j]): all armed
        armed = _check_enters(prog, uops, engines, pcs, body_follows=True)
        assert len(armed) == len(engines) >= 3, (case.name, engines)
    for i in range(6):          # random programs: engines with a stream base keep PREFETCH
        case = random_case(seed + i, layers=CONFIG.layers, streams=CONFIG.streams,
                           actions=CONFIG.actions, regions=2, args=CONFIG.args)
        _check_enters(*_microcode(case))


# ------------------------------------------------------------------------------ tokens, faults
def _regions(case):
    prog = Program.decode(case.program, LIMITS)

    def value(src):
        return src.value if src.kind == SrcKind.IMM else case.args[src.value]
    return [(value(r.base), value(r.size)) for r in prog.regions]


def _run_checked(case, config, *, backpressure, seed, monkeypatch):
    """``run_on_amaranth``; every accepted memory request's line must overlap a region, and no
    run-ahead engine may start on an empty range (``lb >= ub``: an empty layer starts none)."""
    line = config.line_bytes
    regions = _regions(case)
    outside, empty_starts = [], []
    engines = []

    class RecordedPrefetcher(Prefetcher):
        def __init__(self, *args, **kwargs):
            super().__init__(*args, **kwargs)
            engines.append(self)

    monkeypatch.setattr(tmu_module, "Prefetcher", RecordedPrefetcher)

    def run_sim_watching(bench, testbench):
        async def watch(ctx):
            while True:
                for req in bench.tmu.req:
                    if ctx.get(req.valid) and ctx.get(req.ready):
                        addr = ctx.get(req.payload.addr) & -line
                        if not any(addr < base + size and addr + line > base
                                   for base, size in regions if size > 0):
                            outside.append(addr)
                for e, eng in enumerate(engines):
                    if ctx.get(eng.start) and ctx.get(eng.p_lb) >= ctx.get(eng.p_ub):
                        empty_starts.append((e, ctx.get(eng.p_lb), ctx.get(eng.p_ub)))
                await ctx.tick()
        run_sim(bench, testbench, background=[watch])

    monkeypatch.setattr(amaranth_bench, "run_sim", run_sim_watching)
    r = run_on_amaranth(case.program, case.memory, case.args, config=config,
                        backpressure=backpressure, seed=seed)
    assert_matches(case, r, config)
    assert engines, "no run-ahead engine recorded"
    assert not outside, (case.name, seed, [hex(a) for a in outside[:4]])
    assert not empty_starts, (case.name, seed, empty_starts[:4])
    return r


def test_compiled_spmm_and_bag_match_golden(monkeypatch):
    """SpMM with empty rows (also the first and the last), with ``col`` cut before a nonzero;
    EmbeddingBag with empty bags, with ``indices`` cut; random back-pressure."""
    seed = fresh_seed("fused enter compiled")
    rng = np.random.default_rng(seed)
    case, nnz = _spmm_case(seed, rows=8)
    for cut in (False, True):
        args = list(case.args)
        if cut:     # -O3 SpMM: region 1 (col) is a3/a4 (sw.cli compile -O3)
            args[4] = 8 * int(rng.integers(0, nnz))
        c = Case(f"spmm_cut_{cut}_{seed}", case.program, case.memory, args)
        _run_checked(c, CONFIG, backpressure=float(rng.choice([0.0, 0.5])), seed=seed,
                     monkeypatch=monkeypatch)
    lengths = rng.integers(0, 4, 6)
    lengths[[0, -1]] = 0
    lengths[2] = 3
    bag, lookups = _compiled_bag(rng, bags=6, lengths=lengths)
    for cut in (False, True):
        args = list(bag.args)
        if cut:     # ``indices[j]``'s region (layer 1's first load) ends before a lookup
            prog = Program.decode(bag.program, LIMITS)
            s = next(s for s in prog.streams if s.kind == StreamKind.MEM and s.layer == 1)
            assert (s.size, s.stride, prog.regions[s.region].size.kind) == (8, 8, SrcKind.ARG)
            args[prog.regions[s.region].size.value] = 8 * int(rng.integers(0, lookups))
        c = Case(f"bag_cut_{cut}_{seed}", bag.program, bag.memory, args)
        _run_checked(c, CONFIG, backpressure=float(rng.choice([0.0, 0.5])), seed=seed,
                     monkeypatch=monkeypatch)


def _mixed_case(rng, rows=7, ncols=12, bad_base=False):
    """CSR rows ``j in [rowptr[i], rowptr[i + 1])`` pushing ``col[j] + data[base[i] + 4 j]``: in
    layer 1 ``col[j]`` has an ARG base (armed, started by ``ENTER 1``) and the ``data`` stream
    the base ``base[i]`` loaded in layer 0 (a ``PREFETCH`` after ``ENTER 1``). ``bad_base``:
    one non-empty row's ``base[i]`` runs past ``data``."""
    lengths = rng.integers(0, 4, rows)
    lengths[[0, rows // 2]] = 0
    lengths[1] = max(1, lengths[1])
    rowptr = np.concatenate([[0], np.cumsum(lengths)]).astype(np.int64)
    nnz = int(rowptr[-1])
    col = rng.integers(0, 1 << 20, nnz).astype(np.int64)
    data = rng.integers(0, 1 << 32, ncols, dtype=np.uint64).astype(np.uint32)
    image = MemoryImage()
    p_rowptr = image.add(0, "rowptr", rowptr)
    p_col = image.add(2, "col", col)
    p_data = image.add(3, "data", data)
    # base[i]: the row's elements j are data[(base[i] - data) / 4 + j], inside data
    starts = [int(rng.integers(0, ncols - 4 + 1)) - int(rowptr[i]) for i in range(rows)]
    if bad_base:
        i = next(i for i in range(rows) if lengths[i])
        starts[i] = ncols - int(rowptr[i]) - int(rng.integers(0, lengths[i]))
    base = np.array([p_data.base + 4 * s for s in starts], np.int64)
    p_base = image.add(1, "base", base)
    S, I, R = Source.stream, Source.index, Source.arg
    prog = Program(
        n_args=9,
        layers=[Layer(Source.imm(0), R(0)), Layer(S(0), S(2), check_order=True)],
        regions=[Region(R(1), R(2)), Region(R(3), R(4)), Region(R(5), R(6)),
                 Region(R(7), R(8))],
        streams=[Stream(0, StreamKind.MEM, R(1), I(0), size=8, stride=8, region=0),
                 Stream(0, StreamKind.ALU, I(0), Source.imm(1), op=AluOp.ADD),
                 Stream(0, StreamKind.MEM, R(1), S(1), size=8, stride=8, region=0),
                 Stream(0, StreamKind.MEM, R(3), I(0), size=8, stride=8, region=1),
                 Stream(1, StreamKind.MEM, R(5), I(1), size=8, stride=8, region=2),
                 Stream(1, StreamKind.MEM, S(3), I(1), size=4, stride=4, region=3),
                 Stream(1, StreamKind.ALU, S(4), S(5), op=AluOp.ADD)],
        actions=[Action(1, Event.BEGIN, ActionKind.OPERAND, source=I(0)),
                 Action(1, Event.ITER, ActionKind.OPERAND, source=S(6)),
                 Action(1, Event.END, ActionKind.CONTROL, callback=7)])
    args = [rows, p_rowptr.base, p_rowptr.nbytes, p_base.base, p_base.nbytes, p_col.base,
            p_col.nbytes, p_data.base, p_data.nbytes]
    return Case("mixed", prog.encode(), image.data, args), nnz


def test_armed_and_prefetched_engines_in_one_layer(monkeypatch):
    """The hand-written CSR: ``ENTER 1`` starts ``col[j]``'s engine, a ``PREFETCH`` the
    ``data`` stream's; token for token with empty rows, a ``base[i]`` past ``data`` (that
    engine stops, the traversal faults in program order), ``col`` cut before a nonzero (the
    armed engine stops); random back-pressure."""
    seed = fresh_seed("fused enter mixed")
    rng = np.random.default_rng(seed)
    case, nnz = _mixed_case(rng)
    prog, uops, engines, pcs = _microcode(case)
    assert {s for s, _, _ in engines} >= {4, 5}, engines
    armed = _check_enters(prog, uops, engines, pcs)
    assert [engines[e][0] for e in range(len(engines)) if e not in armed] == [5], engines
    for variant in ("plain", "bad_base", "cut_col"):
        case, nnz = _mixed_case(rng, bad_base=variant == "bad_base")
        if variant == "cut_col":
            args = list(case.args)
            args[6] = 8 * int(rng.integers(0, nnz))
            case = Case(case.name, case.program, case.memory, args)
        case = Case(f"{variant}_{seed}", case.program, case.memory, case.args)
        r = _run_checked(case, CONFIG, backpressure=float(rng.choice([0.0, 0.3, 0.6])),
                         seed=seed, monkeypatch=monkeypatch)
        assert (r.fault_code != 0) == (variant != "plain"), (variant, seed)
