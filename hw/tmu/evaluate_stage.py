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

**Overlap for a uop that loops on itself** (:meth:`EvaluateStage.self_loop`). The inner loop
of the bags, SpMM and SpMV is one ``STREAM`` uop whose fused ``NEXT`` jumps back to it
(``docs/synthesis.md``, "Overlapping E and X"). While such a uop executes, E evaluates its next
iteration on the same words, and the held registers take those results in the same cycle; if
X continues the loop, the next cycle executes again instead of evaluating (one iteration per
cycle); otherwise the next cycle evaluates as usual and what was held is overwritten. What
makes the next iteration's evaluation exact during this one's execution:

* the engine pops are committed by the evaluation whose results are used (an E cycle; or, in
  an overlapped cycle, only if X continues the loop), not by X: so E of the next iteration
  finds the engines' heads already past this iteration's values, and takes every pop of the
  uop as pending (``EnginePops.pending_evaluate``); X reads the popped values from the value
  registers, written when the pops committed;
* the uop's evaluation reads nothing its execution writes: no index, ``COUNT`` or ``FIRST``
  source, no source reading the uop's own stream or its chained ALU stream (their values and
  ``wrapped`` bits are written by X); a uop that does is not overlapped;
* nothing else is overlapped: not a blocking stream (its load or its engine's value is taken
  in X), a LOCKSTEP stream or layer, a fused ``ENTER`` or lane step, an engine-pop fallback
  step, a pending ``ENTER``.

**No evaluation for a uop that evaluates nothing** (:meth:`EvaluateStage.evaluates_nothing`).
An ``ACT``, ``NEXT`` or ``DONE`` uop (no fused ``ENTER`` or lane step, in a program without
a LOCKSTEP layer) executes from registers and its words only: its actions read their sources in X, its
``NEXT`` decides from the index registers, and nothing of the held registers is read. When X
moves ``pc`` to the predicted address and the word there is such a uop, the next cycle executes
it directly (its words are the ones the fetch stage reads in this cycle), without an E cycle;
and such a uop that stays (a full reorder buffer or control FIFO, a row's next chunk) executes
again the next cycle. TransE's body (three ``STREAM`` uops, then two ``ACT``) takes eight
cycles instead of ten.

Any other uop, and any iteration after which X does not continue the loop (a wait, a fault, the
loop's end), costs an E cycle as before. Overlapping the general case (the next uop another
entry) needs a second set of fetched words and the hazards between two different uops; not
done.

Not a component: :class:`EvaluateStage` adds its registers to the traversal's ``Module``.
"""

from amaranth.hdl import Const, Signal

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

    def self_loop(self, m, uop, pc, stream, loop, pops, enter_pending):
        """Whether the uop held for execution may have its next iteration evaluated during its
        execution (two stages; ``Const(0)`` with one): a ``STREAM`` uop whose fused ``NEXT``
        jumps back to it, with none of the exclusions of the module docstring. From registers
        and the held words only (``uop``: the uop being executed; ``pc``; ``stream``:
        :class:`~hw.tmu.stream_evaluation.StreamEvaluation`; ``loop``:
        :class:`~hw.tmu.loop_control.LoopControl`; ``pops``:
        :class:`~hw.tmu.engine_pop.EnginePops`; ``enter_pending``: the traversal's
        register)."""
        if not self.enabled:
            return Const(0)
        # X writes the uop's stream (value, ``wrapped`` bit, BLOCK count) and, for a chained
        # uop, its ALU stream (``b`` of the stream's configuration, hw/tmu/chain.py).
        chained_id = stream.sc.b.value[:8]

        def reads_written(src):
            kind, number = src.kind, src.value[:8]
            reads_index = ((kind == SourceKind.INDEX) | (kind == SourceKind.COUNT)
                           | (kind == SourceKind.FIRST))
            reads_stream = (kind == SourceKind.STREAM) & (
                (number == uop.id[:8]) | (uop.chain & (number == chained_id)))
            return reads_index | reads_stream

        count_source = Source(stream.sc.stride.as_unsigned())   # a BLOCK row's count
        hazard = (reads_written(stream.src_a) | reads_written(stream.src_b)
                  | (stream.s_block & reads_written(count_source)))
        loop_self = Signal(name="uop_self_loop")
        m.d.comb += loop_self.eq(
            (uop.kind == UopKind.STREAM) & uop.fuse_next & ~uop.fuse_lane & ~uop.fuse_enter
            & (loop.body_pc == pc) & ~loop.lockstep & ~pops.fallback & ~enter_pending
            & ~stream.s_blocking & ~stream.s_lockstep & ~hazard)
        return loop_self

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
                     "s_prefetch_head", "s_prefetch_busy"):
            setattr(stream, name, self.hold(getattr(stream, name), name))
        pops.wait = self.hold(pops.wait, "pop_wait")
        pops.stopped = self.hold(pops.stopped, "pop_engine_stopped")
