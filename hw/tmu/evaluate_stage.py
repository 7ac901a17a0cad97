"""The traversal's evaluate stage (``TmuConfig.uop_stages = 2``; ``docs/rtl.md`` §2.2
"Two-stage uop", ``docs/synthesis.md`` "Why trimming the uop no longer shortens it").

With one stage (``uop_stages = 1``) a uop is evaluated and executed in one cycle: its sources,
the stream's address ``a + b * stride`` and its checks, and the decision that fires it (no
fault, room in the reorder buffer, the control FIFO and the request buffer) with the enables of
every register the traversal writes, all in one combinational path.

With two stages (the default since session 28) a uop takes two cycles (at least) and that path
is cut in two:

* **Evaluate** (E): the sources, the ALU, the address and its checks, the engines' heads the
  uop waits for; their results go into registers (:meth:`EvaluateStage.hold`). Nothing fires:
  no register of the traversal is written, no request, token or engine pop leaves.
* **Execute** (X): the next cycle decides from those registers (a fault stops the run, a load
  or the actions fire, the value is kept, ``NEXT``/``ENTER`` move ``pc``), as the one-stage
  traversal decides from its combinational values. Whatever it does, the cycle after it
  evaluates again: a uop that waits (a full reorder buffer, a busy engine) is evaluated anew
  every second cycle, and a uop of several cycles (a row's chunks, a LOCKSTEP vector pushed
  lane by lane, engine-pop fallback steps) takes two cycles per step.

Why the registers are exact: in E nothing the evaluation reads changes before X — the
traversal's registers are written only by X, the fetch stage replaces its words only when
``pc`` moves, and the engines' heads the uop reads stay valid until the uop pops them. The
inputs that change on their own are read live in X with their meaning unchanged (the reorder
buffer's free entries, the control FIFO's and the request port's readies, an engine's
``idle``), or held when the held values depend on them (an engine's head that was not valid in
E: the uop waits, even if the head arrived meanwhile). Tokens, faults and their order are those
of the one-stage unit; only cycles are added (``tb/tmu/test_two_stage_uop.py``).

**E of the next uop during X of this one** (:meth:`EvaluateStage.overlap`). In every X cycle
E evaluates the *ahead* uop, the one predicted to follow (``hw/tmu/ahead_fetch.py`` holds its
words: the uop itself for a loop of one uop, the bags', SpMM's and SpMV's inner loop; the next
entry in TransE's body), and, if the pair is free of hazards, the held registers take those
results in the same cycle. If X then moves ``pc`` to exactly the ahead uop's address, the next
cycle executes it instead of evaluating (one uop per cycle); otherwise the next cycle evaluates
as usual and what was held is overwritten. What makes the ahead evaluation exact during this
execution:

* the engine pops are committed by the evaluation whose results are used (an E cycle; or, in
  an overlapped cycle, only if X moves to the ahead uop), not by X: so E of the ahead uop
  finds the engines' heads already past this uop's values, and takes every pop of the ahead
  uop as pending (``EnginePops.pending_evaluate``); X reads the popped values from the value
  registers, written when the pops committed;
* X reads only its own uop's words (the fetch stage's) and the held results, never E's
  combinational values (``StreamEvaluation`` builds what X needs from the executed uop's words,
  the evaluation from the evaluated uop's);
* what this execution writes and the evaluation reads is *forwarded*: the stream value and
  ``wrapped`` bit this uop keeps (and a chained uop's ALU stream's), the index its ``NEXT``
  (with ``next_outer``, the outer layer's) or ``ENTER`` writes, and the vector iteration of
  the LOCKSTEP layer either starts (``first``, ``count``, ``span``): E reads what X writes
  into those registers (held results, the loop control's next index and next vector
  iteration, the held bounds) instead of the registers (:class:`StreamForward`,
  ``hw/tmu/stream_forward.py``), so a chain of dependent ALU streams (``-O0``'s
  ``s5 = s4 + i; s6 = load(a + s5 * 4)``) and a loop body's first uop reading the index or
  the lanes overlap;
* the ahead uop pops no engine this uop's ``ENTER`` starts, unless the start continues the
  engine's sequence with its head there;
* a blocking ``STREAM`` uop (session 29): as the ahead uop, E holds the head of the engine
  serving its stream (``StreamEvaluation.engine_heads``) or its address (a blocking load
  without an engine), which X takes; so the executed uop may not start that engine (unless
  the start continues its sequence with its head there, as for the pops) nor be the same
  uop (X would pop that head). As the executed uop, only if an engine serves its stream, outside
  the LOCKSTEP layer: X takes the held head's value and forwards it, or waits without moving
  ``pc``; a blocking load without an engine waits for its line (``BWAIT``: see below);
* an ``ENTER`` as the ahead uop (session 29): E reads its bounds (forwarded as any source);
  X starts its engines and writes its index from the held bounds;
* nothing else is overlapped: the ahead uop is a ``STREAM`` or ``ENTER`` uop without a lane
  step; this uop is not a ``PREFETCH`` or ``DONE``, not an engine-pop fallback step, a
  pending ``ENTER`` or a lane step (``LANE``, fused or its own: it moves the lane and the
  layer's index).

**A uop waiting for an engine's value** (session 29: a popped engine's head, or the head of
the engine serving its blocking stream, not there in E): its X cycle waits and evaluates the
uop itself again (``again`` in the traversal: E reads the fetched words, not the ahead ones,
captures and commits the pops as an E cycle does, and the ahead words stay), so the next
cycle executes it with the new results: the wait is polled every cycle, as with one stage,
not every second one.

**Which uop E evaluates, decided late** (session 33). Whether E evaluates the ahead uop or the
executed one (``evaluate_ahead`` in the traversal) depends on the executed uop's held results
(it waits for an engine: ``executed_waits``, from registers only; in an X cycle that takes
nothing of E, a fetch bubble or an abort, the choice does not matter). The sources ``a`` and
``b`` are read both ways from registers (the ahead uop's, with its pops pending and what X
writes forwarded; the executed uop's own, as its actions read them) and chosen after the read
(``StreamEvaluation``'s ``split``), and the layer an ``ENTER`` evaluates the bounds of is a
register of the fetch stage and of the ahead words (``Fetch.lay``, ``AheadFetch.lay``), so no
source selection waits for the choice (``docs/synthesis.md``, "The operands read before the
evaluated uop is chosen").

**While a blocking load without an engine waits for its line** (``BWAIT``, session 30;
TransE's ``triples[3i + k]`` below ``-O3``): E evaluates the ahead uop in every waiting cycle,
and in the cycle after the line (it is registered: ``BlockingLoad.arrived``) the loaded
element is forwarded as the stream's value (its
``wrapped`` bit stays), the completion's ``NEXT`` or ``ENTER`` as any execution's; the held
registers take the results then (:meth:`EvaluateStage.overlap_after_line`), and if the
completion moves ``pc`` to the ahead uop, it executes in the next cycle. Not for the load of a
LOCKSTEP lane, a chained uop, a fallback step's load, or a completion with a lane step.

**After a fetch bubble** (session 29; a LOCKSTEP loop's exit, an empty layer's ``ENTER``): a
uop that evaluates nothing executes in the cycle after the bubble, and the bubble reads the
ahead words of the uop after it (``hw/tmu/ahead_fetch.py``), so that one is evaluated during
its execution. The evaluate cycles left, not overlapped with an execution, are counted
(``evaluate_cycles``, ``docs/rtl.md`` §2.7).

**No evaluation for a uop that evaluates nothing** (:meth:`EvaluateStage.evaluates_nothing`).
An ``ACT``, ``NEXT`` or ``DONE`` uop (no fused ``ENTER`` or lane step) executes from registers
and its words only (a vector operand's lanes included: ``first``, ``count``, the lane and the
lane values are registers): its actions read their sources in
X, its ``NEXT`` decides from the index registers, and nothing of the held registers is read.
When X moves ``pc`` to the predicted address and the word there is such a uop, the next cycle
executes it directly (its words are the ones the fetch stage reads in this cycle), without an E
cycle; and such a uop that stays (a full reorder buffer or control FIFO, a row's next chunk)
executes again the next cycle.

Any other uop, and any uop after which X does not move to the ahead uop (a wait, a fault, a
loop's end, a hazard), costs an E cycle as before.

Not a component: :class:`EvaluateStage` adds its registers to the traversal's ``Module``.
"""

