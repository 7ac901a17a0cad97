"""Run an access program on the access unit in the Amaranth simulator (slow; small programs).

Used by the unit tests to check the unit against the golden model without Verilator.
"""

import random
import struct
from dataclasses import dataclass, field

from amaranth.hdl import Module
from amaranth.lib import wiring

from hw.hbm_model import FixedLatencyMemory
from hw.system import connect_memory_ports
from hw.tmu import COUNTERS, Tmu, TmuConfig
from tb.sim_helpers import run_sim


__all__ = ["AmaranthResult", "run_on_amaranth"]


@dataclass
class AmaranthResult:
    data_tokens: list = field(default_factory=list)
    control_tokens: list = field(default_factory=list)
    fault_code: int = 0
    fault_addr: int = 0
    fault_stream: int | None = None     # the faulting stream (ctl.fault_stream), if it has one
    stats: dict = field(default_factory=dict)
    #: the counters again, three cycles after ``done``: equal to ``stats`` (the counts are
    #: complete when ``done`` rises, hw/tmu/counters.py)
    stats_later: dict = field(default_factory=dict)


class _Bench(wiring.Elaboratable):
    def __init__(self, config, words, memory=None, init=None):
        self.tmu = Tmu(config)
        if memory is None:
            self.mem = FixedLatencyMemory(words=words, tag_bits=config.tag_bits,
                                          latency=config.mem_latency,
                                          line_bytes=config.line_bytes, init=init)
        else:                       # a memory preset (hw.hbm_model.memory_model)
            from hw.hbm_model import memory_model
            from hw.hbm_model.presets import get_preset
            preset = get_preset(memory) if isinstance(memory, str) else memory
            ports = 1 if preset.fixed_latency is not None else config.memory_ports
            self.mem = memory_model(preset, words=words, tag_bits=config.tag_bits,
                                    ports=ports, line_bytes=config.line_bytes, init=init)

    def elaborate(self, platform):
        m = Module()
        m.submodules.tmu = self.tmu
        m.submodules.mem = self.mem
        connect_memory_ports(m, self.tmu, self.mem)
        return m


def run_on_amaranth(program, memory, args, *, config=None, backpressure=0.0, seed=0,
                    max_cycles=200_000, preset=None):
    config = config or TmuConfig.small()
    memory = bytes(memory) + bytes(-len(memory) % 8)
    line_words = config.line_bytes // 8
    words = max(8, -(-len(memory) // config.line_bytes) * line_words)
    # The image is the memory's initial contents (a backdoor write per word would cost one
    # simulated cycle each: 54,000 of them for TransE's 434 KB image).
    image = list(struct.unpack(f"<{len(memory) // 8}Q", memory))
    bench = _Bench(config, words, preset, image)
    tmu = bench.tmu
    result = AmaranthResult()
    program = bytes(program)
    pwords = list(struct.unpack(f"<{len(program) // 4}I", program[:len(program) // 4 * 4]))
    if len(program) % 4:
        pwords.append(int.from_bytes(program[len(program) // 4 * 4:], "little"))

    async def testbench(ctx):
        for i, w in enumerate(pwords):
            ctx.set(tmu.ctl.prog.addr, i)
            ctx.set(tmu.ctl.prog.data, w)
            ctx.set(tmu.ctl.prog.en, 1)
            await ctx.tick()
        ctx.set(tmu.ctl.prog.en, 0)
        ctx.set(tmu.ctl.prog_len, len(program))
        ctx.set(tmu.ctl.mem_limit, len(memory))
        ctx.set(tmu.ctl.watchdog, config.watchdog_cycles)
        for i in range(config.args):
            ctx.set(tmu.ctl.args[i], (args[i] if i < len(args) else 0) & (2**64 - 1))
        ctx.set(tmu.ctl.start, 1)
        await ctx.tick()
        ctx.set(tmu.ctl.start, 0)
        rng = random.Random(seed)
        for _ in range(max_cycles):
            ready = rng.random() >= backpressure
            ctx.set(tmu.data.ready, ready)
            ctx.set(tmu.ctrl.ready, ready)
            if ready and ctx.get(tmu.data.valid):
                beat = ctx.get(tmu.data.payload)
                result.data_tokens.extend(beat.tokens[i] for i in range(beat.count))
            if ready and ctx.get(tmu.ctrl.valid):
                result.control_tokens.append(ctx.get(tmu.ctrl.payload))
            if ctx.get(tmu.ctl.done):
                break
            await ctx.tick()
        else:
            raise TimeoutError(f"the unit did not finish within {max_cycles} cycles")
        result.fault_code = ctx.get(tmu.ctl.fault_code).value \
            if hasattr(ctx.get(tmu.ctl.fault_code), "value") else int(ctx.get(tmu.ctl.fault_code))
        result.fault_addr = ctx.get(tmu.ctl.fault_addr)
        result.fault_stream = ctx.get(tmu.ctl.fault_stream) \
            if ctx.get(tmu.ctl.fault_has_stream) else None
        for name in COUNTERS:
            result.stats[name] = ctx.get(getattr(tmu.ctl.counters, name))
        await ctx.tick().repeat(3)
        for name in COUNTERS:
            result.stats_later[name] = ctx.get(getattr(tmu.ctl.counters, name))

    run_sim(bench, testbench)
    return result
