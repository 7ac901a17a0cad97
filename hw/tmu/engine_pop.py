"""Run-ahead engine pops carried by a traversal ``STREAM`` uop (``Uop.pop``, ``docs/rtl.md`` §2.2).

A body stream served by a run-ahead engine needs no evaluation when the engine has its value:
the decoder folds its ``STREAM`` uop into the next stream's (``pop`` bit ``e``: pop engine
``e`` into its stream). The uop then pops all those engines and evaluates its own stream in one
cycle, the popped values reaching its sources (and its fused actions') through a bypass.

* Every popped engine has its head: the pops commit (values written, engines popped, their
  bits marked in ``pop_done`` so a uop that stays — a blocking load, a full reorder buffer, a
  row of several chunks — never pops twice), and the uop runs as usual.
* An engine has no head but is busy (the load is on its way): the uop waits
  (``block_wait_cycles``).
* An engine has no head and is not busy: it stopped before an address that would fault
  (``hw/tmu/prefetch.py``). The uop then falls back to evaluating its popped streams one per
  cycle, lowest stream id first (the golden model's order), as plain ``STREAM`` uops: a live
  engine's value is popped, the stopped one's address is computed and faults in program order
  (or, if it does not fault, loaded as a blocking load). The decision is registered: in the
  cycle an engine is found stopped the uop only waits (``enter``) and the step's stream, its
  engine and ``fallback`` are latched, so that the step that follows is selected by registers,
  not by the engines' state through the whole evaluation (``docs/synthesis.md``, "The
  traversal alone, and three cuts at the front of its uop"). ``fallback`` stays set until the
  step completes (through a blocking load's wait, if the step issues one). Each completed
  fallback step marks its
  engine in ``pop_done``; the uop itself completes when no pop is left (a chained uop,
  ``hw/tmu/chain.py``, then evaluates its ALU stream and its MEM stream together, after its
  popped streams, as the golden model's id order wants).
* An engine whose stream reads a *skipped* ALU stream (no ``STREAM`` uop of its own,
  ``hw/tmu/skipped_streams.py``, ``docs/rtl.md`` §9.5 C) gets one more fallback step, before
  its own: a plain ``STREAM`` uop of the skipped stream, which writes its value register and
  ``wrapped`` bit. It is marked in ``skip_done`` (cleared with ``pop_done``). The chain
  engine may have two (its operation streams ``M - 2`` and ``M - 1``, ``skipped_two``): the
  second step evaluates the stream after the first and is marked in ``skip_done_second``.
"""

from amaranth.hdl import Const, Mux, Signal

from .layouts import Uop, UopKind


__all__ = ["EnginePops"]


