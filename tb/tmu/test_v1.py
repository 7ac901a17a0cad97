"""ISA version 1 (docs/isa.md §7) in the Amaranth simulator, token by token against the golden model."""

import pytest

from hw.tmu import TmuConfig
from tb.golden_compare import assert_matches
from tb.programs import (block_cases, lockstep_cases, pack_case, random_v1_case,
                         v1_decode_cases)
from tb.seeds import fresh_seed
from tb.tmu.amaranth_bench import run_on_amaranth

SMALL = TmuConfig.small()


@pytest.mark.parametrize("backpressure", [0.0, 0.6])
def test_packing_and_join(backpressure):
    case = pack_case()
    r = run_on_amaranth(case.program, case.memory, case.args, config=SMALL,
                        backpressure=backpressure, seed=2)
    assert_matches(case, r, SMALL)
    assert r.stats["data_tokens"] == len(r.data_tokens)


@pytest.mark.slow
def test_v1_decode_faults():
    """v1 fields, lanes beyond the small unit's (RESOURCES) and v1 visibility: same code and PC.
    (Slow here; the same cases run on Verilator in tb/system/test_v1.py.)"""
    for case in v1_decode_cases(SMALL):
        r = run_on_amaranth(case.program, case.memory, case.args, config=SMALL)
        assert_matches(case, r, SMALL)


@pytest.mark.parametrize("n", [0, pytest.param(1, marks=pytest.mark.slow),
                               pytest.param(2, marks=pytest.mark.slow)])
def test_random_v1_programs(n):
    seed = fresh_seed("random_v1_case, seed + n") + n
    case = random_v1_case(seed, SMALL, block_prob=0.5, lockstep_prob=0.5)
    r = run_on_amaranth(case.program, case.memory, case.args, config=SMALL, backpressure=0.3,
                        seed=seed)
    assert_matches(case, r, SMALL)


@pytest.mark.parametrize("name", ["block_unaligned", "block_empty_rows", "block_past_region"])
def test_block_rows(name):
    case = next(c for c in block_cases() if c.name == name)
    r = run_on_amaranth(case.program, case.memory, case.args, config=SMALL, backpressure=0.4,
                        seed=5)
    assert_matches(case, r, SMALL)


@pytest.mark.parametrize("name", ["lockstep_tail", "lockstep_gather", "lockstep_lane_fault"])
def test_lockstep_lanes(name):
    case = next(c for c in lockstep_cases(SMALL.lanes) if c.name == name)
    r = run_on_amaranth(case.program, case.memory, case.args, config=SMALL, backpressure=0.4,
                        seed=7)
    assert_matches(case, r, SMALL)
