"""The chained ALU slot (``hw/tmu/chain.py``, ``docs/rtl.md`` §2.2): a lookup's ``row * dim``
and its row load in one traversal uop.

* Structure: the microcode builder folds the ``MUL`` stream into the row stream's uop
  (``Uop.chain``): the nonzero loop of the compiled ``-O3`` EmbeddingBag and SpMM is one
  ``STREAM`` uop per lookup (and not when ``K = X * stride`` does not fit 32 bits).
* Rate: the compiled ``-O3`` EmbeddingBag without back-pressure takes one cycle per lookup
  (rows of one line; the row issue block takes a row per cycle).
* Tokens and faults, token for token against the golden model (``sw/runtime/golden.py``), on a
  bag program with the chain in every shape (``MUL`` by an argument or an immediate, either
  operand order, ``SHL`` by an immediate; a BLOCK row or a scalar load): ``row * dim`` wraps
  (``ADDR_OVERFLOW`` of the row stream), a row out of its region, a negative index, the index
  engine stopped before a faulting ``indices[j]`` (the fallback path), BLOCK rows of ``n = 0``
  (no fault even when ``row * dim`` wraps), a ``K`` too wide to chain, an action reading the
  ``MUL`` stream. Fresh seeds, random back-pressure.
"""

import dataclasses

import numpy as np
import pytest

import hw.tmu.tmu as tmu_module
import tb.tmu.amaranth_bench as amaranth_bench
from hw.tmu.layouts import UopKind
from hw.tmu.traversal import Traversal
from sw.compiler import compile_mlir
from sw.runtime.golden import run_golden
from sw.runtime.image import bind_arguments, build_image
from sw.runtime.isa import ActionKind, AluOp, Action, Event, Program, Source, Stream, StreamKind
from sw.workloads import WORKLOADS
from tb.golden_compare import assert_matches
from tb.programs import Case, bag_frame
from tb.seeds import fresh_seed
from tb.sim_helpers import run_sim
from tb.tmu.amaranth_bench import run_on_amaranth
from tb.tmu.builder_bench import layer_body_uops
from tb.tmu.test_spmm_rate import CONFIG, LIMITS, _spmm_case


def _bag_case(name, rng, *, op="mul_arg", block=True, size=4, dim=4, ncols=None, rows=6,
              bags=4, fault=None, push_d=False, table_bytes=None, stride=None):
    """A bag program whose lookup is ``D = indices[j] op X`` then a row at ``table + D *
    (size or stride)``: streams ``3`` (``indices[j]``, an engine), ``4`` (D), ``5`` (the row,
    BLOCK of ``ncols`` elements or one scalar of ``size`` bytes at stride ``size``).

    ``op``: ``mul_arg`` (``MUL s3, a7``), ``mul_imm`` (``MUL #dim, s3``), ``shl`` (``SHL s3,
    #log2(dim)``, ``dim`` a power of 2). ``fault``: ``wrap`` (an index whose ``* dim`` wraps),
    ``range`` (an index past the table), ``negative`` (index -1), ``engine`` (the indices'
    region ends before the last lookup: the engine stops there). ``push_d``: an ITER action
    also pushes D. ``table_bytes``: the table's size (default ``rows * dim * size``).
    ``stride``: the scalar row load's stride (default ``size``; 0: every lookup loads the
    table's first element, so only D's ``wrapped`` bit can fault it)."""
    lengths = rng.integers(0, 5, bags)
    lengths[rng.integers(0, bags)] += 1
    nnz = int(lengths.sum())
    indices = rng.integers(0, rows, nnz).astype(np.int64)
    k = int(rng.integers(0, nnz))
    if fault == "wrap":
        indices[k] = (1 << 62) + int(rng.integers(0, 1 << 20))
    elif fault == "range":
        indices[k] = rows + int(rng.integers(0, 3))
    elif fault == "negative":
        indices[k] = -1
    offsets = np.concatenate([[0], np.cumsum(lengths)]).astype(np.int64)
    ncols = dim if ncols is None else ncols
    table_bytes = rows * dim * size if table_bytes is None else table_bytes
    table = rng.integers(0, 256, table_bytes, dtype=np.uint8).tobytes()
    pad = lambda b: b + bytes(-len(b) % 64)
    o_off = len(pad(table))
    i_off = o_off + len(pad(offsets.tobytes()))
    memory = pad(table) + pad(offsets.tobytes()) + indices.tobytes() + bytes(8)
    S, R, imm = Source.stream, Source.arg, Source.imm
    if op == "mul_arg":
        d = Stream(1, StreamKind.ALU, S(3), R(7), op=AluOp.MUL)
    elif op == "mul_imm":
        d = Stream(1, StreamKind.ALU, imm(dim), S(3), op=AluOp.MUL)
    else:
        d = Stream(1, StreamKind.ALU, S(3), imm(dim.bit_length() - 1), op=AluOp.SHL)
    if block:
        row = Stream(1, StreamKind.MEM, R(5), S(4), size=size, region=2, block=True,
                     count=imm(ncols))
    else:
        row = Stream(1, StreamKind.MEM, R(5), S(4), size=size,
                     stride=size if stride is None else stride, region=2)
    actions = [Action(1, Event.ITER, ActionKind.OPERAND, source=S(5), pack=1 if size == 4 else 0)]
    if push_d:
        actions.append(Action(1, Event.ITER, ActionKind.OPERAND, source=S(4)))
    actions += [Action(1, Event.ITER, ActionKind.CONTROL, callback=0),
                Action(0, Event.END, ActionKind.CONTROL, callback=1)]
    layers, regions, bag_streams = bag_frame()
    prog = Program(n_args=8, version=1, layers=layers, regions=regions,
                   streams=[*bag_streams, d, row], actions=actions)
    indices_bytes = 8 * k if fault == "engine" else 8 * nnz
    args = [bags, o_off, 8 * len(offsets), i_off, indices_bytes, 0, table_bytes, dim]
    return Case(name, prog.encode(), memory, args)


