"""The memory ports' arbiter (``hw/tmu/request_arbiter.py``) in the Amaranth simulator: random
requesters offering loads with random gaps, ports accepting at random, a ``clear`` now and then,
requesters urgent at random (or never); every cycle's ports, readies and counters against a
Python model of the two-entry buffers and of the order (urgent requesters first, each class in
requester order)."""

import random

import pytest

from hw.tmu.request_arbiter import RequestArbiter
from tb.seeds import fresh_seed
from tb.sim_helpers import run_sim


INDEX_BITS = 5


@pytest.mark.parametrize("urgency", [0.0, 0.3], ids=["never_urgent", "urgent"])
@pytest.mark.parametrize("requesters, ports", [(1, 1), (4, 2), (7, 2), (6, 4)])
def test_loads_leave_in_priority_order_a_cycle_later(requesters, ports, urgency):
    seed = fresh_seed(f"request arbiter {requesters}x{ports} urgency {urgency}")
    rng = random.Random(seed)
    dut = RequestArbiter(requesters, ports, INDEX_BITS, 64)
    buffers = [[] for _ in range(requesters)]       # the model: loads waiting, oldest first
    offered = [[] for _ in range(requesters)]       # every load accepted from a requester
    issued = [[] for _ in range(requesters)]        # every load seen on a port

    def new_load(r, n):
        return {"addr": rng.randrange(1 << 40), "tag": (r << 3 | n) % (1 << INDEX_BITS + 2),
                "useful_bytes": rng.randrange(1, 65), "blocking": rng.randrange(2)}

    jumped = 0          # cycles in which an urgent load went before an earlier requester's

    async def bench(ctx):
        nonlocal jumped
        pending = [None] * requesters                 # the payload each requester offers
        for cycle in range(1200):
            epoch = (cycle // 300) % 2
            clear = rng.random() < 0.01
            ctx.set(dut.epoch, epoch)
            ctx.set(dut.clear, clear)
            for r in range(requesters):
                if pending[r] is None and rng.random() < 0.5:
                    pending[r] = new_load(r, len(offered[r]))
                request = dut.requests[r]
                ctx.set(request.valid, pending[r] is not None)
                if pending[r] is not None:
                    ctx.set(request.payload, pending[r])
            urgent = [rng.random() < urgency for _ in range(requesters)]
            for r in range(requesters):
                ctx.set(dut.urgent[r], urgent[r])
            ready = [rng.random() < 0.6 for _ in range(ports)]
            for k in range(ports):
                ctx.set(dut.req[k].ready, ready[k])
            # The buffers' readies come from their levels alone.
            accepts = [len(buffers[r]) < 2 for r in range(requesters)]
            for r in range(requesters):
                assert ctx.get(dut.requests[r].ready) == accepts[r], (cycle, r)
            # The ports: the oldest loads of the requesters that hold one, the urgent ones first,
            # each class in requester order.
            holders = ([r for r in range(requesters) if buffers[r] and urgent[r]]
                       + [r for r in range(requesters) if buffers[r] and not urgent[r]])[:ports]
            jumped += any(urgent[h] and any(buffers[q] and not urgent[q] for q in range(h))
                          for h in holders)
            fired, fired_bytes, fired_blocking = 0, 0, 0
            for k in range(ports):
                port = dut.req[k]
                if k >= len(holders):
                    assert not ctx.get(port.valid), (cycle, k)
                    continue
                load = buffers[holders[k]][0]
                assert ctx.get(port.valid), (cycle, k)
                assert ctx.get(port.payload.addr) == load["addr"], (cycle, k)
                assert ctx.get(port.payload.tag) == load["tag"] | epoch << INDEX_BITS + 2
                if ready[k]:
                    fired += 1
                    fired_bytes += load["useful_bytes"]
                    fired_blocking += load["blocking"]
            assert ctx.get(dut.issued) == fired
            assert ctx.get(dut.issued_bytes) == fired_bytes
            assert ctx.get(dut.issued_blocking) == fired_blocking
            # The edge: ports pop, requesters push (a ``clear`` drops both the buffered loads
            # and the one offered in its cycle).
            for k, r in enumerate(holders):
                if ready[k]:
                    issued[r].append(buffers[r].pop(0))
            for r in range(requesters):
                if pending[r] is not None and accepts[r]:
                    buffers[r].append(pending[r])
                    offered[r].append(pending[r])
                    pending[r] = None
            if clear:
                for r in range(requesters):
                    dropped = buffers[r]
                    del offered[r][len(offered[r]) - len(dropped):]
                    buffers[r] = []
            await ctx.tick()

    run_sim(dut, bench)
    # Nothing lost or repeated: each requester's loads left in its order.
    for r in range(requesters):
        assert issued[r] == offered[r][:len(issued[r])]
        assert len(offered[r]) - len(issued[r]) == len(buffers[r])
    assert sum(map(len, issued)) > 100 * ports, "too few loads to mean anything"
    if urgency and requesters > 1:
        assert jumped > 20, (seed, jumped)      # the urgent order was exercised


def test_bad_parameters_are_named():
    with pytest.raises(ValueError, match="requesters"):
        RequestArbiter(0, 2, INDEX_BITS, 64)
    with pytest.raises(ValueError, match="ports"):
        RequestArbiter(3, 9, INDEX_BITS, 64)
