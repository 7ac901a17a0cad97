"""Helpers for Amaranth-simulator testbenches (``async def testbench(ctx)``)."""

from amaranth.sim import Simulator


__all__ = ["stream_put", "stream_get", "run_sim"]


async def stream_put(ctx, stream, payload):
    """Offer ``payload`` on ``stream`` until it is accepted."""
    ctx.set(stream.valid, 1)
    ctx.set(stream.payload, payload)
    await ctx.tick().until(stream.ready)
    ctx.set(stream.valid, 0)


async def stream_get(ctx, stream):
    """Accept one payload from ``stream``."""
    ctx.set(stream.ready, 1)
    payload, = await ctx.tick().sample(stream.payload).until(stream.valid)
    ctx.set(stream.ready, 0)
    return payload


def run_sim(dut, *testbenches, processes=(), background=(), vcd=None, deadline=None):
    """Simulate ``dut`` with a 1 MHz ``sync`` clock and the given testbenches (``background``:
    testbenches the simulation does not wait for, e.g. monitors that run every cycle)."""
    sim = Simulator(dut)
    sim.add_clock(1e-6)
    for tb in testbenches:
        sim.add_testbench(tb)
    for tb in background:
        sim.add_testbench(tb, background=True)
    for p in processes:
        sim.add_process(p)
    if vcd:
        with sim.write_vcd(vcd):
            sim.run_until(deadline) if deadline else sim.run()
    else:
        sim.run_until(deadline) if deadline else sim.run()