from amaranth.hdl import Const, Mux, Signal

from .layouts import UopKind
from .loop_control import has_next, next_layer_of
from .operand_sources import OperandSources
from .signatures import index_bits
from .stream_forward import StreamForward


__all__ = ["EvaluateStage"]


class EvaluateStage:
    """The evaluate/execute phase and the registers between the two stages.

    Parameters
    ----------
    m : Module
        The traversal's module.
    stages : int
        ``TmuConfig.uop_stages``: 1 (no stage: :meth:`hold` returns its value) or 2.

    Attributes
    ----------
    enabled : bool
        Two stages are built.
    executing : Signal
        Register: the next cycle in which the fetch stage is ready executes the evaluated uop
        (X); otherwise it evaluates (E). ``Const(0)`` with one stage.
    capture : Signal
        Driven by the traversal: this cycle is an E cycle, the held registers take their values
        (``Const(0)`` with one stage).
    """

    def __init__(self, m, stages):
        if stages not in (1, 2):
            raise ValueError(f"stages must be 1 or 2, not {stages!r}")
        self._m = m
        self.enabled = stages == 2
        self.executing = Signal(name="uop_executing") if self.enabled else Const(0)
        self.capture = Signal(name="uop_capture") if self.enabled else Const(0)

    def overlap(self, m, uop, ahead, stream, pops, enter_pending, ready):
        """Whether E, evaluating the ahead uop (:class:`~hw.tmu.ahead_fetch.AheadFetch`) in this
        X cycle, evaluates it exactly as it would after this uop's execution (two stages;
        ``Const(0)`` with one). From registers and words only: ``uop``, the uop X executes;
        ``stream``: :class:`~hw.tmu.stream_evaluation.StreamEvaluation` (the executed uop's
        words and the ahead uop's sources); ``pops``: :class:`~hw.tmu.engine_pop.EnginePops`;
        ``enter_pending``: the traversal's register; ``ready``: per engine, a start now would
        continue its sequence (``Prefetcher.continues``, its entries kept) and its head is
        valid.

        The ahead uop is a ``STREAM`` or ``ENTER`` uop without a lane step (a blocking
        ``STREAM``: its engine not started by the executed uop unless it continues with its
        head there, and not the executed blocking uop itself); the executed uop is a
        ``STREAM``, ``ACT``, ``NEXT`` or ``ENTER`` uop (a blocking ``STREAM`` only if an engine
        serves its stream, outside the LOCKSTEP layer), without a lane step, an engine-pop
        fallback step or a pending ``ENTER``; what the execution writes
        and the evaluation reads is forwarded (:class:`StreamForward`); and the ahead uop pops
        no engine the executed uop starts (``ENTER``, own or fused) unless the
        start continues the engine's sequence and its head is already there: the head is then
        the new range's first element, the one the pop takes after the start (a CSR row's
        engines, ``Prefetcher``'s continuation; a restarted engine's head, or a missing one that
        would look stopped, is read after the start)."""
        if not self.enabled:
            return Const(0)
        # What X writes and E reads (the uop's stream and a chained uop's ALU stream, the
        # index its NEXT or ENTER writes, a vector iteration of the LOCKSTEP layer) is
        # forwarded (:class:`StreamForward`): no hazard but the engines an ENTER starts.
        engines = len(ready)
        starts_engines = (uop.kind == UopKind.ENTER) | uop.fuse_enter
        started = Mux(starts_engines, uop.start_engines[:engines], 0)
        # A blocking STREAM uop executed overlaps only if an engine serves its stream (X takes
        # the held head's value, forwarded, or waits without moving ``pc``), outside the
        # LOCKSTEP layer; a blocking load without an engine goes on to wait for its line.
        # (``s_blocking`` reads the stream configuration at the uop's ``id``: an ACT's or an
        # ENTER's ``id`` is no stream)
        executed_blocking = (uop.kind == UopKind.STREAM) & stream.s_blocking
        executed_ok = (((uop.kind == UopKind.STREAM) | (uop.kind == UopKind.ACT)
                        | (uop.kind == UopKind.NEXT) | (uop.kind == UopKind.ENTER))
                       & ~uop.fuse_lane
                       & ~(executed_blocking & ~(stream.s_prefetched & ~stream.s_lockstep))
                       & ~pops.fallback & ~enter_pending)
        ok = Signal(name="uop_overlap")
        m.d.comb += ok.eq(executed_ok & self._ahead_ok(uop, ahead, stream, started, ready,
                                                       executed_blocking))
        return ok

    def overlap_after_line(self, m, uop, ahead, stream, pops, enter_pending, ready):
        """Whether E, evaluating the ahead uop in the cycle a blocking load without an engine
        completes (the traversal's ``BWAIT``: its line arrived), evaluates it exactly as it
        would after the completion (two stages; ``Const(0)`` with one). Arguments as
        :meth:`overlap`'s; ``uop`` is the blocking ``STREAM`` uop.

        The loaded element is forwarded as the stream's value (``drive_forward``'s ``line``),
        the rest of the completion (a fused ``NEXT`` or ``ENTER``, or the next entry) as after
        any executed uop; not overlapped: the uop of a LOCKSTEP lane (the completion writes a
        lane value) or with a lane step, a chained uop, an engine-pop fallback step's load, a
        pending ``ENTER``."""
        if not self.enabled:
            return Const(0)
        engines = len(ready)
        started = Mux(uop.fuse_enter, uop.start_engines[:engines], 0)
        executed_ok = (~uop.fuse_lane & ~uop.chain & ~stream.s_lockstep & ~pops.fallback
                       & ~enter_pending)
        ok = Signal(name="uop_overlap_after_line")
        m.d.comb += ok.eq(executed_ok & self._ahead_ok(uop, ahead, stream, started, ready,
                                                       Const(1)))
        return ok

    def _ahead_ok(self, uop, ahead, stream, started, ready, executed_blocking):
        """The ahead uop's half of :meth:`overlap`: a ``STREAM`` or ``ENTER`` uop without a
        lane step, whose pops and blocking stream's engine the executed uop does not start
        (``started``, per engine) unless the start continues with its head there (``ready``)."""
        engines = len(ready)
        next_uop = ahead.uop
        # An ahead blocking STREAM: its engine's head (if one serves it) is held in E and
        # taken in X, so no start by this uop may replace it (as for the pops below) and this
        # uop may not pop it (the same stream: a blocking uop looping on itself).
        ahead_stream = next_uop.kind == UopKind.STREAM
        ahead_engine = Mux(stream.evaluated_prefetched,
                           Const(1, engines) << stream.evaluated_engine, 0)[:engines]
        ahead_blocking_ok = (~stream.evaluated_blocking
                             | (((ahead_engine & started & ~ready) == 0)
                                & ~(executed_blocking & (uop.id == next_uop.id))))
        return (ahead.valid & ~next_uop.fuse_lane
                & ((ahead_stream & ahead_blocking_ok) | (next_uop.kind == UopKind.ENTER))
                & ((next_uop.pop[:engines] & started & ~ready) == 0))

    def evaluates_nothing(self, m, word, name):
        """Whether the uop ``word`` executes without an E cycle before it (two stages;
        ``Const(0)`` with one): an ``ACT``, ``NEXT`` or ``DONE`` uop with no fused ``ENTER`` or
        lane step (a lane step reads the held evaluation's fault). The
        traversal asks it of the word X moves to (``Fetch.predicted_word``, when ``pc`` moves
        to the predicted address) and of the uop X keeps (one that waits, or a row's next
        chunk)."""
        if not self.enabled:
            return Const(0)
        free = Signal(name=name)
        m.d.comb += free.eq(((word.kind == UopKind.ACT) | (word.kind == UopKind.NEXT)
                             | (word.kind == UopKind.DONE))
                            & ~word.fuse_enter & ~word.fuse_lane)
        return free

    @staticmethod
    def ahead_sources(m, traversal, pops, values, indices, lanes, ahead_uop):
        """The sources as the ahead uop ``ahead_uop``'s evaluation during an execution sees
        them (``StreamEvaluation``'s ``split``): every pop of it pending, and what X writes
        forwarded through a second :class:`StreamForward` (returned with the
        :class:`~hw.tmu.operand_sources.OperandSources`; drive it with :meth:`drive_forward`
        and ``evaluate_ahead`` = 1: as ``forward`` is while E evaluates ahead)."""
        c = traversal._cfg
        forward = StreamForward(index_bits(c.layers), "ahead_forward")
        pending = Mux(ahead_uop.kind == UopKind.STREAM, ahead_uop.pop[:c.engines], 0)
        return forward, OperandSources(m, traversal, pops, values, indices, lanes,
                                       forward=forward, pending=pending)

    def drive_executed_waits(self, m, out, uop, stream, pops, enter_pending):
        """Drive ``out``: the executed ``STREAM`` uop ``uop`` waits for an engine's value (a
        popped engine's head, or the head of the engine serving its blocking stream, on its
        way), from registers and held results only: the traversal's X cycle waits on it, and
        with two stages it chooses which uop E evaluates (``evaluate_ahead``) without the
        fetch stage's tag comparison. After :meth:`hold_evaluation`; ``stream``, ``pops``,
        ``enter_pending``: as :meth:`overlap`'s."""
        m.d.comb += out.eq(
            (uop.kind == UopKind.STREAM) & ~pops.stopped & ~enter_pending
            & ((~pops.fallback & pops.wait) | stream.product_wait
               | (~stream.s_fault & stream.s_blocking & stream.s_prefetched
                  & ~stream.s_prefetch_head & stream.s_prefetch_busy)))

    def hold(self, value, name):
        """``value`` as the execute stage sees it: a register loaded in E cycles (two stages),
        or ``value`` itself (one stage)."""
        if not self.enabled:
            return value
        held = Signal(value.shape(), name=f"held_{name}")
        with self._m.If(self.capture):
            self._m.d.sync += held.eq(value)
        return held

    def hold_evaluation(self, stream, pops):
        """Replace the evaluation results the execute stage reads with held ones: the stream's
        value, address, checks and ``wrapped`` bit, a chained uop's ALU value, a BLOCK row's
        count, the sources (and with them ``ENTER``'s bounds), the head of the engine serving a
        blocking stream, and the pops' ``wait`` and ``stopped``
        (``stream``: :class:`~hw.tmu.stream_evaluation.StreamEvaluation`, ``pops``:
        :class:`~hw.tmu.engine_pop.EnginePops`)."""
        if not self.enabled:
            return
        for name in ("s_result", "addr", "s_fault", "s_checks", "s_wraps",
                     "chain_val", "chain_wraps", "blk_n", "a_v", "b_v",
                     "s_prefetch_head", "s_prefetch_busy", "s_prefetch_value",
                     "base_wrapped", "product_wait"):
            setattr(stream, name, self.hold(getattr(stream, name), name))
        pops.wait = self.hold(pops.wait, "pop_wait")
        pops.stopped = self.hold(pops.stopped, "pop_engine_stopped")

    def drive_forward(self, m, forward, uop, stream, lanes, loop, enter_vector, evaluate_ahead,
                      line):
        """Drive ``forward`` (:class:`StreamForward`) from the held results and the loop
        registers, after :meth:`hold_evaluation` and the loop control (``loop``): while E
        evaluates the ahead uop (``evaluate_ahead``), the index the executed uop ``uop``
        writes, and the value and ``wrapped`` bit an executed ``STREAM`` uop keeps (a chained
        uop's ALU stream's too: ``StreamEvaluation.keep_value``), unless it faults (a lane's
        fault, recorded lane by lane, moves ``pc`` without keeping the value). While a
        blocking load without an engine waits for its line, ``line`` = ``(waiting, arrived,
        stream id, element)``: the element (registered) is the stream's value once it arrived, its
        ``wrapped`` bit stays. Otherwise whether X writes them does not matter: E's results are
        used only if X moves ``pc`` to the ahead uop, which it does only after writing them."""
        (en, sid, value, wraps), (chain_en, chain_id, chain_value, chain_wraps) = forward.entries
        waiting, arrived, line_id, line_value = line
        keeps = evaluate_ahead & ~waiting & (uop.kind == UopKind.STREAM) & ~stream.s_fault
        # (a blocking stream an engine serves keeps its engine's held head)
        from_engine = stream.s_blocking & stream.s_prefetched
        m.d.comb += [
            en.eq(keeps | (waiting & arrived)), sid.eq(Mux(waiting, line_id, uop.id[:8])),
            value.eq(Mux(waiting, line_value,
                         Mux(from_engine, stream.s_prefetch_value, stream.s_result))),
            wraps.eq(Mux(waiting, stream.wrapped.bit_select(line_id, 1),
                         stream.kept_wraps(lanes))),
            chain_en.eq(keeps & uop.chain), chain_id.eq(stream.sc.b.value[:8]),
            chain_value.eq(stream.chain_val), chain_wraps.eq(stream.chain_wraps),
        ]
        # The indices (``loop``: :class:`~hw.tmu.loop_control.LoopControl`): a NEXT going on
        # writes its layer's next index; one leaving its range with ``next_outer`` the outer
        # layer's, if that goes on; an ENTER its layer's lower bound.
        lbits = len(stream.enter_layer)
        steps = has_next(uop)
        stepped = next_layer_of(uop)[:lbits]
        (next_en, next_layer, next_index), (outer_en, outer_layer, outer_index), \
            (enter_en, enter_layer, enter_index) = forward.index_entries
        m.d.comb += [
            next_en.eq(evaluate_ahead & steps & loop.cont), next_layer.eq(stepped),
            next_index.eq(loop.next_index),
            outer_en.eq(evaluate_ahead & steps & ~loop.cont & uop.next_outer
                        & loop.outer_continues),
            outer_layer.eq(stepped - 1), outer_index.eq(loop.outer_index),
            enter_en.eq(evaluate_ahead & stream.enters), enter_layer.eq(stream.enter_layer),
            enter_index.eq(stream.enter_lb),
        ]
        # A vector iteration of the LOCKSTEP layer: its NEXT going on (``loop.next_vector``),
        # its ENTER (``enter_vector``, from the held bounds); ``LockstepLanes``.
        for (en, first, count, span), starts, vector in zip(
                forward.vector_entries,
                (steps & loop.cont & loop.lockstep,
                 stream.enters & lanes.on & (stream.enter_layer == lanes.layer_id)),
                (loop.next_vector, enter_vector)):
            m.d.comb += [en.eq(evaluate_ahead & starts), first.eq(vector[0]),
                         count.eq(vector[1]), span.eq(vector[2])]
