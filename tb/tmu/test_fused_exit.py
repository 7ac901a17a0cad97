"""A ``NEXT`` leaving its layer's range performs the outer layer's ``NEXT`` in the same cycle
(``Uop.next_outer``, ``docs/rtl.md`` §9.5 D) when the layer has no ``END`` actions (its exit
is that ``NEXT``).

* Structure: on the compiled ``-O3`` SpMV, SpMM and EmbeddingBag, a three-layer program, the
  hand-written EmbeddingBag (END actions: none) and random programs, a ``NEXT k`` (own or fused) has ``next_outer`` exactly when ``k > 0`` and the uop at
  ``exit_pc[k]`` is ``NEXT k - 1``: the compiled inner loops' uop carries it.
* Tokens and faults, token for token against the golden model with random back-pressure: a
  three-layer program without ``END`` actions (two exits in a row, empty middle and inner
  ranges, the last outer iteration empty) and the compiled EmbeddingBag with empty bags.
"""

import numpy as np

from hw.tmu.layouts import UopKind
from sw.compiler import compile_mlir
from sw.runtime.image import MemoryImage
from sw.runtime.isa import Action, ActionKind, Event, Layer, Program, Region, Source, Stream, \
    StreamKind
from tb.golden_compare import assert_matches
from tb.programs import Case, embedding_bag_case, random_case
from tb.seeds import fresh_seed
from tb.tmu.amaranth_bench import run_on_amaranth
from tb.tmu.test_chain import _compiled_bag
from tb.tmu.test_fused_enter import _microcode
from tb.tmu.test_spmm_rate import CONFIG, LIMITS, _spmm_case
from sw.workloads import WORKLOADS

REPO_EXAMPLES = WORKLOADS["spmv_csr"].path.parent


def _check_next_outer(uops, pcs):
    """``next_outer`` on a NEXT k (own, or fused: ``next_layer``) iff k > 0 and the uop at
    ``exit_pc[k]`` is ``NEXT k - 1``; returns the layers whose NEXT carries it."""
    carried = set()
    for i, u in enumerate(uops):
        if u.kind == UopKind.NEXT:
            k = u.id
        elif u.kind in (UopKind.STREAM, UopKind.ACT) and u.fuse_next:
            k = u.next_layer
        else:
            assert not u.next_outer, i
            continue
        exit_uop = uops[pcs[1][k]] if k > 0 else None
        expect = k > 0 and (exit_uop.kind, exit_uop.id) == (UopKind.NEXT, k - 1)
        assert bool(u.next_outer) == expect, (i, k)
        if expect:
            carried.add(k)
    return carried


def test_next_outer_where_the_exit_is_the_outer_next():
    seed = fresh_seed("fused exit structure")
    rng = np.random.default_rng(seed)
    cases = [_spmm_case(seed, rows=3)[0], _compiled_bag(rng, bags=3)[0]]
    k = compile_mlir((REPO_EXAMPLES / "spmv_csr.mlir").read_text(), filename="spmv_csr.mlir",
                     opt_level=3, limits=LIMITS)
    cases.append(Case("spmv_csr", k.program.encode(), b"", []))
    cases.append(_three_layers(rng))
    cases.append(embedding_bag_case("eb", rows=4, dim=3, lengths=[2, 0, 1], indices=[1, 3, 0]))
    expected = [{1}, {1}, {1}, {1, 2}, set()]    # the hand-written bag has END actions
    for case, want in zip(cases, expected):
        _, uops, _, pcs = _microcode(case)
        assert _check_next_outer(uops, pcs) == want, case.name
        if want:                            # the inner loop's uop carries it
            body = pcs[0][max(want)]
            assert uops[body].fuse_next and uops[body].next_outer, case.name
    for i in range(6):
        case = random_case(seed + i, layers=CONFIG.layers, streams=CONFIG.streams,
                           actions=CONFIG.actions, regions=2, args=CONFIG.args)
        _, uops, _, pcs = _microcode(case)
        _check_next_outer(uops, pcs)


def _three_layers(rng, n0=5):
    """``i < n0``, ``j < outer[i]``, ``k < inner[j]``: pushes i at the start of each j loop, j
    each j iteration, ``k`` and ``inner[j]`` each k iteration; no END actions."""
    outer = rng.integers(0, 3, n0).astype(np.int64)
    outer[[1, -1]] = [0, 0]
    outer[0] = 3
    inner = rng.integers(0, 3, 4).astype(np.int64)
    inner[int(rng.integers(0, 2))] = 0
    image = MemoryImage()
    p_outer = image.add(0, "outer", outer)
    p_inner = image.add(1, "inner", inner)
    S, I, R = Source.stream, Source.index, Source.arg
    prog = Program(
        n_args=5,
        layers=[Layer(Source.imm(0), R(0)), Layer(Source.imm(0), S(0)),
                Layer(Source.imm(0), S(1))],
        regions=[Region(R(1), R(2)), Region(R(3), R(4))],
        streams=[Stream(0, StreamKind.MEM, R(1), I(0), size=8, stride=8, region=0),
                 Stream(1, StreamKind.MEM, R(3), I(1), size=8, stride=8, region=1)],
        actions=[Action(1, Event.BEGIN, ActionKind.OPERAND, source=I(0)),
                 Action(1, Event.ITER, ActionKind.OPERAND, source=I(1)),
                 Action(2, Event.ITER, ActionKind.OPERAND, source=I(2)),
                 Action(2, Event.ITER, ActionKind.OPERAND, source=S(1))])
    args = [n0, p_outer.base, p_outer.nbytes, p_inner.base, p_inner.nbytes]
    return Case("three_layers", prog.encode(), image.data, args)


def test_two_exits_and_empty_ranges_match_golden():
    """Token for token: the three-layer program (plain; ``inner`` cut: a fault after an exit)
    and the compiled EmbeddingBag with empty bags, random back-pressure."""
    seed = fresh_seed("fused exit golden")
    rng = np.random.default_rng(seed)
    case = _three_layers(rng)
    _, uops, _, pcs = _microcode(case)
    assert _check_next_outer(uops, pcs) == {1, 2}, seed
    cut = list(case.args)
    cut[4] = 8 * 2                      # inner[2], inner[3] outside their region
    lengths = rng.integers(0, 3, 5)
    lengths[[0, 2, 4]] = [0, 2, 0]
    bag, _ = _compiled_bag(rng, bags=5, lengths=lengths)
    for c in (case, Case("three_layers_cut", case.program, case.memory, cut), bag):
        r = run_on_amaranth(c.program, c.memory, c.args, config=CONFIG,
                            backpressure=float(rng.choice([0.0, 0.4])), seed=seed)
        assert_matches(Case(f"{c.name}_{seed}", c.program, c.memory, c.args), r, CONFIG)
        assert (r.fault_code != 0) == (c.name == "three_layers_cut"), (c.name, seed)
