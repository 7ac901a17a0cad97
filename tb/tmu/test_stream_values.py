"""The stream value registers written through ports (``hw/tmu/stream_values.py``), in the
Amaranth simulator against a Python model of their contract: per cycle, the engine pops (engine
0, then engine 1), then the ports in the order of their first use ("chained", then "kept"),
each writing its stream when enabled, a later one winning; a start's clear over everything; a
stream id beyond the registers writes nothing. The sources read ``view``, which equals the
model after each cycle; a write lands in the register itself a cycle later. Enables, ids and
values are random (so two writers often hit one stream in the same cycle). Fresh seeds,
printed."""

import random

from amaranth.hdl import Elaboratable, Module, Signal, signed
from amaranth.sim import Simulator

from hw.tmu.stream_values import StreamValues
from tb.seeds import fresh_seed

STREAMS = 6                 # fewer than the 8 ids of 3 bits: ids 6 and 7 write nothing
SBITS = 3
ENGINES = 2
PORTS = ("chained", "kept")


class _Bench(Elaboratable):
    """``StreamValues`` with two engine pops and two named ports; the port "kept" is used
    under two conditions (``enable`` and ``enable_again``), as the traversal uses it twice."""

    def __init__(self):
        self.commit = Signal(ENGINES)
        self.pop_stream = [Signal(8, name=f"pop_stream_{e}") for e in range(ENGINES)]
        self.head = [Signal(signed(64), name=f"head_{e}") for e in range(ENGINES)]
        self.enable = {p: Signal(name=f"en_{p}") for p in PORTS}
        self.enable_again = Signal()
        self.stream = {p: Signal(8, name=f"sid_{p}") for p in PORTS}
        self.data = {p: Signal(signed(64), name=f"data_{p}") for p in PORTS}
        self.clear = Signal()
        self.values = None

    def elaborate(self, platform):
        m = Module()
        self.values = values = StreamValues(m, STREAMS, SBITS)
        values.add_pops(self.commit, self.pop_stream, self.head)
        for p in PORTS:
            with m.If(self.enable[p]):
                values.write(p, self.stream[p], self.data[p])
        with m.If(self.enable_again):
            values.write("kept", self.stream["kept"], self.data["kept"])
        with m.If(self.clear):
            values.clear()
        values.elaborate(m)
        return m


def test_ports_write_in_their_priority_order():
    seed = fresh_seed("test_ports_write_in_their_priority_order")
    rng = random.Random(seed)
    dut = _Bench()
    model = [0] * STREAMS

    async def bench(ctx):
        for cycle in range(500):
            writes = []                         # (stream, value), lowest priority first
            commit = rng.randrange(1 << ENGINES)
            ctx.set(dut.commit, commit)
            for e in range(ENGINES):
                sid, value = rng.randrange(8), rng.randrange(-(1 << 63), 1 << 63)
                ctx.set(dut.pop_stream[e], sid)
                ctx.set(dut.head[e], value)
                if commit >> e & 1:
                    writes.append((sid, value))
            again = rng.random() < 0.2
            ctx.set(dut.enable_again, again)
            for p in PORTS:
                on = rng.random() < 0.5
                sid, value = rng.randrange(8), rng.randrange(-(1 << 63), 1 << 63)
                ctx.set(dut.enable[p], on)
                ctx.set(dut.stream[p], sid)
                ctx.set(dut.data[p], value)
                if on or (p == "kept" and again):
                    writes.append((sid, value))
            clear = rng.random() < 0.05
            ctx.set(dut.clear, clear)
            await ctx.tick()
            before = list(model)            # what the registers hold: the cycle before's
            for sid, value in writes:
                if sid < STREAMS:
                    model[sid] = value
            if clear:
                model[:] = [0] * STREAMS
            got = [ctx.get(r) for r in dut.values.view]
            assert got == model, f"seed {seed}, cycle {cycle}: {got} != {model}"
            landed = [ctx.get(r) for r in dut.values.registers]
            assert landed == ([0] * STREAMS if clear else before), \
                f"seed {seed}, cycle {cycle}: registers {landed} != {before}"

    sim = Simulator(dut)
    sim.add_clock(1e-6)
    sim.add_testbench(bench)
    sim.run()
