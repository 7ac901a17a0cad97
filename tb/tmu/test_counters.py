"""The event counters (``hw/tmu/counters.py``) in the Amaranth simulator: random events over runs
of random length with random idle gaps and restarts, against a Python model that counts each
event in its own cycle (the semantics of ``COUNTERS``). The hardware counts a cycle late, so
its counts must equal the model's exactly one cycle after the run's last counted cycle (the
cycle in which the unit raises ``done``), and must be cleared by ``clear``."""

import random

import pytest

from hw.tmu import TmuConfig
from hw.tmu.counters import COUNTERS, Counters, events_layout
from tb.seeds import fresh_seed
from tb.sim_helpers import run_sim


def _random_events(rng, config, inflight):
    """One cycle's events (a dict of ``events_layout`` fields); responses never exceed the
    requests in flight."""
    ports = config.memory_ports
    issued = rng.randrange(ports + 1)
    responses = rng.randrange(min(ports, inflight + issued) + 1)
    ev = {name: rng.randrange(2) for name in events_layout(config).members}
    ev.update(issued=issued, issued_bytes=rng.randrange(8 * issued + 1),
              issued_blocking=rng.randrange(issued + 1), responses=responses,
              data_tokens=rng.randrange(config.output_tokens + 1))
    return ev


def _model_step(counts, state, ev):
    """The counters after one counted cycle with events ``ev`` (``state["inflight"]``: requests
    in flight at the start of the cycle)."""
    inflight = state["inflight"]
    after = inflight + ev["issued"] - ev["responses"]
    counts["cycles"] += 1
    counts["loads"] += ev["issued"]
    counts["bytes_loaded"] += ev["issued_bytes"]
    counts["blocking_loads"] += ev["issued_blocking"]
    counts["data_tokens"] += ev["data_tokens"]
    counts["control_tokens"] += ev["control_tokens"]
    counts["out_stall_cycles"] += ev["out_stall"]
    counts["rob_full_cycles"] += ev["rob_full"]
    counts["block_wait_cycles"] += ev["block_wait"]
    counts["inflight_sum"] += inflight
    counts["peak_inflight"] = max(counts["peak_inflight"], after)
    counts["decode_cycles"] += ev["decoding"]
    counts["vector_iterations"] += ev["vector_iteration"]
    counts["lane_eval_uops"] += ev["lane_eval_uop"]
    counts["vec_marshal_cycles"] += ev["vec_marshal"]
    counts["uops"] += ev["uop"]
    counts["fetch_bubble_cycles"] += ev["fetch_bubble"]
    counts["issue_wait_cycles"] += ev["issue_wait"]
    counts["evaluate_cycles"] += ev["evaluate"]
    state["inflight"] = after


@pytest.mark.parametrize("config", [TmuConfig(), TmuConfig.small()], ids=["default", "small"])
def test_counts_exact_one_cycle_after_the_run(config):
    seed = fresh_seed("counters")
    rng = random.Random(seed)
    dut = Counters(config)
    checked = []

    async def bench(ctx):
        for run in range(12):
            ctx.set(dut.clear, 1)
            ctx.set(dut.count, 0)
            # Events outside a run are ignored.
            ctx.set(dut.events, _random_events(rng, config, 0))
            await ctx.tick()
            ctx.set(dut.clear, 0)
            counts = dict.fromkeys(COUNTERS, 0)
            state = {"inflight": 0}
            for _ in range(rng.randrange(1, 40)):
                ev = _random_events(rng, config, state["inflight"])
                ctx.set(dut.count, 1)
                ctx.set(dut.events, ev)
                _model_step(counts, state, ev)
                await ctx.tick()
            # The run has ended: the next cycle (the unit's ``done`` cycle) has every count.
            ctx.set(dut.count, 0)
            ctx.set(dut.events, _random_events(rng, config, state["inflight"]))
            await ctx.tick()
            for k in range(rng.randrange(1, 4)):          # and keeps them while idle
                got = {name: ctx.get(getattr(dut.counters, name)) for name in COUNTERS}
                assert got == counts, (seed, run, k, {n: (got[n], counts[n]) for n in COUNTERS
                                                      if got[n] != counts[n]})
                await ctx.tick()
            checked.append(run)

    run_sim(dut, bench)
    assert len(checked) == 12, seed
