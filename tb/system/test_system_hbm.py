"""The access unit on the HBM memory models: the same tokens as the golden model.

The unit's results must not depend on the memory behind it (responses arrive out of order across
channels; the unit reorders by tag). These runs use the ``HBM2``/``HBM3`` presets
(``hw/hbm_model/presets.py``) instead of the fixed-latency ``simple`` memory and compare every
token with the golden model (``sw.runtime.golden``), and the memory statistics with what the
unit reports (one 64-byte access per load; no writes).

The fast-suite check runs in the Amaranth simulator (no Verilator build: the HBM2 system model
takes several minutes to build on a loaded 2-core machine) with HBM2's timing, channels and
mapping and shorter queues; the Verilator runs on the real presets are ``slow``.
"""

import numpy as np
import pytest

from hw.tmu import TmuConfig
from tb.golden_compare import assert_matches
from sim.system import RtlJob, run_many_on_rtl
from tb.programs import embedding_bag_case, fault_cases, random_case
from tb.seeds import fresh_seed, seed_range
from tb.system.test_system import _embedding_bag_cases

CFG = TmuConfig()


def _run(cases, memory, backpressure=0.0, seed=0):
    jobs = [RtlJob(c.program, c.memory, c.args, backpressure=backpressure, seed=seed + n,
                   max_cycles=4_000_000) for n, c in enumerate(cases)]
    return run_many_on_rtl(jobs, config=CFG, memory=memory)


def _check_memory_stats(r, access_bytes=64):
    """The memory saw every load the unit counted (the unit counts from START to done; the memory
    until its statistics are read, so it also sees run-ahead loads issued after done), each
    delivered and classified once, and no writes."""
    s = r.memory_stats
    assert s["reads"] >= r.stats["loads"] and s["writes"] == 0
    assert s["bytes_read"] == access_bytes * s["reads"]
    assert s["row_hits"] + s["row_misses"] + s["row_conflicts"] == s["reads"]
    if s["reads"]:
        assert sum(s["read_latency_hist"]) == s["reads"]
        assert s["read_latency_min"] <= s["read_latency_sum"] / s["reads"] <= s["read_latency_max"]


def test_embedding_bag_on_hbm2_amaranth():
    """The fast-suite check: an embedding bag on HBM2 (queues of 8) in the Amaranth simulator."""
    from hw.hbm_model.presets import get_preset
    from tb.golden_compare import expected
    from tb.tmu.amaranth_bench import run_on_amaranth
    cfg = TmuConfig.small()
    preset = get_preset("HBM2").replace(queue_depth=8, response_depth=4)
    case = embedding_bag_case("eb_hbm2", rows=10, dim=4, lengths=[3, 1, 2, 4])
    r = run_on_amaranth(case.program, case.memory, case.args, config=cfg, preset=preset,
                        backpressure=0.3)
    data, ctrl, code, addr, _ = expected(case, cfg)
    assert (r.data_tokens, r.control_tokens, r.fault_code) == (data, ctrl, code)


@pytest.mark.slow
@pytest.mark.rtl
def test_embedding_bag_on_hbm2():
    """Embedding bags and random programs on HBM2 under Verilator, token by token."""
    cases = _embedding_bag_cases() + [random_case(s)
                                      for s in seed_range(fresh_seed("random_case"), 12)]
    results = _run(cases, "HBM2", backpressure=0.3)
    for case, r in zip(cases, results):
        assert_matches(case, r, CFG)
        _check_memory_stats(r)
    one_row = results[3]       # eb_repeated_row: a 100-byte table, one row: hits dominate
    assert one_row.memory_stats["row_hits"] > one_row.memory_stats["row_misses"]


@pytest.mark.slow
@pytest.mark.rtl
@pytest.mark.parametrize("memory", ["HBM2", "HBM3"])
@pytest.mark.parametrize("backpressure", [0.0, 0.5])
def test_programs_on_hbm(memory, backpressure):
    cases = _embedding_bag_cases() + [random_case(s)
                                      for s in seed_range(fresh_seed("random_case"), 80)]
    cases += fault_cases(CFG)
    for case, r in zip(cases, _run(cases, memory, backpressure, seed=int(10 * backpressure))):
        assert_matches(case, r, CFG)
        _check_memory_stats(r)


@pytest.mark.slow
@pytest.mark.rtl
@pytest.mark.parametrize("memory", ["HBM2", "HBM3"])
def test_large_embedding_bag_on_hbm(memory):
    rng = np.random.default_rng(9)
    case = embedding_bag_case("eb_large", rows=1000, dim=16, lengths=rng.integers(0, 12, 400))
    r, = _run([case], memory)
    assert_matches(case, r, CFG)
    _check_memory_stats(r)
    assert r.memory_stats["activates"] > 0 and r.stats["peak_inflight"] >= 16
