"""The access unit: program memory, decoder, traversal, reorder buffer, counters, watchdog."""

from amaranth.hdl import Module, Mux, Signal
from amaranth.lib import data, fifo, memory, stream, wiring
from amaranth.lib.wiring import In, Out

from ..core_if.signatures import (MemRequestSignature, MemResponseSignature,
                                  ProgramWriteSignature)
from .config import TmuConfig
from .decoder import Decoder
from .isa import FaultCode
from .layouts import ActionCfg, StreamCfg, Uop
from .packer import Packer
from .prefetch import Prefetcher
from .rob import ReorderBuffer
from .traversal import Traversal


__all__ = ["COUNTERS", "CountersLayout", "TmuControlSignature", "Tmu"]


#: Per-run counters, in CSR order (``docs/rtl.md``). All 64-bit, cleared at start.
COUNTERS = (
    "cycles",            # cycles from start to done
    "loads",             # load requests issued (operand + blocking)
    "bytes_loaded",      # bytes, sum of the element sizes of those loads
    "blocking_loads",    # of which blocking (the traversal waited for them)
    "data_tokens",       # tokens pushed into the data queue
    "control_tokens",    # tokens pushed into the control queue (DONE included)
    "out_stall_cycles",  # cycles the head token waited for a full output queue
    "rob_full_cycles",   # cycles an action waited for a free reorder-buffer entry
    "block_wait_cycles", # cycles the traversal waited for a blocking load
    "peak_inflight",     # most loads in flight at once
    "inflight_sum",      # sum over cycles of loads in flight (average = inflight_sum / cycles)
    "decode_cycles",     # cycles spent decoding (and building the microcode)
    "vector_iterations", # vector iterations of the ISA v1 LOCKSTEP layer
    "lane_eval_uops",    # STREAM/LANE uops of the LOCKSTEP layer completed (1 cycle each + waits)
    "vec_marshal_cycles",  # cycles on vector OPERAND actions (lanes, words of a row, padding)
)

CountersLayout = data.StructLayout({name: 64 for name in COUNTERS})


def program_memory_depth(config):
    return 1 << max(1, (config.program_words - 1).bit_length())


class TmuControlSignature(wiring.Signature):
    """Control and status of the access unit (initiator side: the core interface).

    Members
    -------
    start : Out(1)
        Pulse: decode and run the program. Ignored while ``busy``.
    prog : Out(ProgramWriteSignature)
        Writes into the program memory (word address).
    prog_len : Out(32)
        Program length in bytes.
    args : Out(ArrayLayout(64, config.args))
        Argument registers; must not change while ``busy``.
    mem_limit : Out(64)
        Loads whose element ends beyond this byte address fault with ``ADDR_RANGE``.
    watchdog : Out(32)
        Watchdog limit, cycles; 0 disables.
    busy, done, fault, fault_code, fault_addr : In
        ``done`` and ``fault`` stay set until the next start.
    counters : In(CountersLayout)
    """
    def __init__(self, config):
        super().__init__({
            "start":      Out(1),
            "prog":       Out(ProgramWriteSignature(max(1, (program_memory_depth(config) - 1)
                                                        .bit_length()))),
            "prog_len":   Out(32),
            "args":       Out(data.ArrayLayout(64, config.args)),
            "mem_limit":  Out(64),
            "watchdog":   Out(32),
            "busy":       In(1),
            "done":       In(1),
            "fault":      In(1),
            "fault_code": In(FaultCode),
            "fault_addr": In(64),
            "counters":   In(CountersLayout),
        })


