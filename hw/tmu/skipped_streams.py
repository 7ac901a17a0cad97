"""Skipped ALU streams: no ``STREAM`` uop for an ALU stream that only run-ahead engines' streams
read (``docs/rtl.md`` §9.5 C).

SpMV, SpMM and EmbeddingBag compute ``i + 1`` in a stream of the outer layer whose only reader
is ``rowptr[i + 1]`` (``offsets[b + 1]``), a stream served by a run-ahead engine and popped by
the next stream's uop (``Uop.pop``, ``hw/tmu/engine_pop.py``). The engine computes its
addresses from the layer's index, not from ``i + 1``; the traversal needs ``i + 1`` only when
the engine has stopped before an address that would fault and the uop falls back to evaluating
the popped stream itself. So the microcode builder drops the ``STREAM`` uop of such a stream
(it is *skipped*), and a fallback step of an engine whose stream reads a skipped stream first
evaluates the skipped stream, as a plain ``STREAM`` uop of its own, then the engine's stream.

A stream is skipped when

* it is a *skip candidate* (``ConfigTablesSignature.skip_candidate``): an ALU/FWD stream, not
  invariant, that no layer bound, no ``OPERAND`` action and no stream reads, except as the
  ``b`` of an affine MEM stream (``affine_via``: ``b`` is the stream, whose value is
  ``INDEX own + c``);
* it is not in the LOCKSTEP layer;
* every affine MEM stream that reads it is served by a run-ahead engine *and popped* by a later
  ``STREAM`` uop: a stream of the same (not LOCKSTEP) layer with a higher id that has a uop of
  its own (not invariant, not skipped itself). An engine's stream that keeps its own uop (the
  last stream of its layer) evaluates itself when its engine stopped, reading the skipped
  stream's register: its source is then not skipped.

The stream's value register then holds a value only after such a fallback step, and nothing
else reads it: a skipped stream's value is ``INDEX own + c`` (or has no reader at all), so
evaluating it late in the iteration, just before its reader, gives the value and the
``wrapped`` bit the golden model's order gives (ALU/FWD streams never fault).

The builder decides it in one pass over the streams, highest id first (a stream's readers have
higher ids, ``docs/isa.md`` §1 "Sources"), one cycle per stream, after the engine assignment.
"""

from amaranth.hdl import Array, Signal

from .signatures import index_bits
from .source_fields import pick


__all__ = ["SkippedStreams"]


class SkippedStreams:
    """Decode side, in the microcode builder's ``elaborate`` (not a component: it shares the
    builder's registers).

    Parameters
    ----------
    m : Module
    config : TmuConfig
    tables : ConfigTablesSignature
        The configuration writer's classes (``skip_candidate``, ``affine_via``,
        ``affine_via_stream``, ``invariant``, ``lockstep_*``).
    stream_layer : Array
        Layer of each stream (8 bits).
    stream_prefetched : Value(config.streams)
        Streams served by a run-ahead engine (the builder's assignment, complete).

    Attributes
    ----------
    skipped : Signal(config.streams)
        Register: the streams without a ``STREAM`` uop (valid after the pass).
    """

    def __init__(self, m, config, tables, stream_layer, stream_prefetched):
        self._m, self._c, self._t = m, config, tables
        self._stream_layer = stream_layer
        self._prefetched = stream_prefetched
        self.skipped = Signal(config.streams, name="skipped")
        # Skip candidates that a reader needs in its own evaluation.
        self._needed = Signal(config.streams, name="skip_needed")
        # Per layer: a stream with a higher id than the scan position has a STREAM uop.
        self._later = Signal(config.layers, name="skip_later_uop")
        self._via = Array(tables.affine_via_stream[i] for i in range(config.streams))

    def clear(self):
        """Statements for a decode start."""
        return [self.skipped.eq(0), self._needed.eq(0), self._later.eq(0)]

    def scan(self, j):
        """Sync: the pass's step at stream ``j`` (8 bits; the steps go from the highest id
        down to 0)."""
        m, t = self._m, self._t
        sb, lb = index_bits(self._c.streams), index_bits(self._c.layers)
        js = j[:sb]
        layer = pick(m, self._stream_layer, j, 8, "skip_scan_layer")
        lockstep = t.lockstep_valid & (layer == t.lockstep_layer)
        # Popped by a later STREAM uop of its layer (the builder's ``pop`` fusion).
        popped = (self._prefetched.bit_select(js, 1) & ~lockstep
                  & self._later.bit_select(layer[:lb], 1))
        source = pick(m, self._via, js, 8, "skip_scan_via")
        with m.If(t.affine_via.bit_select(js, 1) & ~popped):
            m.d.sync += self._needed.bit_select(source[:sb], 1).eq(1)
        skip = t.skip_candidate.bit_select(js, 1) & ~self._needed.bit_select(js, 1) & ~lockstep
        m.d.sync += self.skipped.bit_select(js, 1).eq(skip)
        with m.If(~t.invariant.bit_select(js, 1) & ~skip):
            m.d.sync += self._later.bit_select(layer[:lb], 1).eq(1)

    def engine(self, stream):
        """(valid, skipped stream) for an engine serving ``stream``: its stream reads a skipped
        stream, which a fallback step of the engine evaluates first."""
        sb = index_bits(self._c.streams)
        source = pick(self._m, self._via, stream[:sb], 8, "skip_engine_via")
        valid = (self._t.affine_via.bit_select(stream[:sb], 1)
                 & self.skipped.bit_select(source[:sb], 1))
        return valid, source
