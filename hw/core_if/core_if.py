"""Core interface: control/status registers, program load, argument registers, output queues."""

from amaranth.hdl import Module, Mux, Shape, Signal
from amaranth.lib import data, fifo, stream, wiring
from amaranth.lib.wiring import In, Out

from ..tmu.config import TmuConfig
from ..tmu.signatures import program_memory_depth
from ..tmu.tmu import COUNTERS, TmuControlSignature
from .signatures import CsrSignature, DataBeatSignature, data_beat_layout


__all__ = ["CoreInterface", "CSR", "ID_VALUE", "csr_arg"]


ID_VALUE = 0x30554D54   # "TMU0" read as a little-endian word


class CSR:
    """Byte offsets of the 32-bit registers (``docs/rtl.md`` has the full map)."""
    ID            = 0x00   # RO  ID_VALUE
    CTRL          = 0x04   # WO  bit 0: START (ignored while busy)
    STATUS        = 0x08   # RO  bit 0 BUSY, bit 1 DONE, bit 2 FAULT, bit 3 FAULT_HAS_STREAM,
    #                            bits [15:8] FAULT_CODE, bits [23:16] FAULT_STREAM
    WATCHDOG      = 0x0C   # RW  watchdog limit in cycles, 0 disables
    FAULT_ADDR_LO = 0x10   # RO  fault address / PC, bits [31:0]
    FAULT_ADDR_HI = 0x14   # RO  bits [63:32]
    PROG_ADDR     = 0x18   # RW  program word address for PROG_DATA
    PROG_DATA     = 0x1C   # WO  write a program word at PROG_ADDR, then PROG_ADDR += 1
    PROG_LEN      = 0x20   # RW  program length in bytes
    MEM_LIMIT_LO  = 0x24   # RW  loads ending beyond this byte address fault (ADDR_RANGE)
    MEM_LIMIT_HI  = 0x28   # RW
    CONFIG0       = 0x2C   # RO  layers [7:0], regions [15:8], streams [23:16], actions [31:24]
    CONFIG1       = 0x30   # RO  args [7:0], max_inflight [31:16]
    CONFIG2       = 0x34   # RO  data queue depth [15:0] (beats), control queue depth [31:16]
    CONFIG3       = 0x38   # RO  number of memory statistics (MEM_STATS entries)
    COUNTERS      = 0x40   # RO  counter n at COUNTERS + 8 n (low word), + 4 (high word)
    ARGS          = 0x100  # RW  argument register n at ARGS + 8 n (low word), + 4 (high word)
    MEM_STATS     = 0x200  # RO  memory-model statistic n at MEM_STATS + 8 n (low), + 4 (high);
                           #     order: hw.hbm_model.stat_names(channels); cleared by CTRL.START


def csr_arg(n):
    return CSR.ARGS + 8 * n


