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

This is the first step of the two-stage uop: E and X do not overlap (one uop per two cycles).
Overlapping them (E of the next uop during X of this one) needs the hazards of
``docs/synthesis.md`` handled; not done.

Not a component: :class:`EvaluateStage` adds its registers to the traversal's ``Module``.
"""

from amaranth.hdl import Const, Signal


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
