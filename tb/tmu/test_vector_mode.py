"""LOCKSTEP layers in vector mode and lane by lane (``docs/rtl.md`` §9.3), in the Amaranth
simulator on the small configuration, token by token against the golden model."""

import pytest

from hw.tmu import TmuConfig
from sw.runtime.golden import run_golden
from sw.runtime.isa import Fault, Limits
from tb.golden_compare import assert_matches
from tb.programs import lockstep_case
from tb.seeds import fresh_seed
from tb.tmu.amaranth_bench import run_on_amaranth
from tb.tmu.lockstep_programs import lane_fault_order_case, vector_mode_case

SMALL = TmuConfig.small()


def _lines(addr, count, size, line_bytes=SMALL.line_bytes):
    """Aligned memory lines touched by ``count`` elements of ``size`` bytes from ``addr``."""
    return (addr + count * size - 1) // line_bytes - addr // line_bytes + 1


def test_contiguous_rows_one_load_per_line():
    """The -O1 embedding-bag form (tail of 2 lanes, 4-byte elements, rows starting mid-word):
    two uops per vector iteration (no lane loop), one load per memory line of the active lanes
    (the golden model counts one per element), masked lanes pushed as zeros."""
    lanes, dim, size = SMALL.lanes, SMALL.lanes + 2, 4
    indices = [1, 2, 0, 1, 3]
    case = lockstep_case("rows", lanes=lanes, rows=5, dim=dim, lengths=(3, 0, 2),
                         indices=indices, size=size, pack=0)
    r = run_on_amaranth(case.program, case.memory, case.args, config=SMALL, backpressure=0.3,
                        seed=1)
    assert_matches(case, r, SMALL)
    vec = [(row * dim + c, min(lanes, dim - c)) for row in indices for c in range(0, dim, lanes)]
    # Scalar loads: offsets[b], offsets[b + 1] per bag, indices[j] per lookup (run-ahead
    # engines may load one offset/index past the end speculatively); the engines serve
    # consecutive ones in the same line with one request, so at least one per line.
    scalar = run_golden(case.program, case.memory, case.args, limits=Limits.from_tmu_config(SMALL)).loads \
        - sum(n for _, n in vec)
    lb = SMALL.line_bytes
    o_off, i_off, nbags = case.args[1], case.args[3], case.args[0]
    scalar_lines = (len({(o_off + 8 * b) // lb for b in range(nbags + 1)})
                    + len({(i_off + 8 * j) // lb for j in range(len(indices))}))
    row_words = sum(_lines(e * size, n, size) for e, n in vec)
    assert r.stats["vector_iterations"] == len(vec)
    assert r.stats["lane_eval_uops"] == 2 * len(vec)          # s5 (ALU) and s6 (MEM) once
    assert row_words + scalar_lines <= r.stats["loads"] <= row_words + scalar + 2
    assert r.stats["loads"] < run_golden(case.program, case.memory, case.args,
                                         limits=Limits.from_tmu_config(SMALL)).loads


def test_gather_runs_lane_by_lane():
    """A gather (indices feed the row loads) is not lane-affine: three uops per lane (the
    LANE step folded into the last stream's uop)."""
    lengths = (SMALL.lanes + 1, 0, 2, 1)
    case = lockstep_case("gather", lanes=SMALL.lanes, gather=True, lengths=lengths)
    r = run_on_amaranth(case.program, case.memory, case.args, config=SMALL, backpressure=0.3,
                        seed=2)
    assert_matches(case, r, SMALL)
    # Per lane: s3 (the index, from its run-ahead engine), s4 (row * dim), s5 + LANE;
    # lane_eval_uops counts completed uops (waits for the engine are block_wait_cycles).
    assert r.stats["lane_eval_uops"] == 3 * sum(lengths)
    assert r.stats["vector_iterations"] == sum(-(-n // SMALL.lanes) for n in lengths)


def test_lane_fault_order_is_stream_major():
    """Lane 0 of the row load (stream 5) faults and lane 1 of the index load (stream 3) faults:
    the golden model evaluates stream by stream, so stream 3's lane-1 fault is the one reported
    (the lane-by-lane engine must finish all lanes before reporting)."""
    case = lane_fault_order_case(SMALL.lanes)
    r = run_on_amaranth(case.program, case.memory, case.args, config=SMALL)
    assert_matches(case, r, SMALL)
    assert (r.fault_code, r.fault_addr) == (Fault.ADDR_RANGE, case.args[3] + 8)


@pytest.mark.parametrize("n", [0] + [pytest.param(n, marks=pytest.mark.slow)
                                     for n in range(1, 40)])
def test_random_vector_mode_programs(n):
    """Random vector-mode programs (``tb.tmu.lockstep_programs``) of fresh seeds (printed);
    60 more run on Verilator in ``tb/system/test_v1.py``."""
    seed = fresh_seed("vector_mode_case, seed + n") + n
    case = vector_mode_case(seed, SMALL)
    r = run_on_amaranth(case.program, case.memory, case.args, config=SMALL, backpressure=0.3,
                        seed=seed)
    assert_matches(case, r, SMALL)


def _last_lane_wrap_case(n: int):
    """A LOCKSTEP layer of ``SMALL.lanes`` lanes over ``0 .. n`` in vector mode:
    ``s0 = i + big`` with ``big = 2**63 - lanes + 1`` (the last lane of a full vector wraps,
    lane 0 does not), ``s1 = s0 - big`` (back in range, but its operand wrapped) and ``s2`` the
    contiguous load at ``s1``. The golden model faults ``ADDR_OVERFLOW`` exactly when some
    active lane of ``s0`` wraps: ``n = lanes``, not ``n = lanes - 1``."""
    from sw.runtime.isa import (Action, ActionKind, AluOp, Event, Layer, LayerMode, Program,
                                Region, Source, Stream, StreamKind)
    from tb.programs import Case
    S, I, R, imm = Source.stream, Source.index, Source.arg, Source.imm
    lanes = SMALL.lanes
    big = 2**63 - lanes + 1
    layers = [Layer(imm(0), imm(1), mode=LayerMode.BROADCAST),
              Layer(imm(0), R(3), imm(1), mode=LayerMode.LOCKSTEP, lanes=lanes)]
    streams = [Stream(1, StreamKind.ALU, I(1), R(2), op=AluOp.ADD),
               Stream(1, StreamKind.ALU, S(0), R(2), op=AluOp.SUB),
               Stream(1, StreamKind.MEM, R(0), S(1), size=8, stride=8, region=0)]
    actions = [Action(1, Event.ITER, ActionKind.OPERAND, source=S(2)),
               Action(0, Event.END, ActionKind.CONTROL, callback=7)]
    program = Program(n_args=4, version=1, layers=layers, regions=[Region(R(0), R(1))],
                      streams=streams, actions=actions)
    memory = bytes(range(64))
    return Case(f"last_lane_wrap_{n}", program.encode(), memory, [0, 64, big, n])


@pytest.mark.parametrize("n", [SMALL.lanes, SMALL.lanes - 1])
def test_last_active_lane_wrap_is_checked_in_vector_mode(n):
    """Vector mode evaluates ``s0`` once, at lane 0; its ``wrapped`` bit must still come from
    the last *active* lane (``span = (count - 1) * step``): with every lane active the last
    one wraps and the load reading ``s1`` faults ``ADDR_OVERFLOW``; with the last lane masked
    nothing wraps and the vector loads."""
    case = _last_lane_wrap_case(n)
    golden = run_golden(case.program, case.memory, case.args, limits=Limits.from_tmu_config(SMALL))
    assert (golden.fault_code == Fault.ADDR_OVERFLOW) == (n == SMALL.lanes)
    r = run_on_amaranth(case.program, case.memory, case.args, config=SMALL)
    assert_matches(case, r, SMALL)
    assert r.stats["vector_iterations"] == 1
