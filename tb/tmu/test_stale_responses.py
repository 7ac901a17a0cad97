"""Responses of an earlier run are dropped (``hw/tmu/tmu.py``, the tag's epoch bit).

Run A is aborted by the watchdog while the memory holds all its responses back; run B starts
with the same program, and whenever it sends a request whose slot run A's held request had, the
memory first answers run A's request (a poison line), then run B's. Run B's tokens must be the
golden model's: without the epoch, run A's responses would land in run B's reorder-buffer slots
and run-ahead engines (the test fails with the epoch comparison removed)."""

import struct

from amaranth.sim import Simulator

from hw.tmu import Tmu, TmuConfig
from hw.tmu.isa import FaultCode
from tb.golden_compare import assert_matches
from tb.programs import embedding_bag_case

POISON = (1 << 512) - 1


def test_responses_of_an_aborted_run_are_dropped():
    config = TmuConfig.small()
    case = embedding_bag_case("eb", rows=6, dim=3, lengths=[2, 3, 1, 4],
                              indices=[4, 0, 5, 2, 1, 3, 0, 2, 5, 1])
    image = bytes(case.memory) + bytes(-len(case.memory) % config.line_bytes)
    program = bytes(case.program)
    words = list(struct.unpack(f"<{len(program) // 4}I", program))
    dut = Tmu(config)
    lb = config.line_bytes
    state = {"hold": True, "held": {}, "pending": [], "data": [], "ctrl": [], "faults": [],
             "poisoned": 0}
    slot_mask = (1 << (config.tag_bits - 1)) - 1            # the tag without its epoch bit

    def line(addr):
        base = addr - addr % lb
        return int.from_bytes(image[base:base + lb].ljust(lb, b"\0"), "little")

    async def memory(ctx):
        for k in range(1, config.memory_ports):
            ctx.set(dut.req[k].ready, 0)
            ctx.set(dut.resp[k].valid, 0)
        ctx.set(dut.req[0].ready, 1)
        cycle = 0
        while True:
            if ctx.get(dut.req[0].valid):
                tag, addr = ctx.get(dut.req[0].payload.tag), ctx.get(dut.req[0].payload.addr)
                if state["hold"]:
                    state["held"].setdefault(tag & slot_mask, []).append(tag)
                else:
                    stale = state["held"].get(tag & slot_mask)
                    if stale:                                # run A's answer first, poisoned
                        state["pending"].append((cycle + 1, stale.pop(0), POISON))
                        state["poisoned"] += 1
                    state["pending"].append((cycle + 5, tag, line(addr)))
                    state["pending"].sort(key=lambda p: p[0])
            ctx.set(dut.resp[0].valid, 0)
            if state["pending"] and state["pending"][0][0] <= cycle:
                _, tag, data = state["pending"].pop(0)
                ctx.set(dut.resp[0].valid, 1)
                ctx.set(dut.resp[0].payload.tag, tag)
                ctx.set(dut.resp[0].payload.data, data)
            await ctx.tick()
            cycle += 1

    async def run(ctx, watchdog):
        for i, w in enumerate(words):
            ctx.set(dut.ctl.prog.addr, i)
            ctx.set(dut.ctl.prog.data, w)
            ctx.set(dut.ctl.prog.en, 1)
            await ctx.tick()
        ctx.set(dut.ctl.prog.en, 0)
        ctx.set(dut.ctl.prog_len, len(program))
        ctx.set(dut.ctl.mem_limit, len(case.memory))
        ctx.set(dut.ctl.watchdog, watchdog)
        for i in range(config.args):
            ctx.set(dut.ctl.args[i], case.args[i] if i < len(case.args) else 0)
        ctx.set(dut.ctl.start, 1)
        await ctx.tick()
        ctx.set(dut.ctl.start, 0)
        state["hold"] = watchdog != 0 and watchdog < 1000
        ctx.set(dut.data.ready, 1)
        ctx.set(dut.ctrl.ready, 1)
        data, ctrl = [], []
        for _ in range(20000):
            if ctx.get(dut.data.valid):
                beat = ctx.get(dut.data.payload)
                data.extend(beat.tokens[i] for i in range(beat.count))
            if ctx.get(dut.ctrl.valid):
                ctrl.append(ctx.get(dut.ctrl.payload))
            if ctx.get(dut.ctl.done):
                break
            await ctx.tick()
        code = ctx.get(dut.ctl.fault_code)
        state["faults"].append((int(getattr(code, "value", code)), ctx.get(dut.ctl.fault_addr),
                                ctx.get(dut.ctl.fault_stream) if ctx.get(dut.ctl.fault_has_stream)
                                else None))
        await ctx.tick()
        return data, ctrl

    async def testbench(ctx):
        await run(ctx, 300)                    # run A: aborted, its requests still unanswered
        state["hold"] = False
        state["data"], state["ctrl"] = await run(ctx, 1 << 20)

    sim = Simulator(dut)
    sim.add_clock(1e-6)
    sim.add_testbench(testbench)
    sim.add_testbench(memory, background=True)
    sim.run()
    assert state["faults"][0][0] == FaultCode.WATCHDOG.value
    assert state["faults"][0][2] is None            # a watchdog names no stream

    class Result:
        data_tokens, control_tokens = state["data"], state["ctrl"]
        fault_code, fault_addr, fault_stream = state["faults"][1]

    assert state["poisoned"] >= 2           # run B met run A's slots
    assert_matches(case, Result, config)
