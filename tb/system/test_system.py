"""The system top under Verilator (cocotb) against the golden model, token by token.

Cases are batched: one simulator process per test function (``run_many_on_rtl``).
"""

import numpy as np
import pytest

from hw.tmu import TmuConfig
from sw.runtime.isa import Fault
from tb.golden_compare import assert_matches, expected
from sim.system import RtlJob, RtlResult, run_many_on_rtl, run_on_rtl
from tb.programs import (alu_case, embedding_bag_case, fault_cases, mul_constants_case,
                         mutated_cases, random_case, watchdog_case)
from tb.seeds import fresh_seed, seed_range

pytestmark = pytest.mark.rtl

CFG = TmuConfig()


def _run(cases, backpressure=0.0, seed=0, **job_options):
    jobs = [RtlJob(c.program, c.memory, c.args, backpressure=backpressure, seed=seed + n,
                   max_cycles=2_000_000, **job_options)
            for n, c in enumerate(cases)]
    return run_many_on_rtl(jobs, config=CFG)


def _embedding_bag_cases():
    rng = np.random.default_rng(5)
    cases = [
        embedding_bag_case("eb_sum", rows=10, dim=4, lengths=[3, 1, 2, 4]),
        embedding_bag_case("eb_empty_bag", rows=6, dim=3, lengths=[0, 2, 0, 0, 1]),
        embedding_bag_case("eb_all_empty", rows=3, dim=2, lengths=[0, 0, 0]),
        embedding_bag_case("eb_repeated_row", rows=5, dim=5, lengths=[4, 2],
                           indices=[3, 3, 3, 1, 3, 3]),
        embedding_bag_case("eb_f64", rows=7, dim=3, lengths=[2, 3], elem_size=8),
        embedding_bag_case("eb_one_column", rows=9, dim=1, lengths=[5, 5]),
    ]
    for n in range(4):
        rows, dim, nbags = (int(x) for x in (rng.integers(1, 30), rng.integers(1, 12),
                                             rng.integers(1, 10)))
        cases.append(embedding_bag_case(f"eb_random_{n}", rows=rows, dim=dim,
                                        lengths=rng.integers(0, 6, nbags), seed=n))
    return cases


@pytest.mark.parametrize("backpressure", [0.0, 0.3, 0.7])
def test_programs_match_golden(backpressure):
    """Hand-written embedding bags, and ALU and random programs of fresh seeds (printed:
    ``EMBER_SEED=...`` reproduces them)."""
    base = fresh_seed("alu_case, random_case")
    cases = _embedding_bag_cases() + [alu_case(s) for s in seed_range(base, 3)]
    cases += [mul_constants_case(base), mul_constants_case(base, huge=True)]
    cases += [random_case(s) for s in seed_range(base, 60)]
    for case, r in zip(cases, _run(cases, backpressure, seed=int(backpressure * 100))):
        assert_matches(case, r, CFG)


def test_faults_match_golden():
    cases = fault_cases(CFG)
    results = _run(cases, backpressure=0.3)
    codes = set()
    for case, r in zip(cases, results):
        assert_matches(case, r, CFG)
        codes.add(r.fault_code)
    # Every fault code the golden model can produce is exercised.
    assert {Fault.BAD_MAGIC, Fault.BAD_VERSION, Fault.RESOURCES, Fault.ILLEGAL_FIELD,
            Fault.ADDR_RANGE, Fault.MISALIGNED, Fault.RANGE_ORDER, Fault.TRUNCATED} <= codes
    # Tokens that precede a run-time fault are delivered, and no DONE follows.
    by_name = dict(zip((c.name for c in cases), results))
    r = by_name["addr_range"]
    assert r.fault_code == Fault.ADDR_RANGE and r.data_tokens and 0xFFFF not in r.control_tokens


def test_decoder_against_golden_loader():
    """Programs with one corrupted word: the same fault code and PC as sw.runtime.isa (fresh
    seed, printed)."""
    cases = mutated_cases(fresh_seed("mutated_cases"), 600, CFG)
    for case, r in zip(cases, _run(cases, backpressure=0.2)):
        assert_matches(case, r, CFG)


