"""The traversal's evaluate stage (``TmuConfig.uop_stages = 2``; ``docs/rtl.md`` §2.2
"Two-stage uop", ``docs/synthesis.md`` "Why trimming the uop no longer shortens it").

With one stage (the default) a uop is evaluated and executed in one cycle: its sources, the
stream's address ``a + b * stride`` and its checks, and the decision that fires it (no fault,
room in the reorder buffer, the control FIFO and the request buffer) with the enables of every
register the traversal writes, all in one combinational path.

With two stages a uop takes two cycles (at least) and that path is cut in two:

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
* the ahead uop's evaluation reads nothing this execution writes: no index, ``COUNT`` or
  ``FIRST`` source, no source reading this uop's stream or its chained ALU stream (their
  values and ``wrapped`` bits are written by X), no pop of an engine this uop's ``ENTER``
  starts unless the start continues the engine's sequence with its head there;
* nothing else is overlapped: the ahead uop is a ``STREAM`` uop, not blocking (its load or its
  engine's value is taken in X); this uop is not blocking, not a ``PREFETCH`` or ``DONE``, not
  an engine-pop fallback step or a pending ``ENTER``; no lane step and no program with a
  LOCKSTEP layer (there E always evaluates the executed uop's words, as without the overlap).

**No evaluation for a uop that evaluates nothing** (:meth:`EvaluateStage.evaluates_nothing`).
An ``ACT``, ``NEXT`` or ``DONE`` uop (no fused ``ENTER`` or lane step, in a program without a
LOCKSTEP layer) executes from registers and its words only: its actions read their sources in
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

from .isa import Source, SourceKind
from .layouts import UopKind


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

    def overlap(self, m, uop, ahead, stream, pops, enter_pending, lockstep_program, ready):
        """Whether E, evaluating the ahead uop (:class:`~hw.tmu.ahead_fetch.AheadFetch`) in this
        X cycle, evaluates it exactly as it would after this uop's execution (two stages;
        ``Const(0)`` with one). From registers and words only: ``uop``, the uop X executes;
        ``stream``: :class:`~hw.tmu.stream_evaluation.StreamEvaluation` (the executed uop's
        words and the ahead uop's sources); ``pops``: :class:`~hw.tmu.engine_pop.EnginePops`;
        ``enter_pending``: the traversal's register; ``lockstep_program``:
        ``LockstepLanes.on``; ``ready``: per engine, a start now would continue its sequence
        (``Prefetcher.continues``, its entries kept) and its head is valid.

        The ahead uop is a ``STREAM`` uop, not blocking, without a lane step; the executed
        uop is a ``STREAM``, ``ACT``, ``NEXT`` or ``ENTER`` uop, not blocking, without a lane
        step, an engine-pop fallback step or a pending ``ENTER``; the program has no LOCKSTEP
        layer; and the ahead uop reads nothing the execution writes: no index, ``COUNT`` or
        ``FIRST`` source (a ``NEXT`` or ``ENTER`` writes the indices), no source reading the
        executed uop's stream or its chained ALU stream (value, ``wrapped`` bit, BLOCK count),
        and no pop of an engine the executed uop starts (``ENTER``, own or fused) unless the
        start continues the engine's sequence and its head is already there: the head is then
        the new range's first element, the one the pop takes after the start (a CSR row's
        engines, ``Prefetcher``'s continuation; a restarted engine's head, or a missing one that
        would look stopped, is read after the start)."""
        if not self.enabled:
            return Const(0)
        # X writes the uop's stream and, for a chained uop, its ALU stream (``b`` of the
        # stream's configuration, hw/tmu/chain.py).
        chained_id = stream.sc.b.value[:8]

        def reads_written(src):
            kind, number = src.kind, src.value[:8]
            reads_index = ((kind == SourceKind.INDEX) | (kind == SourceKind.COUNT)
                           | (kind == SourceKind.FIRST))
            reads_stream = (kind == SourceKind.STREAM) & (
                (number == uop.id[:8]) | (uop.chain & (number == chained_id)))
            return reads_index | reads_stream

        count_source = Source(stream.evaluated_sc.stride.as_unsigned())   # a BLOCK row's count
        hazard = (reads_written(stream.src_a) | reads_written(stream.src_b)
                  | (stream.s_block & reads_written(count_source)))
        starts_engines = (uop.kind == UopKind.ENTER) | uop.fuse_enter
        started = Mux(starts_engines, uop.start_engines[:len(ready)], 0)
        executed_ok = (((uop.kind == UopKind.STREAM) | (uop.kind == UopKind.ACT)
                        | (uop.kind == UopKind.NEXT) | (uop.kind == UopKind.ENTER))
                       & ~uop.fuse_lane & ~stream.s_blocking & ~pops.fallback & ~enter_pending)
        next_uop = ahead.uop
        ahead_ok = (ahead.valid & (next_uop.kind == UopKind.STREAM) & ~next_uop.fuse_lane
                    & ~stream.evaluated_blocking
                    & ((next_uop.pop[:len(ready)] & started & ~ready) == 0))
        ok = Signal(name="uop_overlap")
        m.d.comb += ok.eq(executed_ok & ahead_ok & ~lockstep_program & ~hazard)
        return ok

    def evaluates_nothing(self, m, word, lockstep_program, name):
        """Whether the uop ``word`` executes without an E cycle before it (two stages;
        ``Const(0)`` with one): an ``ACT``, ``NEXT`` or ``DONE`` uop with no fused ``ENTER`` or
        lane step, in a program without a LOCKSTEP layer (``lockstep_program``:
        ``LockstepLanes.on``; vector operands and lane steps read the held evaluation). The
        traversal asks it of the word X moves to (``Fetch.predicted_word``, when ``pc`` moves
        to the predicted address) and of the uop X keeps (one that waits, or a row's next
        chunk)."""
        if not self.enabled:
            return Const(0)
        free = Signal(name=name)
        m.d.comb += free.eq(((word.kind == UopKind.ACT) | (word.kind == UopKind.NEXT)
                             | (word.kind == UopKind.DONE))
                            & ~word.fuse_enter & ~word.fuse_lane & ~lockstep_program)
        return free

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
        for name in ("s_result", "addr", "s_fault", "s_code", "s_faddr", "s_wraps",
                     "chain_val", "chain_wraps", "blk_n", "a_v", "b_v",
                     "s_prefetch_head", "s_prefetch_busy", "base_wrapped"):
            setattr(stream, name, self.hold(getattr(stream, name), name))
        pops.wait = self.hold(pops.wait, "pop_wait")
        pops.stopped = self.hold(pops.stopped, "pop_engine_stopped")
