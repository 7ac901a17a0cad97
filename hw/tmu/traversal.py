"""Traversal: executes the microcode the decoder built — layers, streams, marshaling actions
(``docs/isa.md`` §1 "Execution order", ``docs/rtl.md`` §2.2).

This file holds the component (its ports), its registers (microcode address, stream values,
layer indices and bounds) and the control: one microcode entry per cycle, ``ENTER``/``NEXT``
and the fused ``NEXT``, blocking loads, faults, ``DONE``. What one entry computes is in helper
modules that add their logic to the traversal's ``Module``:

* ``operand_sources.py``: the value of a source word (with the engine-pop and fused-action
  bypasses);
* ``stream_evaluation.py``: the stream's value, a MEM stream's address and its checks (address
  overflow, alignment, region, memory limit; BLOCK rows and vector loads in
  ``address_checks.py``), the ``wrapped`` bits, and the run-ahead engines' start parameters;
* ``actions.py``: ``OPERAND``/``CONTROL`` actions: reorder-buffer allocation, load requests,
  control tokens, row chunks for the row issue block;
* ``lockstep_lanes.py``: the LOCKSTEP layer's lanes (active lanes, lane values, lane stepping
  and the order of lane faults);
* ``loop_control.py``: ``NEXT`` (own or fused), ``next_outer`` and the fetch stage's loop
  prediction;
* ``engine_pop.py`` (run-ahead engine pops carried by a uop) and ``chain.py`` (the chained ALU
  slot).
"""

from amaranth.hdl import Array, Const, Module, Mux, Signal, signed
from amaranth.lib import wiring

from .actions import Actions
from .ahead_fetch import AheadFetch
from .config import TmuConfig
from .blocking_load import BlockingLoad
from .engine_pop import EnginePops
from .evaluate_stage import EvaluateStage
from .stream_forward import StreamForward
from .fetch import Fetch
from .isa import DONE_TOKEN, FaultCode
from .layer_entry import LayerEntry
from .layer_indices import LayerIndices
from .layouts import StreamCfg, Uop, UopKind
from .lockstep_lanes import LockstepLanes
from .loop_control import LoopControl
from .operand_sources import OperandSources
from .signatures import TraversalSignature, index_bits
from .stream_evaluation import StreamEvaluation
from .stream_values import StreamValues


__all__ = ["Traversal"]


