"""``hw/tmu/multiport_memory.py`` in the Amaranth simulator against a Python model of a memory
with transparent synchronous (or asynchronous) read ports; its copies map to block RAM."""

import random

import pytest

from hw.tmu.multiport_memory import MultiPortMemory
from tb.seeds import fresh_seed
from tb.sim_helpers import run_sim


@pytest.mark.parametrize("writes, reads, domain", [
    (1, 2, "sync"), (2, 1, "sync"), (2, 2, "sync"), (3, 2, "sync"), (2, 1, "comb"), (3, 3, "comb"),
])
def test_random_traffic_matches_the_model(writes, reads, domain):
    """Random writes on every port (often to the address a read port presents, sometimes two
    ports to one address: the higher-numbered one wins) and random reads for 600 cycles: a
    synchronous read returns the word after that cycle's writes, an asynchronous one the word
    before them."""
    seed = fresh_seed(f"multiport memory {writes} {reads} {domain}")
    rng = random.Random(seed)
    depth, width = 16, 12
    dut = MultiPortMemory(shape=width, depth=depth, write_ports=writes, read_ports=reads,
                          read_domain=domain)
    model = [0] * depth
    mismatches = []

    async def bench(ctx):
        for cycle in range(600):
            read_addrs = [rng.randrange(depth) for _ in range(reads)]
            ops = []
            for w in range(writes):
                en = rng.random() < 0.6
                addr = rng.choice(read_addrs) if rng.random() < 0.4 else rng.randrange(depth)
                data = rng.getrandbits(width)
                ctx.set(dut.write[w].en, en)
                ctx.set(dut.write[w].addr, addr)
                ctx.set(dut.write[w].data, data)
                if en:
                    ops.append((addr, data))
            for r, addr in enumerate(read_addrs):
                ctx.set(dut.read[r].addr, addr)
            if domain == "comb":
                for r, addr in enumerate(read_addrs):
                    if ctx.get(dut.read[r].data) != model[addr]:
                        mismatches.append((cycle, r, addr))
            for addr, data in ops:               # in port order: the last port wins
                model[addr] = data
            await ctx.tick()
            if domain == "sync":
                for r, addr in enumerate(read_addrs):
                    if ctx.get(dut.read[r].data) != model[addr]:
                        mismatches.append((cycle, r, addr))

    run_sim(dut, bench)
    assert not mismatches, f"seed {seed}: {mismatches[:5]}"


@pytest.mark.parametrize("kwargs, message", [
    ({"depth": 0}, "depth must be an integer >= 1, not 0"),
    ({"write_ports": 0}, "write_ports must be an integer >= 1, not 0"),
    ({"read_ports": True}, "read_ports must be an integer >= 1, not True"),
    ({"read_domain": "async"}, "read_domain must be 'sync' or 'comb', not 'async'"),
])
def test_errors(kwargs, message):
    args = dict(shape=8, depth=4, write_ports=2, read_ports=1) | kwargs
    with pytest.raises(ValueError) as e:
        MultiPortMemory(**args)
    assert str(e.value) == message
