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

The same holds for a chain engine's *operation streams* (``hw/tmu/chain_detect.py``: ``M - 1``
and ``M - 2``, the ALU operations between the root ``V`` and the chained load ``M``; the
multiplicative hash of ``examples/hashed_gather.mlir``). The engine computes them itself;
the traversal needs them only when the engine stopped before an element that would fault.
An operation stream is skipped when

* it is a *chain operation candidate* (``ConfigTablesSignature.chain_op_candidate``: an
  ALU/FWD stream, not invariant, that nothing reads but the stream with the next id);
* ``M`` is served by the chain engine and popped by a later ``STREAM`` uop (as above);
* ``M - 2``: ``M - 1`` is skipped (it is ``M - 2``'s only reader).

The chain engine's fallback step then evaluates the skipped operation streams, lowest id first,
before ``M`` (``prefetch_skipped_two`` when both are skipped). Their values are exact,
``wrapped`` bits included, since ``V``'s value register holds the element being fallen back on
(``V`` is popped by the same uop or an earlier one). Without it every such ``MUL`` by a
constant that is not a power of two waited two cycles for its registered product per iteration
(``docs/performance.md``, "``hashed_gather`` re-measured: the hash's multiply waits").

The builder decides it in one pass over the streams, highest id first (a stream's readers have
higher ids, ``docs/isa.md`` §1 "Sources"), one cycle per stream, after the engine assignment.
"""

from amaranth.hdl import Array, Const, Mux, Signal

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
        Streams served by a run-ahead engine (the builder's assignment, complete; a chain's
        ``M`` only by the chain engine: ``M`` is not affine).

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
        # The chain's M is served by the chain engine and popped by a later uop (set at M).
        self._chain_popped = Signal(name="skip_chain_popped")

    def clear(self):
        """Statements for a decode start."""
        return [self.skipped.eq(0), self._needed.eq(0), self._later.eq(0),
                self._chain_popped.eq(0)]

    def _chain_skip(self, j, popped):
        """Whether stream ``j`` is a skipped operation stream of the recorded chain (``popped``:
        stream ``j`` would be popped by a later uop, for the step at ``M``)."""
        m, t = self._m, self._t
        if not self._c.chain_engines:
            return Const(0)
        sb = index_bits(self._c.streams)
        chain, chain_m = t.chain_engine, t.chain_stream
        with m.If(chain.valid & (j == chain_m)):
            m.d.sync += self._chain_popped.eq(popped)
        op1 = (j + 1 == chain_m) & (chain.ops != 0)
        # (``M - 1`` was decided in the step before: the scan goes down.)
        op0 = ((j + 2 == chain_m) & (chain.ops == 2)
               & self.skipped.bit_select((chain_m - 1)[:sb], 1))
        return (chain.valid & self._chain_popped & t.chain_op_candidate.bit_select(j[:sb], 1)
                & (op1 | op0))

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
        skip = Signal(name="skip_scan_skip")
        m.d.comb += skip.eq((t.skip_candidate.bit_select(js, 1) & ~self._needed.bit_select(js, 1)
                             & ~lockstep)
                            | self._chain_skip(j, popped))
        m.d.sync += self.skipped.bit_select(js, 1).eq(skip)
        with m.If(~t.invariant.bit_select(js, 1) & ~skip):
            m.d.sync += self._later.bit_select(layer[:lb], 1).eq(1)

    def engine(self, stream):
        """(valid, skipped stream, two) for an engine serving ``stream``: its stream reads a
        skipped stream, which a fallback step of the engine evaluates first; with ``two``, the
        stream after it too (a chain's ``M - 2`` and ``M - 1``)."""
        m, t = self._m, self._t
        sb = index_bits(self._c.streams)
        source = pick(m, self._via, stream[:sb], 8, "skip_engine_via")
        valid = (t.affine_via.bit_select(stream[:sb], 1)
                 & self.skipped.bit_select(source[:sb], 1))
        if not self._c.chain_engines:
            return valid, source, Const(0)
        chain, chain_m = t.chain_engine, t.chain_stream
        is_chain = chain.valid & (stream == chain_m)
        one = is_chain & (chain.ops != 0) & self.skipped.bit_select((chain_m - 1)[:sb], 1)
        two = one & (chain.ops == 2) & self.skipped.bit_select((chain_m - 2)[:sb], 1)
        first = Signal(8, name="skip_engine_first")
        m.d.comb += first.eq(Mux(one, Mux(two, chain_m - 2, chain_m - 1), source))
        return valid | one, first, two
