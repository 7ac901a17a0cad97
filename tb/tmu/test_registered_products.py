"""``hw.tmu.registered_products`` against Python's exact integers: ``shifted_product`` for zero,
powers of two, their neighbours, negative and extreme factors; ``RegisteredProducts`` giving
the product of the operands of two cycles ago, ``ready`` exactly when those are this cycle's,
on fresh random operand sequences that hold, repeat and change, and back to zero on ``clear``
(seeds printed)."""

import random

from amaranth.hdl import Module, Signal, signed
from amaranth.sim import Simulator

from hw.tmu.registered_products import RegisteredProducts, shifted_product
from tb.seeds import fresh_seed
from tb.sim_helpers import run_sim

INT64_MIN, INT64_MAX = -(1 << 63), (1 << 63) - 1
INT32_MIN, INT32_MAX = -(1 << 31), (1 << 31) - 1
OPERANDS = [0, 1, -1, 7, -7, INT64_MAX, INT64_MIN, 1 << 40, -(1 << 40)]
FACTORS = ([0, 1, -1, 3, -3, 6, 12, 24, INT32_MAX, INT32_MIN, -2, -(1 << 30)]
           + [1 << k for k in range(31)] + [(1 << k) + 1 for k in range(2, 31)]
           + [(1 << k) - 1 for k in range(3, 31)])


def test_a_shift_exactly_for_zero_and_positive_powers_of_two():
    rng = random.Random(fresh_seed("shifted product"))
    pairs = [(x, f) for x in OPERANDS for f in FACTORS]
    pairs += [(rng.randrange(INT64_MIN, INT64_MAX + 1), rng.choice(FACTORS)) for _ in range(300)]
    m = Module()
    x, factor = Signal(signed(64)), Signal(signed(32))
    shifts, product = shifted_product(m, x, factor, "t")
    failures = []

    async def testbench(ctx):
        for xv, fv in pairs:
            ctx.set(x, xv)
            ctx.set(factor, fv)
            want_shifts = fv == 0 or (fv > 0 and fv & (fv - 1) == 0)
            got_shifts = bool(ctx.get(shifts))
            if got_shifts != want_shifts or (want_shifts and ctx.get(product) != xv * fv):
                failures.append((xv, fv, got_shifts, ctx.get(product)))

    sim = Simulator(m)
    sim.add_testbench(testbench)
    sim.run()
    assert not failures, failures[:5]


def test_the_product_of_two_cycles_ago_is_ready_for_the_same_operands():
    """Each cycle a new operand pair, or the last one again (a waiting uop), or an earlier one
    back (another uop evaluated in between), taken or not (``enable``), now and then a
    ``clear``: ``ready`` is set exactly when the pair of two cycles ago is this cycle's and was
    taken with ``enable`` after the last ``clear``, and the product is then exact (a 64 x 32
    product needs all 96 bits)."""
    rng = random.Random(fresh_seed("registered products"))
    m = Module()
    x, f0, f1 = Signal(signed(64)), Signal(signed(32)), Signal(signed(32))
    clear, enable = Signal(), Signal()
    products = RegisteredProducts(m, x, [f0, f1], "t", clear=clear, enable=enable)
    history = [None, None]            # the pairs taken (None: not valid), two cycles back
    failures = []
    readies = 0

    async def testbench(ctx):
        nonlocal readies
        pair = (rng.choice(OPERANDS), rng.choice(FACTORS), rng.choice(FACTORS))
        for _ in range(600):
            roll = rng.random()
            if rng.random() < 0.03:
                # A run's start: the pairs taken before it and in its cycle are not valid,
                # not even the one held then and offered again.
                ctx.set(clear, 1)
                await ctx.tick()
                ctx.set(clear, 0)
                history[-1] = None
                history.append(None)
                roll = 0.0
            if roll < 0.45:
                pass                                            # the same uop again
            elif roll < 0.6 and any(history[-4:]):
                pair = rng.choice([h for h in history[-4:] if h])   # an earlier one back
            else:
                pair = (rng.randrange(INT64_MIN, INT64_MAX + 1), rng.choice(FACTORS),
                        rng.randrange(INT32_MIN, INT32_MAX + 1))
            taken = rng.random() < 0.8
            ctx.set(x, pair[0])
            ctx.set(f0, pair[1])
            ctx.set(f1, pair[2])
            ctx.set(enable, taken)
            old = history[-2]
            for i in range(2):
                want_ready = (old is not None and old[0] == pair[0]
                              and old[1 + i] == pair[1 + i])
                got_ready = bool(ctx.get(products.ready[i]))
                if got_ready != want_ready:
                    failures.append(("ready", i, old, pair, got_ready))
                if got_ready:
                    readies += 1
                    if ctx.get(products.product[i]) != pair[0] * pair[1 + i]:
                        failures.append(("product", i, pair, ctx.get(products.product[i])))
            history.append(pair if taken else None)
            await ctx.tick()

    run_sim(m, testbench)
    assert not failures, failures[:5]
    assert readies > 100
