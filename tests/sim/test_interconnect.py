"""The multi-unit interconnect (``hw/interconnect.py``) in the Amaranth simulator, against a fake
memory written here: random stalls on every handshake, every request and response accounted for
exactly once with the right tags, and fairness under saturation with a port-order ingress."""

import random
from collections import Counter

import pytest
from amaranth.sim import Simulator

from hw.interconnect import Interconnect, unit_bits
from tb.seeds import fresh_seed

TAG_BITS = 5


def _run(dut, cycles, *, rng, offer, mem_accept, resp_valid_p, unit_resp_ready_p):
    """Drive ``dut`` for ``cycles``; returns (requests sent per unit, requests seen by memory,
    responses delivered per unit, accepted count per unit). ``offer(u, k)`` says whether unit
    port (u, k) offers its next request this cycle; ``mem_accept(valids)`` gives the memory
    ports' ready bits (a function of the ports' valids, as the HBM model's ingress)."""
    K, P, M = dut.units, dut.unit_ports, dut.memory_ports
    sent, seen, delivered = [], [], []
    accepted = Counter()
    pending = []                    # (memory tag, data) accepted by the fake memory
    serial = [0] * K
    next_req = {}                   # (u, k) -> (tag, addr) being offered (held until taken)

    async def bench(ctx):
        for _ in range(cycles):
            for u in range(K):
                for k in range(P):
                    port = dut.unit_req[u][k]
                    if (u, k) not in next_req and offer(u, k):
                        tag = serial[u] % (1 << TAG_BITS)
                        serial[u] += 1
                        next_req[(u, k)] = (tag, (u << 20) | (serial[u] << 3))
                    if (u, k) in next_req:
                        tag, addr = next_req[(u, k)]
                        ctx.set(port.valid, 1)
                        ctx.set(port.payload.tag, tag)
                        ctx.set(port.payload.addr, addr)
                    else:
                        ctx.set(port.valid, 0)
                    ctx.set(dut.unit_resp[u][k].ready, rng.random() < unit_resp_ready_p)
            # memory responses: any pending one on any port, random stalls
            offered = []
            order = list(range(len(pending)))
            rng.shuffle(order)
            for j in range(M):
                if order and rng.random() < resp_valid_p:
                    i = order.pop()
                    offered.append(i)
                    tag, data = pending[i]
                    ctx.set(dut.mem_resp[j].valid, 1)
                    ctx.set(dut.mem_resp[j].payload.tag, tag)
                    ctx.set(dut.mem_resp[j].payload.data, data)
                else:
                    offered.append(None)
                    ctx.set(dut.mem_resp[j].valid, 0)
            valids = [ctx.get(dut.mem_req[j].valid) for j in range(M)]
            readies = mem_accept(valids)
            for j in range(M):
                ctx.set(dut.mem_req[j].ready, readies[j])
            # sample the transfers of this cycle
            for j in range(M):
                if ctx.get(dut.mem_req[j].valid) and readies[j]:
                    tag = ctx.get(dut.mem_req[j].payload.tag)
                    addr = ctx.get(dut.mem_req[j].payload.addr)
                    seen.append((tag, addr))
                    pending.append((tag, addr ^ 0x5A5A))
            for u in range(K):
                for k in range(P):
                    if ctx.get(dut.unit_req[u][k].ready) and (u, k) in next_req:
                        sent.append((u,) + next_req.pop((u, k)))
                        accepted[u] += 1
                    r = dut.unit_resp[u][k]
                    if ctx.get(r.valid) and ctx.get(r.ready):
                        delivered.append((u, ctx.get(r.payload.tag), ctx.get(r.payload.data)))
            taken = []
            for j, i in enumerate(offered):
                if i is not None and ctx.get(dut.mem_resp[j].ready):
                    taken.append(i)
            for i in sorted(taken, reverse=True):
                pending.pop(i)
            await ctx.tick()

    sim = Simulator(dut)
    sim.add_clock(1e-6)
    sim.add_testbench(bench)
    sim.run()
    return sent, seen, delivered, accepted, pending


def _port_order_ingress(rng, p):
    """Accept the valid ports in port order until a random refusal (HBM model §2 "Ingress")."""
    def accept(valids):
        out, refused = [], False
        for v in valids:
            refused = refused or (v and rng.random() >= p)
            out.append(int(v and not refused))
        return out
    return accept


@pytest.mark.parametrize("units,unit_ports,memory_ports", [(2, 2, 3), (4, 2, 4), (1, 2, 2)])
def test_no_loss_no_duplication_random_stalls(units, unit_ports, memory_ports):
    seed = fresh_seed(f"interconnect {units} units")
    rng = random.Random(seed)
    dut = Interconnect(units=units, unit_ports=unit_ports, memory_ports=memory_ports,
                       tag_bits=TAG_BITS)
    sent, seen, delivered, accepted, pending = _run(
        dut, 400, rng=rng, offer=lambda u, k: rng.random() < 0.4,
        mem_accept=_port_order_ingress(rng, 0.7), resp_valid_p=0.6, unit_resp_ready_p=0.7)
    ub = unit_bits(units)
    # every accepted request reached the memory once, with the unit in the high tag bits
    want = Counter(((tag | (u << TAG_BITS)) if ub else tag, addr) for u, tag, addr in sent)
    assert Counter(seen) == want, seed
    assert len(sent) > 50, seed
    # every response the memory gave up reached its unit once, tag and data intact
    answered = Counter(seen) - Counter((t, d ^ 0x5A5A) for t, d in pending)
    got = Counter(((tag | (u << TAG_BITS)) if ub else tag, data ^ 0x5A5A)
                  for u, tag, data in delivered)
    assert got == answered, seed
    for u, tag, data in delivered:        # the data names the unit that asked
        assert (data ^ 0x5A5A) >> 20 == u, seed


def test_fair_under_saturation():
    """All units always offer on every port; the memory takes one or two requests a cycle in
    port order: each unit gets a fair share (fixed unit-to-port wiring would give unit 0 all)."""
    seed = fresh_seed("interconnect fairness")
    rng = random.Random(seed)
    units = 2
    dut = Interconnect(units=units, unit_ports=2, memory_ports=4, tag_bits=TAG_BITS)

    def accept(valids):          # port-order ingress with room for 1..2 requests per cycle
        room = rng.choice((1, 2))
        out = []
        for v in valids:
            out.append(int(v and room > 0))
            room -= int(v)
        return out

    sent, seen, delivered, accepted, _ = _run(
        dut, 300, rng=rng, offer=lambda u, k: True, mem_accept=accept, resp_valid_p=0.9,
        unit_resp_ready_p=1.0)
    total = sum(accepted.values())
    assert total > 300, (seed, accepted)
    for u in range(units):
        assert accepted[u] >= 0.4 * total, (seed, accepted)


def test_bad_parameters():
    with pytest.raises(ValueError, match="units"):
        Interconnect(units=3, unit_ports=2, memory_ports=2, tag_bits=4)
    with pytest.raises(ValueError, match="memory_ports"):
        Interconnect(units=2, unit_ports=2, memory_ports=0, tag_bits=4)
