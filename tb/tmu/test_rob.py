"""Unit tests of the reorder buffer (with the operand packer behind it, as in the unit) in the
Amaranth simulator: operands in, loads answered out of order on several response ports, tokens
out in program order."""

import random

import pytest
from amaranth.hdl import Module
from amaranth.lib import wiring

from hw.tmu.packer import Packer
from hw.tmu.rob import ReorderBuffer
from tb.seeds import fresh_seed
from tb.tmu.test_packer import line_element
from tb.sim_helpers import run_sim



class _RobPacker(wiring.Elaboratable):
    """The reorder buffer draining into the packer; ports are the buffer's, ``data`` the
    packer's output."""

    def __init__(self, depth, line_bytes, ports, tokens):
        self.rob = ReorderBuffer(depth, line_bytes, ports)
        self.packer = Packer(line_bytes, tokens)
        self.data = self.packer.o

    def __getattr__(self, name):
        return getattr(self.rob, name)

    def elaborate(self, platform):
        m = Module()
        m.submodules.rob = self.rob
        m.submodules.packer = self.packer
        wiring.connect(m, self.rob.data, self.packer.i)
        return m



@pytest.mark.parametrize("depth,line_bytes,ports,tokens", [(8, 8, 1, 1), (16, 64, 2, 8),
                                                           (8, 16, 3, 2)])
@pytest.mark.parametrize("backpressure", [0.0, 0.5])
def test_in_order_drain_with_out_of_order_responses(depth, line_bytes, ports, tokens,
                                                    backpressure):
    """Random mix of immediate operands and line loads answered out of order after random
    delays, up to one response per port per cycle, one or two allocations per cycle: every
    operand comes out once, in allocation order."""
    dut = _RobPacker(depth, line_bytes, ports, tokens)
    seed = fresh_seed(f"rob {depth} {line_bytes} {ports}")
    rng = random.Random(seed)
    n = 200
    entries = []       # (load, value or line, offset, log2, sign)
    for _ in range(n):
        if rng.randrange(2):
            entries.append((0, rng.getrandbits(64), 0, 3, 0))
        else:
            log2 = rng.randrange(4)
            entries.append((1, rng.getrandbits(8 * line_bytes),
                            rng.randrange(0, line_bytes, 1 << log2), log2, rng.randrange(2)))
    expected = [line_element(*e[1:]) if e[0] else e[1] for e in entries]
    out = []

    async def producer(ctx):
        pending = []   # (due_cycle, slot, line)
        i = cycle = 0
        while i < n or pending:
            due = [p for p in pending if p[0] <= cycle]
            rng.shuffle(due)
            for k in range(ports):
                if k < len(due) and rng.random() < 0.8:
                    pending.remove(due[k])
                    ctx.set(dut.resp_valid[k], 1)
                    ctx.set(dut.resp_slot[k], due[k][1])
                    ctx.set(dut.resp_data[k], due[k][2])
                else:
                    ctx.set(dut.resp_valid[k], 0)
            ctx.set(dut.alloc2_en, 0)
            if i < n and ctx.get(dut.alloc_ready) and rng.random() < 0.8:
                load, value, offset, log2, sign = entries[i]
                slot = ctx.get(dut.alloc_slot)
                ctx.set(dut.alloc_en, 1)
                ctx.set(dut.alloc, {"load": load, "value": 0 if load else value,
                                    "offset": offset, "log2_size": log2, "sign": sign,
                                    "count": 1, "flush": 1})
                if load:
                    pending.append((cycle + rng.randrange(1, 12), slot, value))
                i += 1
                # A second, immediate token in the same cycle.
                if (i < n and not entries[i][0] and ctx.get(dut.alloc2_ready)
                        and rng.random() < 0.5):
                    ctx.set(dut.alloc2_en, 1)
                    ctx.set(dut.alloc2, {"load": 0, "value": entries[i][1], "offset": 0,
                                         "log2_size": 3, "sign": 0, "count": 1, "flush": 1})
                    i += 1
            else:
                ctx.set(dut.alloc_en, 0)
            await ctx.tick()
            cycle += 1
        ctx.set(dut.alloc_en, 0)
        ctx.set(dut.alloc2_en, 0)
        for k in range(ports):
            ctx.set(dut.resp_valid[k], 0)

    async def consumer(ctx):
        crng = random.Random(seed + 1)
        for _ in range(20000):
            if len(out) >= n:
                break
            r = crng.random() >= backpressure
            ctx.set(dut.data.ready, r)
            if r and ctx.get(dut.data.valid):
                beat = ctx.get(dut.data.payload)
                out.extend(beat.tokens[t] for t in range(beat.count))
            await ctx.tick()

    run_sim(dut, producer, consumer)
    assert out == expected
