"""The layers' index registers with their next index (``hw/tmu/layer_indices.py``): after any
sequence of writes (an ``ENTER``'s index and bound, a ``NEXT``'s index alone) and starts, in
the Amaranth simulator, every layer's ``next`` is exactly ``index + step`` (66 bits: no wrap
near the ends of the 64-bit range) and ``continues`` is ``next < ub``, computed here in Python
integers from the values written, from the first start on. Fresh seeds, printed."""

import random

from amaranth.hdl import Array, Elaboratable, Module, Signal, signed
from amaranth.sim import Simulator

from hw.tmu.layer_indices import LayerIndices
from hw.tmu.layouts import LayerCfg
from tb.seeds import fresh_seed

LAYERS = 3
INT64 = (-(1 << 63), (1 << 63) - 1)


class _Bench(Elaboratable):
    """LayerIndices with one write port: ``en``, ``layer``, ``value``, and ``with_ub``/``ub``
    (an ``ENTER``); ``clear`` (a start). The layers' steps are inputs (``step``)."""

    def __init__(self):
        self.cfg = [Signal(LayerCfg, name=f"cfg_{k}") for k in range(LAYERS)]
        self.ubr = Array(Signal(signed(64), name=f"ub_{k}") for k in range(LAYERS))
        self.indices = LayerIndices(LAYERS, Array(self.cfg), self.ubr)
        self.en, self.with_ub, self.clear = Signal(), Signal(), Signal()
        self.layer = Signal(range(LAYERS))
        self.value = Signal(signed(66))
        self.ub = Signal(signed(64))

    def elaborate(self, platform):
        m = Module()
        next_write = self.indices.writer(m, self.layer, self.value, "next_write")
        enter_write = self.indices.writer(m, self.layer, self.value, "enter_write", ub=self.ub)
        with m.If(self.clear):
            self.indices.clear(m)
        with m.Elif(self.en & self.with_ub):
            enter_write()
        with m.Elif(self.en):
            next_write()
        self.indices.elaborate(m)
        return m


def _signed64(v):
    v &= (1 << 64) - 1
    return v - (1 << 64) if v >> 63 else v


def test_next_index_and_its_comparison_follow_every_write():
    seed = fresh_seed("test_next_index_and_its_comparison_follow_every_write")
    rng = random.Random(seed)
    dut = _Bench()
    steps = [rng.choice([1, 2, 7, (1 << 27) - 1, rng.randrange(1, 1 << 27)])
             for _ in range(LAYERS)]
    model = {"index": [0] * LAYERS, "ub": [0] * LAYERS}

    def near_end():
        return rng.choice([INT64[1] - rng.randrange(1 << 28), INT64[0] + rng.randrange(1 << 28),
                           rng.randrange(-1000, 1000), rng.randrange(*INT64)])

    async def bench(ctx):
        for k, step in enumerate(steps):
            ctx.set(dut.cfg[k].step, step)
        for i in range(400):
            choice = 0.0 if i == 0 else rng.random()     # a run starts with a start
            ctx.set(dut.clear, choice < 0.05)
            ctx.set(dut.en, choice >= 0.05 and choice < 0.8)
            layer = rng.randrange(LAYERS)
            enter = rng.random() < 0.4
            # a NEXT writes the layer's next index (66 bits, kept to 64); an ENTER any lb
            value = (_signed64(model["index"][layer]) + steps[layer]
                     if not enter and rng.random() < 0.7 else near_end())
            ub = near_end()
            ctx.set(dut.layer, layer)
            ctx.set(dut.value, value)
            ctx.set(dut.with_ub, enter)
            ctx.set(dut.ub, ub)
            await ctx.tick()
            if choice < 0.05:
                model["index"] = [0] * LAYERS
                model["ub"] = [0] * LAYERS
            elif choice < 0.8:
                model["index"][layer] = _signed64(value)
                if enter:
                    model["ub"][layer] = ub
            for k in range(LAYERS):
                index = model["index"][k]
                expected_next = index + steps[k]
                got = (ctx.get(dut.indices.index[k]), ctx.get(dut.indices.next[k]),
                       ctx.get(dut.indices.continues[k]))
                want = (index, expected_next, int(expected_next < model["ub"][k]))
                assert got == want, f"seed {seed}, cycle {i}, layer {k}: {got} != {want}"

    sim = Simulator(dut)
    sim.add_clock(1e-6)
    sim.add_testbench(bench)
    sim.run()
