"""The LOCKSTEP layer's lanes in the traversal (ISA v1, ``docs/isa.md`` §7.2, ``docs/rtl.md``
§9.3).

A LOCKSTEP layer runs ``lanes`` consecutive iterations as one *vector iteration*: ``first`` is
the index of lane 0, ``count`` the active lanes (those whose index is below the layer's upper
bound; the others are masked, the tail). The traversal runs such a layer in one of two ways:

* *vector mode* (the decoder found every stream lane-affine or a contiguous vector load,
  ``lockstep_vector_mode``): the streams are evaluated once per vector iteration at lane 0; a
  vector operand is lane 0's value ``+ c * lane * step`` (``lane_pos``/``lane_neg`` give ``c``);
* *lane by lane*: the body's streams are evaluated once per lane (``lane`` counts them, the
  lane's index is the layer's index), each lane's values written into a small memory (``vreg``,
  one word per stream and lane) which the vector operands then read lane by lane. The ``LANE``
  uop steps to the next lane; after the last lane it reports the first fault of the vector
  iteration in the golden model's stream-major order (lowest stream id, then lane; an address
  overflow of a stream before its other faults), then the iteration's ``ITER`` actions run.

Not a component: :class:`LockstepLanes` adds this logic to the traversal's ``Module``, as
:class:`~hw.tmu.engine_pop.EnginePops` does; the traversal calls its parts in this order
(``__init__``, ``add_lane_values``, ``add_lane_step``; ``record_fault`` and ``lane_step`` from
its FSM). The vector-mode address checks of a contiguous load and the last lane's wrap check
are part of the stream evaluation (``hw/tmu/stream_evaluation.py``).
"""

from amaranth.hdl import Cat, Const, Mux, Signal, signed
from amaranth.lib import memory

from .isa import FaultCode, SourceKind
from .layouts import LayerCfg
from .signatures import index_bits
from .source_fields import pick


__all__ = ["LockstepLanes"]


