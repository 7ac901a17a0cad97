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


def test_shl_wraps_exactly_at_the_signed_limit():
    """``SHL``'s wrapped bit at every shift amount (0..63, the low 6 bits of ``b``) on both
    sides of the limit: ``a · 2**sh`` fits in 64 signed bits exactly when ``a`` lies in
    ``[-2**(63 - sh), 2**(63 - sh))`` (``docs/isa.md`` §1 "Address overflow"): ``2**(63 - sh)``
    and one less, ``-2**(63 - sh)`` and one less, 0, -1, and fresh random values of random
    magnitude, each against the golden model's ALU (the boundary cases with upper bits of
    ``b`` set too: only the low 6 count)."""
    rng = random.Random(fresh_seed("datapath alu shl limits"))
    cases = []
    for sh in range(64):
        limit = 1 << (63 - sh)
        for x in (limit, limit - 1, -limit, -limit - 1, 0, -1):
            if -(1 << 63) <= x < (1 << 63):
                cases.append((x, sh | (rng.getrandbits(57) << 6)))
        for _ in range(4):
            magnitude = rng.randrange(64)
            x = rng.randrange(-(1 << magnitude), 1 << magnitude) if magnitude else 0
            cases.append((x, sh))
    m = Module()
    op, a, b = Signal(4), Signal(signed(64)), Signal(signed(64))
    res, wrapped = alu(m, op, a, b)
    failures = []

    async def testbench(ctx):
        ctx.set(op, AluOp.SHL.value)
        for x, y in cases:
            ctx.set(a, x)
            ctx.set(b, y)
            want = _alu(GoldenAluOp.SHL, x, y)
            got = (ctx.get(res), bool(ctx.get(wrapped)))
            if got != want:
                failures.append((x, y & 63, got, want))

    sim = Simulator(m)
    sim.add_testbench(testbench)
    sim.run()
    assert not failures, failures[:5]
    assert sum(_alu(GoldenAluOp.SHL, x, y)[1] for x, y in cases) > 64, \
        "the cases must include wrapping shifts"