def _body_streams(config, case):
    """The layer-1 body's STREAM uops as ``(id, chain)``, built by the microcode builder."""
    return [(u.id, u.chain) for u in layer_body_uops(config, case, LIMITS)
            if u.kind == UopKind.STREAM]


def _compiled_bag(rng, bags, rows=40, dim=8, lengths=None):
    """The compiled ``-O3`` EmbeddingBag sum over a random table: (case, lookups)."""
    w = WORKLOADS["eb_sum"]
    k = compile_mlir(w.path.read_text(), filename=w.example, opt_level=3, limits=LIMITS)
    lengths = rng.integers(0, 8, bags) if lengths is None else np.asarray(lengths)
    offsets = np.concatenate([[0], np.cumsum(lengths)]).astype(np.int64)
    indices = rng.integers(0, rows, int(offsets[-1])).astype(np.int64)
    table = rng.standard_normal((rows, dim)).astype(np.float32)
    args = [table, indices, offsets, np.zeros((bags, dim), np.float32)]
    image = build_image(k, args)
    regs = bind_arguments(k, args, image)
    return Case("bag_O3", k.program.encode(), image.data, regs), int(offsets[-1])


def test_one_stream_uop_per_lookup():
    """The compiled -O3 EmbeddingBag and SpMM nonzero loops: one chained STREAM uop (the row,
    with ``row * dim`` and the engine pops); a hand-written chain likewise; a K that does not
    fit in 32 bits leaves two uops."""
    seed = fresh_seed("chain structure")
    rng = np.random.default_rng(seed)
    bag, _ = _compiled_bag(rng, bags=3)
    assert _body_streams(CONFIG, bag) == [(6, 1)], seed
    spmm, _ = _spmm_case(seed, rows=3)
    assert _body_streams(CONFIG, spmm) == [(7, 1)], seed
    for op in ("mul_arg", "mul_imm", "shl"):
        for block in (True, False):
            case = _bag_case(op, rng, op=op, block=block)
            assert _body_streams(CONFIG, case) == [(5, 1)], (seed, op, block)
    assert _body_streams(CONFIG, _bag_case("stride0", rng, block=False, stride=0)) == [(5, 1)]
    wide = _bag_case("wide", rng, op="shl", dim=1 << 29, block=False, ncols=1,
                     table_bytes=64)                                       # K = 2**31
    assert _body_streams(CONFIG, wide) == [(4, 0), (5, 0)], seed
    pushed = _bag_case("push_d", rng, push_d=True)
    assert _body_streams(CONFIG, pushed) == [(5, 1)], seed


def _bag_without_back_pressure(name, dim, bags=4):
    """The compiled -O3 EmbeddingBag of ``bags`` bags of 50-69 lookups, rows of ``dim`` f32,
    index engines 16 deep on 64-byte lines, run on the Amaranth bench and checked against the
    golden model: ``(seed, result, lookups, bags)``."""
    seed = fresh_seed(name)
    rng = np.random.default_rng(seed)
    config = dataclasses.replace(CONFIG, prefetch_depth=16, line_bytes=64, max_inflight=64)
    case, nnz = _compiled_bag(rng, bags, dim=dim, lengths=rng.integers(50, 70, bags))
    r = run_on_amaranth(case.program, case.memory, case.args, config=config, seed=seed)
    assert_matches(case, r, config)
    return seed, r, nnz, bags


