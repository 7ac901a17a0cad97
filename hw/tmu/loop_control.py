"""Loop control of the traversal: ``NEXT`` (its own uop or fused into a ``STREAM``/``ACT``),
``next_outer`` and the fetch stage's loop prediction (``docs/isa.md`` §1 "Execution order",
``docs/rtl.md`` §2.2 and §9.5 D).

Adds its logic to the traversal's ``Module``; ``traversal.py`` calls
:meth:`LoopControl.next_iteration` and :meth:`LoopControl.leave_layer` from its FSM.
"""

from amaranth.hdl import Mux, Signal, signed

from .layouts import LayerCfg, UopKind
from .source_fields import pick


__all__ = ["LoopControl", "has_next", "next_layer_of", "predicted_after"]


def has_next(word):
    """The uop ``word`` performs a ``NEXT``: its own, or fused into a ``STREAM``/``ACT``."""
    return (word.kind == UopKind.NEXT) | (
        ((word.kind == UopKind.STREAM) | (word.kind == UopKind.ACT)) & word.fuse_next)


def next_layer_of(word):
    """The layer a uop's ``NEXT`` steps: a ``NEXT`` uop's ``id``, a fused one's ``next_layer``
    (full width: callers slice it to a layer number)."""
    return Mux(word.kind == UopKind.NEXT, word.id, word.next_layer)


def predicted_after(m, word, registers, lanes, advanced, entered, ubits, lbits, name):
    """The ``pc`` after the uop ``word`` if it has a ``NEXT`` (own, or fused into a
    ``STREAM``/``ACT``), predicted from registers as the fetch stage predicts it (the loop goes
    on if its next index is below its upper bound; else its exit, or with
    ``next_outer`` the outer layer's body or exit), with the index of the layer ``advanced``
    names one step further: ``advanced = (valid, layer)``, the ``NEXT`` another uop performs
    before ``word`` executes; and the bounds of the layer an ``ENTER`` of that uop starts:
    ``entered = (valid, layer, lb, ub)``. The LOCKSTEP layer (``lanes``:
    :class:`~hw.tmu.lockstep_lanes.LockstepLanes`) steps by vector iterations: from lane 0's
    index ``first``, ``lanes × step`` at a time. ``registers``: as :class:`LoopControl`'s."""
    idx, ubr, layers, body_pc, exit_pc = registers
    advanced_valid, advanced_layer = advanced
    entered_valid, entered_layer, entered_lb, entered_ub = entered
    layer = next_layer_of(word)[:lbits]
    outer = Signal(lbits, name=f"{name}_outer")
    m.d.comb += outer.eq(layer - 1)

    def continues_at(k, tag):
        cfg = pick(m, layers, k, LayerCfg, f"{name}_{tag}_cfg")
        lockstep = lanes.on & (k == lanes.layer_id)
        entering = entered_valid & (entered_layer[:lbits] == k)
        further = advanced_valid & (advanced_layer[:lbits] == k)
        step = Mux(lockstep, lanes.vector_step, cfg.step)
        # the layer's next index and its comparison are registers (hw/tmu/layer_indices.py);
        # one step further (``advanced``) adds a step to it
        following = Mux(lockstep, lanes.next_first,
                        pick(m, idx.next, k, signed(66), f"{name}_{tag}_next_index"))
        in_range = Mux(lockstep, lanes.next_continues,
                       pick(m, idx.continues, k, 1, f"{name}_{tag}_continues"))
        ub = pick(m, ubr, k, signed(64), f"{name}_{tag}_ub")
        return Mux(entering, entered_lb + Mux(further, step, 0) + step < entered_ub,
                   Mux(further, following + step < ub, in_range))

    continues = continues_at(layer, "layer")
    outer_continues = continues_at(outer, "outer")
    exit_target = Mux(word.next_outer,
                      Mux(outer_continues, pick(m, body_pc, outer, ubits, f"{name}_outer_body"),
                          pick(m, exit_pc, outer, ubits, f"{name}_outer_exit")),
                      pick(m, exit_pc, layer, ubits, f"{name}_layer_exit"))
    after = Signal(ubits, name=name)
    m.d.comb += after.eq(Mux(continues, pick(m, body_pc, layer, ubits, f"{name}_layer_body"),
                             exit_target))
    return after


