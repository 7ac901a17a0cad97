"""The microcode builder (``hw/tmu/microcode_builder.py``) fed by the configuration writer, as in
the decoder, in the Amaranth simulator: run a program through it and read the microcode it
writes. Shared by ``test_microcode_builder.py`` and the tests of the uop fusions
(``test_chain.py``, ``test_fused_load.py``)."""

import random
import struct

from amaranth.hdl import Module
from amaranth.lib import wiring

from hw.tmu.config_writer import ConfigWriter
from hw.tmu.layouts import UopKind
from hw.tmu.microcode_builder import MicrocodeBuilder
from sw.runtime.isa import Program
from tb.sim_helpers import run_sim
from tb.tmu.test_config_writer import set_checker_facts


class BuilderBench(wiring.Elaboratable):
    def __init__(self, config):
        self.writer = ConfigWriter(config)
        self.builder = MicrocodeBuilder(config)

    def elaborate(self, platform):
        m = Module()
        m.submodules.writer = self.writer
        m.submodules.builder = self.builder
        m.d.comb += self.builder.start.eq(self.writer.start)
        wiring.connect(m, self.writer.tables, self.builder.tables)
        return m


def run_builder(config, items, *, ready_probability, seed):
    """Run each ``(case, decoded program, fault or None)`` of ``items`` through the builder, the
    check offered after random delays and ``result.ready`` random (``ready_probability``);
    returns per item ``(fault, code, pc, [(address, Uop)], engines, (body_pcs, exit_pcs))``."""
    bench = BuilderBench(config)
    wr, bd = bench.writer, bench.builder
    rng = random.Random(seed)
    out = []

    async def testbench(ctx):
        for case, prog, fault in items:
            words = list(struct.unpack(f"<{len(case.program) // 4}I", case.program))
            for k in (wr.checked, bd.checked):
                set_checker_facts(ctx, k, prog)
            for i in range(config.args):
                ctx.set(wr.args[i], (case.args[i] if i < len(case.args) else 0) & (2**64 - 1))
            ctx.set(wr.start, 1)
            await ctx.tick()
            ctx.set(wr.start, 0)
            counts = [len(prog.layers), len(prog.regions), len(prog.streams), len(prog.actions)]
            base = 4
            for section, c in enumerate(counts):
                for number in range(c):
                    ctx.set(wr.descriptor.valid, 1)
                    ctx.set(wr.descriptor.payload, {"section": section, "number": number,
                                                    "words": words[base:base + 4]})
                    await ctx.tick()
                    base += 4
            ctx.set(wr.descriptor.valid, 0)
            while rng.random() >= ready_probability:        # the check comes later
                await ctx.tick()
            ctx.set(bd.check.valid, 1)
            ctx.set(bd.check.payload, {"fault": fault is not None,
                                       "code": fault[0] if fault else 0,
                                       "pc": fault[1] if fault else 0})
            writes, result = [], None
            for _ in range(5000):
                ready = rng.random() < ready_probability
                ctx.set(bd.result.ready, ready)
                if ctx.get(bd.microcode.en):
                    writes.append((ctx.get(bd.microcode.addr), ctx.get(bd.microcode.data)))
                check_done = ctx.get(bd.check.valid) and ctx.get(bd.check.ready)
                if ready and ctx.get(bd.result.valid):
                    result = ctx.get(bd.result.payload)
                await ctx.tick()
                if check_done:
                    ctx.set(bd.check.valid, 0)
                if result is not None:
                    break
            else:
                raise TimeoutError(case.name)
            assert not ctx.get(bd.busy)
            code = result.code.value if hasattr(result.code, "value") else int(result.code)
            engines = [(ctx.get(bd.prefetch_stream[e]), ctx.get(bd.prefetch_layer[e]),
                        ctx.get(bd.prefetch_offset[e]))
                       for e in range(config.engines)
                       if ctx.get(bd.prefetch_valid) >> e & 1]
            pcs = ([ctx.get(bd.body_pc[i]) for i in range(len(prog.layers))],
                   [ctx.get(bd.exit_pc[i]) for i in range(len(prog.layers))])
            out.append((result.fault, code, result.pc, writes, engines, pcs))

    run_sim(bench, testbench)
    return out




def layer_body_uops(config, case, limits, layer=1):
    """The uops of ``layer``'s body (from its ``body_pc`` to the layer's ``NEXT`` uop, excluded)
    in the microcode the builder writes for ``case``'s program; raises ``AssertionError`` if the
    program faults in the check."""
    prog = Program.decode(case.program, limits)
    [(fault, _, _, writes, _, pcs)] = run_builder(config, [(case, prog, None)],
                                                   ready_probability=1.0, seed=0)
    assert fault == 0, case.name
    uops = [u for _, u in writes]
    body = pcs[0][layer]
    end = next(i for i in range(body, len(uops))
               if uops[i].kind == UopKind.NEXT and uops[i].id == layer)
    return uops[body:end]