@pytest.mark.parametrize("dim", [0, 2])
def test_bag_takes_one_cycle_per_lookup(dim):
    """No back-pressure, the compiled -O3 EmbeddingBag with rows of ``dim`` f32 (0: no row
    loads; 2: one line per row, which the Amaranth bench's single-port memory serves at one per
    cycle) and index engines 16 deep on 64-byte lines: at most 1 cycle per lookup plus 12 per
    bag and 40 of start-up and drain. Before the chain: 2.2 per lookup (532 and 537 cycles for
    240 lookups in 4 bags against 292 and 302); with the chain but the row issue's job queue of
    depth 2 (one job every other cycle), 537 at ``dim = 2``."""
    seed, r, nnz, bags = _bag_without_back_pressure(f"chain rate dim {dim}", dim)
    run_cycles = r.stats["cycles"] - r.stats["decode_cycles"]
    assert run_cycles <= nnz + 12 * bags + 40, (seed, run_cycles, nnz)
    assert r.stats["uops"] == 5 + bags + nnz, (seed, r.stats["uops"])   # see the next test


@pytest.mark.parametrize("dim", [3, 6])
def test_a_factor_not_a_power_of_two_waits_for_its_registered_product(dim):
    """Rows of ``dim`` f32 with ``dim`` not a power of two: ``X = dim`` and ``K = 4 * dim`` are
    not shifts, so each lookup's chained uop waits two cycles for the registered products
    (``hw/tmu/registered_products.py``; counted as ``block_wait_cycles``). The tokens are the
    golden model's; at most 3.5 cycles per lookup plus the bags' and start-up's."""
    seed, r, nnz, bags = _bag_without_back_pressure(f"chain registered product dim {dim}", dim)
    run_cycles = r.stats["cycles"] - r.stats["decode_cycles"]
    assert run_cycles <= 3.5 * nnz + 12 * bags + 40, (seed, run_cycles, nnz)
    assert r.stats["block_wait_cycles"] >= 2 * nnz, (seed, r.stats["block_wait_cycles"])


def test_uops_counter_counts_the_microcode_entries():
    """The ``uops`` counter (``docs/rtl.md`` §2.7) against the compiled -O3 EmbeddingBag's
    microcode (``scripts/print_microcode.py``): three ``PREFETCH ... arm``, ``ENTER 0``, per bag
    its ``STREAM s3`` (with both BEGIN actions and the fused ``ENTER 1``, ``docs/rtl.md`` §9.5
    E), then one chained row uop per lookup (the last one's fused ``NEXT`` also steps layer 0),
    or for an empty bag the ``NEXT layer 0`` at ``exit_1``; ``DONE``. Random back-pressure adds
    cycles, not uops (a fused ``ENTER`` left waiting for its engine counts once)."""
    seed = fresh_seed("uops counter")
    rng = np.random.default_rng(seed)
    lengths = rng.integers(0, 5, 7)
    lengths[rng.integers(0, 7)] = 0                    # at least one empty bag
    case, nnz = _compiled_bag(rng, len(lengths), lengths=lengths)
    r = run_on_amaranth(case.program, case.memory, case.args, config=CONFIG, backpressure=0.3,
                        seed=seed)
    assert_matches(case, r, CONFIG)
    empty = int((lengths == 0).sum())
    assert r.stats["uops"] == 3 + 1 + len(lengths) + nnz + empty + 1, (seed, lengths,
                                                                       r.stats["uops"])
    assert r.stats["uops"] < r.stats["cycles"] - r.stats["decode_cycles"], seed
    # fetch bubbles (docs/rtl.md §2.7): the run's first uop (one or two), and each empty bag's
    # ENTER, which jumps to exit_1 where the fetch stage predicted layer 1's body
    assert empty + 1 <= r.stats["fetch_bubble_cycles"] <= empty + 2, (seed, lengths, r.stats)


