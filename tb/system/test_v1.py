"""ISA version 1 (docs/isa.md §7) on the system top under Verilator, token by token against the
golden model, with random back-pressure. One simulator process per test function."""

import pytest

from hw.tmu import COUNTERS, TmuConfig
from sw.runtime.isa import Fault
from tb.golden_compare import assert_matches
from sim.system import RtlJob, run_many_on_rtl
from tb.programs import (address_overflow_cases, block_after_immediate_case, block_case,
                         block_row_after_load_case,
                         block_cases, lockstep_case, lockstep_cases, mutated_cases, pack_case,
                         random_v1_case, v1_decode_cases, watchdog_case)
from tb.seeds import fresh_seed, seed_range
from tb.tmu.lockstep_programs import lane_fault_order_case, vector_mode_case

pytestmark = pytest.mark.rtl

CFG = TmuConfig()


def _run(cases, backpressure=0.0, seed=0):
    jobs = [RtlJob(c.program, c.memory, c.args, backpressure=backpressure, seed=seed + n,
                   max_cycles=2_000_000) for n, c in enumerate(cases)]
    return run_many_on_rtl(jobs, config=CFG)


#: random_v1_case seeds that once failed on the RTL (issue 8: a BLOCK row's count lost when its
#: stream's evaluation was fused with an immediate action; 3580616416: a lane-by-lane gather whose
#: last lane overflowed after lane 0 faulted ADDR_RANGE, found by the fuzz campaign).
REGRESSION_V1_SEEDS = (103915, 104980, 3580616416)


@pytest.mark.parametrize("backpressure", [0.0, 0.5])
def test_v1_programs_match_golden(backpressure):
    """The hand-written v1 cases, the regression seeds and 60 + 60 random programs of fresh
    seeds (printed: ``EMBER_SEED=...`` reproduces them)."""
    cases = [pack_case(f"pack_{s}", n=3 + s, seed=s) for s in range(3)]
    cases += v1_decode_cases(CFG) + block_cases() + lockstep_cases(CFG.lanes)
    cases += lockstep_cases(3)
    cases += [random_v1_case(s, CFG, block_prob=0.6, lockstep_prob=0.5, data_counts=0)
              for s in REGRESSION_V1_SEEDS]
    base = fresh_seed("random_v1_case, vector_mode_case")
    cases += [random_v1_case(s, CFG, block_prob=0.6, lockstep_prob=0.5)
              for s in seed_range(base, 60)]
    cases += [vector_mode_case(s, CFG) for s in seed_range(base, 60)]
    cases += [lane_fault_order_case(CFG.lanes)]
    for case, r in zip(cases, _run(cases, backpressure, seed=int(100 * backpressure))):
        assert_matches(case, r, CFG)


def test_block_row_after_fused_immediate_action():
    """An immediate operand action fused into a BLOCK row stream's evaluation must keep the
    row's count (issue 8: the RTL delivered ``[38]`` for ``[38, row...]``), whatever an earlier
    job left behind: the case runs first after reset, after a job with other row counts and
    twice in a row."""
    fused = block_after_immediate_case()
    other = block_case("block_other", rows=6, dim=7, lengths=(3, 1, 2))
    cases = [fused, other, fused, block_after_immediate_case("three", ncols=3, size=4), fused]
    cases += [random_v1_case(s, CFG, block_prob=0.6, lockstep_prob=0.5, data_counts=0)
              for s in REGRESSION_V1_SEEDS]
    results = _run(cases)
    for case, r in zip(cases, results):
        assert_matches(case, r, CFG)
    assert results[0].data_tokens[:3] == [38, 0x0100, 0x0302]


def test_block_row_after_fused_load_operand():
    """The minimised ``-O3`` mean-bag-with-``padding_idx`` program (``block_row_after_load_case``:
    a lazy load's operand fused into the row stream's uop, a count from an argument register,
    JOIN after the row): every row's tokens arrive (before commit 255afd0 each row came out
    empty: ``test_half_bags_on_rtl`` was marked xfail for it), at rows of 3 and 9 elements,
    with and without back-pressure."""
    cases = [block_row_after_load_case(), block_row_after_load_case("wide", dim=9,
                                                                     indices=(1, 0, 3, 3))]
    results = _run(cases) + _run(cases, backpressure=0.5, seed=7)
    for case, r in zip(cases + cases, results):
        assert_matches(case, r, CFG)
    assert results[0].data_tokens[:4] == [4, 0x0000040100000400, 0x0402, 4]