class CoreInterface(wiring.Component):
    """The access unit as the core sees it: registers and two output queues.

    Parameters
    ----------
    config : TmuConfig
    addr_bits : int
        Width of the register port's byte address. Default 12 (4 KiB).
    mem_stats : int
        Number of 64-bit memory-model statistics readable at ``CSR.MEM_STATS`` (default 0).

    Members
    -------
    csr : In(CsrSignature(addr_bits))
        The register port; reads return data the cycle after ``r_en``.
    tmu : Out(TmuControlSignature(config))
        To the access unit.
    tmu_data : In(DataBeatSignature(config.output_tokens)), tmu_ctrl : In(stream.Signature(16))
        Data beats and control tokens from the access unit.
    mem_stats : In(ArrayLayout(64, mem_stats))
        The memory model's statistics (``hw.hbm_model.stat_names`` order).
    data_out : Out(DataBeatSignature(config.output_tokens)), ctrl_out : Out(stream.Signature(16))
        The data and control queues (``config.data_queue_depth`` beats of up to
        ``output_tokens`` tokens / ``ctrl_queue_depth`` tokens) as the core pops them; a beat
        or token leaves when ``valid & ready`` at a clock edge.
    """

    def __init__(self, config, *, addr_bits=12, mem_stats=0):
        if not isinstance(config, TmuConfig):
            raise TypeError(f"config must be a TmuConfig, not {config!r}")
        if not isinstance(addr_bits, int) or not CSR.ARGS + 8 * config.args <= 1 << addr_bits:
            raise ValueError(f"addr_bits must be an integer large enough for the register map, "
                             f"not {addr_bits!r}")
        if (not isinstance(mem_stats, int) or mem_stats < 0
                or CSR.MEM_STATS + 8 * mem_stats > 1 << addr_bits):
            raise ValueError(f"mem_stats must be a non-negative integer that fits the register "
                             f"map above {CSR.MEM_STATS:#x}, not {mem_stats!r}")
        self._cfg = config
        self._mem_stats = mem_stats
        super().__init__({
            "mem_stats": In(data.ArrayLayout(64, max(1, mem_stats))),
            "csr":      In(CsrSignature(addr_bits)),
            "tmu":      Out(TmuControlSignature(config)),
            "tmu_data": In(DataBeatSignature(config.output_tokens)),
            "tmu_ctrl": In(stream.Signature(16)),
            "data_out": Out(DataBeatSignature(config.output_tokens)),
            "ctrl_out": Out(stream.Signature(16)),
        })

    def elaborate(self, platform):
        m = Module()
        c = self._cfg

        # Output queues.
        beat_bits = Shape.cast(data_beat_layout(c.output_tokens)).width
        m.submodules.data_q = data_q = fifo.SyncFIFOBuffered(width=beat_bits,
                                                             depth=c.data_queue_depth)
        m.submodules.ctrl_q = ctrl_q = fifo.SyncFIFOBuffered(width=16, depth=c.ctrl_queue_depth)
        m.d.comb += [
            data_q.w_data.eq(self.tmu_data.payload), data_q.w_en.eq(self.tmu_data.valid),
            self.tmu_data.ready.eq(data_q.w_rdy),
            self.data_out.payload.eq(data_q.r_data), self.data_out.valid.eq(data_q.r_rdy),
            data_q.r_en.eq(self.data_out.ready),
        ]
        wiring.connect(m, wiring.flipped(self.tmu_ctrl), ctrl_q.w_stream)
        wiring.connect(m, ctrl_q.r_stream, wiring.flipped(self.ctrl_out))

        # Registers.
        prog_depth = program_memory_depth(c)
        watchdog  = Signal(32, init=c.watchdog_cycles)
        prog_addr = Signal(32)
        prog_len  = Signal(32)
        mem_limit = Signal(64, init=(1 << 64) - 1)
        args = [Signal(64, name=f"arg_{n}") for n in range(c.args)]
        m.d.comb += [
            self.tmu.watchdog.eq(watchdog),
            self.tmu.prog_len.eq(prog_len),
            self.tmu.mem_limit.eq(mem_limit),
        ]
        m.d.comb += [self.tmu.args[n].eq(args[n]) for n in range(c.args)]

        word = self.csr.addr[2:]
        start = Signal()
        m.d.sync += [start.eq(0), self.tmu.prog.en.eq(0)]
        m.d.comb += self.tmu.start.eq(start)
        with m.If(self.csr.w_en):
            wd = self.csr.w_data
            with m.Switch(word):
                with m.Case(CSR.CTRL >> 2):
                    m.d.sync += start.eq(wd[0])
                with m.Case(CSR.WATCHDOG >> 2):
                    m.d.sync += watchdog.eq(wd)
                with m.Case(CSR.PROG_ADDR >> 2):
                    m.d.sync += prog_addr.eq(wd)
                with m.Case(CSR.PROG_DATA >> 2):
                    m.d.sync += [
                        self.tmu.prog.addr.eq(prog_addr),
                        self.tmu.prog.data.eq(wd),
                        self.tmu.prog.en.eq(prog_addr < prog_depth),
                        prog_addr.eq(prog_addr + 1),
                    ]
                with m.Case(CSR.PROG_LEN >> 2):
                    m.d.sync += prog_len.eq(wd)
                with m.Case(CSR.MEM_LIMIT_LO >> 2):
                    m.d.sync += mem_limit[:32].eq(wd)
                with m.Case(CSR.MEM_LIMIT_HI >> 2):
                    m.d.sync += mem_limit[32:].eq(wd)
                for n in range(c.args):
                    with m.Case(csr_arg(n) >> 2):
                        m.d.sync += args[n][:32].eq(wd)
                    with m.Case((csr_arg(n) + 4) >> 2):
                        m.d.sync += args[n][32:].eq(wd)

        with m.If(self.csr.r_en):
            rd = self.csr.r_data
            with m.Switch(word):
                with m.Case(CSR.ID >> 2):
                    m.d.sync += rd.eq(ID_VALUE)
                with m.Case(CSR.STATUS >> 2):
                    m.d.sync += rd.eq(self.tmu.busy | (self.tmu.done << 1) | (self.tmu.fault << 2)
                                      | (self.tmu.fault_has_stream << 3)
                                      | (self.tmu.fault_code.as_value() << 8)
                                      | (Mux(self.tmu.fault_has_stream,
                                             self.tmu.fault_stream, 0) << 16))
                with m.Case(CSR.WATCHDOG >> 2):
                    m.d.sync += rd.eq(watchdog)
                with m.Case(CSR.FAULT_ADDR_LO >> 2):
                    m.d.sync += rd.eq(self.tmu.fault_addr[:32])
                with m.Case(CSR.FAULT_ADDR_HI >> 2):
                    m.d.sync += rd.eq(self.tmu.fault_addr[32:])
                with m.Case(CSR.PROG_ADDR >> 2):
                    m.d.sync += rd.eq(prog_addr)
                with m.Case(CSR.PROG_LEN >> 2):
                    m.d.sync += rd.eq(prog_len)
                with m.Case(CSR.MEM_LIMIT_LO >> 2):
                    m.d.sync += rd.eq(mem_limit[:32])
                with m.Case(CSR.MEM_LIMIT_HI >> 2):
                    m.d.sync += rd.eq(mem_limit[32:])
                with m.Case(CSR.CONFIG0 >> 2):
                    m.d.sync += rd.eq(c.layers | c.regions << 8 | c.streams << 16
                                      | c.actions << 24)
                with m.Case(CSR.CONFIG1 >> 2):
                    m.d.sync += rd.eq(c.args | c.max_inflight << 16)
                with m.Case(CSR.CONFIG2 >> 2):
                    m.d.sync += rd.eq(c.data_queue_depth | c.ctrl_queue_depth << 16)
                with m.Case(CSR.CONFIG3 >> 2):
                    m.d.sync += rd.eq(self._mem_stats)
                for n in range(self._mem_stats):
                    value = self.mem_stats[n]
                    with m.Case((CSR.MEM_STATS + 8 * n) >> 2):
                        m.d.sync += rd.eq(value[:32])
                    with m.Case((CSR.MEM_STATS + 8 * n + 4) >> 2):
                        m.d.sync += rd.eq(value[32:])
                for i, name in enumerate(COUNTERS):
                    value = getattr(self.tmu.counters, name)
                    with m.Case((CSR.COUNTERS + 8 * i) >> 2):
                        m.d.sync += rd.eq(value[:32])
                    with m.Case((CSR.COUNTERS + 8 * i + 4) >> 2):
                        m.d.sync += rd.eq(value[32:])
                for n in range(c.args):
                    with m.Case(csr_arg(n) >> 2):
                        m.d.sync += rd.eq(args[n][:32])
                    with m.Case((csr_arg(n) + 4) >> 2):
                        m.d.sync += rd.eq(args[n][32:])
                with m.Default():
                    m.d.sync += rd.eq(0)
        return m
