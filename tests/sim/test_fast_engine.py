"""The C++ engine (``sim/harness.cpp``, ``engine="cpp"``) against the cocotb engine on the same jobs:
identical tokens, fault code and address, cycle counts, unit counters and memory statistics.

The reference is the cocotb engine (``sim/system_top.py``), which ``tb/system`` checks against the
golden model; both run one batch of jobs in one process, so the state a job leaves behind (memory
contents, registers, the free-running back-pressure generators) reaches the next one in both.
"""

import pytest

from hw.tmu import TmuConfig
from sim.system import RtlJob, run_many_on_rtl, run_on_rtl
from sw.runtime.isa import Fault
from tb.programs import alu_case, embedding_bag_case, fault_cases, random_case, watchdog_case
from tb.golden_compare import comparable
from tb.seeds import fresh_seed, seed_range

pytestmark = pytest.mark.rtl

CFG = TmuConfig()
def _jobs(backpressure):
    base = fresh_seed("alu_case, random_case")
    cases = [embedding_bag_case("eb_sum", rows=10, dim=4, lengths=[3, 1, 2, 4]),
             embedding_bag_case("eb_empty_bag", rows=6, dim=3, lengths=[0, 2, 0, 0, 1]),
             embedding_bag_case("eb_f64", rows=7, dim=3, lengths=[2, 3], elem_size=8),
             alu_case(base)]
    cases += [random_case(s) for s in seed_range(base, 6)]
    faults = {c.name: c for c in fault_cases(CFG)}
    cases += [faults["addr_range"], faults["bad_magic"]]
    jobs = [RtlJob(c.program, c.memory, c.args, backpressure=backpressure, seed=n,
                   max_cycles=2_000_000) for n, c in enumerate(cases)]
    eb = embedding_bag_case("eb_backdoor", rows=4, dim=2, lengths=[1, 2])
    jobs.append(RtlJob(eb.program, eb.memory, eb.args, backpressure=backpressure, backdoor=True))
    wd = watchdog_case()              # last: the WATCHDOG register keeps its value
    jobs.append(RtlJob(wd.program, wd.memory, wd.args, backpressure=backpressure, watchdog=500))
    return jobs


@pytest.mark.parametrize("backpressure", [0.0, 0.4])
def test_cpp_engine_matches_cocotb(backpressure):
    jobs = _jobs(backpressure)
    cocotb = run_many_on_rtl(jobs, config=CFG, engine="cocotb")
    cpp = run_many_on_rtl(jobs, config=CFG, engine="cpp")
    assert len(cpp) == len(jobs)
    for n, (a, b) in enumerate(zip(cocotb, cpp)):
        assert comparable(b) == comparable(a), f"job {n}"
    # the batch covers what it claims: a run-time fault, a decode fault, the watchdog
    codes = [r.fault_code for r in cpp]
    assert {Fault.ADDR_RANGE, Fault.BAD_MAGIC, Fault.WATCHDOG} <= set(codes)
    assert cpp[-1].fault_addr == 0 and cpp[0].data_tokens and cpp[0].control_tokens[-1] == 0xFFFF


def test_cpp_engine_timeout_and_arguments():
    wd = watchdog_case()
    with pytest.raises(TimeoutError):
        run_many_on_rtl([RtlJob(wd.program, wd.memory, wd.args, watchdog=0, max_cycles=3000)],
                        config=CFG, engine="cpp")
    with pytest.raises(ValueError, match="engine"):
        run_on_rtl(wd.program, wd.memory, wd.args, engine="python")


@pytest.mark.slow
def test_cpp_engine_matches_cocotb_on_hbm2():
    eb = embedding_bag_case("eb_hbm", rows=64, dim=16, lengths=[5, 0, 7, 3, 9, 2])
    base = fresh_seed("random_case")
    jobs = [RtlJob(eb.program, eb.memory, eb.args, backpressure=bp, seed=7) for bp in (0.0, 0.3)]
    jobs += [RtlJob(c.program, c.memory, c.args, max_cycles=2_000_000)
             for c in (random_case(s) for s in seed_range(base, 3))]
    cocotb = run_many_on_rtl(jobs, config=CFG, memory="HBM2", engine="cocotb")
    cpp = run_many_on_rtl(jobs, config=CFG, memory="HBM2", engine="cpp")
    for n, (a, b) in enumerate(zip(cocotb, cpp)):
        assert comparable(b) == comparable(a), f"job {n}"
    assert cpp[0].memory_stats["reads"] > 0