@pytest.mark.slow
def test_v1_decoder_against_golden_loader():
    """Version-1 programs with one corrupted word: the same fault code and PC as sw.runtime.isa."""
    bases = [pack_case(), lockstep_case("ls", lanes=CFG.lanes)]
    base = fresh_seed("random_v1_case, mutated_cases")
    bases += [random_v1_case(s, CFG, block_prob=0.5, lockstep_prob=0.5)
              for s in seed_range(base, 4)]
    cases = mutated_cases(base, 400, CFG, bases=bases)
    for case, r in zip(cases, _run(cases, backpressure=0.2)):
        assert_matches(case, r, CFG)


def test_block_rows_keep_loads_in_flight():
    """Rows of 64 f32 (256 bytes): one request per memory line of the row, about one line per
    cycle while rows come, so at least half the memory latency in lines in flight."""
    case = block_case("block_wide", rows=64, dim=64, lengths=[4] * 8, size=4, pack=1)
    r, = _run([case])
    assert_matches(case, r, CFG)
    row_lines = 64 * 4 // CFG.line_bytes
    assert r.stats["loads"] >= 8 * 4 * row_lines, r.stats
    assert r.stats["loads"] <= 8 * 4 * row_lines + 3 * 8 + 8 * 4 + 8, r.stats   # + offsets, indices
    assert r.stats["peak_inflight"] >= CFG.mem_latency // 2, r.stats
    assert r.stats["data_tokens"] == 8 * 4 * (32 + 1)


def test_block_faults():
    cases = [c for c in block_cases() if c.name in ("block_past_region", "block_too_long",
                                                    "block_misaligned")]
    results = _run(cases, backpressure=0.3)
    for case, r in zip(cases, results):
        assert_matches(case, r, CFG)
    assert {r.fault_code for r in results} == {Fault.ADDR_RANGE, Fault.BLOCK_LENGTH,
                                               Fault.MISALIGNED}


def test_lockstep_lane_faults():
    """A fault in an active lane stops the run before the vector iteration's ITER actions;
    masked lanes past the region neither load nor fault."""
    cases = [c for c in lockstep_cases(CFG.lanes) if "fault" in c.name or "masked" in c.name]
    results = _run(cases, backpressure=0.3)
    for case, r in zip(cases, results):
        assert_matches(case, r, CFG)
    assert [r.fault_code for r in results] == [0, Fault.ADDR_RANGE, Fault.ADDR_RANGE]