class Tmu(wiring.Component):
    """The access unit (ISA version 0: one TU per layer, one lane).

    Parameters
    ----------
    config : TmuConfig

    Members
    -------
    ctl : In(TmuControlSignature(config))
        Control, status, program load, arguments, counters.
    req : Out(MemRequestSignature(config.tag_bits))
        Load requests. Tag ``{kind[1:0], index}``: kind 0, a reorder-buffer slot; kind 1, the
        traversal's blocking load (at most one in flight); kind 2, a run-ahead engine's slot
        (``engine * prefetch_depth + slot``).
    resp : In(MemResponseSignature(config.tag_bits))
        Load responses, in any order; always accepted (``resp.ready`` is 1).
    data : Out(stream.Signature(64))
        Data tokens, in program order.
    ctrl : Out(stream.Signature(16))
        Control tokens, in program order; ``0xFFFF`` (DONE) last after a normal completion.
    """

    def __init__(self, config=None):
        config = TmuConfig() if config is None else config
        if not isinstance(config, TmuConfig):
            raise TypeError(f"config must be a TmuConfig, not {config!r}")
        self._cfg = config
        super().__init__({
            "ctl":  In(TmuControlSignature(config)),
            "req":  Out(MemRequestSignature(config.tag_bits)),
            "resp": In(MemResponseSignature(config.tag_bits)),
            "data": Out(stream.Signature(64)),
            "ctrl": Out(stream.Signature(16)),
        })

    @property
    def config(self):
        return self._cfg

    def elaborate(self, platform):
        m = Module()
        c = self._cfg

        m.submodules.decoder   = dec = Decoder(c)
        m.submodules.traversal = trv = Traversal(c)
        m.submodules.rob       = rob = ReorderBuffer(c.max_inflight)

        # Program memory (block RAM): written by the core interface, read by the decoder.
        m.submodules.program = program = memory.Memory(
            shape=32, depth=program_memory_depth(c), init=[])
        prog_w = program.write_port()
        prog_r = program.read_port()
        m.d.comb += [
            prog_w.addr.eq(self.ctl.prog.addr), prog_w.data.eq(self.ctl.prog.data),
            prog_w.en.eq(self.ctl.prog.en),
            prog_r.addr.eq(dec.prog_addr), dec.prog_data.eq(prog_r.data),
            dec.prog_len.eq(self.ctl.prog_len),
            dec.args.eq(self.ctl.args),
        ]

        # Configuration memories, written by the decoder, read (asynchronously) by the traversal.
        m.submodules.scfg = scfg = memory.Memory(shape=StreamCfg, depth=c.streams, init=[])
        m.submodules.acfg = acfg = memory.Memory(shape=ActionCfg, depth=c.actions, init=[])
        m.submodules.ucode = ucode = memory.Memory(shape=Uop, depth=c.ucode_depth, init=[])
        scfg_w, acfg_w, ucode_w = scfg.write_port(), acfg.write_port(), ucode.write_port()
        scfg_r1 = scfg.read_port(domain="comb")
        scfg_r2 = scfg.read_port(domain="comb")
        acfg_r  = acfg.read_port(domain="comb")
        acfg_r2 = acfg.read_port(domain="comb")
        ucode_r = ucode.read_port(domain="comb")
        m.d.comb += [
            scfg_w.addr.eq(dec.scfg_w_addr), scfg_w.data.eq(dec.scfg_w_data),
            scfg_w.en.eq(dec.scfg_w_en),
            acfg_w.addr.eq(dec.acfg_w_addr), acfg_w.data.eq(dec.acfg_w_data),
            acfg_w.en.eq(dec.acfg_w_en),
            ucode_w.addr.eq(dec.ucode_w_addr), ucode_w.data.eq(dec.ucode_w_data),
            ucode_w.en.eq(dec.ucode_w_en),
            scfg_r1.addr.eq(trv.scfg_addr), trv.scfg_data.eq(scfg_r1.data),
            scfg_r2.addr.eq(trv.operand_cfg_addr), trv.operand_cfg_data.eq(scfg_r2.data),
            acfg_r.addr.eq(trv.acfg_addr), trv.acfg_data.eq(acfg_r.data),
            acfg_r2.addr.eq(trv.acfg2_addr), trv.acfg2_data.eq(acfg_r2.data),
            ucode_r.addr.eq(trv.ucode_addr), trv.ucode_data.eq(ucode_r.data),
        ]

        # Decoder configuration into the traversal.
        m.d.comb += [
            trv.prefetch_stream.eq(dec.prefetch_stream), trv.prefetch_layer.eq(dec.prefetch_layer),
            trv.prefetch_offset.eq(dec.prefetch_offset),
            trv.stream_prefetched.eq(dec.stream_prefetched),
            trv.stream_prefetch_engine.eq(dec.stream_prefetch_engine),
            trv.layers.eq(dec.layers), trv.regions.eq(dec.regions),
            trv.blocking.eq(dec.blocking),
            trv.act_flush.eq(dec.act_flush),
            trv.lockstep_valid.eq(dec.lockstep_valid), trv.lockstep_layer.eq(dec.lockstep_layer),
            trv.act_vec.eq(dec.act_vec), trv.invariant.eq(dec.invariant),
            trv.lockstep_vector_mode.eq(dec.lockstep_vector_mode), trv.lane_pos.eq(dec.lane_pos),
            trv.lane_neg.eq(dec.lane_neg), trv.contiguous_vector.eq(dec.contiguous_vector),
            trv.body_pc.eq(dec.body_pc), trv.exit_pc.eq(dec.exit_pc),
            trv.args.eq(self.ctl.args), trv.mem_limit.eq(self.ctl.mem_limit),
        ]

        # Run-ahead engines.
        engines = []
        for e in range(c.prefetchers):
            eng = Prefetcher(c.prefetch_depth)
            m.submodules[f"prefetch_{e}"] = eng
            engines.append(eng)
            m.d.comb += [
                eng.start.eq(trv.prefetch_start[e]),
                eng.p_base.eq(trv.prefetch_base),
                eng.p_lb.eq(trv.prefetch_lower_bound), eng.p_ub.eq(trv.prefetch_upper_bound),
                eng.p_step.eq(trv.prefetch_step), eng.p_c.eq(trv.prefetch_start_offset),
                eng.p_stride.eq(trv.prefetch_stride),
                eng.p_log2.eq(trv.prefetch_size_log2), eng.p_sign.eq(trv.prefetch_sign),
                eng.p_region_base.eq(trv.prefetch_region_base),
                eng.p_region_size.eq(trv.prefetch_region_size),
                eng.mem_limit.eq(self.ctl.mem_limit),
                trv.prefetch_head_valid[e].eq(eng.head_valid),
                trv.prefetch_head_data[e].eq(eng.head_data),
                trv.prefetch_busy[e].eq(eng.busy),
                trv.prefetch_idle[e].eq(eng.idle),
                eng.pop.eq(trv.prefetch_pop[e]),
            ]

        # Memory requests: the traversal first, then the engines in index order (deepest layer
        # first, as the decoder assigns them). Tags: {kind, index}, kind 0 ROB slot, 1 blocking,
        # 2 prefetch slot.
        kind_lo = c.rob_bits
        pbits = (c.prefetch_depth - 1).bit_length()
        issue_bytes = Signal(4)
        issue_blocking = Signal()
        m.d.comb += [
            self.req.valid.eq(trv.req.valid),
            self.req.payload.eq(trv.req.payload),
            trv.req.ready.eq(self.req.ready),
            issue_bytes.eq(trv.stat_issue_bytes),
            issue_blocking.eq(trv.stat_blocking),
        ]
        taken = trv.req.valid
        for e, eng in enumerate(engines):
            grant = Signal(name=f"grant_{e}")
            m.d.comb += grant.eq(eng.req_valid & ~taken)
            with m.If(grant):
                m.d.comb += [
                    self.req.valid.eq(1),
                    self.req.payload.addr.eq(eng.req_addr),
                    self.req.payload.tag.eq((2 << kind_lo) | (e << pbits) | eng.req_slot),
                    issue_bytes.eq(eng.esize),
                    issue_blocking.eq(1),
                ]
            m.d.comb += eng.req_grant.eq(grant & self.req.ready)
            taken = taken | eng.req_valid

        resp_kind = self.resp.payload.tag[kind_lo:kind_lo + 2]
        resp_index = self.resp.payload.tag[:kind_lo]
        m.d.comb += [
            self.resp.ready.eq(1),
            trv.blocking_resp_valid.eq(self.resp.valid & (resp_kind == 1)),
            trv.blocking_resp_data.eq(self.resp.payload.data),
            rob.resp_valid.eq(self.resp.valid & (resp_kind == 0)),
            rob.resp_slot.eq(resp_index),
            rob.resp_data.eq(self.resp.payload.data),
        ]
        for e, eng in enumerate(engines):
            m.d.comb += [
                eng.resp_valid.eq(self.resp.valid & (resp_kind == 2)
                                  & (resp_index[pbits:] == e)),
                eng.resp_slot.eq(resp_index[:pbits]),
                eng.resp_data.eq(self.resp.payload.data),
            ]

        # Marshaling into the reorder buffer, and out.
        m.d.comb += [
            rob.alloc_en.eq(trv.rob_alloc_en),
            rob.alloc.eq(trv.rob_alloc),
            trv.rob_alloc_ready.eq(rob.alloc_ready),
            rob.alloc2_en.eq(trv.rob_alloc2_en),
            rob.alloc2.eq(trv.rob_alloc2),
            trv.rob_alloc2_ready.eq(rob.alloc2_ready),
            trv.rob_alloc_slot.eq(rob.alloc_slot),
            trv.rob_empty.eq(rob.count == 0),
        ]
        # ISA v1 operand packer between the reorder buffer and the data queue.
        m.submodules.packer = packer = Packer()
        m.d.comb += packer.clear.eq(rob.clear)
        wiring.connect(m, rob.data, packer.i)
        wiring.connect(m, packer.o, wiring.flipped(self.data))
        # Control tokens need no reordering (the queues are independent): a small FIFO.
        m.submodules.ctrl_fifo = ctrl_fifo = fifo.SyncFIFO(width=16, depth=4)
        m.d.comb += [
            ctrl_fifo.w_data.eq(trv.ctrl_w_data),
            ctrl_fifo.w_en.eq(trv.ctrl_w_en),
            trv.ctrl_w_rdy.eq(ctrl_fifo.w_rdy),
            trv.ctrl_empty.eq(~ctrl_fifo.r_rdy),
        ]
        wiring.connect(m, ctrl_fifo.r_stream, wiring.flipped(self.ctrl))

        # Run control and status.
        busy  = Signal()
        done  = Signal()
        fault = Signal()
        fault_code = Signal(FaultCode)
        fault_addr = Signal(64)
        m.d.comb += [
            self.ctl.busy.eq(busy), self.ctl.done.eq(done), self.ctl.fault.eq(fault),
            self.ctl.fault_code.eq(fault_code), self.ctl.fault_addr.eq(fault_addr),
        ]
        start = self.ctl.start & ~busy
        m.d.comb += rob.clear.eq(start)
        for eng in engines:
            m.d.comb += eng.clear.eq(start)
        with m.If(start):
            m.d.sync += [busy.eq(1), done.eq(0), fault.eq(0),
                         fault_code.eq(FaultCode.NONE), fault_addr.eq(0)]
        m.d.comb += dec.start.eq(start)
        with m.If(dec.done):
            with m.If(dec.fault):
                m.d.sync += [busy.eq(0), done.eq(1), fault.eq(1),
                             fault_code.eq(dec.fault_code), fault_addr.eq(dec.fault_pc)]
        m.d.comb += trv.start.eq(dec.done & ~dec.fault)
        with m.If(trv.done):
            m.d.sync += [busy.eq(0), done.eq(1), fault.eq(trv.fault),
                         fault_code.eq(trv.fault_code), fault_addr.eq(trv.fault_addr)]

        # Watchdog: cycles of the traversal without a token pushed or a load completed.
        pushed = (self.data.valid & self.data.ready) | (self.ctrl.valid & self.ctrl.ready)
        progress = pushed | self.resp.valid
        wd = Signal(32)
        with m.If(start | progress | ~trv.busy):
            m.d.sync += wd.eq(0)
        with m.Else():
            m.d.sync += wd.eq(wd + 1)
        m.d.comb += trv.abort.eq(trv.busy & (self.ctl.watchdog != 0) & (wd >= self.ctl.watchdog))

        # Counters.
        cnt = Signal(CountersLayout)
        m.d.comb += self.ctl.counters.eq(cnt)
        inflight = Signal(range(c.max_inflight + 2))
        issue = self.req.valid & self.req.ready
        inflight_next = Signal.like(inflight)
        m.d.comb += inflight_next.eq(inflight + issue - self.resp.valid)
        with m.If(start):
            m.d.sync += [cnt.eq(0), inflight.eq(0)]
        with m.Elif(busy):
            m.d.sync += [
                inflight.eq(inflight_next),
                cnt.cycles.eq(cnt.cycles + 1),
                cnt.loads.eq(cnt.loads + issue),
                cnt.bytes_loaded.eq(cnt.bytes_loaded + Mux(issue, issue_bytes, 0)),
                cnt.blocking_loads.eq(cnt.blocking_loads + (issue & issue_blocking)),
                cnt.data_tokens.eq(cnt.data_tokens + (self.data.valid & self.data.ready)),
                cnt.control_tokens.eq(cnt.control_tokens + (self.ctrl.valid & self.ctrl.ready)),
                cnt.out_stall_cycles.eq(cnt.out_stall_cycles
                                        + ((self.data.valid & ~self.data.ready)
                                           | (self.ctrl.valid & ~self.ctrl.ready))),
                cnt.rob_full_cycles.eq(cnt.rob_full_cycles + trv.stat_rob_stall),
                cnt.block_wait_cycles.eq(cnt.block_wait_cycles + trv.stat_block_wait),
                cnt.inflight_sum.eq(cnt.inflight_sum + inflight),
                cnt.decode_cycles.eq(cnt.decode_cycles + dec.busy),
                cnt.vector_iterations.eq(cnt.vector_iterations + trv.stat_vec_iter),
                cnt.lane_eval_uops.eq(cnt.lane_eval_uops + trv.stat_lane_eval),
                cnt.vec_marshal_cycles.eq(cnt.vec_marshal_cycles + trv.stat_vec_marshal),
            ]
            with m.If(inflight_next > cnt.peak_inflight):
                m.d.sync += cnt.peak_inflight.eq(inflight_next)
        with m.Else():
            m.d.sync += inflight.eq(0)
        return m