class EnginePops:
    """Combinational pop logic of the traversal (not a component: it shares the traversal's
    value registers and microcode word).

    Parameters
    ----------
    m : Module
    uop : Uop
        The microcode entry at ``pc``.
    engines : int
        Run-ahead engines (``TmuConfig.engines``).
    stream_of : list of Value
        Per engine, the stream it serves (8 bits).
    head_valid, busy : Value
        Per engine (``engines`` bits), ``Prefetcher.head_valid`` / ``busy``.
    head_data : list of Value
        Per engine, its head value (64 bits).
    skipped_valid : Value
        Per engine (``engines`` bits), its stream reads a skipped stream
        (``TraversalConfigSignature.prefetch_skipped_valid``).
    skipped_stream : list of Value
        Per engine, that skipped stream (8 bits).
    skipped_two : Value
        Per engine (``engines`` bits), the stream after ``skipped_stream`` is skipped too and
        evaluated in a second step (``TraversalConfigSignature.prefetch_skipped_two``).
    evaluated : Uop, optional
        The microcode word the evaluation reads (two stages: the next uop's while this one
        executes, ``hw/tmu/ahead_fetch.py``); ``uop`` by default.

    Attributes
    ----------
    uop : Signal(Uop)
        The entry to execute: ``uop``, or in a fallback step a plain ``STREAM`` of the popped
        stream with the lowest id (no fused action, ``NEXT``, ``ENTER`` or pop), or first of
        the skipped stream that stream reads.
    pending : Signal(engines)
        Pops of this uop not done yet.
    fallback : Signal
        Register: a fallback step is under way (the uop is ``uop`` with the latched stream).
    fallback_bit : Signal(engines)
        Register: one-hot, the engine of the fallback step.
    stopped : Signal
        Outside a fallback step, a pending pop's engine has stopped: the traversal waits this
        cycle and drives ``enter``.
    enter : Signal
        Driven by the traversal: latch the fallback step (stream, engine) for the next cycle.
    wait : Signal
        Some popped engine's value is on its way: the uop waits.
    done : Signal(engines)
        Register: pops of the current uop already done (cleared when the uop completes).
    skip_done, skip_done_second : Signal(engines)
        Registers: fallback steps of the current uop that evaluated an engine's (first, second)
        skipped stream.
    commit : Signal(engines)
        Driven by the traversal: the pops done this cycle (``ready``, in the cycle whose
        evaluation the uop executes from).
    ready : Signal(engines)
        The pops this cycle's evaluation may commit: its pending pops, unless one waits or
        stopped or a fallback step is under way (then none).
    """

    def __init__(self, m, uop, engines, stream_of, head_valid, busy, head_data, skipped_valid,
                 skipped_stream, skipped_two, evaluated=None):
        E = engines
        self._m = m
        self._stream_of = stream_of
        self._head_data = head_data
        self.done = Signal(E, name="pop_done")
        self.skip_done = Signal(E, name="skip_done")
        self.skip_done_second = Signal(E, name="skip_done_second")
        # The engine's next fallback step is its first skipped stream's, or its second's.
        self._skip_first = Signal(E, name="skip_todo_first")
        self._skip_second = Signal(E, name="skip_todo_second")
        self._skip_todo = Signal(E, name="skip_todo")
        m.d.comb += [
            self._skip_first.eq(skipped_valid & ~self.skip_done),
            self._skip_second.eq(skipped_two & self.skip_done & ~self.skip_done_second),
            self._skip_todo.eq(self._skip_first | self._skip_second),
        ]
        self.pending = Signal(E, name="pop_pending")
        self.commit = Signal(E, name="pop_commit")
        self.fallback = Signal(name="pop_fallback")
        self.fallback_bit = Signal(E, name="pop_fallback_engine")
        self._fallback_step = Signal(8, name="pop_fallback_stream")
        self.stopped = Signal(name="pop_engine_stopped")
        self.enter = Signal(name="pop_fallback_enter")
        self.wait = Signal(name="pop_wait")
        # Driven by the traversal: the evaluated uop waits for a registered product
        # (``hw/tmu/registered_products.py``); its pops do not (``ready`` below).
        self.product_wait = Signal(name="pop_product_wait")
        # A popped engine's head is not there: the evaluation's operands are not all known.
        self.heads_wait = Signal(name="pop_heads_wait")
        self.uop = Signal(Uop, name="uop")
        m.d.comb += self.pending.eq(Mux(uop.kind == UopKind.STREAM, uop.pop[:E] & ~self.done, 0))
        # The evaluation's view: the same, except while the next uop (``evaluated``, the uop
        # itself when it loops on itself) is evaluated during this one's execution (two
        # stages, ``evaluate_next``): then every pop of that uop is pending, whatever this
        # one's ``done`` bits say.
        ev = uop if evaluated is None else evaluated
        self.evaluate_next = Signal(name="pop_evaluate_next")
        self.pending_evaluate = Signal(E, name="pop_pending_evaluate")
        m.d.comb += self.pending_evaluate.eq(
            Mux(ev.kind == UopKind.STREAM,
                ev.pop[:E] & ~Mux(self.evaluate_next, Const(0, E), self.done), 0))
        dead = self.pending_evaluate & ~head_valid & ~busy
        # The pending pop with the lowest stream id.
        best_valid, best_id, best_bit = Const(0), Const(0, 8), Const(0, E)
        best_step = Const(0, 8)     # the stream the fallback step evaluates
        for e in range(E):
            better = self.pending[e] & (~best_valid | (stream_of[e] < best_id))
            best_valid = best_valid | self.pending[e]
            best_id = Mux(better, stream_of[e], best_id)
            best_bit = Mux(better, Const(1 << e, E), best_bit)
            step = Mux(self._skip_first[e], skipped_stream[e],
                       Mux(self._skip_second[e], (skipped_stream[e] + 1)[:8], stream_of[e]))
            best_step = Mux(better, step, best_step)
        m.d.comb += [
            self.stopped.eq(~self.fallback & (dead != 0)),
            self.heads_wait.eq((self.pending_evaluate & ~head_valid) != 0),
            self.wait.eq(self.heads_wait | self.product_wait),
            self.uop.eq(uop),
        ]
        # The pops are ready when every popped head is there, whether or not the uop also
        # waits for a registered product: pops that commit while it waits are marked done and
        # its next evaluation reads the same values from the value registers (as for a uop
        # that stays for a blocking load). The product's readiness compares the operands'
        # values (``hw/tmu/registered_products.py``): kept out of the commit, whose fan-out
        # (the value registers' enables, the engines' heads) spans the device
        # (``docs/synthesis.md``, "The placed critical path").
        self.ready = Signal(E, name="pop_ready")
        m.d.comb += self.ready.eq(Mux(self.fallback | self.stopped | self.heads_wait, 0,
                                      self.pending_evaluate))
        with m.If(self.enter):
            m.d.sync += [self.fallback.eq(1), self.fallback_bit.eq(best_bit),
                         self._fallback_step.eq(best_step)]
        with m.If(self.fallback):
            m.d.comb += [self.uop.id.eq(self._fallback_step), self.uop.fuse_act.eq(0),
                         self.uop.fuse_act2.eq(0), self.uop.fuse_next.eq(0),
                         self.uop.fuse_lane.eq(0), self.uop.pop.eq(0), self.uop.chain.eq(0),
                         self.uop.fuse_enter.eq(0)]

    def update(self, clear, mark, commit_is_next):
        """Sync: the uop completes (``clear``: no pop of it is left), or a fallback step of
        engine ``mark`` (one-hot) completes: its (first, then second) skipped stream's step if
        that is still to do, else its own. Either ends the fallback step. With
        ``commit_is_next`` the pops committed in this cycle are the next iteration's (evaluated
        while this one completes): they stay done."""
        with self._m.If(clear | (mark != 0)):
            self._m.d.sync += self.fallback.eq(0)
        self._m.d.sync += [
            self.done.eq(Mux(clear, Mux(commit_is_next, self.commit, 0),
                             self.done | self.commit | (mark & ~self._skip_todo))),
            self.skip_done.eq(Mux(clear, 0, self.skip_done | (mark & self._skip_first))),
            self.skip_done_second.eq(Mux(clear, 0,
                                         self.skip_done_second | (mark & self._skip_second))),
        ]

    def reset(self):
        """Statements for a run's start: no pop or fallback step of a uop is done."""
        return [self.done.eq(0), self.skip_done.eq(0), self.skip_done_second.eq(0),
                self.fallback.eq(0)]

    def bypass(self, sid, stored, evaluate=True, pending=None):
        """Stream ``sid``'s value as the uop's sources see it: a pending pop's head (valid
        whenever the uop proceeds), else ``stored``. ``evaluate``: as the evaluation sees the
        pending pops (``pending_evaluate``), else as the execution does (``pending``);
        ``pending`` (one bit per engine): these pops instead."""
        if pending is None:
            pending = self.pending_evaluate if evaluate else self.pending
        out = stored
        for e in range(len(self._stream_of)):
            out = Mux(pending[e] & ~self.fallback & (self._stream_of[e] == sid),
                      self._head_data[e], out)
        return out

    def write_values(self, values):
        """The committed pops' values into the traversal's value registers (a port per
        engine of ``values``, a ``StreamValues``)."""
        values.add_pops(self.commit, self._stream_of, self._head_data)
