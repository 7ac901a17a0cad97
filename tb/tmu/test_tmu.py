"""The access unit in the Amaranth simulator against the golden model (small programs)."""

import dataclasses

import pytest

from hw.tmu import TmuConfig
from tb.golden_compare import assert_matches
from tb.programs import embedding_bag_case, fault_cases, random_case
from tb.seeds import fresh_seed
from tb.tmu.amaranth_bench import run_on_amaranth

SMALL = TmuConfig.small()


@pytest.mark.parametrize("config", [SMALL, dataclasses.replace(SMALL, prefetchers=0),
                                    dataclasses.replace(SMALL, max_inflight=2, prefetchers=1,
                                                        prefetch_depth=2)],
                         ids=["small", "no_prefetch", "tiny_rob"])
@pytest.mark.parametrize("backpressure", [0.0, 0.5])
def test_embedding_bag(backpressure, config):
    case = embedding_bag_case("eb", rows=5, dim=3, lengths=[2, 0, 3], indices=[4, 0, 4, 4, 1])
    r = run_on_amaranth(case.program, case.memory, case.args, config=config,
                        backpressure=backpressure, seed=3)
    assert_matches(case, r, config)
    assert r.stats["peak_inflight"] >= 1
    assert r.stats["data_tokens"] == len(r.data_tokens)
    assert r.stats["control_tokens"] == len(r.control_tokens)
    assert r.stats == r.stats_later       # every event counted when done rises


@pytest.mark.parametrize("n", range(4))
def test_random_programs(n):
    seed = fresh_seed("random_case, seed + n") + n
    case = random_case(seed, layers=SMALL.layers, streams=SMALL.streams, actions=SMALL.actions,
                       regions=2, args=SMALL.args)
    r = run_on_amaranth(case.program, case.memory, case.args, config=SMALL, backpressure=0.3,
                        seed=seed)
    assert_matches(case, r, SMALL)
    assert r.stats == r.stats_later       # every event counted when done rises


@pytest.mark.parametrize("name", ["bad_magic", "too_many_layers", "source_not_visible",
                                  "odd_length", "addr_range", "range_order"])
def test_faults(name):
    case = next(c for c in fault_cases(SMALL) if c.name == name)
    r = run_on_amaranth(case.program, case.memory, case.args, config=SMALL)
    assert r.fault_code != 0
    assert_matches(case, r, SMALL)