class LoopControl:
    """The ``NEXT`` of the fetched uop (``NEXT k``, or a ``STREAM``/``ACT`` with ``fuse_next``).

    Parameters
    ----------
    m : Module
        The traversal's module.
    traversal : Traversal
        For ``stat_vec_iter`` (a vector iteration of the LOCKSTEP layer starts).
    uop : Uop
        The held microcode word (``fetch.uop``; an engine-pop fallback step, the only change
        ``pops.uop`` makes, has no ``NEXT``).
    registers : (indices, ubr, layers, body_pc, exit_pc)
        The layers' index registers (:class:`~hw.tmu.layer_indices.LayerIndices`: each
        index with its next index and whether that is in range) and ``Array``s indexed by
        layer: upper bounds, layer configurations (``LayerCfg``) and the layers' body and exit
        microcode addresses.
    lanes : LockstepLanes
        The LOCKSTEP layer (its next vector iteration starts ``lanes × step`` further).
    goto : callable
        ``goto(pc)`` writes the microcode address.
    prediction : (loop_continues, loop_body_pc, loop_exit_pc)
        The fetch stage's inputs (``hw/tmu/fetch.py``), driven here from registers only: whether
        the loop goes on, its body and its exit target (the outer layer's body or exit with
        ``next_outer``).
    ubits : int
        Bits of a microcode address.
    lbits : int
        Bits of a layer number.

    Members
    -------
    cont : Signal
        The layer's next index is below its upper bound (a register's value: no adder and no
        comparison in front of what the evaluation reads).
    exit_pc : Signal
        The layer's exit (where a fused ``NEXT`` leaving the range jumps).
    next_index : Signal(signed(66))
        The layer's next index (a LOCKSTEP layer's: the next vector iteration's lane 0).
    outer_index, outer_continues : Signal
        ``next_outer``: the outer layer's next index, and whether it is below its bound.
    lockstep : Value
        The ``NEXT`` steps the LOCKSTEP layer.
    next_vector : (Signal, Signal, Signal)
        That layer's next vector iteration, ``(first, count, span)``
        (``LockstepLanes.vector_iteration``).
    """

    def __init__(self, m, traversal, uop, registers, lanes, goto, prediction, ubits, lbits):
        idx, _, _, body_pc, exit_pc = registers    # (the next index and its comparison: idx)
        loop_continues, loop_body_pc, loop_exit_pc = prediction
        self._m, self._t, self._lanes, self._goto = m, traversal, lanes, goto

        layer_id = next_layer_of(uop)[:lbits]
        self._layer_id = layer_id
        self.next_index = next_index = Signal(signed(66), name="next_index")
        self.cont = cont = Signal(name="cont")
        following = pick(m, idx.next, layer_id, signed(66), "next_layer_next_index")
        in_range = pick(m, idx.continues, layer_id, 1, "next_layer_continues")
        self.body_pc = pick(m, body_pc, layer_id, ubits, "next_layer_body_pc")
        self.exit_pc = pick(m, exit_pc, layer_id, ubits, "next_layer_exit_pc")
        self.lockstep = lanes.on & (layer_id == lanes.layer_id)
        m.d.comb += [
            # A LOCKSTEP layer's next vector iteration starts lanes * step further.
            next_index.eq(Mux(self.lockstep, lanes.next_first, following)),
            cont.eq(Mux(self.lockstep, lanes.next_continues, in_range)),
            # The fetch stage's prediction.
            loop_continues.eq(self.lockstep | in_range),
            loop_body_pc.eq(self.body_pc),
        ]
        self._write_next = idx.writer(m, layer_id, next_index, "next_write")
        # The LOCKSTEP layer's next vector iteration (its active lanes), outside any condition.
        self.next_vector = lanes.vector_iteration(m, self.next_index, lanes.ub, "next_vector")

        # ``next_outer`` (docs/rtl.md §9.5 D): a NEXT leaving its layer's range performs the
        # NEXT of the layer before (never the LOCKSTEP layer, which is the last) in the same
        # cycle, instead of jumping to its exit, where that NEXT is.
        self._outer_id = outer_id = Signal(lbits, name="outer_id")
        m.d.comb += outer_id.eq(layer_id - 1)
        self._outer_index = outer_index = Signal(signed(66), name="outer_index")
        m.d.comb += outer_index.eq(pick(m, idx.next, outer_id, signed(66), "outer_layer_next"))
        self.outer_index = outer_index
        self.outer_continues = Signal(name="outer_continues")
        m.d.comb += self.outer_continues.eq(
            pick(m, idx.continues, outer_id, 1, "outer_layer_continues"))
        self._write_outer = idx.writer(m, outer_id, outer_index, "outer_write")
        self._outer_body_pc = pick(m, body_pc, outer_id, ubits, "outer_body_pc")
        self._outer_exit_pc = pick(m, exit_pc, outer_id, ubits, "outer_exit_pc")
        # The fetch stage's exit target: with ``next_outer``, the outer layer's body or exit
        # (from registers, as the outer NEXT decides it).
        m.d.comb += loop_exit_pc.eq(Mux(uop.next_outer,
                                        Mux(self.outer_continues, self._outer_body_pc,
                                            self._outer_exit_pc),
                                        self.exit_pc))

    def next_iteration(self):
        """The layer's next iteration: its index and a jump to its body (a LOCKSTEP layer's
        next vector iteration restarts at lane 0)."""
        m, lanes = self._m, self._lanes
        self._write_next()
        self._goto(self.body_pc)
        with m.If(self.lockstep):
            lanes.start_vector_iteration(m, self.next_vector)
            lanes.restart_lane(m)
            m.d.comb += self._t.stat_vec_iter.eq(1)

    def leave_layer(self, exit_pc, next_outer):
        """The layer's range is done: jump to ``exit_pc``, or with ``next_outer`` perform the
        outer layer's ``NEXT`` (its next iteration or its exit)."""
        m = self._m
        with m.If(next_outer):
            with m.If(self.outer_continues):
                self._write_outer()
                self._goto(self._outer_body_pc)
            with m.Else():
                self._goto(self._outer_exit_pc)
        with m.Else():
            self._goto(exit_pc)