def test_issue_wait_counter_counts_the_offers_not_taken(monkeypatch):
    """``issue_wait_cycles`` (``docs/rtl.md`` §2.7) against the traversal's own ports, watched
    in the simulator: the cycles of the run in which its load request or its row job is valid
    and not ready. Rows of 32 f32 are two 64-byte lines and the reorder buffer has room for
    128, so the row issue block, not the buffer, makes row jobs wait; random back-pressure on
    the output. The counter must see exactly the watched cycles, and some: one bag has 12
    lookups, whose row jobs come one per cycle while the row issue block sends one line per
    cycle (the bench's memory has one port), so its job queue (3 runs, ``hw/tmu/row_issue.py``)
    fills within the bag. Bags of at most 5 lookups never made a row job wait (seed
    2305960970, lengths 5 2 2 4 2)."""
    traversals, watched = [], []

    class RecordedTraversal(Traversal):
        def __init__(self, *args, **kwargs):
            super().__init__(*args, **kwargs)
            traversals.append(self)

    def run_sim_watching(bench, testbench):
        async def watch(ctx):
            while True:
                t = traversals[-1]
                if ctx.get(t.busy) and ((ctx.get(t.req.valid) and not ctx.get(t.req.ready))
                                        or (ctx.get(t.row_job.valid)
                                            and not ctx.get(t.row_job.ready))):
                    watched.append(1)
                await ctx.tick()
        run_sim(bench, testbench, background=[watch])

    monkeypatch.setattr(tmu_module, "Traversal", RecordedTraversal)
    monkeypatch.setattr(amaranth_bench, "run_sim", run_sim_watching)
    seed = fresh_seed("issue wait counter")
    rng = np.random.default_rng(seed)
    config = dataclasses.replace(CONFIG, line_bytes=64, max_inflight=128)
    lengths = rng.integers(2, 9, 5)
    lengths[rng.integers(0, 5)] = 12
    case, nnz = _compiled_bag(rng, 5, dim=32, lengths=lengths)
    r = run_on_amaranth(case.program, case.memory, case.args, config=config, backpressure=0.3,
                        seed=seed)
    assert_matches(case, r, config)
    assert r.stats["issue_wait_cycles"] == len(watched) > 0, (seed, lengths, r.stats)


_SHAPES = [("mul_arg", True, None), ("mul_imm", True, None), ("shl", True, None),
           ("mul_arg", False, None), ("shl", False, None), ("mul_imm", False, 0)]


_FAULTS = [None, "wrap", "range", "negative", "engine"]


@pytest.mark.parametrize("fault", _FAULTS)
def test_chain_matches_golden(fault):
    """Two chain shapes drawn with the printed seed (each ~7 s in the Amaranth simulator; every
    shape under ``-m slow``) against the golden model, tokens and the fault (code, address)."""
    seed = fresh_seed(f"chain golden {fault}")
    _chain_shapes_match_golden(fault, seed, np.random.default_rng(seed).choice(len(_SHAPES), 2,
                                                                              replace=False))


@pytest.mark.slow
@pytest.mark.parametrize("fault", _FAULTS)
def test_every_chain_shape_matches_golden(fault):
    seed = fresh_seed(f"chain golden, every shape, {fault}")
    _chain_shapes_match_golden(fault, seed, range(len(_SHAPES)))


def _chain_shapes_match_golden(fault, seed, shapes):
    rng = np.random.default_rng(seed)
    for i in sorted(int(n) for n in shapes):
        op, block, stride = _SHAPES[i]
        case = _bag_case(f"{op}_{block}_{stride}_{fault}", rng, op=op, block=block, fault=fault,
                         stride=stride, push_d=i % 2 == 1)
        gold = run_golden(case.program, case.memory, case.args, limits=LIMITS)
        if fault is not None and not (stride == 0 and fault in ("range", "negative")):
            assert gold.fault_code != 0, (seed, case.name)     # (a stride-0 row never moves)
        r = run_on_amaranth(case.program, case.memory, case.args, config=CONFIG,
                            backpressure=float(rng.choice([0.0, 0.3])), seed=seed)
        assert_matches(case, r, CONFIG)


def test_chain_empty_rows_and_wide_k():
    """BLOCK rows of ``n = 0``: no fault, even where ``row * dim`` wraps (the golden model
    checks the count first); a K that does not fit 32 bits (not chained) faults as the golden
    model does."""
    seed = fresh_seed("chain empty rows")
    rng = np.random.default_rng(seed)
    cases = [_bag_case("empty", rng, ncols=0), _bag_case("empty_wrap", rng, ncols=0, fault="wrap"),
             _bag_case("wide_k", rng, op="shl", dim=1 << 29, block=False, rows=2,
                       table_bytes=64),
             _bag_case("wide_k_block", rng, op="shl", dim=1 << 29, ncols=1, rows=2,
                       table_bytes=64)]
    for case in cases:
        r = run_on_amaranth(case.program, case.memory, case.args, config=CONFIG,
                            backpressure=0.3, seed=seed)
        assert_matches(case, r, CONFIG)
    assert run_golden(cases[1].program, cases[1].memory, cases[1].args,
                      limits=LIMITS).fault_code == 0, seed