def test_loads_in_flight_on_embedding_bag():
    """Row width 32: the unit keeps at least 16 loads in flight (max_inflight = 32)."""
    case = embedding_bag_case("eb_wide", rows=64, dim=32, lengths=[4] * 8)
    r, = _run([case])
    assert_matches(case, r, CFG)
    assert r.stats["peak_inflight"] >= 16, r.stats
    assert r.stats["loads"] >= 8 * 4 * 32


def test_watchdog_stops_a_silent_loop():
    case = watchdog_case()
    r, = _run([case], watchdog=500)
    assert (r.fault_code, r.fault_addr) == (Fault.WATCHDOG, 0)
    assert r.control_tokens == [] and r.cycles < 2000


def test_watchdog_register_does_not_leak_between_jobs():
    """Issue 8 item 8: a job without ``watchdog`` runs with the configuration's default
    (2**20 cycles), not with the value an earlier job of the batch wrote: a loop of 5,000
    silent cycles completes after a job whose watchdog was 500 cycles."""
    silent = watchdog_case(iterations=5000)
    jobs = [RtlJob(watchdog_case().program, bytes(64), [], watchdog=500),
            RtlJob(silent.program, silent.memory, silent.args),
            RtlJob(silent.program, silent.memory, silent.args, watchdog=500)]
    first, second, third = run_many_on_rtl(jobs, config=CFG)
    assert (first.fault_code, second.fault_code, third.fault_code) == (Fault.WATCHDOG, 0,
                                                                       Fault.WATCHDOG)
    assert second.control_tokens == [1, 0xFFFF] and second.cycles > 5000
    with pytest.raises(ValueError, match=r"^watchdog must be in 0\.\.2\*\*32-1 cycles or None, "
                                         r"not -1$"):
        run_many_on_rtl([RtlJob(b"", bytes(8), [], watchdog=-1)], config=CFG)


def test_backdoor_image_load():
    case = embedding_bag_case("eb_backdoor", rows=4, dim=2, lengths=[1, 2])
    r, = _run([case], backdoor=True)
    assert_matches(case, r, CFG)


def test_run_on_rtl():
    case = embedding_bag_case("eb_api", rows=8, dim=4, lengths=[2, 0, 3])
    r = run_on_rtl(case.program, case.memory, case.args, config=CFG, backpressure=0.3, seed=1)
    assert isinstance(r, RtlResult)
    data, ctrl, code, addr, _ = expected(case, CFG)
    assert (r.data_tokens, r.control_tokens, r.fault_code, r.fault_addr) == (data, ctrl, 0, 0)
    assert r.control_tokens[-1] == 0xFFFF
    assert r.cycles > 0 and r.stats["cycles"] == r.cycles
    assert r.stats["data_tokens"] == len(data) and r.stats["control_tokens"] == len(ctrl)
    assert r.stats["tokens"] == len(data) + len(ctrl)
    for key in ("loads", "bytes_loaded", "stall_cycles", "peak_inflight", "inflight_sum"):
        assert key in r.stats


def test_run_on_rtl_arguments():
    with pytest.raises(ValueError, match=r"^memory length must be a multiple of 8 bytes, not 3$"):
        run_on_rtl(b"", b"abc", [])
    with pytest.raises(ValueError, match=r"^backpressure must be in \[0, 1\), not 1\.0$"):
        run_on_rtl(b"", bytes(8), [], backpressure=1.0)
    with pytest.raises(ValueError, match=r"^args must have at most 16 registers"):
        run_on_rtl(b"", bytes(8), [0] * 17)


@pytest.mark.slow
@pytest.mark.parametrize("backpressure", [0.0, 0.5])
def test_large_embedding_bag(backpressure):
    rng = np.random.default_rng(9)
    case = embedding_bag_case("eb_large", rows=1000, dim=16, lengths=rng.integers(0, 12, 400))
    r, = _run([case], backpressure=backpressure)
    assert_matches(case, r, CFG)
    assert r.stats["peak_inflight"] >= 16


@pytest.mark.slow
def test_many_random_programs():
    cases = [random_case(s) for s in seed_range(fresh_seed("random_case"), 300)]
    for case, r in zip(cases, _run(cases, backpressure=0.5)):
        assert_matches(case, r, CFG)
