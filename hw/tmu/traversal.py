"""Traversal: executes the microcode the decoder built — layers, streams, marshaling actions."""

from amaranth.hdl import Array, Cat, Const, Module, Mux, Signal, signed
from amaranth.lib import data, memory, stream, wiring
from amaranth.lib.wiring import In, Out

from ..core_if.signatures import MemRequestSignature
from .config import TmuConfig
from .datapath import alu, extract, outside_int64
from .chain import chain_value
from .engine_pop import EnginePops
from .actions import Actions
from .lockstep_lanes import LockstepLanes
from .operand_sources import OperandSources
from .stream_evaluation import StreamEvaluation
from .isa import (DONE_TOKEN, ActionKind, AluOp, ControlWord1, FaultCode, MemMode, Source,
                  SourceKind, StreamKind)
from .layouts import ActionCfg, LayerCfg, RegionCfg, StreamCfg, Uop, UopKind
from .rob import alloc_layout
from .row_issue import row_job_layout
from .signatures import TraversalConfigSignature


__all__ = ["Traversal"]


def _bits(n):
    return max(1, (n - 1).bit_length())


def _pick(m, array, index, shape, name):
    """``array[index]`` as a signal (operations on an ``Array`` proxy would be replicated)."""
    sig = Signal(shape, name=name)
    m.d.comb += sig.eq(array[index])
    return sig


