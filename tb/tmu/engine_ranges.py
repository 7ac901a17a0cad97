"""Drive a run-ahead engine (``hw/tmu/prefetch.py``'s ``Prefetcher``, ``hw/tmu/chain_engine.py``'s
``ChainEngine``) through a list of ranges as the traversal does: each started once the engine is
``idle``, its values popped at random."""

__all__ = ["pop_ranges"]


async def pop_ranges(ctx, dut, ranges, step, rng, *, gap=0, limit=400):
    """For each ``(lb, ub)`` of ``ranges``: set ``p_lb``/``p_ub``, wait until ``idle``, pulse
    ``start`` (one cycle), then pop ``ub - lb`` values, in 60 % of the cycles that have a head;
    then ``rng.randrange(0, gap + 1)`` idle cycles (none, and no draw, for ``gap`` 0). ``step()`` advances one cycle (answering
    the engine's loads). Returns the values popped per range; a range gets at most ``limit``
    cycles of popping."""
    got = []
    for lb, ub in ranges:
        ctx.set(dut.p_lb, lb)
        ctx.set(dut.p_ub, ub)
        while not ctx.get(dut.idle):
            await step()
        ctx.set(dut.start, 1)
        await step()
        ctx.set(dut.start, 0)
        values = []
        for _ in range(limit):
            if len(values) == ub - lb:
                break
            pop = ctx.get(dut.head_valid) and rng.random() < 0.6
            if pop:
                values.append(ctx.get(dut.head_data))
            ctx.set(dut.pop, pop)
            await step()
            ctx.set(dut.pop, 0)
        got.append(values)
        for _ in range(rng.randrange(0, gap + 1) if gap else 0):
            await step()
    return got
