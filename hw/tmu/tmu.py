"""The access unit: program memory, decoder, traversal, reorder buffer, counters, watchdog."""

from amaranth.hdl import Cat, Const, Module, Mux, Signal
from amaranth.lib import data, fifo, memory, stream, wiring
from amaranth.lib.wiring import In, Out

from ..core_if.signatures import (DataBeatSignature, MemRequestSignature,
                                  MemResponseSignature, ProgramWriteSignature)
from .chain_engine import ChainEngine
from .config import TmuConfig
from .counters import COUNTERS, Counters, CountersLayout
from .decoder import Decoder
from .isa import FaultCode
from .layouts import ActionCfg, StreamCfg, Uop
from .packer import Packer
from .prefetch import Prefetcher
from .request_arbiter import RequestArbiter
from .rob import ReorderBuffer
from .row_issue import RowIssue
from .signatures import ProgramLine, program_lines, program_memory_depth
from .traversal import Traversal


__all__ = ["COUNTERS", "CountersLayout", "TmuControlSignature", "Tmu"]


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
    fault_stream, fault_has_stream : In
        The stream that raised a run-time fault (``docs/isa.md`` §5), with ``fault_has_stream``
        set; clear for decode faults, ``RANGE_ORDER`` and ``WATCHDOG``.
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
            "fault_stream": In(8),
            "fault_has_stream": In(1),
            "counters":   In(CountersLayout),
        })


