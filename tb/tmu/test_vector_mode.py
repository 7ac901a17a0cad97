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