def test_lockstep_vector_mode_loads_lines():
    """The -O1 embedding-bag form at 8 lanes (4-byte elements, rows of 12 = one full vector
    and a tail of 4): the layer runs in vector mode (two uops per vector iteration), the row
    loads are one per memory line of the active lanes, fewer than the golden model's one per
    element, and the tokens are the golden model's."""
    dim, lanes = 12, CFG.lanes
    indices = [0, 5, 2, 7, 1, 1, 3]
    case = lockstep_case("vector_mode", lanes=lanes, rows=8, dim=dim, lengths=(4, 0, 3),
                         indices=indices, size=4, pack=0)
    r, = _run([case], backpressure=0.3)
    assert_matches(case, r, CFG)
    vec = [(row * dim + c, min(lanes, dim - c)) for row in indices for c in range(0, dim, lanes)]
    lb = CFG.line_bytes
    words = sum((4 * e + 4 * n - 1) // lb - (4 * e) // lb + 1 for e, n in vec)
    assert r.stats["vector_iterations"] == len(vec)
    assert r.stats["lane_eval_uops"] == 2 * len(vec)
    # Other loads: offsets[b] and offsets[b + 1] per bag, indices[j] per lookup (the run-ahead
    # engines may load a few past them speculatively, and serve consecutive ones in one line
    # with one request: at least one request per line).
    others = 2 * 3 + len(indices)
    o_off, i_off = case.args[1], case.args[3]
    other_lines = (len({(o_off + 8 * b) // lb for b in range(3 + 1)})
                   + len({(i_off + 8 * j) // lb for j in range(len(indices))}))
    assert words + other_lines <= r.stats["loads"] <= words + others + 4, r.stats


def test_address_overflow_faults():
    """Addresses whose computation leaves the signed 64-bit range fault ADDR_OVERFLOW at the
    stream id, before the region check, as in the golden model (issue 8 item 2: indices 2**59,
    -2**59 and 2**61 + 5 into an 8-wide f32 table read rows 0, 0 and 5); neighbours that fit do
    not; in a LOCKSTEP layer, lane by lane and in vector mode, a later lane's overflow comes
    before lane 0's ADDR_RANGE."""
    cases = address_overflow_cases(CFG)
    results = _run(cases, backpressure=0.3)
    for case, r in zip(cases, results):
        assert_matches(case, r, CFG)
    codes = {c.name: r.fault_code for c, r in zip(cases, results)}
    for name in ("eb_2p59", "eb_m2p59", "eb_2p61p5", "eb_2p58", "addr_up", "addr_down",
                 "alu_mul_chain", "alu_shl", "alu_mul_later", "block", "lanes", "vector_load",
                 "vector_affine"):
        assert codes[f"overflow_{name}"] == Fault.ADDR_OVERFLOW, name
    for name in ("eb_2p57", "alu_mul_fits"):
        assert codes[f"overflow_{name}"] == Fault.ADDR_RANGE, name
    for name in ("alu_mul_pushed", "alu_mul_hash", "alu_add_hash", "block_empty",
                 "vector_affine_fits"):
        assert codes[f"overflow_{name}"] == 0, name
    by_name = dict(zip((c.name for c in cases), results))
    assert by_name["overflow_eb_2p59"].fault_addr == 6            # the table's stream
    # Vector mode: one STREAM uop per stream and vector iteration (lane by lane: 2 per lane).
    assert by_name["overflow_vector_affine_fits"].stats["lane_eval_uops"] == 3
    assert by_name["overflow_lanes"].stats["lane_eval_uops"] == 2 * min(8, CFG.lanes)


def test_start_resets_state():
    """A job gives the same tokens, fault, cycles and counters whatever ran before it in the
    same simulator process: each case runs first, then again after a different program, after
    a run the watchdog cut short in the middle of BLOCK rows (loads in flight, reorder buffer
    full), after one it cut short in a silent loop, and after a faulting run."""
    base = fresh_seed("random_v1_case, vector_mode_case")
    cases = [block_after_immediate_case(), pack_case(seed=1)]
    cases += [c for c in block_cases() if c.name in ("block_unaligned", "block_empty_rows")]
    cases += [c for c in lockstep_cases(CFG.lanes)
              if c.name in ("lockstep_tail", "lockstep_gather")]
    cases += [random_v1_case(s, CFG, block_prob=0.6, lockstep_prob=0.5)
              for s in seed_range(base, 8)]
    cases += [vector_mode_case(s, CFG) for s in seed_range(base, 4)]
    # 256 rows of 256 bytes (1,024 beats): more than the default data queue (256 beats) and the
    # reorder buffer (512 lines) hold together, so that the slow core fills both (with 32 rows the
    # 256-beat queue of session 52 took them all and the watchdog never fired)
    wide = block_case("wide_rows", rows=64, dim=64, lengths=[4] * 64, size=4, pack=1)
    faulting = next(c for c in block_cases() if c.name == "block_past_region")
    # watchdog 56: past the first index loads' silent wait (two stages: more than 40 cycles),
    # short of the 80 the core's slow pops leave silent once the rows are marshaled
    disturbers = [RtlJob(wide.program, wide.memory, wide.args, backpressure=0.95, seed=3,
                         watchdog=56),
                  RtlJob(watchdog_case().program, bytes(64), [], watchdog=50),
                  RtlJob(faulting.program, faulting.memory, faulting.args)]
    jobs, slots = [], []
    for n, case in enumerate(cases):
        job = RtlJob(case.program, case.memory, case.args, backpressure=0.3, seed=n,
                     max_cycles=2_000_000)
        other = cases[(n + 1) % len(cases)]
        runs = []
        for before in [None, RtlJob(other.program, other.memory, other.args)] + disturbers:
            if before is not None:
                jobs.append(before)
            runs.append(len(jobs))
            jobs.append(job)
        slots.append(runs)
    results = run_many_on_rtl(jobs, config=CFG)
    aborted = results[slots[0][2] - 1]
    assert aborted.fault_code == Fault.WATCHDOG and aborted.data_tokens, aborted.stats
    for case, runs in zip(cases, slots):
        first = results[runs[0]]
        assert_matches(case, first, CFG)
        for k in runs[1:]:
            r = results[k]
            assert (r.data_tokens, r.control_tokens, r.fault_code, r.fault_addr) == \
                (first.data_tokens, first.control_tokens, first.fault_code, first.fault_addr), \
                f"{case.name}: differs after job {k - 1}"
            assert {key: r.stats[key] for key in COUNTERS} == \
                {key: first.stats[key] for key in COUNTERS}, \
                f"{case.name}: counters differ after job {k - 1}"