class LockstepLanes:
    """Lane state and lane-by-lane logic of the traversal's LOCKSTEP layer.

    Parameters
    ----------
    m : Module
        The traversal's module.
    traversal : Traversal
        Its configuration ports (``lockstep_layer``, ``lockstep_valid``, ``lockstep_vector_mode``,
        ``lane_pos``, ``lane_neg``, ``invariant``, ``act_vec``) are read here.
    layers : Array of LayerCfg
        The layer descriptors.
    upper_bounds : Array of Signal(signed(64))
        The layers' upper bounds (registers of the traversal).

    Attributes
    ----------
    enabled : bool
        The configuration has the ``"lockstep"`` feature (otherwise every signal here is 0).
    layer_id : Value
        The LOCKSTEP layer's id (``lockstep_layer``, cut to the layer-index width).
    on : Signal
        The program has a LOCKSTEP layer.
    first : Signal(signed(64))
        Register: the index of lane 0 of the current vector iteration.
    lane : Signal(8)
        Register: the lane being evaluated (lane by lane) or pushed (a vector operand); written
        only through :meth:`restart_lane` and :meth:`next_lane`.
    lane_offset : Signal(signed(40))
        Register: ``lane * step``, kept with ``lane`` (no multiplier after the ``lane``
        register).
    count : Signal(8)
        Register: the active lanes of the vector iteration (``1..lanes``), written with
        ``first`` (:meth:`start_vector_iteration`), so that no uop computes it from ``first``
        and the bound.
    span : Signal(signed(40))
        Register: ``(count - 1) * step``, the distance from lane 0's index to the last active
        lane's (the last lane's wrap check, ``hw/tmu/stream_evaluation.py``).
    cfg : Signal(LayerCfg)
        The LOCKSTEP layer's descriptor (``step``, ``lanes_m1``).
    vector_step : Signal(signed(40))
        Register: ``lanes × step``, from one vector iteration's lane 0 to the next one's
        (a product of configuration registers, registered: it is read a cycle after the
        configuration is written at the earliest, at the layer's ``ENTER``).
    lane_multiple : list of Value
        ``lane_multiple[l]`` is ``l × step`` (``signed(40)``), a register as ``vector_step``
        for ``l`` >= 1 (0 for lane 0): a vector iteration's lane ``l`` has index ``first +
        lane_multiple[l]``.
    next_first : Signal(signed(66))
        Register: ``first + vector_step``, the next vector iteration's lane 0 (exact), written
        with ``first`` (:meth:`start_vector_iteration`), so that the ``NEXT`` forwards a
        register (``hw/tmu/layer_indices.py`` keeps the other layers' next index the same way).
    next_continues : Signal
        Register: ``next_first`` is below the layer's upper bound.
    """

    def __init__(self, m, traversal, layers, upper_bounds):
        t = self._t = traversal
        c = self._c = traversal._cfg
        self.enabled = c.has("lockstep")
        # lanes, rounded up to a power of 2 (a stream's words in ``vreg``)
        self.lanes_pow2 = 1 << max(0, (c.lanes - 1).bit_length())
        self.lane_bits = max(1, (self.lanes_pow2 - 1).bit_length())
        self.layer_id = t.lockstep_layer[:index_bits(c.layers)]
        self.on = Signal(name="lockstep_on")
        self.first = Signal(signed(64), name="first")
        self.lane = Signal(8, name="lane")
        self.lane_offset = Signal(signed(40), name="lane_offset")
        self.count = Signal(8, name="count")
        self.span = Signal(signed(40), name="span")
        self.cfg = pick(m, layers, self.layer_id, LayerCfg, "lockstep_cfg")
        self.vector_step = Signal(signed(40), name="vector_step")
        m.d.sync += self.vector_step.eq((self.cfg.lanes_m1 + 1) * self.cfg.step)
        # l × step for each lane l: registers as ``vector_step`` (no multiplier in front of a
        # vector iteration's lane comparisons)
        self.lane_multiple = [Const(0, signed(40))]
        for l_ in range(1, c.lanes):
            multiple = Signal(signed(40), name=f"lane_multiple_{l_}")
            m.d.sync += multiple.eq(l_ * self.cfg.step)
            self.lane_multiple.append(multiple)
        self.next_first = Signal(signed(66), name="next_first")
        self.next_continues = Signal(name="next_continues")
        # The registers' writers, as ports (``docs/synthesis.md``, "The stream values' and
        # indices' write ports"): enables set where the writes happen, the values read in
        # :meth:`elaborate`.
        self._clear = Signal(name="lanes_clear")
        self._restart = Signal(name="lane_restart")
        self._next = Signal(name="lane_next")
        self._iterations = []           # (enable, iteration), by priority
        self.ub = pick(m, upper_bounds, self.layer_id, signed(64), "lockstep_ub")
        if self.enabled:
            m.d.comb += self.on.eq(t.lockstep_valid)

    def clear(self, m):
        """At a start (inside its condition): nothing of an earlier run survives (lane, vector
        iteration, recorded lane fault)."""
        m.d.comb += self._clear.eq(1)
        m.d.sync += self.lf_valid.eq(0)

    def restart_lane(self, m):
        """Inside the condition: lane 0 next cycle."""
        m.d.comb += self._restart.eq(1)

    def next_lane(self, m):
        """Inside the condition: the next lane next cycle (``lane + 1``, ``lane_offset +
        step``); it wins over a :meth:`restart_lane` of the same cycle, as the later statement
        did when the two were written where they happen (an action's last lane, then a fused
        lane step; the decoder is not known to build such a uop)."""
        m.d.comb += self._next.eq(1)

    def vector_iteration(self, m, first, ub, name):
        """The registers of a vector iteration whose lane 0 has index ``first`` (truncated to
        64 bits, as the register keeps it) under the upper bound ``ub``: ``(first, count,
        span, next_first, next_continues)``, ``count`` the lanes ``l <= lanes_m1`` with
        ``first + l * step < ub``, ``next_first = first + vector_step`` (the iteration after
        it) and ``next_continues = next_first < ub``. Call it
        outside any ``If`` (the logic must not depend on when it is used: an assignment inside
        a condition would put that condition in front of the adders), then
        :meth:`start_vector_iteration` where it starts."""
        first_ = Signal(signed(64), name=f"{name}_first")
        count = Signal(8, name=f"{name}_count")
        span = Signal(signed(40), name=f"{name}_span")
        next_first = Signal(signed(66), name=f"{name}_next_first")
        next_continues = Signal(name=f"{name}_next_continues")
        m.d.comb += first_.eq(first)
        if not self.enabled:
            return first_, count, span, next_first, next_continues
        m.d.comb += [next_first.eq(first_ + self.vector_step),
                     next_continues.eq(next_first < ub)]
        active_bits = []
        for l_ in range(self._c.lanes):
            a_ = Signal(name=f"{name}_lane_active_{l_}")
            m.d.comb += a_.eq((first_ + self.lane_multiple[l_] < ub) & (l_ <= self.cfg.lanes_m1))
            active_bits.append(a_)
        m.d.comb += count.eq(sum(active_bits))
        # (count - 1) * step as a select of the lanes' multiples of step (registers): no
        # multiplier after the population count.
        span_ = -self.cfg.step                # count 0 (never in a vector iteration)
        for k in range(1, self._c.lanes + 1):
            span_ = Mux(count == k, self.lane_multiple[k - 1], span_)
        m.d.comb += span.eq(span_)
        return first_, count, span, next_first, next_continues

    def start_vector_iteration(self, m, iteration):
        """Inside the condition: the vector iteration ``iteration`` (from
        :meth:`vector_iteration`) starts next cycle: ``first``, ``count``, ``span``,
        ``next_first`` and ``next_continues`` written (a port per iteration: its enable set
        here, its values read by :meth:`elaborate`, outside any condition)."""
        for enable, started in self._iterations:
            if started[0] is iteration[0]:
                break
        else:
            enable = Signal(name=f"{iteration[0].name}_start")
            self._iterations.append((enable, iteration))
        m.d.comb += enable.eq(1)

    def elaborate(self, m):
        """Sync: the lane's and the vector iteration's registers from their writers (call
        after every write is placed). A start's clear wins; then a later iteration's port over
        an earlier one's (an ``ENTER``'s and a ``NEXT``'s never start together)."""
        registers = (self.first, self.count, self.span, self.next_first, self.next_continues)
        following = list(registers)
        for enable, iteration in self._iterations:
            following = [Mux(enable, new, old) for new, old in zip(iteration, following)]
        if not self.enabled:
            registers, following = registers[:1], following[:1]
        m.d.sync += [r.eq(Mux(self._clear, 0, f)) for r, f in zip(registers, following)]
        m.d.sync += [
            self.lane.eq(Mux(self._clear, 0, Mux(self._next, self.lane + 1,
                                                 Mux(self._restart, 0, self.lane)))),
            self.lane_offset.eq(Mux(self._clear, 0, Mux(
                self._next, self.lane_offset + self.cfg.step,
                Mux(self._restart, 0, self.lane_offset)))),
        ]

    def add_lane_values(self, m, uop, action, operand_value, stream_result, o_vector_load):
        """The lane values of the layer's streams (``vreg``, written as each lane is evaluated)
        and the value of a vector operand's lane (the ``ITER`` actions that push a vector: one
        reorder-buffer entry per lane, lane by lane, ``lane`` counting them; a masked lane is
        an immediate 0).

        ``action``: the first action's ``ActionCfg``; ``operand_value``: its source's value
        (lane 0's in vector mode); ``stream_result``: the evaluated stream's value;
        ``o_vector_load``: the action is a contiguous vector load (a row, not lane by lane).

        Sets ``o_vector`` (the first action is a vector operand), ``o_lane`` (... pushed lane by
        lane), ``v_active``/``v_last`` (the lane is active / the last one), ``v_val`` (the
        lane's value, 64-bit) and ``vreg_w`` (the lane-value memory's write port: the traversal
        enables it when a lane's value is kept).
        """
        t, c = self._t, self._c
        sbits = index_bits(c.streams)
        lane, count, cfg = self.lane, self.count, self.cfg
        self.o_vector = o_vector = Signal(name="o_vector")
        self.v_active = v_active = Signal(name="v_active")
        self.v_last = v_last = Signal(name="v_last")
        self.v_val = v_val = Signal(signed(64), name="v_val")
        # a vector operand pushed lane by lane (one entry per lane)
        self.o_lane = o_lane = Signal(name="o_lane")
        m.d.comb += o_lane.eq(o_vector & ~o_vector_load)
        self.vreg_w = None
        if self.enabled:
            m.submodules.vreg = vreg = memory.Memory(shape=64, depth=c.streams * self.lanes_pow2,
                                                     init=[])
            self.vreg_w = vreg_w = vreg.write_port()
            vreg_r = vreg.read_port(domain="comb")
            m.d.comb += [
                vreg_w.addr.eq(Cat(lane[:self.lane_bits], uop.id[:sbits])),
                vreg_w.data.eq(stream_result),
                o_vector.eq(t.act_vec.bit_select(t.acfg_addr, 1)),
                vreg_r.addr.eq(Cat(lane[:self.lane_bits], action.src.value[:sbits])),
                v_active.eq(lane < count),
                v_last.eq(lane == cfg.lanes_m1),
            ]
            # Vector mode: lane ``l`` of a stream is lane 0's value (``op_v``) + c * l * step.
            o_stream_id = action.src.value[:sbits]
            lane_off = self.lane_offset          # lane * step, a register
            v_fast = operand_value + Mux(t.lane_pos.bit_select(o_stream_id, 1), lane_off,
                                         Mux(t.lane_neg.bit_select(o_stream_id, 1), -lane_off, 0))
            vstream = Mux(t.invariant.bit_select(o_stream_id, 1), operand_value,
                          Mux(t.lockstep_vector_mode, v_fast, vreg_r.data))
            m.d.comb += v_val.eq(Mux(~v_active, 0,
                                     Mux(action.src.kind == SourceKind.STREAM, vstream,
                                         self.first + lane_off)))

    def add_lane_step(self, m, body_pc, indices):
        """The lane stepping of the ``LANE`` uop and the vector iteration's recorded fault.

        ``body_pc``: the layers' body addresses (``Array``); ``indices``: the layers' index
        registers (:class:`~hw.tmu.layer_indices.LayerIndices`: the next lane's index is the
        layer's next index). Sets ``more_lanes`` (another active
        lane follows) and the recorded fault ``lf_valid``, ``lf_sid`` (its stream), ``lf_code``,
        ``lf_addr`` (registers; ``lf_valid`` is cleared when the layer is entered).
        """
        # LOCKSTEP faults: lanes are evaluated lane by lane, the golden model stream by stream
        # (docs/isa.md §7.2), so the first fault in its order is the one of the lowest stream id
        # (then lane) among the vector iteration's faults; it is reported at the LANE uop,
        # before any ITER action of the iteration fires.
        self.lf_valid = Signal(name="lf_valid")
        self.lf_sid = Signal(8, name="lf_sid")
        self.lf_code = Signal(FaultCode, name="lf_code")
        self.lf_addr = Signal(64, name="lf_addr")
        self.body_pc = pick(m, body_pc, self.layer_id, index_bits(self._c.ucode_depth),
                             "lockstep_body_pc")
        self.more_lanes = Signal(name="more_lanes")
        m.d.comb += self.more_lanes.eq(self.lane + 1 < self.count)
        self._write_lane_index = indices.writer(
            m, self.layer_id, pick(m, indices.next, self.layer_id, signed(66), "lane_next_index"),
            "lane_step")

    def record_fault(self, m, stream_id, code, fault_addr):
        """A lane's fault (lane by lane): keep it if it comes first in the golden model's order
        — the lowest stream id; within one stream an address overflow (checked over all lanes
        first), then the first faulting lane."""
        with m.If(~self.lf_valid | (stream_id < self.lf_sid)
                  | ((stream_id == self.lf_sid) & (code == FaultCode.ADDR_OVERFLOW)
                     & (self.lf_code != FaultCode.ADDR_OVERFLOW))):
            m.d.sync += [self.lf_valid.eq(1), self.lf_sid.eq(stream_id),
                         self.lf_code.eq(code), self.lf_addr.eq(fault_addr)]

    def lane_step(self, m, goto, pc, stream_id, stop, cur_fault=None, code=None,
                  fault_addr=None):
        """``LANE``: the next active lane, or (after the last) the first fault of the vector
        iteration in the golden model's order, or its ITER actions (``pc + 1``).

        ``goto(target)``: writes the traversal's microcode address ``pc`` (a register);
        ``stop(code, addr, stream_id)``: stops the run with a fault of that stream.
        ``cur_fault``: the uop's own lane fault of this cycle (a fused ``LANE``), not yet
        recorded, with its ``code`` and ``fault_addr``; ``stream_id``: the uop's stream."""
        lf_valid, lf_code, lf_addr = self.lf_valid, self.lf_code, self.lf_addr
        with m.If(self.more_lanes):
            self.next_lane(m)
            self._write_lane_index()
            goto(self.body_pc)
        if cur_fault is not None:
            # This last lane's address overflow beats a recorded fault of the same stream
            # (the golden model checks overflow over all lanes first).
            with m.Elif(cur_fault & lf_valid & (stream_id == self.lf_sid)
                        & (code == FaultCode.ADDR_OVERFLOW)
                        & (lf_code != FaultCode.ADDR_OVERFLOW)):
                stop(code, fault_addr, stream_id)
        with m.Elif(lf_valid):
            stop(lf_code, lf_addr, self.lf_sid)
        if cur_fault is not None:
            with m.Elif(cur_fault):
                stop(code, fault_addr, stream_id)
        with m.Else():
            self.restart_lane(m)
            goto(pc + 1)
