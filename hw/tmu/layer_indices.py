"""The layers' index registers, each with its next index and whether that one is in range
(``docs/rtl.md`` §2.2 "The next index in registers"; ``docs/synthesis.md``, "The next index
in registers").

A layer's ``NEXT`` writes ``index + step`` and goes on while it is below the layer's upper
bound (``docs/isa.md`` §1 "Execution order"). Computed when the ``NEXT`` executes, that adder and
that comparison sat in front of everything the evaluate stage does with a forwarded index (the
next uop's sources, the ALU's multiply, the address): the longest path of the two-stage
traversal. Here they are computed when the index is *written* and kept in registers beside it:

* ``index[k]``, the index (64 bits, as the ISA keeps it);
* ``next[k] = index[k] + step_k`` (exact: 66 bits, ``step`` is the layer's ``LayerCfg.step``,
  a positive 28-bit number);
* ``continues[k] = next[k] < ub[k]`` (``ub`` the layer's upper bound register).

A ``NEXT`` then reads ``next`` and ``continues`` (no adder, no comparison) and writes
``next + step`` and its comparison for the iteration after. Every write of an index goes
through :meth:`LayerIndices.writer`, so the three registers never disagree.

Each writer is a *port*: its value and the next index are computed once, outside any
condition, and a write only sets the port's enable where it happens; the registers take their
next values from the ports in one place (:meth:`LayerIndices.elaborate`), a multiplexer per
writer and layer, not one behind every condition a write sits in (as the stream values',
``hw/tmu/stream_values.py``; ``docs/synthesis.md``, "The stream values' and indices' write
ports").

Not a component: plain registers in the traversal's ``Module``.
"""

from amaranth.hdl import Array, Mux, Signal, signed

from .layouts import LayerCfg
from .source_fields import pick


__all__ = ["LayerIndices"]


class LayerIndices:
    """The index, next index and "next index in range" registers of ``count`` layers.

    Parameters
    ----------
    count : int
        Layers (``TmuConfig.layers``).
    layers : Array of LayerCfg
        The layers' configurations (their ``step``; constant during a run).
    upper_bounds : Array of Signal(signed(64))
        The layers' upper bound registers (written by an ``ENTER``, through a writer with
        ``ub``).

    Attributes
    ----------
    index : Array of Signal(signed(64))
        ``index_{k}``: layer ``k``'s index.
    next : Array of Signal(signed(66))
        ``index_next_{k}``: ``index[k] + step_k``, exact.
    continues : Array of Signal
        ``index_continues_{k}``: ``next[k] < ub[k]``.
    """

    def __init__(self, count, layers, upper_bounds):
        self._layers, self._ub = layers, upper_bounds
        self.index = Array(Signal(signed(64), name=f"index_{k}") for k in range(count))
        self.next = Array(Signal(signed(66), name=f"index_next_{k}") for k in range(count))
        self.continues = Array(Signal(name=f"index_continues_{k}") for k in range(count))
        self._ports = []                # (enable, layer, index, next, continues) by priority
        self._clear = Signal(name="indices_clear")

    def writer(self, m, layer, value, name, ub=None):
        """A write of ``value`` into layer ``layer``'s index (and of ``ub`` into its upper
        bound, for an ``ENTER``): returns a function that, called inside the condition of the
        write, enables the writer's port (the upper bound is assigned there). The next index
        and its comparison are built here, outside any condition (their logic must not depend
        on when it is used).

        ``value``: the new index (its low 64 bits are kept, as the ISA's register keeps them);
        ``ub``: the new upper bound (``signed(64)``), or None (the register's).
        """
        kept = Signal(signed(64), name=f"{name}_index")
        following = Signal(signed(66), name=f"{name}_next")
        in_range = Signal(name=f"{name}_continues")
        step = pick(m, self._layers, layer, LayerCfg, f"{name}_cfg").step
        bound = (pick(m, self._ub, layer, signed(64), f"{name}_ub") if ub is None else ub)
        m.d.comb += [kept.eq(value), following.eq(kept + step), in_range.eq(following < bound)]

        enable = Signal(name=f"{name}_en")
        port = (enable, layer, kept, following, in_range)

        def write():
            m.d.comb += enable.eq(1)
            # Two writers of one layer in one cycle: the one whose first write comes later
            # wins, as the later of two statements did (every pair of writes that can meet
            # comes in one order: ENTER's, a lane step's, NEXT's, the outer NEXT's).
            if not any(p[0] is enable for p in self._ports):
                self._ports.append(port)
            if ub is not None:
                m.d.sync += self._ub[layer].eq(ub)
        return write

    def clear(self, m):
        """At a start (inside its condition): every index and upper bound 0, its next index
        its step, in range if ``step < 0`` (never: a step is positive)."""
        m.d.comb += self._clear.eq(1)
        m.d.sync += [ub.eq(0) for ub in self._ub]

    def elaborate(self, m):
        """Sync: the registers' next values from the writers' ports and the start's clear
        (call after every write and clear is placed)."""
        for k in range(len(self.index)):
            index, following, in_range = self.index[k], self.next[k], self.continues[k]
            for enable, layer, kept, kept_next, kept_in_range in self._ports:
                hit = enable & (layer == k)
                index = Mux(hit, kept, index)
                following = Mux(hit, kept_next, following)
                in_range = Mux(hit, kept_in_range, in_range)
            step = self._layers[k].step
            m.d.sync += [self.index[k].eq(Mux(self._clear, 0, index)),
                         self.next[k].eq(Mux(self._clear, step, following)),
                         self.continues[k].eq(Mux(self._clear, step < 0, in_range))]
