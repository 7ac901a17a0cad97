"""The operand packer (``hw/tmu/packer.py``) against the golden model's packer
(``sw.runtime.golden._Packer``, docs/isa.md §7.5) in the Amaranth simulator."""

import random

import pytest

from hw.tmu.packer import Packer
from sw.runtime.golden import _Packer
from tb.sim_helpers import run_sim

MASK64 = (1 << 64) - 1


def _element(word, pos, log2, sign):
    bits = 8 << log2
    v = (word >> (8 * pos)) & ((1 << bits) - 1)
    if sign and v >> (bits - 1):
        v -= 1 << bits
    return v & MASK64


@pytest.mark.parametrize("backpressure", [0.0, 0.5])
def test_random_chunks_match_the_golden_packer(backpressure):
    """Random chunks (immediates, single loaded elements, runs of elements of a word, empty
    flush-only entries) with random packing and flushes: the same tokens as the golden packer."""
    rng = random.Random(3)
    chunks, expected = [], []
    golden = _Packer(expected)
    for _ in range(400):
        pack = rng.randrange(4)
        log2 = rng.choice([3, rng.randrange(4)])
        size = 1 << log2
        offset = rng.randrange(0, 8, size)
        count = rng.choice([0, 1, 1, rng.randrange(1, (8 - offset) // size + 1)])
        word, sign, flush = rng.getrandbits(64), rng.randrange(2), rng.random() < 0.4
        chunks.append(dict(word=word, offset=offset, log2_size=log2, sign=sign, count=count,
                           pack=pack, flush=flush))
        for e in range(count):
            golden.put(_element(word, offset + e * size, log2, sign), 8 >> pack)
        if flush:
            golden.flush()
    golden.flush()
    chunks.append(dict(word=0, offset=0, log2_size=3, sign=0, count=0, pack=0, flush=1))
    dut = Packer()
    out = []

    async def producer(ctx):
        for ch in chunks:
            ctx.set(dut.i.valid, 1)
            ctx.set(dut.i.payload, ch)
            await ctx.tick().until(dut.i.ready)
        ctx.set(dut.i.valid, 0)

    async def consumer(ctx):
        crng = random.Random(5)
        for _ in range(20000):
            r = crng.random() >= backpressure
            ctx.set(dut.o.ready, r)
            if r and ctx.get(dut.o.valid):
                out.append(ctx.get(dut.o.payload))
            if len(out) == len(expected):
                break
            await ctx.tick()

    run_sim(dut, producer, consumer)
    assert out == expected
