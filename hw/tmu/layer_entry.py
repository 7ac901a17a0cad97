"""A layer's ``ENTER`` in the traversal (``docs/isa.md`` §1 "Execution order", ``docs/rtl.md``
§2.2 and §9.5 B/E): its own uop, one fused into a ``STREAM`` uop (``fuse_enter``) or one left
pending after its stream and actions completed (``enter_pending``).

An ``ENTER`` of layer ``k`` with bounds ``[lb, ub)`` (``StreamEvaluation.enter_layer``,
``enter_lb``, ``enter_ub``: from the uop's sources, held with two stages) either faults
``RANGE_ORDER`` (address ``k``) when the layer checks the order and ``ub < lb``, or completes:
``index[k] = lb``, ``ub[k] = ub``, and ``pc`` moves to the body (``pc + 1``) for a non-empty
range or to the layer's exit for an empty one. A non-empty range starts the layer's armed
run-ahead engines (``Uop.start_engines``) in the same cycle; while one of them is not
``idle`` the uop waits, as a ``PREFETCH`` does, and a fused ``ENTER`` then stays with only its
``ENTER`` left. Entering the LOCKSTEP layer starts its first vector iteration and lane 0.

Not a component: :class:`LayerEntry` adds its logic to the traversal's ``Module``.
"""

from amaranth.hdl import Mux, Signal

from .isa import FaultCode
from .source_fields import pick


__all__ = ["LayerEntry"]


class LayerEntry:
    """The ``ENTER`` of ``stream.enter_layer``, built once for all three ways a uop enters a
    layer.

    Parameters
    ----------
    m : Module
        The traversal's module.
    traversal : Traversal
        Its ports: ``prefetch_idle``, ``prefetch_start``, ``stat_vec_iter``.
    uop : Uop view
        The executed uop (its ``start_engines``).
    stream : StreamEvaluation
        The bounds (``enter_layer``, ``enter_lb``, ``enter_ub``) and the layer's
        configuration (``lay.check_order``).
    lanes : LockstepLanes
        The LOCKSTEP layer's lanes.
    registers : (LayerIndices, Array)
        The layers' index registers (:class:`~hw.tmu.layer_indices.LayerIndices`, with their
        upper bounds) and exit addresses (``exit_pc``).
    pc : Signal
        The microcode address.
    pending : Signal
        The traversal's ``enter_pending`` register (cleared when an ``ENTER`` completes).
    enter_vector : tuple
        The LOCKSTEP layer's first vector iteration from the bounds
        (``LockstepLanes.vector_iteration``).

    Attributes
    ----------
    nonempty, order_fault, starts, can_start, target, commit : Signal
        ``lb < ub``; the ``RANGE_ORDER`` fault; the engines a non-empty range starts; none of
        them is busy; where ``pc`` goes; the ``ENTER`` completes this cycle (driven by
        :meth:`enter`).
    """

    def __init__(self, m, traversal, uop, stream, lanes, registers, pc, pending, enter_vector):
        t = traversal
        indices, exit_pc = registers
        k, lb, ub = stream.enter_layer, stream.enter_lb, stream.enter_ub
        engines, ubits = len(t.prefetch_idle), len(pc)
        self.layer = k
        self.pending = pending
        self.nonempty = Signal(name="enter_nonempty")
        self.order_fault = Signal(name="enter_order_fault")
        self.starts = Signal(engines, name="enter_starts")
        self.can_start = Signal(name="enter_can_start")
        self.target = Signal(ubits, name="enter_target")
        self.commit = Signal(name="enter_commit")
        m.d.comb += [
            self.nonempty.eq(lb < ub),
            self.order_fault.eq(stream.lay.check_order & (ub < lb)),
            self.starts.eq(Mux(self.nonempty, uop.start_engines[:engines], 0)),
            self.can_start.eq((self.starts & ~t.prefetch_idle) == 0),
            self.target.eq(Mux(self.nonempty, pc + 1, pick(m, exit_pc, k, ubits, "k_exit"))),
        ]
        write_bounds = indices.writer(m, k, lb, "enter_write", ub=ub)
        with m.If(self.commit):
            m.d.comb += t.prefetch_start.eq(self.starts)
            write_bounds()
            m.d.sync += pending.eq(0)
            with m.If(lanes.on & (k == lanes.layer_id)):
                lanes.start_vector_iteration(m, enter_vector)
                lanes.restart_lane(m)
                m.d.sync += lanes.lf_valid.eq(0)
                m.d.comb += t.stat_vec_iter.eq(self.nonempty)
        self._m = m

    def enter(self, fused, stop, goto, pop_clear):
        """In the traversal's current condition: the ``ENTER`` completes (``commit``, ``goto``
        the target) unless its range is reversed (``stop`` with ``RANGE_ORDER``); while one of
        the engines it starts may not start yet (``idle``, as a ``PREFETCH`` waits) the uop
        stays, and for a fused ``ENTER`` (``fused``: its stream and actions completed this
        cycle) only the ``ENTER`` is left (``pending`` set, ``pop_clear`` held at 0: the pops
        stay done)."""
        m = self._m
        with m.If(self.order_fault):
            stop(FaultCode.RANGE_ORDER, self.layer)
        with m.Elif(self.can_start):
            m.d.comb += self.commit.eq(1)
            goto(self.target)
        with m.Else():
            if fused:
                m.d.comb += pop_clear.eq(0)
                m.d.sync += self.pending.eq(1)
