"""Unit tests of the fixed-latency memory model in the Amaranth simulator."""

import random

import pytest

from hw.hbm_model import FixedLatencyMemory
from tb.sim_helpers import run_sim


def _image(words, seed=1):
    rng = random.Random(seed)
    return [rng.getrandbits(64) for _ in range(words)]


@pytest.mark.parametrize("latency", [1, 2, 5])
def test_latency_and_data(latency):
    dut = FixedLatencyMemory(words=16, tag_bits=4, latency=latency)
    image = _image(16)
    requests = [(8 * 3 + 5, 1), (0, 2), (8 * 15, 3), (8 * 16, 4), (8 * 7 + 7, 5)]
    seen = []

    async def testbench(ctx):
        for i, w in enumerate(image):
            ctx.set(dut.backdoor.addr, i)
            ctx.set(dut.backdoor.data, w)
            ctx.set(dut.backdoor.en, 1)
            await ctx.tick()
        ctx.set(dut.backdoor.en, 0)
        ctx.set(dut.resp.ready, 1)
        # One request per cycle; record the cycle each response is valid.
        for cycle in range(len(requests) + latency + 3):
            if cycle < len(requests):
                addr, tag = requests[cycle]
                ctx.set(dut.req.valid, 1)
                ctx.set(dut.req.payload, {"addr": addr, "tag": tag})
                assert ctx.get(dut.req.ready)
            else:
                ctx.set(dut.req.valid, 0)
            if ctx.get(dut.resp.valid):
                seen.append((cycle, ctx.get(dut.resp.payload.tag), ctx.get(dut.resp.payload.data)))
            await ctx.tick()

    run_sim(dut, testbench)
    expect = []
    for i, (addr, tag) in enumerate(requests):
        word = image[addr // 8] if addr // 8 < 16 else 0
        expect.append((i + latency, tag, word))
    assert seen == expect


def test_response_backpressure_holds_pipeline():
    dut = FixedLatencyMemory(words=8, tag_bits=3, latency=3)
    got = []

    async def testbench(ctx):
        for i in range(8):
            ctx.set(dut.backdoor.addr, i)
            ctx.set(dut.backdoor.data, 100 + i)
            ctx.set(dut.backdoor.en, 1)
            await ctx.tick()
        ctx.set(dut.backdoor.en, 0)
        rng = random.Random(3)
        sent = 0
        for cycle in range(200):
            ctx.set(dut.req.valid, sent < 8)
            ctx.set(dut.req.payload, {"addr": 8 * sent, "tag": sent})
            ready = rng.random() < 0.4
            ctx.set(dut.resp.ready, ready)
            if ctx.get(dut.resp.valid) and ready:
                got.append((ctx.get(dut.resp.payload.tag), ctx.get(dut.resp.payload.data)))
            if sent < 8 and ctx.get(dut.req.ready):
                sent += 1
            await ctx.tick()

    run_sim(dut, testbench)
    assert got == [(i, 100 + i) for i in range(8)]


@pytest.mark.parametrize("kwargs, message", [
    ({"words": -1, "tag_bits": 1}, "words must be a non-negative integer, not -1"),
    ({"words": 4, "tag_bits": 0}, "tag_bits must be a positive integer, not 0"),
    ({"words": 4, "tag_bits": 2, "latency": 0}, "latency must be a positive integer, not 0"),
    ({"words": 4, "tag_bits": 2, "storage": "x"}, "storage must be 'memory' or 'verilog', not 'x'"),
])
def test_arguments(kwargs, message):
    with pytest.raises(ValueError, match=f"^{message}$".replace("(", r"\(")):
        FixedLatencyMemory(**kwargs)
