"""The traversal's fetch stage (``hw/tmu/fetch.py``, ``docs/rtl.md`` §2.2): programs whose
loops run 0 times (``ENTER`` of an empty range: a mispredicted next uop, a refetch bubble), 1
or a few times (the exit predicted from the index and bound registers), whose
uops stall (a full reorder buffer, output back-pressure, blocking loads), whose run-ahead
engine stops before a faulting address, and whose LOCKSTEP layers step lane by lane, in the
Amaranth simulator, token by token against the golden model with random back-pressure (fresh
seeds, printed). The engine-pop fallback steps (a stream configuration refetch per step) are
covered by ``tb/tmu/test_spmm_rate.py::test_fault_behind_a_fused_pop``. The operand stream's
kind and mode come with the action words: no asynchronous ``scfg`` read is left."""

import dataclasses

import pytest

from hw.tmu import Tmu, TmuConfig
from hw.tmu.traversal import Traversal
from tb.golden_compare import assert_matches
from tb.programs import embedding_bag_case, fault_cases, lockstep_case
from tb.seeds import fresh_seed
from tb.tmu.amaranth_bench import run_on_amaranth
from tb.tmu.lockstep_programs import lane_fault_order_case

SMALL = TmuConfig.small()
TINY_ROB = dataclasses.replace(SMALL, max_inflight=2, prefetchers=1, prefetch_depth=2)


@pytest.mark.parametrize("config", [SMALL, TINY_ROB], ids=["small", "tiny_rob"])
def test_short_loops_and_stalls(config):
    """Bags of 0, 1, 2 and 3 lookups: every bag's inner loop exits after a few iterations,
    an empty bag's layer is skipped at ENTER (predicted ``pc + 1``: a refetch); a two-entry
    reorder buffer and back-pressure make uops stay for cycles."""
    seed = fresh_seed("test_short_loops_and_stalls back-pressure")
    case = embedding_bag_case("short_loops", rows=6, dim=2, lengths=[1, 0, 3, 0, 0, 2, 1],
                              indices=[5, 0, 2, 4, 1, 3, 3], seed=seed % 1000)
    r = run_on_amaranth(case.program, case.memory, case.args, config=config,
                        backpressure=0.5, seed=seed)
    assert_matches(case, r, config)
    assert r.stats["data_tokens"] == len(r.data_tokens)


@pytest.mark.parametrize("name", ["addr_range", "range_order"])
def test_faults_after_loop_exits(name):
    """A lookup past the table (the run-ahead engine stops before it, the traversal computes
    the address and faults ``ADDR_RANGE`` in program order) and decreasing offsets (``RANGE_ORDER`` at ``ENTER``),
    after loop exits, with back-pressure."""
    seed = fresh_seed(f"test_faults_after_loop_exits[{name}] back-pressure")
    case = next(c for c in fault_cases(SMALL) if c.name == name)
    r = run_on_amaranth(case.program, case.memory, case.args, config=SMALL, backpressure=0.4,
                        seed=seed)
    assert r.fault_code != 0
    assert_matches(case, r, SMALL)


def test_lane_steps():
    """A LOCKSTEP gather run lane by lane (each lane step loops back to the layer's body, the
    last one falls through to the ITER actions), bags of 3, 0 and 2 lookups, and a lane
    fault reported in the golden model's order."""
    seed = fresh_seed("test_lane_steps back-pressure")
    case = lockstep_case("gather", lanes=SMALL.lanes, rows=5, gather=True,
                         indices=[1, 4, 0, 2, 3], lengths=(3, 0, 2))
    r = run_on_amaranth(case.program, case.memory, case.args, config=SMALL, backpressure=0.3,
                        seed=seed)
    assert_matches(case, r, SMALL)
    case = lane_fault_order_case(SMALL.lanes)
    r = run_on_amaranth(case.program, case.memory, case.args, config=SMALL, backpressure=0.3,
                        seed=seed + 1)
    assert r.fault_code != 0
    assert_matches(case, r, SMALL)


@pytest.mark.parametrize("stages", [1, 2])
def test_no_asynchronous_stream_configuration_read(stages):
    """The traversal reads the stream configuration through the fetch stage only (one
    synchronous port of ``scfg``; with two stages a second, the ahead words',
    ``hw/tmu/ahead_fetch.py``, synchronous too); the operand's kind and mode are in the action
    words."""
    config = dataclasses.replace(SMALL, uop_stages=stages)
    assert not [n for n in Traversal(config).signature.members if n.startswith("operand_cfg")]
    m = Tmu(config).elaborate(None)
    assert [p.domain for p in m.submodules.scfg.read_ports] == ["sync"] * stages
    assert [p.domain for p in m.submodules.acfg.read_ports] == ["sync", "sync"]
