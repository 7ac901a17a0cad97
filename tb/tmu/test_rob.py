"""Unit tests of the reorder buffer (with the operand packer behind it, as in the unit) in the
Amaranth simulator."""

import random

import pytest
from amaranth.hdl import Module
from amaranth.lib import wiring

from hw.tmu.packer import Packer
from hw.tmu.rob import ReorderBuffer
from tb.sim_helpers import run_sim


class _RobPacker(wiring.Elaboratable):
    """The reorder buffer draining into the packer; ports are the buffer's, ``data`` the
    packer's output."""

    def __init__(self, depth):
        self.rob = ReorderBuffer(depth)
        self.packer = Packer()
        self.data = self.packer.o

    def __getattr__(self, name):
        return getattr(self.rob, name)

    def elaborate(self, platform):
        m = Module()
        m.submodules.rob = self.rob
        m.submodules.packer = self.packer
        wiring.connect(m, self.rob.data, self.packer.i)
        return m


def _sext(v, bits):
    v &= (1 << bits) - 1
    return v - (1 << bits) if v >> (bits - 1) else v


@pytest.mark.parametrize("backpressure", [0.0, 0.5])
def test_in_order_drain_with_out_of_order_responses(backpressure):
    """Random mix of immediate operands and loads answered out of order after random delays,
    with one or two allocations per cycle."""
    depth = 8
    dut = _RobPacker(depth)
    rng = random.Random(7)
    n = 200
    # Token stream: (control, load, value/word, offset, log2, sign)
    tokens = []
    for i in range(n):
        kind = rng.choice(["data", "load"])
        if kind == "data":
            tokens.append((0, 0, rng.getrandbits(64), 0, 0, 0))
        else:
            log2 = rng.randrange(4)
            offset = rng.randrange(0, 8, 1 << log2)
            tokens.append((0, 1, rng.getrandbits(64), offset, log2, rng.randrange(2)))

    def expect(t):
        control, load, value, offset, log2, sign = t
        if not load:
            return ("data", value)
        bits = 8 << log2
        elem = (value >> (8 * offset)) & ((1 << bits) - 1)
        if sign:
            elem = _sext(elem, bits) & ((1 << 64) - 1)
        return ("data", elem)

    out = []

    async def producer(ctx):
        pending = []   # (due_cycle, slot, word)
        i = 0
        cycle = 0
        while i < n or pending:
            # Respond to one due load per cycle, in random order.
            due = [p for p in pending if p[0] <= cycle]
            if due:
                p = rng.choice(due)
                pending.remove(p)
                ctx.set(dut.resp_valid, 1)
                ctx.set(dut.resp_slot, p[1])
                ctx.set(dut.resp_data, p[2])
            else:
                ctx.set(dut.resp_valid, 0)
            ctx.set(dut.alloc2_en, 0)
            if i < n and ctx.get(dut.alloc_ready) and rng.random() < 0.8:
                control, load, value, offset, log2, sign = tokens[i]
                slot = ctx.get(dut.alloc_slot)
                ctx.set(dut.alloc_en, 1)
                ctx.set(dut.alloc, {"load": load, "value": value, "offset": offset,
                                    "log2_size": log2 if load else 3, "sign": sign,
                                    "count": 1, "flush": 1})
                if load:
                    pending.append((cycle + rng.randrange(1, 12), slot, value))
                i += 1
                # A second, immediate token in the same cycle.
                if (i < n and not tokens[i][1] and ctx.get(dut.alloc2_ready)
                        and rng.random() < 0.5):
                    control, load, value, offset, log2, sign = tokens[i]
                    ctx.set(dut.alloc2_en, 1)
                    ctx.set(dut.alloc2, {"load": 0, "value": value, "offset": 0,
                                         "log2_size": 3, "sign": 0, "count": 1, "flush": 1})
                    i += 1
            else:
                ctx.set(dut.alloc_en, 0)
            await ctx.tick()
            cycle += 1
        ctx.set(dut.alloc_en, 0)
        ctx.set(dut.alloc2_en, 0)
        ctx.set(dut.resp_valid, 0)

    async def consumer(ctx):
        crng = random.Random(11)
        while len(out) < n:
            r = crng.random() >= backpressure
            ctx.set(dut.data.ready, r)
            if r and ctx.get(dut.data.valid):
                out.append(("data", ctx.get(dut.data.payload)))
            await ctx.tick()

    run_sim(dut, producer, consumer)
    assert out == [expect(t) for t in tokens]