class Traversal(wiring.Component):
    """Runs the loop nest of ``docs/isa.md`` §1 one microcode operation per cycle.

    Microcode (built by :class:`~hw.tmu.decoder.Decoder`)::

        ACT (BEGIN actions of layer 0) ; ENTER 0 ; STREAM (invariant) ; PREFETCH (engines)
        body_0: STREAM (layer 0) ; ACT (ITER 0) ; ACT (BEGIN 1) ; ENTER 1 ; ...
        body_1: ...                                 ; innermost: STREAM ; ACT (ITER)
                NEXT n-1 ; exit_(n-1): ACT (END n-1) ; NEXT n-2 ; ... ; NEXT 0 ; exit_0: ACT (END 0)
                DONE

    A ``STREAM`` evaluates one stream (ALU, FWD, or a MEM address with the alignment, region and
    memory-limit checks). A MEM stream that a bound or another stream reads is *blocking*: its
    value comes from its run-ahead engine (``hw/tmu/prefetch.py``) if it has one, otherwise its
    load is issued with the blocking tag and the traversal waits for the data. Any other MEM
    stream only keeps its (checked) address; an ``OPERAND`` action reading it issues the load,
    tagged with the reorder-buffer slot it allocates, and does not wait. An ``OPERAND`` action
    allocates one reorder-buffer entry; a ``CONTROL`` action writes the control FIFO. A
    ``STREAM`` may carry the first ``ITER`` action of its layer (``fuse_act``, the action sees
    the new value), a ``STREAM``+action or an ``ACT`` may carry a second, immediate action
    (``fuse_act2``), and a ``STREAM``/``ACT`` may carry the following ``NEXT``
    (``fuse_next``). See ``docs/rtl.md``.

    An ISA v1 LOCKSTEP layer (``docs/rtl.md`` §9.3) runs in *vector mode* when the decoder
    found every stream lane-affine or a contiguous vector load (``lockstep_vector_mode``): its
    streams are evaluated once per vector iteration at lane 0 (a contiguous load checks all
    active lanes at once), a contiguous vector operand is one aligned 64-bit load per word of
    the active lanes plus zero chunks for the masked lanes, other vector operands are lane 0's
    value ``+ c * lane * step``. Otherwise it runs lane by lane: the body's streams once per lane,
    the ``LANE`` step folded into the last one (``fuse_lane``), lane faults reported after the
    last lane in the golden model's stream-major order.

    Parameters
    ----------
    config : TmuConfig

    Members
    -------
    start : In(1)
        Pulse: run the microcode from address 0.
    abort : In(1)
        Stop at once with ``WATCHDOG`` (the watchdog expired).
    busy, done, fault, fault_code, fault_addr : Out
        ``done`` pulses when the run ends: after the ``DONE`` token or, after a fault, once the
        reorder buffer has drained everything that precedes the fault.
    """

    def __init__(self, config):
        if not isinstance(config, TmuConfig):
            raise TypeError(f"config must be a TmuConfig, not {config!r}")
        c = self._cfg = config
        self._ubits = _bits(c.ucode_depth)
        self._sbits = _bits(c.streams)
        self._abits = _bits(c.actions)
        self._lbits = _bits(c.layers)
        self._rbits = _bits(c.regions)
        self._argbits = _bits(c.args)
        E = self._engines = max(1, c.prefetchers)
        self._ebits = _bits(E)
        super().__init__({
            # The decoder's configuration registers (layers, regions, blocking streams,
            # microcode addresses, run-ahead engine assignment, ISA v1 classes): declared once,
            # hw/tmu/signatures.py's TraversalConfigSignature, here from the receiving side.
            **TraversalConfigSignature(c).flip().members,
            "start":      In(1),
            "abort":      In(1),
            "busy":       Out(1),
            "done":       Out(1),
            "fault":      Out(1),
            "fault_code": Out(FaultCode),
            "fault_addr": Out(64),
            "args":       In(data.ArrayLayout(64, c.args)),
            "mem_limit":  In(64),
            "ucode_addr": Out(self._ubits),
            "ucode_data": In(Uop),
            "scfg_addr":  Out(self._sbits),
            "scfg_data":  In(StreamCfg),
            "operand_cfg_addr": Out(self._sbits),
            "operand_cfg_data": In(StreamCfg),
            "acfg_addr":  Out(self._abits),
            "acfg_data":  In(ActionCfg),
            "acfg2_addr": Out(self._abits),
            "acfg2_data": In(ActionCfg),
            "req":        Out(MemRequestSignature(c.tag_bits, c.line_bytes)),
            "blocking_resp_valid": In(1),
            "blocking_resp_data":  In(8 * c.line_bytes),   # the line
            "rob_alloc_en":    Out(1),
            "rob_alloc":       Out(alloc_layout(c.line_bytes)),
            "rob_alloc_ready": In(1),
            "rob_alloc2_en":    Out(1),
            "rob_alloc2":       Out(alloc_layout(c.line_bytes)),
            "rob_alloc2_ready": In(1),
            "rob_alloc_slot":  In(c.rob_bits),
            "rob_alloc_reserve": Out(1),      # the first allocation reserves a row's lines
            "rob_alloc_count":   Out(range(c.row_chunk_lines + 1)),
            "rob_free":          In(range(c.max_inflight + 1)),
            "row_job":           Out(stream.Signature(row_job_layout(c))),
            "rob_empty":       In(1),
            "ctrl_w_en":   Out(1),    # write a control token (the control FIFO's write side)
            "ctrl_w_data": Out(16),
            "ctrl_w_rdy":  In(1),     # the control FIFO has room (does not depend on ctrl_w_en)
            "ctrl_empty":  In(1),     # the control FIFO is empty
            "stat_rob_stall":   Out(1),   # an action waits for a free reorder-buffer entry
            "stat_block_wait":  Out(1),   # waiting for a blocking load
            "stat_issue":       Out(1),   # a load request is accepted this cycle
            "stat_issue_bytes": Out(8),   # the bytes of its elements (useful bytes)
            "stat_blocking":    Out(1),   # that load is a blocking one
            # Run-ahead engines (hw/tmu/prefetch.py): their assignment is in the configuration.
            "prefetch_start":         Out(E),
            "prefetch_base":          Out(signed(64)),
            "prefetch_lower_bound":   Out(signed(64)),
            "prefetch_upper_bound":   Out(signed(64)),
            "prefetch_step":          Out(signed(28)),
            "prefetch_start_offset":  Out(signed(28)),
            "prefetch_stride":        Out(signed(32)),
            "prefetch_size_log2":     Out(2),
            "prefetch_sign":          Out(1),
            "prefetch_region_base":   Out(signed(64)),
            "prefetch_region_size":   Out(signed(64)),
            "prefetch_head_valid":    In(E),
            "prefetch_head_data":     In(data.ArrayLayout(64, E)),
            "prefetch_busy":          In(E),
            "prefetch_idle":          In(E),
            "prefetch_pop":           Out(E),
            # ISA v1 LOCKSTEP statistics (the layer's classes are in the configuration).
            "stat_lane_eval":       Out(1),   # a STREAM/LANE uop of the LOCKSTEP layer completes
            "stat_vec_marshal":     Out(1),   # a vector OPERAND action this cycle
            "stat_vec_iter":        Out(1),   # a vector iteration of the LOCKSTEP layer starts
        })

    def elaborate(self, platform):
        m = Module()
        c = self._cfg

        pc   = Signal(self._ubits)
        vals = Array(Signal(signed(64), name=f"value_{i}") for i in range(c.streams))
        idx  = Array(Signal(signed(64), name=f"index_{i}") for i in range(c.layers))
        ubr  = Array(Signal(signed(64), name=f"ub_{i}") for i in range(c.layers))
        args = Array(self.args[i] for i in range(c.args))
        layers  = Array(self.layers[i] for i in range(c.layers))
        regions = Array(self.regions[i] for i in range(c.regions))
        body_pc = Array(self.body_pc[i] for i in range(c.layers))
        exit_pc = Array(self.exit_pc[i] for i in range(c.layers))

        # ISA v1 LOCKSTEP layer ``lockstep_layer_id`` (docs/isa.md §7.2), run lane by lane:
        # ``first`` is the index of lane 0 of the vector iteration, ``lane`` the lane being
        # evaluated (its index is ``idx[lockstep_layer_id]``), ``count`` the active lanes (lanes
        # whose index is below ub).
        lanes = LockstepLanes(m, self, layers, ubr)
        has_lockstep = lanes.enabled
        lockstep_layer_id = lanes.layer_id
        lockstep_on, first, lane, count = lanes.on, lanes.first, lanes.lane, lanes.count
        lockstep_cfg = lanes.cfg

        # Engine pops carried by a STREAM uop (hw/tmu/engine_pop.py); ``u`` is the entry to
        # execute (a fallback step replaces it with a plain STREAM of a popped stream).
        pops = EnginePops(m, self.ucode_data, self._engines,
                          [self.prefetch_stream[i] for i in range(self._engines)],
                          self.prefetch_head_valid, self.prefetch_busy,
                          [self.prefetch_head_data[i] for i in range(self._engines)])
        u = pops.uop
        pop_clear = Signal()                  # the uop completes: no pop of it is left
        pop_mark = Signal(self._engines)      # a fallback step completes: its engine's pop
        m.d.sync += pops.done.eq(Mux(pop_clear, 0, pops.done | pops.commit | pop_mark))
        pops.write_values(vals, self._sbits)
        m.d.comb += self.prefetch_pop.eq(pops.commit)   # (a STREAM of an engine's stream adds its bit)
        m.d.comb += self.ucode_addr.eq(pc)
        sources = OperandSources(m, self, pops, vals, idx, lanes)
        source = sources.read

        # --- the stream (or, for ENTER, the bounds) and the run-ahead engines -----------------
        stream = StreamEvaluation(m, self, u, sources, lanes, layers, regions)
        stream.connect_engines(m, idx, ubr, layers)
        sc, lay, a_v, b_v = stream.sc, stream.lay, stream.a_v, stream.b_v
        addr, log2, esize, s_mode = stream.addr, stream.log2, stream.esize, stream.s_mode
        s_result, s_fault, s_code, s_faddr = (stream.s_result, stream.s_fault, stream.s_code,
                                              stream.s_faddr)
        s_blocking, s_lockstep = stream.s_blocking, stream.s_lockstep
        has_block, nbits, nvals, blk_n = stream.has_block, stream.nbits, stream.nvals, stream.blk_n
        wrapped, prefetch_engine = stream.wrapped, stream.prefetch_engine

        # --- the action(s) (the LOCKSTEP lane values on the way) --------------------------------
        actions = Actions(m, self, u, sources, stream, lanes)
        row_active, pad_active, o_vector = actions.row_active, actions.pad_active, lanes.o_vector
        try_action = lambda on_fire: actions.try_action(m, on_fire)
        vreg_w = lanes.vreg_w

        # --- NEXT (own uop or fused) ------------------------------------------------------------
        next_layer_id = Mux(u.kind == UopKind.NEXT, u.id, u.next_layer)[:self._lbits]
        next_index = Signal(signed(66))
        cont = Signal()
        next_layer_index = _pick(m, idx, next_layer_id, signed(64), "next_layer_index")
        next_layer_ub = _pick(m, ubr, next_layer_id, signed(64), "next_layer_ub")
        next_layer_cfg = _pick(m, layers, next_layer_id, LayerCfg, "next_layer_cfg")
        next_layer_body_pc = _pick(m, body_pc, next_layer_id, self._ubits, "next_layer_body_pc")
        next_layer_exit_pc = _pick(m, exit_pc, next_layer_id, self._ubits, "next_layer_exit_pc")
        next_layer_lockstep = lockstep_on & (next_layer_id == lockstep_layer_id)
        m.d.comb += [
            # A LOCKSTEP layer's next vector iteration starts lanes * step further.
            next_index.eq(Mux(next_layer_lockstep,
                              first + (next_layer_cfg.lanes_m1 + 1) * next_layer_cfg.step,
                              next_layer_index + next_layer_cfg.step)),
            cont.eq(next_index < next_layer_ub),
        ]

        def next_iteration():
            m.d.sync += [idx[next_layer_id].eq(next_index), pc.eq(next_layer_body_pc)]
            with m.If(next_layer_lockstep):
                m.d.sync += [first.eq(next_index), lane.eq(0)]
                m.d.comb += self.stat_vec_iter.eq(1)

        lanes.add_lane_step(m, body_pc)

        uop_done = Signal()        # the uop completes (advance / lane_step)
        m.d.comb += self.stat_lane_eval.eq(uop_done & (((u.kind == UopKind.STREAM) & s_lockstep)
                                                       | (u.kind == UopKind.LANE)))

        def lane_step(cur_fault=None):
            m.d.comb += uop_done.eq(1)
            lanes.lane_step(m, pc, idx, u.id, stop, cur_fault, s_code, s_faddr)

        def advance(cur_fault=None, fallback=pops.fallback, fallback_bit=pops.fallback_bit):
            with m.If(fallback):
                # A fallback step of the uop's pops: the uop stays.
                m.d.comb += pop_mark.eq(fallback_bit)
            with m.Else():
                m.d.comb += pop_clear.eq(1)
                advance_uop(cur_fault)

        def advance_uop(cur_fault):
            m.d.comb += uop_done.eq(1)
            with m.If(u.fuse_lane):
                lane_step(cur_fault)
            with m.Elif(u.fuse_next):
                with m.If(cont):
                    next_iteration()
                with m.Else():
                    m.d.sync += pc.eq(next_layer_exit_pc)
            with m.Else():
                m.d.sync += pc.eq(pc + 1)

        # Blocking load in flight.
        blocking_stream_id = Signal(self._sbits)
        blocking_offset    = Signal(c.line_offset_bits)   # byte of the element in its line
        blocking_log2_size = Signal(2)
        blocking_sign      = Signal()
        blocking_lockstep  = Signal()     # ... for a lane of the LOCKSTEP layer
        blocking_fallback  = Signal()     # ... for a fallback step of engine pops
        blocking_fallback_bit = Signal(self._engines)

        def keep_stream_value():
            stream.keep_value(m, vals, lanes)

        def stop(code, addr_):
            m.d.sync += [self.fault_code.eq(code), self.fault_addr.eq(addr_)]
            m.next = "DRAIN"

        m.d.comb += self.stat_issue.eq(self.req.valid & self.req.ready)
        m.d.comb += self.busy.eq(1)

        with m.FSM():
            with m.State("IDLE"):
                m.d.comb += self.busy.eq(0)
                with m.If(self.start):
                    m.d.sync += [pc.eq(0), self.fault_code.eq(FaultCode.NONE),
                                 self.fault_addr.eq(0)]
                    # Nothing of an earlier run survives a start (a run that faulted or was
                    # aborted in the middle of a row or a vector iteration included).
                    m.d.sync += [row_active.eq(0), pad_active.eq(0), lane.eq(0),
                                 lanes.lf_valid.eq(0), first.eq(0)]
                    m.d.sync += [v.eq(0) for v in (*vals, *nvals, *idx, *ubr)]
                    m.d.sync += [wrapped.eq(0), pops.done.eq(0)]
                    m.next = "RUN"

            with m.State("RUN"):
                m.d.comb += [
                    self.stat_vec_marshal.eq((u.kind == UopKind.ACT) & o_vector),
                ]
                with m.If(self.abort):
                    m.d.sync += [self.fault_code.eq(FaultCode.WATCHDOG), self.fault_addr.eq(0)]
                    m.next = "ABORT"
                with m.Else():
                    with m.Switch(u.kind):
                        with m.Case(UopKind.STREAM):
                            with m.If(~pops.fallback):
                                m.d.comb += pops.commit.eq(Mux(pops.wait, 0, pops.pending))
                            with m.If(~pops.fallback & pops.wait):
                                m.d.comb += self.stat_block_wait.eq(1)   # a popped engine's value
                            with m.Elif(s_fault & s_lockstep & ~self.lockstep_vector_mode):
                                # The golden model's order: the lowest stream id; within one
                                # stream an address overflow (checked over all lanes first),
                                # then the first faulting lane.
                                lanes.record_fault(m, u.id, s_code, s_faddr)
                                advance(cur_fault=Const(1))
                            with m.Elif(s_fault):
                                stop(s_code, s_faddr)
                            with m.Elif(s_blocking & stream.s_prefetched & stream.s_prefetch_head):
                                # The engine has the value already.
                                m.d.sync += vals[u.id[:self._sbits]].eq(stream.s_prefetch_data)
                                if has_lockstep:
                                    m.d.comb += [vreg_w.data.eq(stream.s_prefetch_data),
                                                 vreg_w.en.eq(s_lockstep)]
                                m.d.comb += self.prefetch_pop.bit_select(stream.s_prefetch_engine, 1).eq(1)
                                advance()
                            with m.Elif(s_blocking & stream.s_prefetched & stream.s_prefetch_busy):
                                m.d.comb += self.stat_block_wait.eq(1)   # it is on its way
                            with m.Elif(s_blocking):
                                m.d.comb += [
                                    self.req.valid.eq(1),
                                    self.req.payload.addr.eq(addr),
                                    self.req.payload.tag.eq(1 << c.rob_bits),
                                    self.stat_issue_bytes.eq(esize),
                                    self.stat_blocking.eq(1),
                                ]
                                with m.If(self.req.ready):
                                    m.d.sync += [blocking_fallback.eq(pops.fallback),
                                                 blocking_fallback_bit.eq(pops.fallback_bit),
                                                 blocking_stream_id.eq(u.id),
                                                 blocking_offset.eq(addr[0:c.line_offset_bits]),
                                                 blocking_log2_size.eq(log2),
                                                 blocking_sign.eq(s_mode.sign),
                                                 blocking_lockstep.eq(s_lockstep)]
                                    m.next = "BWAIT"
                            with m.Elif(u.fuse_act):
                                # The stream's value (and a BLOCK row's count) is kept when
                                # its fused action fires, exactly as without the action.
                                def on_fire():
                                    keep_stream_value()
                                    advance()
                                try_action(on_fire)
                            with m.Else():
                                keep_stream_value()
                                advance()
                        with m.Case(UopKind.ACT):
                            try_action(advance)
                        with m.Case(UopKind.ENTER):
                            k = u.id[:self._lbits]
                            with m.If(lay.check_order & (b_v < a_v)):
                                stop(FaultCode.RANGE_ORDER, u.id)
                            with m.Else():
                                m.d.sync += [idx[k].eq(a_v), ubr[k].eq(b_v)]
                                with m.If(lockstep_on & (k == lockstep_layer_id)):
                                    m.d.sync += [first.eq(a_v), lane.eq(0), lanes.lf_valid.eq(0)]
                                    m.d.comb += self.stat_vec_iter.eq(a_v < b_v)
                                m.d.sync += pc.eq(Mux(a_v < b_v, pc + 1,
                                                      _pick(m, exit_pc, k, self._ubits, "k_exit")))
                        with m.Case(UopKind.NEXT):
                            with m.If(cont):
                                next_iteration()
                            with m.Else():
                                m.d.sync += pc.eq(pc + 1)
                        with m.Case(UopKind.LANE):
                            lane_step()
                        with m.Case(UopKind.PREFETCH):
                            with m.If(self.prefetch_idle.bit_select(prefetch_engine, 1)):
                                m.d.comb += self.prefetch_start.bit_select(prefetch_engine, 1).eq(1)
                                m.d.sync += pc.eq(pc + 1)
                        with m.Case(UopKind.DONE):
                            with m.If(self.ctrl_w_rdy):
                                m.d.comb += [self.ctrl_w_en.eq(1), self.ctrl_w_data.eq(DONE_TOKEN)]
                                m.next = "FINISH"

            with m.State("BWAIT"):
                m.d.comb += self.stat_block_wait.eq(1)
                with m.If(self.abort):
                    m.d.sync += [self.fault_code.eq(FaultCode.WATCHDOG), self.fault_addr.eq(0)]
                    m.next = "ABORT"
                with m.Elif(self.blocking_resp_valid):
                    m.d.sync += vals[blocking_stream_id].eq(
                        extract(self.blocking_resp_data, blocking_offset, blocking_log2_size,
                                blocking_sign))
                    if has_lockstep:
                        m.d.comb += [vreg_w.addr.eq(Cat(lane[:lanes.lane_bits], blocking_stream_id)),
                                     vreg_w.data.eq(extract(self.blocking_resp_data,
                                                            blocking_offset, blocking_log2_size,
                                                            blocking_sign)),
                                     vreg_w.en.eq(blocking_lockstep)]
                    advance(fallback=blocking_fallback, fallback_bit=blocking_fallback_bit)
                    m.next = "RUN"

            with m.State("FINISH"):
                with m.If(self.abort):
                    m.d.sync += [self.fault_code.eq(FaultCode.WATCHDOG), self.fault_addr.eq(0)]
                    m.next = "ABORT"
                with m.Elif(self.rob_empty & self.ctrl_empty):
                    m.d.comb += [self.done.eq(1), self.fault.eq(0)]
                    m.next = "IDLE"

            with m.State("DRAIN"):
                with m.If(self.abort):
                    m.d.sync += [self.fault_code.eq(FaultCode.WATCHDOG), self.fault_addr.eq(0)]
                    m.next = "ABORT"
                with m.Elif(self.rob_empty & self.ctrl_empty):
                    m.d.comb += [self.done.eq(1), self.fault.eq(1)]
                    m.next = "IDLE"

            with m.State("ABORT"):
                m.d.comb += [self.done.eq(1), self.fault.eq(1)]
                m.next = "IDLE"

        return m
