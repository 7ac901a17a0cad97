"""The run-ahead engines' output queue (``hw/tmu/engine_queue.py``) against a Python deque, in the
Amaranth simulator, with random stalls on both handshakes and random flushes."""

import random
from collections import deque

import pytest

from hw.tmu.engine_queue import EngineOutputQueue
from tb.seeds import fresh_seed
from tb.sim_helpers import run_sim


def _run(seed, cycles, offer_p, pop_p, flush_p):
    """Drive the queue at random for ``cycles`` cycles; check every cycle against a deque of
    at most two values; return the counts ``{"pushed", "popped", "both"}`` (values pushed,
    values popped, cycles in which one value moved each way)."""
    dut = EngineOutputQueue()
    rng = random.Random(seed)
    model = deque()
    stats = {"pushed": 0, "popped": 0, "both": 0}

    async def testbench(ctx):
        serial = 1
        for cycle in range(cycles):
            offer = rng.random() < offer_p
            pop = rng.random() < pop_p
            flush = rng.random() < flush_p
            ctx.set(dut.i.valid, offer)
            ctx.set(dut.i.payload, serial)
            ctx.set(dut.o.ready, pop)
            ctx.set(dut.flush, flush)
            # Outputs are the model's state, whatever the inputs of this cycle.
            assert ctx.get(dut.level) == len(model), (seed, cycle)
            assert ctx.get(dut.o.valid) == (len(model) != 0), (seed, cycle)
            assert ctx.get(dut.i.ready) == (len(model) != 2), (seed, cycle)
            if model:
                assert ctx.get(dut.o.payload) == model[0], (seed, cycle)
            popped = pop and bool(model)
            pushed = offer and len(model) != 2
            if popped:
                model.popleft()
                stats["popped"] += 1
            if pushed:
                model.append(serial)
                serial += 1
                stats["pushed"] += 1
            stats["both"] += popped and pushed
            if flush:
                model.clear()
            await ctx.tick()

    run_sim(dut, testbench)
    return stats


@pytest.mark.parametrize("offer_p, pop_p, flush_p", [(0.5, 0.5, 0.02), (0.9, 0.3, 0.01),
                                                     (0.3, 0.9, 0.05), (1.0, 1.0, 0.0)])
def test_queue_matches_a_deque_under_random_stalls(offer_p, pop_p, flush_p):
    """Every cycle: ``level``, ``o.valid``, ``o.payload`` and ``i.ready`` are the deque's, and
    neither ``ready`` nor the outputs depend on this cycle's ``o.ready``, ``i.valid`` or
    ``flush`` (they are read after those are set: registers only). Values keep their order,
    none is lost or doubled (serial numbers), and a flush empties the queue."""
    seed = fresh_seed(f"engine queue {offer_p} {pop_p} {flush_p}")
    stats = _run(seed, 600, offer_p, pop_p, flush_p)
    assert stats["pushed"] > 50 and stats["popped"] > 50, (seed, stats)


def test_queue_passes_one_value_per_cycle():
    """Offered and popped in every cycle, the queue moves a value in and out in every cycle
    but the first (the first value enters an empty queue and is popped the cycle after)."""
    stats = _run(0, 200, 1.0, 1.0, 0.0)
    assert stats == {"pushed": 200, "popped": 199, "both": 199}
