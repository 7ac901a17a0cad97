"""Two registers between a run-ahead engine's head and the traversal (``docs/rtl.md`` §2.3,
*Output queue*; ``docs/synthesis.md``, "The engines' pop cut")."""

from amaranth.hdl import Module, Mux, Signal
from amaranth.lib import stream, wiring
from amaranth.lib.wiring import In, Out


__all__ = ["EngineOutputQueue"]


class EngineOutputQueue(wiring.Component):
    """A first-in first-out queue of two 64-bit values, every output a register and the input's
    ``ready`` a function of registers only.

    A run-ahead engine (``hw/tmu/prefetch.py``, ``hw/tmu/chain_engine.py``) moves its head into
    this queue whenever the queue has room, and the traversal pops the queue. The traversal's
    pop — decided late in its cycle, from the whole evaluation (``hw/tmu/engine_pop.py``) —
    then only selects the next value of these registers and their count; the engine's entry
    bookkeeping (its head slot, element within the line, arrived bits, the head's extraction)
    runs on the engine's own registers. It was the slowest placed path of the small unit in
    session 41 (``docs/synthesis.md``, "The value registers written a cycle late").

    Throughput: one value per cycle in and out at once (the count stays at one); latency: a
    value that enters in cycle ``t`` can be popped in ``t + 1``, one cycle more than the engine's
    head alone. Two entries, not one: with one, ``ready`` (from registers) would be low in
    every cycle the single entry is full, halving the rate.

    Members
    -------
    i : In(stream.Signature(64))
        From the engine's head: ``i.ready`` is ``level != 2`` (a register compared), never
        dependent on ``o.ready`` or ``flush``.
    o : Out(stream.Signature(64))
        To the traversal: ``o.valid`` (``level != 0``) and ``o.payload`` (the oldest value)
        are registers. ``o.ready`` is the traversal's pop, taken only while ``o.valid``.
    flush : In(1)
        Forget both values (the engine begins a new sequence, or the run is cleared); wins over
        a push or a pop in the same cycle.
    level : Out(range(3))
        Values held (a register).
    """

    def __init__(self):
        super().__init__({
            "i": In(stream.Signature(64)),
            "o": Out(stream.Signature(64)),
            "flush": In(1),
            "level": Out(range(3)),
        })

    def elaborate(self, platform):
        m = Module()
        second = Signal(64, name="queue_second")
        push = Signal(name="queue_push")
        pop = Signal(name="queue_pop")
        m.d.comb += [
            self.i.ready.eq(self.level != 2),
            self.o.valid.eq(self.level != 0),
            push.eq(self.i.valid & self.i.ready),
            pop.eq(self.o.valid & self.o.ready),
        ]
        # The oldest value: after a pop the second one (two held) or the value entering (one
        # held: it becomes the only one); without a pop, the value entering an empty queue.
        with m.If(pop):
            m.d.sync += self.o.payload.eq(Mux(self.level == 2, second, self.i.payload))
        with m.Elif(self.level == 0):
            m.d.sync += self.o.payload.eq(self.i.payload)
        # The second value: written whenever it is not held (``level != 2``), so that its
        # enable is a register's, not the pop's; it is read only once two values are held,
        # which takes a push at level 1 without a pop — the cycle it was written.
        with m.If(self.level != 2):
            m.d.sync += second.eq(self.i.payload)
        m.d.sync += self.level.eq(self.level + push - pop)
        with m.If(self.flush):
            m.d.sync += self.level.eq(0)
        return m
