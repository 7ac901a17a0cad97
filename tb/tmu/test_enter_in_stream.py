"""Fusion E (``docs/rtl.md`` §9.5 E): a layer's ``ENTER`` carried by the ``STREAM`` uop before
it (``Uop.fuse_enter``), its bounds read as that stream's own sources.

* Structure: in the compiled ``-O3`` SpMV, SpMM and EmbeddingBag the row/bag length uop
  (``STREAM s3 pop s1,s2 +act ... +ENTER layer 1``, ``s3 = rowptr[i + 1] - rowptr[i]``: the
  bounds swapped) carries ``ENTER 1``: no ``ENTER`` uop is left but ``ENTER 0``.
* Tokens and faults, token for token against the golden model (``sw/runtime/golden.py``) with
  random back-pressure, on a hand-written bag program whose ranges come from two arrays
  (``starts[i]``, ``ends[i]``) and whose length stream reads them either way round (``SUB(end,
  start)``: swapped; ``ADD(start, end)``: in order), with ranges that continue each other,
  ranges that jump back (the armed ``indices`` engine has speculative loads in flight, so the
  fused ``ENTER`` waits for it after its stream and action completed: ``enter_pending``), empty
  ranges (the jump to the layer's exit), a range with ``end < start`` (``RANGE_ORDER`` after
  the length token) and ``indices`` cut short (the engine stops, the traversal faults in
  program order). Every memory request lies in a granted region and no engine starts on an
  empty range (``test_fused_enter._run_checked``).
"""

import numpy as np
import pytest

from hw.tmu.layouts import UopKind
from sw.runtime.image import MemoryImage
from sw.runtime.isa import (Action, ActionKind, AluOp, Event, Layer, Program, Region, Source,
                            Stream, StreamKind)
from tb.programs import Case
from tb.seeds import fresh_seed
from tb.tmu.test_chain import _compiled_bag
from tb.tmu.test_fused_enter import _microcode, _run_checked, _spmv_program
from tb.tmu.test_spmm_rate import CONFIG, _spmm_case


def test_compiled_kernels_carry_enter_in_the_length_uop():
    seed = fresh_seed("enter in stream structure")
    rng = np.random.default_rng(seed)
    for case in (_spmv_program(), _spmm_case(seed, rows=3)[0], _compiled_bag(rng, bags=3)[0]):
        prog, uops, engines, pcs = _microcode(case)
        assert [u.id for u in uops if u.kind == UopKind.ENTER] == [0], case.name
        [(i, u)] = [(i, u) for i, u in enumerate(uops)
                    if u.kind == UopKind.STREAM and u.fuse_enter]
        st = prog.streams[u.id]
        assert (u.next_layer, u.enter_swap, st.op) == (1, 1, AluOp.SUB), case.name
        assert (st.b, st.a) == (prog.layers[1].lb, prog.layers[1].ub), case.name
        assert pcs[0][1] == i + 1, case.name          # layer 1's body follows the uop
        assert u.fuse_act, case.name                    # the length's action rides too


def _ranges_case(rng, starts, ends, *, in_order=False, cut=None):
    """Bags ``i`` over ``j in [starts[i], ends[i])``, pushing the bag's length stream (``SUB(end,
    start)``, or with ``in_order`` ``ADD(start, end)``) then ``indices[j]`` per lookup.
    ``cut``: ``indices``' region holds only that many lookups."""
    n = max([8] + [int(e) for e in ends] + [int(s) for s in starts])
    # indices[j] at byte 64 j: one memory line per lookup, so that the engine's loads are
    # still in flight when the traversal reaches the next bag
    indices = rng.integers(0, 1 << 40, 8 * n).astype(np.int64)
    image = MemoryImage()
    p_starts = image.add(0, "starts", np.asarray(starts, np.int64))
    p_ends = image.add(1, "ends", np.asarray(ends, np.int64))
    p_indices = image.add(2, "indices", indices)
    S, I, R = Source.stream, Source.index, Source.arg
    length = (Stream(0, StreamKind.ALU, S(0), S(1), op=AluOp.ADD) if in_order
              else Stream(0, StreamKind.ALU, S(1), S(0), op=AluOp.SUB))
    prog = Program(
        n_args=7,
        layers=[Layer(Source.imm(0), R(0)), Layer(S(0), S(1), check_order=True)],
        regions=[Region(R(1), R(2)), Region(R(3), R(4)), Region(R(5), R(6))],
        streams=[Stream(0, StreamKind.MEM, R(1), I(0), size=8, stride=8, region=0),
                 Stream(0, StreamKind.MEM, R(3), I(0), size=8, stride=8, region=1),
                 length,
                 Stream(1, StreamKind.MEM, R(5), I(1), size=8, stride=64, region=2)],
        actions=[Action(0, Event.ITER, ActionKind.OPERAND, source=S(2)),
                 Action(1, Event.ITER, ActionKind.OPERAND, source=S(3))])
    size = p_indices.nbytes if cut is None else 64 * (cut - 1) + 8
    args = [len(starts), p_starts.base, p_starts.nbytes, p_ends.base, p_ends.nbytes,
            p_indices.base, size]
    name = f"ranges_{'in_order' if in_order else 'swapped'}_cut_{cut}"
    return Case(name, prog.encode(), image.data, args)


def _variants(rng):
    """(name, starts, ends): continuing ranges, ranges jumping back, empty ones, a bad one."""
    lengths = rng.integers(1, 6, 6)
    ends = np.cumsum(lengths)
    continuing = (np.concatenate([[0], ends[:-1]]), ends)
    # ranges that continue the one before (the engine then issues past ``ends[i]``
    # speculatively), then one that starts behind it
    back = ([0, 2, 1, 3, 5, 0, 2, 4], [2, 4, 3, 5, 8, 2, 4, 6])
    empty = ([0, 3, 3, 1, 5, 5], [3, 3, 7, 1, 8, 5])
    bad = ([0, 2, 6, 1], [2, 6, 4, 5])           # bag 2: end < start
    return [("continuing", *continuing), ("back", *back), ("empty", *empty), ("bad", *bad)]


@pytest.mark.parametrize("in_order", [False, True], ids=["swapped", "in_order"])
def test_fused_enter_matches_golden(monkeypatch, in_order):
    seed = fresh_seed(f"enter in stream tokens {in_order}")
    rng = np.random.default_rng(seed)
    case = _ranges_case(rng, [0], [1], in_order=in_order)
    prog, uops, _, _ = _microcode(case)
    [u] = [u for u in uops if u.kind == UopKind.STREAM and u.fuse_enter]
    assert (u.id, u.next_layer, u.enter_swap, u.fuse_act) == (2, 1, int(not in_order), 1)
    for name, starts, ends in _variants(rng):
        for cut in (None, int(rng.integers(1, 5))):
            c = _ranges_case(rng, starts, ends, in_order=in_order, cut=cut)
            c = Case(f"{c.name}_{name}_{seed}", c.program, c.memory, c.args)
            _run_checked(c, CONFIG, backpressure=float(rng.choice([0.0, 0.5])), seed=seed,
                         monkeypatch=monkeypatch)