class Traversal(wiring.Component):
    """Runs the loop nest of ``docs/isa.md`` §1 one microcode operation per cycle.

    Microcode (built by :class:`~hw.tmu.decoder.Decoder`)::

        PREFETCH arm (engines with an IMM/ARG base) ; ACT (BEGIN actions of layer 0)
                ENTER 0 (+ starts its armed engines) ; STREAM (invariant) ; PREFETCH (others)
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
    the new value), a ``STREAM``+action or an ``ACT`` may carry a second action
    (``fuse_act2``: immediate, or after an immediate operand a load, ``act2_load``), and a ``STREAM``/``ACT`` may carry the following ``NEXT``
    (``fuse_next``). An ``ENTER`` of a non-empty range starts the layer's armed run-ahead engines
    in its cycle (``start_engines``, ``docs/rtl.md`` §9.5 B); a ``STREAM`` of an ALU/FWD stream
    whose sources are the next layer's bounds may carry that layer's ``ENTER`` (``fuse_enter``,
    §9.5 E: after its stream and actions; if the engines cannot start yet, the uop stays with
    only its ``ENTER`` left, ``enter_pending``); a ``NEXT`` (own or fused) with
    ``next_outer`` that leaves its layer's range performs the outer layer's ``NEXT`` in the
    same cycle (§9.5 D). See ``docs/rtl.md``.

    An ISA v1 LOCKSTEP layer (``docs/rtl.md`` §9.3) runs in *vector mode* (streams evaluated
    once per vector iteration at lane 0) or lane by lane (the ``LANE`` step folded into the
    last stream, ``fuse_lane``): ``hw/tmu/lockstep_lanes.py``.

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
    fault_stream, fault_has_stream : Out
        The stream whose evaluation raised the fault (``MISALIGNED``, ``ADDR_RANGE``,
        ``ADDR_OVERFLOW``, ``BLOCK_LENGTH``: the lowest-id stream in the golden model's order),
        with ``fault_has_stream`` set; 0 and clear for a fault of no stream (``RANGE_ORDER``,
        ``WATCHDOG``).

    The other ports, each with its meaning: :class:`~hw.tmu.signatures.TraversalSignature`.
    """

    def __init__(self, config):
        if not isinstance(config, TmuConfig):
            raise TypeError(f"config must be a TmuConfig, not {config!r}")
        c = self._cfg = config
        self._ubits = index_bits(c.ucode_depth)
        self._sbits = index_bits(c.streams)
        self._abits = index_bits(c.actions)
        self._lbits = index_bits(c.layers)
        self._engines = c.engines
        super().__init__(TraversalSignature(c))
        # The configuration addresses the uop being evaluated asks for (driven by
        # stream_evaluation.py and actions.py; the fetch stage compares them with the held
        # words' addresses).
        self.scfg_addr = Signal(self._sbits, name="scfg_addr")
        self.acfg_addr = Signal(self._abits, name="acfg_addr")
        self.acfg2_addr = Signal(self._abits, name="acfg2_addr")

    def elaborate(self, platform):
        m = Module()
        c = self._cfg

        # The traversal's registers: microcode address, stream values, layer indices and
        # upper bounds.
        pc   = Signal(self._ubits)
        # The streams' values, written through ports a cycle late (hw/tmu/stream_values.py).
        values = StreamValues(m, c.streams, self._sbits)
        vals = values.view
        ubr  = Array(Signal(signed(64), name=f"ub_{i}") for i in range(c.layers))
        layers  = Array(self.layers[i] for i in range(c.layers))
        # (each index with its next index and whether that is in range: hw/tmu/layer_indices.py)
        indices = LayerIndices(c.layers, layers, ubr)
        idx = indices.index
        regions = Array(self.regions[i] for i in range(c.regions))
        body_pc = Array(self.body_pc[i] for i in range(c.layers))
        exit_pc = Array(self.exit_pc[i] for i in range(c.layers))

        # ISA v1 LOCKSTEP layer (docs/isa.md §7.2; hw/tmu/lockstep_lanes.py): ``first`` is the
        # index of lane 0 of the vector iteration, ``lane`` the lane being evaluated or pushed,
        # ``count`` the active lanes.
        lanes = LockstepLanes(m, self, layers, ubr)
        lanes.add_lane_step(m, body_pc, indices)

        # ``pc`` is written through ``goto``; the fetch stage (hw/tmu/fetch.py) holds the
        # microcode and configuration words of the uop at ``pc`` and reads the next uop's.
        pc_next = Signal(self._ubits)
        pc_write = Signal()

        def goto(target):
            m.d.comb += [pc_write.eq(1), pc_next.eq(target)]

        with m.If(pc_write):
            m.d.sync += pc.eq(pc_next)
        m.d.comb += self.stat_uop.eq(pc_write)
        loop_continues = Signal()
        loop_body_pc = Signal(self._ubits)
        loop_exit_pc = Signal(self._ubits)
        fetch = Fetch(m, self, pc, pc_write, self.busy, lanes,
                      (loop_continues, loop_body_pc, loop_exit_pc))

        # Two stages (hw/tmu/evaluate_stage.py): in an X cycle E evaluates the ahead uop
        # (hw/tmu/ahead_fetch.py) from its own words.
        stage = EvaluateStage(m, c.uop_stages)
        # The blocking load in flight (hw/tmu/blocking_load.py; a fallback step's: ``pops.fallback``
        # stays set until it completes); its line registered (``arrived``, ``value``).
        blocking = BlockingLoad(m, self, c, self._sbits)
        # The executed STREAM uop waits for an engine's value (its X cycle's wait branch),
        # from registers and held results: driven after the evaluation below.
        executed_waits = Signal(name="executed_uop_waits")
        evaluate_ahead = Const(0)
        if stage.enabled:
            # (X's ENTER, own or fused: driven below from the held bounds)
            entered = (Signal(name="ahead_entered"),
                       Signal(self._lbits, name="ahead_entered_layer"),
                       Signal(signed(64), name="ahead_entered_lb"),
                       Signal(signed(64), name="ahead_entered_ub"))
            # (a fetch bubble in which nothing executes; an X cycle that waits for an
            # engine's value and evaluates its own uop again: driven in the X branch from
            # ``executed_waits``, below)
            bubble = Signal(name="fetch_bubble_evaluating")
            again = Signal(name="uop_evaluate_again")
            # (``BWAIT``: a blocking load without an engine waits for its line; E evaluates
            # the ahead uop, to execute it right after the line is here: driven below. The
            # cycle after the line (``blocking.arrived``: the line is registered) executes the
            # load's completion, so the ahead words move on as in an X cycle.)
            waiting_for_line = Signal(name="waiting_for_line")
            ahead = AheadFetch(m, self, fetch,
                               stage.executing | (waiting_for_line & blocking.arrived),
                               self.busy, (indices, ubr, layers, body_pc, exit_pc), lanes,
                               fetch.uop, entered, bubble, again)
            # Which uop E evaluates is decided from registers (``executed_waits``, not
            # ``again``, which also needs the fetch stage's tag comparison): in an X cycle
            # that does not take E's results (a fetch bubble, an abort) it does not matter
            # which uop E evaluates, nothing is held or committed (docs/synthesis.md, "The
            # operands read before the evaluated uop is chosen").
            evaluate_ahead = (stage.executing & ~executed_waits) | waiting_for_line
            # (the fetched word, for the pops' pending bits; the evaluation itself reads
            # ``evaluated_uop`` below, the same with an engine-pop fallback step applied)
            evaluated_word = Signal(Uop, name="evaluated_word")
            m.d.comb += evaluated_word.eq(Mux(evaluate_ahead, ahead.uop, fetch.uop))

        # Engine pops carried by a STREAM uop (hw/tmu/engine_pop.py); ``u`` is the entry to
        # execute (a fallback step replaces it with a plain STREAM of a popped stream).
        pops = EnginePops(m, fetch.uop, self._engines,
                          [self.prefetch_stream[i] for i in range(self._engines)],
                          self.prefetch_head_valid, self.prefetch_busy,
                          [self.prefetch_head_data[i] for i in range(self._engines)],
                          self.prefetch_skipped_valid,
                          [self.prefetch_skipped_stream[i] for i in range(self._engines)],
                          self.prefetch_skipped_two,
                          evaluated=evaluated_word if stage.enabled else None)
        u = pops.uop
        evaluated = None
        if stage.enabled:
            evaluated_uop = Signal(Uop, name="evaluated_uop")
            evaluated_sc = Signal(StreamCfg, name="evaluated_scfg")
            m.d.comb += [evaluated_uop.eq(Mux(evaluate_ahead, ahead.uop, u)),
                         evaluated_sc.eq(Mux(evaluate_ahead, ahead.sc, self.scfg_data)),
                         pops.evaluate_next.eq(evaluate_ahead)]
            evaluated = (evaluated_uop, evaluated_sc)
        pop_clear = Signal()                  # the uop completes: no pop of it is left
        pop_mark = Signal(self._engines)      # a fallback step completes: its engine's pop
        # Two stages: X moves to the uop E evaluated in the same cycle (hw/tmu/evaluate_stage.py);
        # the pops committed this cycle are that uop's.
        overlap_hit = Signal(name="uop_overlap_hit")
        pops.update(pop_clear, pop_mark, overlap_hit)
        pops.write_values(values)
        # (a STREAM of an engine's stream adds its bit)
        m.d.comb += self.prefetch_pop.eq(pops.commit)
        # Two stages: the stream values and indices X writes, forwarded to E's ahead evaluation.
        forward = StreamForward(self._lbits) if stage.enabled else None
        sources = OperandSources(m, self, pops, vals, idx, lanes, forward=forward)
        # The actions read their sources as the execution sees the pops.
        action_sources = OperandSources(m, self, pops, vals, idx, lanes, evaluate=False)
        split = None
        if stage.enabled:
            # The evaluation's ``a`` and ``b`` read both ways from registers, then chosen
            # (``StreamEvaluation``'s ``split``): the ahead uop's, and the executed uop's own
            # as an E cycle sees them, which are the actions' sources.
            ahead_forward, ahead_sources = stage.ahead_sources(m, self, pops, vals, idx, lanes,
                                                               ahead.uop)
            split = (evaluate_ahead, (ahead.uop, ahead.sc, ahead.lay, ahead_sources),
                     (fetch.lay, action_sources))

        # The stream (or, for ENTER, the bounds) with its checks, and the run-ahead engines'
        # start parameters (hw/tmu/stream_evaluation.py).
        stream = StreamEvaluation(m, self, u, sources, lanes, layers, regions, evaluated,
                                  forward, split)
        stream.engine_heads(m)
        # A uop waits for a registered product (its pops still commit: engine_pop.py); a product
        # counts only for operands evaluated in a run with every popped head there (a fallback
        # step reads none): never a head register's stale value, so a run's cycles do not
        # depend on the runs before it (hw/tmu/registered_products.py).
        m.d.comb += [pops.product_wait.eq(stream.product_wait),
                     stream.product_operands.eq(self.busy & fetch.ready
                                                & (pops.fallback | ~pops.heads_wait))]
        # With two stages (hw/tmu/evaluate_stage.py) what follows reads the evaluation's
        # results from registers loaded the cycle before.
        stage.hold_evaluation(stream, pops)
        stream.connect_engines(m, idx, ubr, layers)
        stream.fault_report(m)
        s_code, s_faddr = stream.s_code, stream.s_faddr
        # The LOCKSTEP layer's first vector iteration, if this uop is its ENTER (lb, ub).
        enter_vector = lanes.vector_iteration(m, stream.a_v, stream.b_v, "enter_vector")

        # The action(s) (hw/tmu/actions.py; the LOCKSTEP lane values are added on the way).
        actions = Actions(m, self, u, action_sources, stream, lanes)

        # NEXT (own uop or fused), next_outer and the fetch stage's loop prediction
        # (hw/tmu/loop_control.py).
        loop = LoopControl(m, self, fetch.uop, (indices, ubr, layers, body_pc, exit_pc), lanes,
                           goto, (loop_continues, loop_body_pc, loop_exit_pc), self._ubits,
                           self._lbits)
        cont = loop.cont

        def leave_layer(exit_pc_):
            loop.leave_layer(exit_pc_, u.next_outer)

        uop_done = Signal()        # the uop completes (advance / lane_step)
        m.d.comb += self.stat_lane_eval.eq(
            uop_done & (((u.kind == UopKind.STREAM) & stream.s_lockstep)
                        | (u.kind == UopKind.LANE)))

        def lane_step(cur_fault=None):
            m.d.comb += uop_done.eq(1)
            lanes.lane_step(m, goto, pc, u.id, stop, cur_fault, s_code, s_faddr)

        def advance(cur_fault=None):
            with m.If(pops.fallback):
                # A fallback step of the uop's pops: the uop stays.
                m.d.comb += pop_mark.eq(pops.fallback_bit)
            with m.Else():
                m.d.comb += pop_clear.eq(1)
                advance_uop(cur_fault)

        def advance_uop(cur_fault):
            m.d.comb += uop_done.eq(1)
            with m.If(u.fuse_lane):
                lane_step(cur_fault)
            with m.Elif(u.fuse_next):
                with m.If(cont):
                    loop.next_iteration()
                with m.Else():
                    leave_layer(loop.exit_pc)
            with m.Elif(u.fuse_enter):
                enter(fused=True)
            with m.Else():
                goto(pc + 1)

        # A fused ENTER (docs/rtl.md §9.5 E) whose engines could not start in the cycle its
        # stream and actions completed: the uop stays, and only its ENTER is left to do.
        enter_pending = Signal(name="enter_pending")
        stage.drive_executed_waits(m, executed_waits, u, stream, pops, enter_pending)
        # Two stages: E evaluates the ahead uop exactly during this execution
        # (hw/tmu/evaluate_stage.py).
        overlap = (stage.overlap(m, u, ahead, stream, pops, enter_pending,
                                 self.prefetch_continues & self.prefetch_head_valid)
                   if stage.enabled else Const(0))

        # ``ENTER stream.enter_layer`` (its own uop, a fused one or a pending one), built once
        # (hw/tmu/layer_entry.py); ``enter`` below decides when it completes.
        overlap_after_line = (stage.overlap_after_line(
            m, u, ahead, stream, pops, enter_pending,
            self.prefetch_continues & self.prefetch_head_valid) if stage.enabled else Const(0))
        if stage.enabled:
            m.d.comb += [e.eq(v) for e, v in zip(entered, (stream.enters, stream.enter_layer,
                                                            stream.enter_lb, stream.enter_ub))]
        entry = LayerEntry(m, self, u, stream, lanes, (indices, exit_pc), pc, enter_pending,
                           enter_vector)

        def enter(fused):
            entry.enter(fused, stop, goto, pop_clear)

        def take_ahead(ok, again_=None):
            """Two stages, in a cycle that executes (X, or a blocking load's completion): the
            held registers take E's evaluation of the ahead uop if ``ok``; if ``pc`` moves to
            exactly that uop, it executes next cycle and its pops commit now. ``again_``: the
            executed uop waits and takes its own evaluation instead (hw/tmu/evaluate_stage.py)."""
            also = (lambda v: v) if again_ is None else (lambda v: v | again_)
            m.d.comb += [stage.capture.eq(also(ok)),
                         overlap_hit.eq(ok & pc_write & (pc_next == ahead.pc))]
            m.d.sync += stage.executing.eq(also(overlap_hit | next_without_evaluation))
            with m.If(also(overlap_hit)):
                m.d.comb += pops.commit.eq(pops.ready)

        # Two stages: the uop X moves to (or keeps) evaluates nothing and executes next cycle
        # without an E cycle (hw/tmu/evaluate_stage.py).
        next_without_evaluation = Mux(
            pc_write,
            (pc_next == fetch.predicted)
            & stage.evaluates_nothing(m, fetch.predicted_word, "predicted_free"),
            stage.evaluates_nothing(m, u, "uop_free"))

        if stage.enabled:
            line = (waiting_for_line, blocking.arrived, blocking.stream_id, blocking.value)
            stage.drive_forward(m, forward, u, stream, lanes, loop, enter_vector,
                                evaluate_ahead, line)
            stage.drive_forward(m, ahead_forward, u, stream, lanes, loop, enter_vector,
                                Const(1), line)

        def stop(code, addr_, stream_id=None):
            """End the run with fault ``code`` at ``addr_``, raised by stream ``stream_id``
            (None: a fault of no stream, e.g. a layer's ``RANGE_ORDER``)."""
            m.d.sync += [self.fault_code.eq(code), self.fault_addr.eq(addr_),
                         self.fault_has_stream.eq(stream_id is not None),
                         self.fault_stream.eq(0 if stream_id is None else stream_id)]
            m.next = "DRAIN"

        # An ENTER's engine starts (and their ``idle``) use the parameters latched by ``arm``.
        m.d.comb += self.prefetch_armed.eq(stream.enters)
        m.d.comb += self.stat_issue.eq(self.req.valid & self.req.ready)
        m.d.comb += self.stat_issue_wait.eq((self.req.valid & ~self.req.ready)
                                            | (self.row_job.valid & ~self.row_job.ready))
        m.d.comb += self.busy.eq(1)

        with m.FSM():
            with m.State("IDLE"):
                m.d.comb += self.busy.eq(0)
                with m.If(self.start):
                    if stage.enabled:
                        m.d.sync += stage.executing.eq(0)
                    m.d.sync += [pc.eq(0), self.fault_code.eq(FaultCode.NONE),
                                 self.fault_addr.eq(0), self.fault_has_stream.eq(0)]
                    # Nothing of an earlier run survives a start (a run that faulted or was
                    # aborted in the middle of a row or a vector iteration included).
                    m.d.sync += [actions.row_active.eq(0), actions.pad_active.eq(0)]
                    lanes.clear(m)
                    values.clear()
                    m.d.sync += [v.eq(0) for v in stream.nvals]
                    indices.clear(m)          # (the indices and upper bounds)
                    m.d.sync += [stream.wrapped.eq(0), *pops.reset(), enter_pending.eq(0)]
                    m.next = "RUN"

            with m.State("RUN"):
                m.d.comb += [
                    self.stat_vec_marshal.eq((u.kind == UopKind.ACT) & lanes.o_vector
                                             & fetch.ready
                                             & ~(stage.capture & ~stage.executing)),
                ]
                with m.If(self.abort):
                    m.d.sync += [self.fault_code.eq(FaultCode.WATCHDOG), self.fault_addr.eq(0),
                                 self.fault_has_stream.eq(0)]
                    m.next = "ABORT"
                with m.Elif(~fetch.ready):
                    # a fetch bubble: the uop's words are read (hw/tmu/fetch.py); with two
                    # stages a uop that evaluates nothing executes right after it, and the
                    # ahead words are those of the uop after it (hw/tmu/ahead_fetch.py)
                    m.d.comb += self.stat_fetch_bubble.eq(1)
                    if stage.enabled:
                        with m.If(~stage.executing):
                            m.d.comb += bubble.eq(1)
                            m.d.sync += stage.executing.eq(
                                stage.evaluates_nothing(m, fetch.current_word, "fetched_free"))
                if stage.enabled:
                    with m.Elif(~stage.executing):
                        # Two stages: the evaluate cycle, the results into registers; the
                        # uop's pops commit here (hw/tmu/evaluate_stage.py).
                        m.d.comb += [stage.capture.eq(1), self.stat_evaluate.eq(1)]
                        m.d.sync += stage.executing.eq(1)
                        m.d.comb += pops.commit.eq(pops.ready)
                with m.Else():
                    if stage.enabled:
                        # E evaluates the ahead uop now; if X moves to it, it executes next
                        # cycle and its pops commit now (hw/tmu/evaluate_stage.py).
                        # A STREAM uop waiting for an engine's value evaluates itself again
                        # (``again``): it executes next cycle with the new results.
                        m.d.comb += again.eq(executed_waits)
                        take_ahead(overlap, again)
                    with m.Switch(u.kind):
                        with m.Case(UopKind.STREAM):
                            if not stage.enabled:
                                m.d.comb += pops.commit.eq(pops.ready)
                            with m.If(pops.stopped):
                                # A popped engine stopped: the fallback step, from registers,
                                # next cycle (hw/tmu/engine_pop.py).
                                m.d.comb += pops.enter.eq(1)
                            with m.Elif(enter_pending):
                                # Only the fused ENTER is left (its pops are done).
                                m.d.comb += pop_clear.eq(1)
                                enter(fused=True)
                            with m.Elif(executed_waits):
                                # A popped engine's value, or the head of the engine serving
                                # the blocking stream, on its way.
                                m.d.comb += self.stat_block_wait.eq(1)
                            with m.Elif(stream.s_fault & stream.s_lockstep
                                        & ~self.lockstep_vector_mode):
                                # The golden model's order: the lowest stream id; within one
                                # stream an address overflow (checked over all lanes first),
                                # then the first faulting lane.
                                lanes.record_fault(m, u.id, s_code, s_faddr)
                                advance(cur_fault=Const(1))
                            with m.Elif(stream.s_fault):
                                stop(s_code, s_faddr, u.id)
                            with m.Elif(stream.s_blocking & stream.s_prefetched
                                        & stream.s_prefetch_head):
                                # The engine has the value already.
                                values.write("prefetched", u.id, stream.s_prefetch_value)
                                if lanes.enabled:
                                    m.d.comb += [lanes.vreg_w.data.eq(stream.s_prefetch_value),
                                                 lanes.vreg_w.en.eq(stream.s_lockstep)]
                                m.d.comb += self.prefetch_pop.bit_select(
                                    stream.s_prefetch_engine, 1).eq(1)
                                advance()
                            with m.Elif(stream.s_blocking):
                                blocking.issue(m, u, stream)
                            with m.Elif(u.fuse_act):
                                # The stream's value (and a BLOCK row's count) is kept when
                                # its fused action fires, exactly as without the action.
                                def on_fire():
                                    stream.keep_value(m, values, lanes)
                                    advance()
                                actions.try_action(m, on_fire)
                            with m.Else():
                                stream.keep_value(m, values, lanes)
                                advance()
                        with m.Case(UopKind.ACT):
                            actions.try_action(m, advance)
                        with m.Case(UopKind.ENTER):
                            enter(fused=False)
                        with m.Case(UopKind.NEXT):
                            with m.If(cont):
                                loop.next_iteration()
                            with m.Else():
                                leave_layer(pc + 1)
                        with m.Case(UopKind.LANE):
                            lane_step()
                        with m.Case(UopKind.PREFETCH):
                            with m.If(u.arm):
                                m.d.comb += self.prefetch_arm.bit_select(
                                    stream.prefetch_engine, 1).eq(1)
                                goto(pc + 1)
                            with m.Elif(self.prefetch_idle.bit_select(stream.prefetch_engine, 1)):
                                m.d.comb += self.prefetch_start.bit_select(
                                    stream.prefetch_engine, 1).eq(1)
                                goto(pc + 1)
                        with m.Case(UopKind.DONE):
                            with m.If(self.ctrl_w_rdy):
                                m.d.comb += [self.ctrl_w_en.eq(1), self.ctrl_w_data.eq(DONE_TOKEN),
                                             self.stat_uop.eq(1)]
                                m.next = "FINISH"

            with m.State("BWAIT"):
                m.d.comb += self.stat_block_wait.eq(1)
                blocking.watch(m)
                if stage.enabled:
                    m.d.comb += waiting_for_line.eq(1)
                with m.If(self.abort):
                    m.d.sync += [self.fault_code.eq(FaultCode.WATCHDOG), self.fault_addr.eq(0),
                                 self.fault_has_stream.eq(0)]
                    m.next = "ABORT"
                with m.Elif(blocking.arrived):
                    blocking.complete(m, values, lanes)
                    advance()
                    m.next = "RUN"
                    if stage.enabled:
                        # Two stages: E evaluated the ahead uop with the element forwarded.
                        take_ahead(overlap_after_line)

            with m.State("FINISH"):
                with m.If(self.abort):
                    m.d.sync += [self.fault_code.eq(FaultCode.WATCHDOG), self.fault_addr.eq(0),
                                 self.fault_has_stream.eq(0)]
                    m.next = "ABORT"
                with m.Elif(self.rob_empty & self.ctrl_empty):
                    m.d.comb += [self.done.eq(1), self.fault.eq(0)]
                    m.next = "IDLE"

            with m.State("DRAIN"):
                with m.If(self.abort):
                    m.d.sync += [self.fault_code.eq(FaultCode.WATCHDOG), self.fault_addr.eq(0),
                                 self.fault_has_stream.eq(0)]
                    m.next = "ABORT"
                with m.Elif(self.rob_empty & self.ctrl_empty):
                    m.d.comb += [self.done.eq(1), self.fault.eq(1)]
                    m.next = "IDLE"

            with m.State("ABORT"):
                m.d.comb += [self.done.eq(1), self.fault.eq(1)]
                m.next = "IDLE"

        # The value, index and lane registers' next values from their writers
        # (hw/tmu/stream_values.py, hw/tmu/layer_indices.py, hw/tmu/lockstep_lanes.py).
        values.elaborate(m)
        indices.elaborate(m)
        lanes.elaborate(m)
        return m
