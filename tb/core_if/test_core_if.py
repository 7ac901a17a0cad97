"""Unit tests of the core interface's registers and queues in the Amaranth simulator."""

from hw.core_if import CSR, ID_VALUE, CoreInterface, csr_arg
from hw.tmu import COUNTERS, TmuConfig
from tb.sim_helpers import run_sim

CFG = TmuConfig.small()


async def _write(ctx, dut, addr, value):
    ctx.set(dut.csr.addr, addr)
    ctx.set(dut.csr.w_data, value)
    ctx.set(dut.csr.w_en, 1)
    await ctx.tick()
    ctx.set(dut.csr.w_en, 0)


async def _read(ctx, dut, addr):
    ctx.set(dut.csr.addr, addr)
    ctx.set(dut.csr.r_en, 1)
    await ctx.tick()
    ctx.set(dut.csr.r_en, 0)
    return ctx.get(dut.csr.r_data)


def test_registers():
    dut = CoreInterface(CFG)

    async def testbench(ctx):
        assert await _read(ctx, dut, CSR.ID) == ID_VALUE
        assert await _read(ctx, dut, CSR.CONFIG0) == (CFG.layers | CFG.regions << 8
                                                      | CFG.streams << 16 | CFG.actions << 24)
        assert await _read(ctx, dut, CSR.CONFIG1) == CFG.args | CFG.max_inflight << 16
        assert await _read(ctx, dut, CSR.WATCHDOG) == CFG.watchdog_cycles
        assert await _read(ctx, dut, CSR.MEM_LIMIT_HI) == 0xFFFF_FFFF
        # Arguments: 64-bit, two words each, visible to the unit.
        for n in range(CFG.args):
            await _write(ctx, dut, csr_arg(n), 0x1000 + n)
            await _write(ctx, dut, csr_arg(n) + 4, 0xA0 + n)
        for n in range(CFG.args):
            assert await _read(ctx, dut, csr_arg(n)) == 0x1000 + n
            assert await _read(ctx, dut, csr_arg(n) + 4) == 0xA0 + n
            assert ctx.get(dut.tmu.args[n]) == (0xA0 + n) << 32 | (0x1000 + n)
        await _write(ctx, dut, CSR.PROG_LEN, 44)
        assert ctx.get(dut.tmu.prog_len) == 44
        await _write(ctx, dut, CSR.MEM_LIMIT_LO, 1234)
        await _write(ctx, dut, CSR.MEM_LIMIT_HI, 0)
        assert ctx.get(dut.tmu.mem_limit) == 1234
        # Program load with auto-increment: one write pulse per word, the cycle after.
        await _write(ctx, dut, CSR.PROG_ADDR, 5)
        seen = []
        for w in (11, 22, 33):
            await _write(ctx, dut, CSR.PROG_DATA, w)
            assert ctx.get(dut.tmu.prog.en)
            seen.append((ctx.get(dut.tmu.prog.addr), ctx.get(dut.tmu.prog.data)))
        await ctx.tick()
        assert not ctx.get(dut.tmu.prog.en)
        assert seen == [(5, 11), (6, 22), (7, 33)]
        assert await _read(ctx, dut, CSR.PROG_ADDR) == 8
        # Start is a one-cycle pulse.
        await _write(ctx, dut, CSR.CTRL, 1)
        assert ctx.get(dut.tmu.start)
        await ctx.tick()
        assert not ctx.get(dut.tmu.start)
        # Status and counters come from the unit.
        ctx.set(dut.tmu.busy, 0)
        ctx.set(dut.tmu.done, 1)
        ctx.set(dut.tmu.fault, 1)
        ctx.set(dut.tmu.fault_code, 6)
        ctx.set(dut.tmu.fault_addr, 0x1_2345_6789)
        assert await _read(ctx, dut, CSR.STATUS) == 0b110 | 6 << 8
        # The faulting stream (docs/rtl.md §3): bit 3 and [23:16], only with a stream.
        ctx.set(dut.tmu.fault_stream, 0xA5)
        assert await _read(ctx, dut, CSR.STATUS) == 0b110 | 6 << 8
        ctx.set(dut.tmu.fault_has_stream, 1)
        assert await _read(ctx, dut, CSR.STATUS) == 0b1110 | 6 << 8 | 0xA5 << 16
        assert await _read(ctx, dut, CSR.FAULT_ADDR_LO) == 0x2345_6789
        assert await _read(ctx, dut, CSR.FAULT_ADDR_HI) == 1
        i = COUNTERS.index("loads")
        ctx.set(dut.tmu.counters.loads, 7 << 32 | 9)
        assert await _read(ctx, dut, CSR.COUNTERS + 8 * i) == 9
        assert await _read(ctx, dut, CSR.COUNTERS + 8 * i + 4) == 7

    run_sim(dut, testbench)


def test_queues_keep_order_under_backpressure():
    """Beats of 1..output_tokens tokens leave the data queue whole and in order."""
    dut = CoreInterface(CFG)
    width = CFG.output_tokens
    sent = [[100 + 10 * b + t for t in range(1 + b % width)] for b in range(40)]
    got = []

    async def producer(ctx):
        for tokens in sent:
            ctx.set(dut.tmu_data.valid, 1)
            ctx.set(dut.tmu_data.payload, {"tokens": tokens + [0] * (width - len(tokens)),
                                           "count": len(tokens)})
            await ctx.tick().until(dut.tmu_data.ready)
        ctx.set(dut.tmu_data.valid, 0)

    async def consumer(ctx):
        n = 0
        while len(got) < len(sent):
            ready = n % 3 != 0
            ctx.set(dut.data_out.ready, ready)
            if ready and ctx.get(dut.data_out.valid):
                beat = ctx.get(dut.data_out.payload)
                got.append([beat.tokens[t] for t in range(beat.count)])
            await ctx.tick()
            n += 1

    run_sim(dut, producer, consumer)
    assert got == sent