class Tmu(wiring.Component):
    """The access unit (``docs/rtl.md`` §2).

    Parameters
    ----------
    config : TmuConfig

    Members
    -------
    ctl : In(TmuControlSignature(config))
        Control, status, program load, arguments, counters.
    req : Out(MemRequestSignature(config.tag_bits, config.line_bytes)).array(config.memory_ports)
        Line requests, up to one per port per cycle, each a cycle after its requester made it
        (a two-entry buffer per requester, ``RequestArbiter``): the traversal's first, then the
        row issue block's, then the run-ahead engines' in engine order (an engine with fewer
        than half its entries ahead before the row issue block's), on the lowest-numbered
        ports. Tag ``{epoch, kind[1:0], index}``: kind 0, a reorder-buffer slot; kind 1, the traversal's
        blocking load (at most one in flight); kind 2, a run-ahead engine's slot (``engine *
        prefetch_depth + slot``); ``epoch`` flips at every start, and a response whose epoch is
        not the current run's (a load left in flight by a run that faulted or was aborted) is
        dropped.
    resp : In(MemResponseSignature(config.tag_bits, config.line_bytes)).array(config.memory_ports)
        Line responses, in any order on any port; always accepted (``ready`` is 1).
    data : Out(DataBeatSignature(config.output_tokens))
        Data tokens in program order, up to ``output_tokens`` per beat.
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
            "req":  Out(MemRequestSignature(config.tag_bits, config.line_bytes)
                        ).array(config.memory_ports),
            "resp": In(MemResponseSignature(config.tag_bits, config.line_bytes)
                       ).array(config.memory_ports),
            "data": Out(DataBeatSignature(config.output_tokens)),
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
        row_lines = c.row_lines                  # line requests of a row per cycle
        m.submodules.rob       = rob = ReorderBuffer(c.max_inflight, c.line_bytes,
                                                  c.memory_ports, c.row_chunk_lines, row_lines,
                                                  c.drain_lines)
        m.submodules.row_issue = row_issue = RowIssue(c, row_lines)
        m.submodules.packer    = packer = Packer(c.line_bytes, c.output_tokens, c.drain_lines)

        # Program memory (block RAM): written a word at a time by the core interface, read a
        # line of 4 words (one descriptor) at a time by the decoder.
        m.submodules.program = program = memory.Memory(
            shape=ProgramLine, depth=program_lines(c), init=[])
        prog_w = program.write_port(granularity=1)      # an enable per word of the line
        prog_r = program.read_port()
        m.d.comb += [
            prog_w.addr.eq(self.ctl.prog.addr[2:]),
            prog_w.data.eq(Cat(*[self.ctl.prog.data] * 4)),
            prog_w.en.eq(Mux(self.ctl.prog.en, Const(1, 4) << self.ctl.prog.addr[:2], 0)),
            dec.prog_len.eq(self.ctl.prog_len),
            dec.args.eq(self.ctl.args),
        ]
        wiring.connect(m, dec.program, prog_r)

        # Configuration memories, written by the decoder, read by the traversal: the stream and
        # action configuration through synchronous read ports (the traversal's fetch stage,
        # hw/tmu/fetch.py), the microcode asynchronously. (The operand stream's kind and mode,
        # which the actions need, are copied into the action words by the decoder: ``scfg`` has
        # one read port.)
        m.submodules.scfg = scfg = memory.Memory(shape=StreamCfg, depth=c.streams, init=[])
        m.submodules.acfg = acfg = memory.Memory(shape=ActionCfg, depth=c.actions, init=[])
        m.submodules.ucode = ucode = memory.Memory(shape=Uop, depth=c.ucode_depth, init=[])
        scfg_w, acfg_w, ucode_w = scfg.write_port(), acfg.write_port(), ucode.write_port()
        wiring.connect(m, dec.stream_table, scfg_w)
        wiring.connect(m, dec.action_table, acfg_w)
        wiring.connect(m, dec.microcode, ucode_w)
        # (The memories are written only while the decoder runs, before the traversal starts:
        # no read port needs to be transparent.)
        scfg_r1 = scfg.read_port(domain="sync")
        acfg_r  = acfg.read_port(domain="sync")
        acfg_r2 = acfg.read_port(domain="sync")
        ucode_r = ucode.read_port(domain="comb")
        ucode_r2 = ucode.read_port(domain="comb")
        m.d.comb += [
            scfg_r1.addr.eq(trv.scfg_fetch_addr), trv.scfg_data.eq(scfg_r1.data),
            acfg_r.addr.eq(trv.acfg_fetch_addr), trv.acfg_data.eq(acfg_r.data),
            acfg_r2.addr.eq(trv.acfg2_fetch_addr), trv.acfg2_data.eq(acfg_r2.data),
            ucode_r.addr.eq(trv.ucode_addr), trv.ucode_data.eq(ucode_r.data),
            ucode_r2.addr.eq(trv.ucode_predict_addr), trv.ucode_predict_data.eq(ucode_r2.data),
        ]
        if c.uop_stages == 2:
            # The ahead words (hw/tmu/ahead_fetch.py): a second read of each.
            scfg_r2 = scfg.read_port(domain="sync")
            ucode_r3 = ucode.read_port(domain="comb")
            m.d.comb += [
                scfg_r2.addr.eq(trv.scfg_ahead_addr), trv.scfg_ahead_data.eq(scfg_r2.data),
                ucode_r3.addr.eq(trv.ucode_ahead_addr), trv.ucode_ahead_data.eq(ucode_r3.data),
            ]

        # Decoder configuration into the traversal (one port per member of
        # ``TraversalConfigSignature``, which the traversal declares from the receiving side).
        for name in dec.config.signature.members:
            m.d.comb += getattr(trv, name).eq(getattr(dec.config, name))
        m.d.comb += [trv.args.eq(self.ctl.args), trv.mem_limit.eq(self.ctl.mem_limit)]

        # Run-ahead engines: the affine ones, then the chain engine (hw/tmu/chain_engine.py).
        engines = []
        for e in range(c.prefetchers + c.chain_engines):
            if e < c.prefetchers:
                eng = Prefetcher(c.prefetch_depth, c.line_bytes, c.memory_ports)
                m.submodules[f"prefetch_{e}"] = eng
            else:
                eng = ChainEngine(c.prefetch_depth, c.line_bytes, c.memory_ports)
                m.submodules.chain_engine = eng
                m.d.comb += eng.chain.eq(dec.chain_engine)
            engines.append(eng)
            m.d.comb += [
                eng.start.eq(trv.prefetch_start[e]),
                eng.arm.eq(trv.prefetch_arm[e]), eng.p_armed.eq(trv.prefetch_armed),
                eng.p_base.eq(trv.prefetch_base),
                eng.p_base_wrapped.eq(trv.prefetch_base_wrapped),
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
            if c.uop_stages == 2:
                # (the chain engine's start is not evaluated ahead: hw/tmu/evaluate_stage.py)
                m.d.comb += trv.prefetch_continues[e].eq(
                    eng.continues if e < c.prefetchers else 0)

        # Memory requests: each requester's loads through a buffer of its own onto the ports
        # (hw/tmu/request_arbiter.py), the traversal first, then the row issue block's lanes,
        # then the engines in index order (deepest layer first, as the decoder assigns them);
        # an engine close to running dry (``req_urgent``) goes before the row issue block.
        # Tags: {epoch, kind, index}, kind 0 ROB slot, 1 blocking, 2 prefetch slot.
        kind_lo = c.tag_index_bits
        pbits = (c.prefetch_depth - 1).bit_length()
        epoch = Signal()            # parity of the run: flips at every start
        P = c.memory_ports
        requesters = [(trv.req.valid, trv.req.payload.addr, trv.req.payload.tag,
                       trv.stat_issue_bytes, trv.stat_blocking, 1)]
        for k in range(row_lines):
            requesters.append((row_issue.req_valid[k], row_issue.req_addr[k],
                               row_issue.req_slot[k], row_issue.issue_bytes[k], 0, 0))
        # Each engine's loads are tagged with its index; the chain engine's root stage with
        # index ``prefetchers``, its chained loads with ``prefetchers + 1``.
        engine_ports = []       # (tag index, engine, its ports' name prefix) per load stage
        for e, eng in enumerate(engines):
            if e < c.prefetchers:
                engine_ports.append((e, eng, ""))
            else:
                engine_ports += [(e, eng, "index_"), (e + 1, eng, "")]
        for index, eng, stage in engine_ports:
            requesters.append((getattr(eng, f"{stage}req_valid"), getattr(eng, f"{stage}req_addr"),
                               (2 << kind_lo) | (index << pbits)
                               | getattr(eng, f"{stage}req_slot"),
                               getattr(eng, f"{stage}req_bytes"), 1,
                               getattr(eng, f"{stage}req_urgent")))
        m.submodules.arbiter = arbiter = RequestArbiter(len(requesters), P, kind_lo, c.line_bytes)
        for r, (request, (valid, addr, tag, nbytes, blocking, urgent)) in enumerate(
                zip(arbiter.requests, requesters)):
            m.d.comb += [
                arbiter.urgent[r].eq(urgent),
                request.valid.eq(valid),
                request.payload.addr.eq(addr),
                request.payload.tag.eq(tag),
                request.payload.useful_bytes.eq(nbytes),
                request.payload.blocking.eq(blocking),
            ]
        grants = [request.ready for request in arbiter.requests]
        m.d.comb += trv.req.ready.eq(grants[0])
        for k in range(row_lines):
            m.d.comb += row_issue.req_grant[k].eq(grants[1 + k])
        for (_, eng, stage), grant in zip(engine_ports, grants[1 + row_lines:], strict=True):
            m.d.comb += getattr(eng, f"{stage}req_grant").eq(grant)
        for k in range(P):
            wiring.connect(m, arbiter.req[k], wiring.flipped(self.req[k]))
        m.d.comb += arbiter.epoch.eq(epoch)

        # Responses: routed by kind, any kind on any port.
        blocking_data = Const(0, 8 * c.line_bytes)
        blocking_valid = Const(0)
        response_count = Signal(range(P + 1))
        current = [Signal(name=f"response_current_{k}") for k in range(P)]
        for k in range(P):
            m.d.comb += current[k].eq(self.resp[k].valid
                                      & (self.resp[k].payload.tag[kind_lo + 2] == epoch))
        m.d.comb += response_count.eq(sum(current))
        for k in range(P):
            resp = self.resp[k]
            resp_kind = resp.payload.tag[kind_lo:kind_lo + 2]
            resp_index = resp.payload.tag[:kind_lo]
            m.d.comb += [
                resp.ready.eq(1),
                rob.resp_valid[k].eq(current[k] & (resp_kind == 0)),
                rob.resp_slot[k].eq(resp_index),
                rob.resp_data[k].eq(resp.payload.data),
            ]
            is_blocking = current[k] & (resp_kind == 1)
            blocking_valid = blocking_valid | is_blocking
            blocking_data = blocking_data | Mux(is_blocking, resp.payload.data, 0)
            for index, eng, stage in engine_ports:
                m.d.comb += [
                    getattr(eng, f"{stage}resp_valid")[k].eq(
                        current[k] & (resp_kind == 2) & (resp_index[pbits:] == index)),
                    getattr(eng, f"{stage}resp_slot")[k].eq(resp_index[:pbits]),
                    getattr(eng, f"{stage}resp_data")[k].eq(resp.payload.data),
                ]
        # At most one blocking load is in flight: at most one port carries it.
        m.d.comb += [trv.blocking_resp_valid.eq(blocking_valid),
                     trv.blocking_resp_data.eq(blocking_data)]

        # Marshaling into the reorder buffer, and out.
        m.d.comb += [
            rob.alloc_en.eq(trv.rob_alloc_en),
            rob.alloc.eq(trv.rob_alloc),
            trv.rob_alloc_ready.eq(rob.alloc_ready),
            rob.alloc2_en.eq(trv.rob_alloc2_en),
            rob.alloc2.eq(trv.rob_alloc2),
            trv.rob_alloc2_ready.eq(rob.alloc2_ready),
            trv.rob_alloc_slot.eq(rob.alloc_slot),
            rob.alloc_reserve.eq(trv.rob_alloc_reserve),
            rob.alloc_count.eq(trv.rob_alloc_count),
            trv.rob_free.eq(rob.free),
            rob.entry_en.eq(row_issue.entry_en),
            rob.entry_slot.eq(row_issue.entry_slot),
            rob.entry.eq(row_issue.entry),
            row_issue.clear.eq(rob.clear),
            trv.rob_empty.eq((rob.count == 0) & ~packer.holds_token),
        ]
        # ISA v1 operand packer between the reorder buffer and the data queue.
        m.d.comb += packer.clear.eq(rob.clear)
        wiring.connect(m, rob.data, packer.i)
        for k in range(c.drain_lines - 1):
            wiring.connect(m, rob.data_more[k], packer.i_more[k])
        wiring.connect(m, trv.row_job, row_issue.job)
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

        # Run control and status. A run ends (``busy`` falls, ``done`` rises) the cycle after the
        # decoder or the traversal finishes (``ending``): the counters count an event one cycle
        # late, so that ``done`` comes with the run's complete counts.
        busy  = Signal()
        done  = Signal()
        fault = Signal()
        ending = Signal()
        ending_fault = Signal()
        fault_code = Signal(FaultCode)
        fault_addr = Signal(64)
        fault_stream = Signal(8)
        fault_has_stream = Signal()
        m.d.comb += [
            self.ctl.busy.eq(busy), self.ctl.done.eq(done), self.ctl.fault.eq(fault),
            self.ctl.fault_code.eq(fault_code), self.ctl.fault_addr.eq(fault_addr),
            self.ctl.fault_stream.eq(fault_stream), self.ctl.fault_has_stream.eq(fault_has_stream),
        ]
        start = self.ctl.start & ~busy
        m.d.comb += [rob.clear.eq(start), arbiter.clear.eq(start)]
        for eng in engines:
            m.d.comb += eng.clear.eq(start)
        with m.If(start):
            m.d.sync += [busy.eq(1), done.eq(0), fault.eq(0), epoch.eq(~epoch),
                         fault_code.eq(FaultCode.NONE), fault_addr.eq(0),
                         fault_stream.eq(0), fault_has_stream.eq(0)]
        m.d.comb += dec.start.eq(start)
        m.d.sync += ending.eq(0)
        with m.If(dec.done):
            with m.If(dec.fault):
                m.d.sync += [ending.eq(1), ending_fault.eq(1),
                             fault_code.eq(dec.fault_code), fault_addr.eq(dec.fault_pc),
                             fault_stream.eq(0), fault_has_stream.eq(0)]
        m.d.comb += trv.start.eq(dec.done & ~dec.fault)
        with m.If(trv.done):
            m.d.sync += [ending.eq(1), ending_fault.eq(trv.fault),
                         fault_code.eq(trv.fault_code), fault_addr.eq(trv.fault_addr),
                         fault_stream.eq(trv.fault_stream),
                         fault_has_stream.eq(trv.fault_has_stream)]
        with m.If(ending):
            m.d.sync += [busy.eq(0), done.eq(1), fault.eq(ending_fault)]

        # Watchdog: cycles of the traversal without a token pushed or a load completed.
        pushed = (self.data.valid & self.data.ready) | (self.ctrl.valid & self.ctrl.ready)
        progress = pushed | (response_count != 0)
        wd = Signal(32)
        with m.If(start | progress | ~trv.busy):
            m.d.sync += wd.eq(0)
        with m.Else():
            m.d.sync += wd.eq(wd + 1)
        m.d.comb += trv.abort.eq(trv.busy & (self.ctl.watchdog != 0) & (wd >= self.ctl.watchdog))

        # Counters: the events of the run's cycles (up to the one that ends it), counted a cycle
        # later (hw/tmu/counters.py).
        m.submodules.counters = counters = Counters(c)
        ev = counters.events
        m.d.comb += [
            counters.clear.eq(start),
            counters.count.eq(busy & ~ending),
            self.ctl.counters.eq(counters.counters),
            ev.issued.eq(arbiter.issued),
            ev.issued_bytes.eq(arbiter.issued_bytes),
            ev.issued_blocking.eq(arbiter.issued_blocking),
            ev.responses.eq(response_count),
            ev.data_tokens.eq(Mux(self.data.valid & self.data.ready, self.data.payload.count, 0)),
            ev.control_tokens.eq(self.ctrl.valid & self.ctrl.ready),
            ev.out_stall.eq((self.data.valid & ~self.data.ready)
                            | (self.ctrl.valid & ~self.ctrl.ready)),
            ev.rob_full.eq(trv.stat_rob_stall),
            ev.block_wait.eq(trv.stat_block_wait),
            ev.decoding.eq(dec.busy),
            ev.vector_iteration.eq(trv.stat_vec_iter),
            ev.lane_eval_uop.eq(trv.stat_lane_eval),
            ev.vec_marshal.eq(trv.stat_vec_marshal),
            ev.uop.eq(trv.stat_uop),
            ev.fetch_bubble.eq(trv.stat_fetch_bubble),
            ev.issue_wait.eq(trv.stat_issue_wait),
            ev.evaluate.eq(trv.stat_evaluate),
        ]
        return m
