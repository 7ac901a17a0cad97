"""``hw.tmu.datapath``'s checks of a sum ``base + offset`` (``sum_below``, ``sum_above``,
``sum_outside_int64``: the address checks of ``hw/tmu/stream_evaluation.py`` and
``hw/tmu/address_checks.py``, written as ``offset`` against ``limit - base``) against Python's
exact integers: the signed 64-bit limits, their neighbours and the offsets a 64 x 32 product
reaches, plus fresh random triples, many of them with the sum within 2 of the limit."""

import random

from amaranth.hdl import Module, Signal, signed
from amaranth.sim import Simulator

from hw.tmu.datapath import sum_above, sum_below, sum_outside_int64
from tb.seeds import fresh_seed

INT64_MIN, INT64_MAX = -(1 << 63), (1 << 63) - 1
BASES = [0, 1, -1, 8, -8, INT64_MAX, INT64_MIN, INT64_MAX - 7, INT64_MIN + 8, 1 << 40]
OFFSETS = [0, 1, -1, 8, -8, INT64_MAX, INT64_MIN, INT64_MAX + 1, INT64_MIN - 1, 1 << 64,
           -(1 << 64), (1 << 96) - 1, -(1 << 96), (1 << 64) - 1, 1 << 40]
# (a region's end is 65 bits signed, the memory's limit 64 bits unsigned)
LIMITS = [0, 1, -1, 8, INT64_MAX, INT64_MIN, INT64_MAX + 1, (1 << 64) - 1, 1 << 40,
          (1 << 40) + 8, (1 << 41) + 8]


def test_sum_checks_match_exact_integers():
    rng = random.Random(fresh_seed("datapath sum checks"))
    triples = [(b, o, lim) for b in BASES for o in OFFSETS for lim in LIMITS]
    for _ in range(300):
        b = rng.randrange(INT64_MIN, INT64_MAX + 1)
        o = rng.randrange(-(1 << 96), 1 << 96) >> rng.randrange(0, 96)
        lim = rng.choice([b + o + rng.randrange(-2, 3), rng.randrange(-(1 << 64), 1 << 64)])
        triples.append((b, o, max(-(1 << 64), min(lim, (1 << 64) - 1))))
    m = Module()
    base, offset, limit = Signal(signed(64)), Signal(signed(97)), Signal(signed(65))
    below = sum_below(base, offset, limit)
    above = sum_above(base, offset, limit)
    outside = sum_outside_int64(base, offset)
    failures = []

    async def testbench(ctx):
        for b, o, lim in triples:
            ctx.set(base, b)
            ctx.set(offset, o)
            ctx.set(limit, lim)
            total = b + o
            want = (total < lim, total > lim, not INT64_MIN <= total <= INT64_MAX)
            got = (bool(ctx.get(below)), bool(ctx.get(above)), bool(ctx.get(outside)))
            if got != want:
                failures.append((b, o, lim, got, want))

    sim = Simulator(m)
    sim.add_testbench(testbench)
    sim.run()
    assert not failures, failures[:5]
