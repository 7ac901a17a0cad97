"""The operand sources of the traversal: the value of a source word (``docs/isa.md`` §2
"Sources", §7.3) as a stream, an action or a bound reads it.

A source is an immediate, an argument, a stream's value, a layer's index, or (ISA v1) a
LOCKSTEP layer's ``COUNT``/``FIRST``. A stream's value comes from the traversal's stream
registers, except when the current uop pops it from a run-ahead engine this cycle
(``hw/tmu/engine_pop.py``: the engine's head is bypassed) or, for an action fused into a
``STREAM`` uop, when it is the stream that uop evaluates (``docs/rtl.md`` §2.2: the action sees
the new value).

Not a component: :class:`OperandSources` adds the selection logic to the traversal's ``Module``
at each :meth:`~OperandSources.read`.
"""

from amaranth.hdl import Array, Mux, Signal, signed

from .isa import SourceKind
from .signatures import index_bits
from .source_fields import pick


__all__ = ["OperandSources"]


class OperandSources:
    """The value of a source word (``docs/isa.md`` §2 "Sources", §7.3), 64-bit signed.

    Parameters
    ----------
    m : Module
    traversal : Traversal
        Its ``args`` and ``lockstep_layer`` are read.
    pops : EnginePops
        Engine pops of the current uop (their values bypass the stream registers).
    values, indices : Array of Signal(signed(64))
        The streams' values and the layers' indices (registers of the traversal).
    lanes : LockstepLanes
        ``COUNT``/``FIRST`` of the LOCKSTEP layer (a SINGLE/BROADCAST layer has count 1 and its
        first index is its index).
    evaluate : bool
        The sources as the uop's evaluation reads them (the stream, its bounds; engine pops
        pending as ``EnginePops.pending_evaluate`` says), or, ``False``, as its execution does
        (the actions; ``EnginePops.pending``). The two differ only while a uop's next
        iteration is evaluated during this one's execution (``hw/tmu/evaluate_stage.py``).
    forward : StreamForward or None
        Two stages, evaluation: the stream values, indices and LOCKSTEP vector iteration the
        execution in the same cycle writes, read instead of the registers
        (``hw/tmu/evaluate_stage.py``).
    pending : Value or None
        The engine pops pending (one bit per engine), instead of those ``evaluate`` says: the
        ahead uop's, as its evaluation during another's execution sees them.
    """

    def __init__(self, m, traversal, pops, values, indices, lanes, evaluate=True, forward=None,
                 pending=None):
        self._m = m
        self._evaluate = evaluate
        self._pending = pending
        self._forward = forward
        self._t = traversal
        self._pops = pops
        self._values = values
        self._indices = indices
        self._lanes = lanes
        c = traversal._cfg
        self._args = Array(traversal.args[i] for i in range(c.args))
        self._argbits = index_bits(c.args)
        self._sbits = index_bits(c.streams)
        self._lbits = index_bits(c.layers)

    def _index(self, layer):
        """Layer ``layer``'s index register (forwarded: as the evaluation sees it)."""
        index = self._indices[layer]
        return index if self._forward is None else self._forward.index(layer, index)

    def _lanes_value(self, register, name):
        """The LOCKSTEP layer's ``count`` or ``first`` register (forwarded: as the evaluation
        sees it)."""
        return register if self._forward is None else getattr(self._forward, name)(register)

    def read(self, src, bypass_en=None, bypass_id=None, bypass_val=None):
        """A ``signed(64)`` signal with the value of ``src`` (a ``Source`` view). With
        ``bypass_en``: when set and ``src`` reads stream ``bypass_id``, ``bypass_val`` instead
        (the uop's own stream, evaluated this cycle, as its fused action sees it)."""
        m, lanes = self._m, self._lanes
        out = Signal(signed(64), name="out")
        v = src.value
        with m.Switch(src.kind):
            with m.Case(SourceKind.IMM):
                m.d.comb += out.eq(v.as_signed())
            with m.Case(SourceKind.ARG):
                m.d.comb += out.eq(self._args[v[:self._argbits]])
            with m.Case(SourceKind.STREAM):
                stored = pick(m, self._values, v[:self._sbits], signed(64), "stored")
                if self._forward is not None:
                    stored = self._forward.value(v[:8], stored)
                stored = self._pops.bypass(v[:8], stored, evaluate=self._evaluate,
                                           pending=self._pending)
                if bypass_en is None:
                    m.d.comb += out.eq(stored)
                else:
                    m.d.comb += out.eq(Mux(bypass_en & (v[:8] == bypass_id), bypass_val, stored))
            with m.Case(SourceKind.INDEX):
                m.d.comb += out.eq(self._index(v[:self._lbits]))
            # ISA v1 (docs/isa.md §7.3): a SINGLE/BROADCAST layer has count 1 and its first
            # index is its index.
            with m.Case(SourceKind.COUNT):
                m.d.comb += out.eq(Mux(lanes.on & (v[:8] == self._t.lockstep_layer),
                                       self._lanes_value(lanes.count, "count"), 1))
            with m.Case(SourceKind.FIRST):
                m.d.comb += out.eq(Mux(lanes.on & (v[:8] == self._t.lockstep_layer),
                                       self._lanes_value(lanes.first, "first"),
                                       self._index(v[:self._lbits])))
        return out
