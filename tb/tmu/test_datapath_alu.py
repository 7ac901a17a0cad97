"""``hw.tmu.datapath.alu`` against the golden model's ALU (``sw.runtime.golden._alu``): every op
on edge values (0, ±1, the signed 64-bit limits and their neighbours, 2**32 ± 1) and fresh
random pairs, result and *wrapped* bit, with ``mul_wrapped`` on and off (off: ``MUL`` has no
wrapped bit, the chain engine's form)."""

import random

import pytest
from amaranth.hdl import Module, Signal, signed
from amaranth.sim import Simulator

from hw.tmu.datapath import alu
from hw.tmu.isa import AluOp
from sw.runtime.golden import _alu
from sw.runtime.isa import AluOp as GoldenAluOp
from tb.seeds import fresh_seed

EDGES = [0, 1, -1, 2, -2, 63, 64, (1 << 63) - 1, -(1 << 63), (1 << 63) - 2, -(1 << 63) + 1,
         1 << 32, (1 << 32) - 1, -(1 << 32), 3037000499, -3037000500]


@pytest.mark.parametrize("mul_wrapped", [True, False])
def test_alu_matches_the_golden_model(mul_wrapped):
    rng = random.Random(fresh_seed(f"datapath alu, mul_wrapped={mul_wrapped}"))
    pairs = [(a, b) for a in EDGES for b in EDGES]
    pairs += [(rng.randrange(-(1 << 63), 1 << 63), rng.randrange(-(1 << 63), 1 << 63))
              for _ in range(200)]
    m = Module()
    op, a, b = Signal(4), Signal(signed(64)), Signal(signed(64))
    res, wrapped = alu(m, op, a, b, mul_wrapped=mul_wrapped)
    failures = []

    async def testbench(ctx):
        for o in AluOp:
            golden_op = GoldenAluOp(o.value)
            ctx.set(op, o.value)
            for x, y in pairs:
                ctx.set(a, x)
                ctx.set(b, y)
                want, want_wrapped = _alu(golden_op, x, y)
                got, got_wrapped = ctx.get(res), bool(ctx.get(wrapped))
                if o == AluOp.MUL and not mul_wrapped:
                    want_wrapped = False
                if (got, got_wrapped) != (want, want_wrapped):
                    failures.append((o.name, x, y, got, got_wrapped, want, want_wrapped))

    sim = Simulator(m)
    sim.add_testbench(testbench)
    sim.run()
    assert not failures, failures[:5]
