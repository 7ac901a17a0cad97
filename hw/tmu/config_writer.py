"""Configuration writer: fills the traversal's configuration from the checked descriptors and
classifies the streams and actions for the microcode builder (``docs/rtl.md`` §2.1)."""

from amaranth.hdl import Array, Cat, Const, Module, Mux, Signal, signed
from amaranth.lib import data, wiring
from amaranth.lib.wiring import In, Out

from .config import TmuConfig
from .isa import (ActionKind, ActionWord0, AluOp, Event, LayerMode, LayerWord0, LayerWord0V1,
                  MemMode, OperandWord0V1, SourceKind, StreamKind, StreamWord0)
from .chain import ChainDetect
from .chain_detect import ChainEngineDetect
from .layouts import LayerCfg
from .signatures import (CheckedProgramSignature, ConfigTablesSignature,
                         descriptor_stream, action_table_write_port, index_bits,
                         stream_table_write_port)
from .registered_products import power_of_two
from .source_fields import pick, source_imm, source_kind, source_number


__all__ = ["ConfigWriter"]


class ConfigWriter(wiring.Component):
    """Takes each checked phase-2 descriptor (one per cycle, ``descriptor.ready`` is always 1)
    and, in the same cycle:

    * layer: its ``LayerCfg`` register; a LOCKSTEP layer is remembered (``lockstep_*``);
    * region: base and size resolved from the argument registers (bytes);
    * stream: its ``StreamCfg`` into the stream configuration memory, and its classes:
      **blocking** (a layer bound or another stream reads it), **invariant** (an ALU/FWD stream
      whose sources are immediates, arguments, outer indices/streams or invariant streams of its
      layer), **affine** (a MEM stream whose base is invariant in its layer and whose element
      index is the layer's own index plus a constant ``c``: ``b = INDEX k``, or a stream
      ``ADD(INDEX k, IMM c)`` / ``FWD INDEX k`` of the same layer), and in a LOCKSTEP layer its
      lane coefficient or whether it is a contiguous vector load (``docs/rtl.md`` §9.3);
    * a MEM stream whose address reads the ``MUL`` stream just before it: the chained uop's
      strength-reduced fields and its **chain** class (``hw/tmu/chain.py``);
    * with a chain engine: a MEM stream whose index is an affine stream through up to two ALU
      operations, and that chain's configuration (``hw/tmu/chain_detect.py``);
    * the ALU/FWD streams that nothing reads except affine MEM streams through their ``b``
      (**skip candidates**: their ``STREAM`` uop may be dropped, ``docs/rtl.md`` §9.5 C);
    * the ALU/FWD streams whose ``a`` and ``b`` are the next layer's bounds (**enter bounds**,
      and whether swapped: that layer's ``ENTER`` may ride in their uop, §9.5 E);
    * action: its ``ActionCfg`` into the action configuration memory, its layer, event, kind,
      source, and the ISA v1 packer flush and vector flags. An ``OPERAND`` action reading a
      stream gets a copy of that stream's kind (MEM or not) and mode (``operand_mem``,
      ``operand_mode``): the program checker hands over every stream before the first action
      (phase 2 walks the sections in order), so the copy is the stream's final word.

    Parameters
    ----------
    config : TmuConfig

    Members
    -------
    start : In(1)
        Pulse: a decode starts; clears the classes.
    args : In(ArrayLayout(64, config.args))
        Argument registers (region bases and sizes; must not change during a decode).
    checked : In(CheckedProgramSignature(config))
        From the program checker: counts, version, layer modes, stream layers, BLOCK streams.
    descriptor : In(stream.Signature(CheckedDescriptor))
        Checked descriptors, phase 2, program order.
    tables : Out(ConfigTablesSignature(config))
        The layer and region registers and the classes, complete after the last descriptor.
    stream_table : In(memory.WritePort.Signature(stream bits, StreamCfg))
    action_table : In(memory.WritePort.Signature(action bits, ActionCfg))
        Writes into the stream and action configuration memories (one per descriptor).
    """

    def __init__(self, config):
        if not isinstance(config, TmuConfig):
            raise TypeError(f"config must be a TmuConfig, not {config!r}")
        self._cfg = config
        super().__init__({
            "start":        In(1),
            "args":         In(data.ArrayLayout(64, config.args)),
            "checked":      In(CheckedProgramSignature(config)),
            "descriptor":   In(descriptor_stream()),
            "tables":       Out(ConfigTablesSignature(config)),
            "stream_table": In(stream_table_write_port(config)),
            "action_table": In(action_table_write_port(config)),
        })

    def _detect_affine(self, m, d, w1, w2, kind, sub, layer, layer_of, idxplus, idxplus_c):
        """Stream ``d``: is it ``INDEX own + c``; is it a MEM stream whose address is
        ``a + (INDEX own + c) * stride`` with ``a`` invariant during its layer's traversal; is it
        an ALU/FWD stream whose value is invariant (it is then evaluated once per layer entry)?
        Returns whether ``d`` is affine through a stream (its ``b`` reads ``INDEX own + c``)."""
        sb = index_bits(self._cfg.streams)
        t = self.tables
        inv, cand = t.invariant, t.affine
        cand_c = Array(t.affine_offset[i] for i in range(self._cfg.streams))
        ka, va, kb, vb = source_kind(w1), source_number(w1), source_kind(w2), source_number(w2)

        def src_invariant(k_, v_):
            return ((k_ == SourceKind.IMM.value) | (k_ == SourceKind.ARG.value)
                    | ((k_ == SourceKind.INDEX.value) & (v_ < layer))
                    | ((k_ == SourceKind.STREAM.value)
                       & ((layer_of(v_) < layer)
                          | ((layer_of(v_) == layer) & inv.bit_select(v_[:sb], 1)))))

        with m.If(((kind == StreamKind.FWD.value) & src_invariant(ka, va))
                  | ((kind == StreamKind.ALU.value) & src_invariant(ka, va)
                     & src_invariant(kb, vb))):
            m.d.sync += inv.bit_select(d[:sb], 1).eq(1)
        imm_a, imm_b = source_imm(w1), source_imm(w2)
        own_a = (ka == SourceKind.INDEX.value) & (va == layer)
        own_b = (kb == SourceKind.INDEX.value) & (vb == layer)
        is_add = (kind == StreamKind.ALU.value) & (sub == 0)
        with m.If((kind == StreamKind.FWD.value) & own_a):
            m.d.sync += [idxplus.bit_select(d[:sb], 1).eq(1), idxplus_c[d[:sb]].eq(0)]
        with m.Elif(is_add & own_a & (kb == SourceKind.IMM.value)):
            m.d.sync += [idxplus.bit_select(d[:sb], 1).eq(1), idxplus_c[d[:sb]].eq(imm_b)]
        with m.Elif(is_add & own_b & (ka == SourceKind.IMM.value)):
            m.d.sync += [idxplus.bit_select(d[:sb], 1).eq(1), idxplus_c[d[:sb]].eq(imm_a)]
        invariant = src_invariant(ka, va)
        via = ((kb == SourceKind.STREAM.value) & idxplus.bit_select(vb[:sb], 1)
               & (layer_of(vb) == layer))
        is_mem = kind == StreamKind.MEM.value
        with m.If(is_mem & invariant & own_b):
            m.d.sync += [cand.bit_select(d[:sb], 1).eq(1), cand_c[d[:sb]].eq(0)]
        with m.Elif(is_mem & invariant & via):
            m.d.sync += [cand.bit_select(d[:sb], 1).eq(1),
                         cand_c[d[:sb]].eq(pick(m, idxplus_c, vb[:sb], signed(28),
                                                "idxplus_c_b"))]
        return is_mem & invariant & via

    def _detect_lanes(self, m, d, w1, w2, w3, kind, sub, layer, layer_of, lockstep, step):
        """Stream ``d`` of a LOCKSTEP layer: its lane coefficient ``c`` (lane ``l``'s value is
        lane 0's ``+ c * l * step``), and whether it is a contiguous vector MEM stream.

        Sources: ``INDEX`` of the layer has ``c = 1``; a stream of the layer has its own
        coefficient (a MEM stream of the layer has none: its value is loaded data); every other
        source is the same in all lanes (``c = 0``). ``ADD``/``SUB`` add/subtract coefficients,
        ``FWD`` keeps it, any other ALU op needs ``c = 0`` operands; a result outside -1..1 has
        none. A MEM stream is contiguous when ``a`` has ``c = 0``, ``b`` has ``c = +-1``, the
        layer's step is 1 and ``c * stride`` is the element size: lane ``l`` reads the element
        at lane 0's address ``+ l * size``."""
        sb = index_bits(self._cfg.streams)
        t = self.tables
        lane_ok = t.lane_affine
        S, I = SourceKind.STREAM.value, SourceKind.INDEX.value

        def coef(word):
            k_, v_ = source_kind(word), source_number(word)
            own_stream = (k_ == S) & (layer_of(v_) == layer)
            ok = ~own_stream | lane_ok.bit_select(v_[:sb], 1)
            c_ = Signal(signed(3), name="lane_coef")
            with m.If((k_ == I) & (v_ == layer)):
                m.d.comb += c_.eq(1)
            with m.Elif(own_stream & t.lane_pos.bit_select(v_[:sb], 1)):
                m.d.comb += c_.eq(1)
            with m.Elif(own_stream & t.lane_neg.bit_select(v_[:sb], 1)):
                m.d.comb += c_.eq(-1)
            return ok, c_

        oka, ca = coef(w1)
        okb, cb = coef(w2)
        is_fwd = kind == StreamKind.FWD.value
        is_alu = kind == StreamKind.ALU.value
        is_mem = kind == StreamKind.MEM.value
        res = Signal(signed(4), name="lane_coef_res")
        with m.If(is_fwd):
            m.d.comb += res.eq(ca)
        with m.Elif(sub == 0):                      # ADD
            m.d.comb += res.eq(ca + cb)
        with m.Elif(sub == 1):                      # SUB
            m.d.comb += res.eq(ca - cb)
        ok_alu = (oka & (is_fwd | okb) & (is_fwd | (sub <= 1) | ((ca == 0) & (cb == 0)))
                  & (res >= -1) & (res <= 1))
        bit = d[:sb]
        with m.If(lockstep & (is_alu | is_fwd) & ok_alu):
            m.d.sync += [lane_ok.bit_select(bit, 1).eq(1),
                         t.lane_pos.bit_select(bit, 1).eq(res == 1),
                         t.lane_neg.bit_select(bit, 1).eq(res == -1)]
        esize = Signal(signed(5), name="lane_esize")
        m.d.comb += esize.eq(Const(1, 5) << MemMode(sub).log2_size)
        stride = w3.as_signed()
        with m.If(lockstep & is_mem & oka & (ca == 0) & okb & (step == 1)
                  & (((cb == 1) & (stride == esize)) | ((cb == -1) & (stride == -esize)))):
            m.d.sync += t.contiguous_vector.bit_select(bit, 1).eq(1)

    @staticmethod
    def _mul_as_shift(m, w1, w2, kind, mode, resolve):
        """An ALU ``MUL`` of a stream (or index) by an IMM/ARG that is a positive power of two
        ``2**k`` (``k <= 62``), either order: ``(is, a, b)``, the ``SHL`` by ``IMM k`` of the
        other source. ``SHL``'s value and wrapped bit are ``MUL``'s for such a factor (docs/isa.md
        §1: the exact result ``x * 2**k`` outside the signed range is exactly ``(x << k) >> k
        != x``)."""
        IMM, ARG = SourceKind.IMM.value, SourceKind.ARG.value
        const_a = (source_kind(w1) == IMM) | (source_kind(w1) == ARG)
        const_b = (source_kind(w2) == IMM) | (source_kind(w2) == ARG)
        factor = Signal(signed(64), name="mul_constant")
        m.d.comb += factor.eq(resolve(Mux(const_a, w1, w2)))
        is_power, log2 = power_of_two(m, factor, "mul_constant")
        shift = Signal(name="mul_as_shift")
        m.d.comb += shift.eq((kind == StreamKind.ALU.value) & (mode == AluOp.MUL.value)
                             & (const_a ^ const_b) & is_power)
        return shift, Mux(const_a, w2, w1), Cat(log2, Const(0, 28 - len(log2)),
                                                  Const(IMM, 4))

    def elaborate(self, platform):
        m = Module()
        c = self._cfg
        sbits, abits, lbits = index_bits(c.streams), index_bits(c.actions), index_bits(c.layers)
        t = self.tables
        v1 = self.checked.version1
        layer_mode = Array(self.checked.layer_mode[i] for i in range(c.layers))
        stream_layer = Array(self.checked.stream_layer[i] for i in range(c.streams))
        act_layer = Array(t.act_layer[i] for i in range(c.actions))
        act_event = Array(t.act_event[i] for i in range(c.actions))
        act_sid = Array(t.act_stream[i] for i in range(c.actions))
        args = Array(self.args[i] for i in range(c.args))

        act_join = Signal(c.actions)
        act_last = Signal(c.actions)        # last OPERAND action of its (layer, event)
        m.d.comb += t.act_flush.eq(~act_join | act_last)
        # Streams whose value is ``INDEX own + c``.
        idxplus = Signal(c.streams)
        # Streams read by a bound, an OPERAND action, or a stream other than as the ``b`` of an
        # affine MEM stream (docs/rtl.md §9.5 C).
        read_other = Signal(c.streams)
        m.d.comb += t.skip_candidate.eq(~t.memory_stream & ~t.invariant & ~read_other)
        # Streams read by a bound, an OPERAND action, a BLOCK count, or a stream other than the
        # one with the next id (the chain engine's operation streams, §9.5 C).
        read_past_next = Signal(c.streams)
        if c.chain_engines:
            m.d.comb += t.chain_op_candidate.eq(~t.memory_stream & ~t.invariant
                                                & ~read_past_next)
        via_stream = Array(t.affine_via_stream[i] for i in range(c.streams))
        idxplus_c = Array(Signal(signed(28), name=f"idxplus_c_{i}") for i in range(c.streams))
        # Each stream's mode, for the copy into the actions that read it (with ``memory_stream``).
        stream_mode = Array(Signal(4, name=f"stream_mode_{i}") for i in range(c.streams))

        def layer_of(v):
            return pick(m, stream_layer, v, 8, "layer_of")

        s_kind, s_val = source_kind, source_number

        def resolve(word):
            """Value of an IMM or ARG source (regions)."""
            return Mux(s_kind(word) == SourceKind.ARG.value,
                       pick(m, args, s_val(word), 64, "arg"),
                       source_imm(word))

        def stream_bit(word):
            """One-hot of the stream a source reads, or 0."""
            return Mux(s_kind(word) == SourceKind.STREAM.value,
                       (Const(1, c.streams) << s_val(word))[:c.streams], 0)

        chain = ChainDetect(m, c, resolve, t.invariant, t.chain)
        chain_engine = (ChainEngineDetect(m, c, resolve, layer_of, t) if c.chain_engines
                        else None)

        with m.If(self.start):
            chain.clear()
            if chain_engine is not None:
                chain_engine.clear()
            m.d.sync += [t.blocking.eq(0), idxplus.eq(0), t.affine.eq(0), t.invariant.eq(0),
                         t.act_reads.eq(0), t.memory_stream.eq(0), t.act_control.eq(0),
                         act_join.eq(0), act_last.eq(0), t.lockstep_valid.eq(0),
                         t.act_vec.eq(0), t.lane_affine.eq(0), t.lane_pos.eq(0),
                         t.lane_neg.eq(0), t.contiguous_vector.eq(0), t.operand_read.eq(0),
                         read_other.eq(0), read_past_next.eq(0), t.affine_via.eq(0),
                         t.enter_bounds.eq(0), t.enter_swap.eq(0)]

        desc = self.descriptor.payload
        d = desc.number
        w0, w1, w2, w3 = (desc.words[i] for i in range(4))
        m.d.comb += self.descriptor.ready.eq(1)

        with m.If(self.descriptor.valid):
            with m.Switch(desc.section):
                with m.Case(0):
                    lw0, lw1 = LayerWord0(w0), LayerWord0V1(w0)
                    l_lockstep = v1 & (lw1.mode == LayerMode.LOCKSTEP.value)
                    layer = t.layers[d[:lbits]]
                    m.d.sync += [
                        layer.lb.eq(w1), layer.ub.eq(w2),
                        layer.step.eq(source_imm(w3)),
                        layer.check_order.eq(lw0.check_order),
                        layer.mode.eq(Mux(v1, lw1.mode, 0)),
                        layer.lanes_m1.eq(Mux(v1, lw1.lanes_m1, 0)),
                        t.lockstep_valid.eq(t.lockstep_valid | l_lockstep),
                        t.lockstep_layer.eq(Mux(l_lockstep, d, t.lockstep_layer)),
                        t.blocking.eq(t.blocking | stream_bit(w1) | stream_bit(w2)),
                        read_other.eq(read_other | stream_bit(w1) | stream_bit(w2)),
                        read_past_next.eq(read_past_next | stream_bit(w1) | stream_bit(w2)),
                    ]
                with m.Case(1):
                    region = t.regions[d[:index_bits(c.regions)]]
                    m.d.sync += [region.base.eq(resolve(w1)), region.size.eq(resolve(w2))]
                with m.Case(2):
                    sw0 = StreamWord0(w0)
                    st_layer, st_kind = sw0.layer, sw0.kind.as_value()
                    st_sub = sw0.mode
                    is_mem = st_kind == StreamKind.MEM.value
                    is_blk = is_mem & (MemMode(st_sub).reserved != 0)
                    # A MUL of a stream by a constant power of two is written as a SHL (the
                    # same value and wrapped bit, docs/isa.md §1): the traversal's MUL takes
                    # a registered product, two cycles (hw/tmu/registered_products.py).
                    shl, shl_a, shl_b = self._mul_as_shift(m, w1, w2, st_kind, st_sub, resolve)
                    m.d.comb += [
                        self.stream_table.addr.eq(d),
                        self.stream_table.en.eq(1),
                        self.stream_table.data.kind.eq(st_kind),
                        self.stream_table.data.mode.eq(Mux(shl, AluOp.SHL.value, st_sub)),
                        self.stream_table.data.region.eq(sw0.region),
                        self.stream_table.data.layer.eq(st_layer),
                        self.stream_table.data.a.eq(Mux(shl, shl_a, w1)),
                        self.stream_table.data.b.eq(Mux(shl, shl_b, w2)),
                        self.stream_table.data.stride.eq(w3),
                    ]
                    m.d.sync += [
                        t.blocking.eq(t.blocking | stream_bit(w1) | stream_bit(w2)
                                      | Mux(is_blk, stream_bit(w3), 0)),
                        t.memory_stream.bit_select(d[:sbits], 1).eq(is_mem),
                        stream_mode[d[:sbits]].eq(self.stream_table.data.mode),
                        t.global_base.bit_select(d[:sbits], 1).eq(
                            (s_kind(w1) == SourceKind.IMM.value)
                            | (s_kind(w1) == SourceKind.ARG.value)),
                    ]
                    via = self._detect_affine(m, d, w1, w2, st_kind, st_sub, st_layer,
                                              layer_of, idxplus, idxplus_c) & ~is_blk
                    m.d.sync += [
                        t.affine_via.bit_select(d[:sbits], 1).eq(via),
                        via_stream[d[:sbits]].eq(s_val(w2)),
                        read_other.eq(read_other | stream_bit(w1) | Mux(via, 0, stream_bit(w2))
                                      | Mux(is_blk, stream_bit(w3), 0)),
                        read_past_next.eq(read_past_next | Mux(is_blk, stream_bit(w3), 0)
                                          | ((stream_bit(w1) | stream_bit(w2))
                                             & ~(Const(1, c.streams + 1) << d)[1:c.streams + 1])),
                    ]
                    st_lockstep = (pick(m, layer_mode, st_layer[:lbits], 2, "st_mode")
                                   == LayerMode.LOCKSTEP.value)
                    # Fusion E (docs/rtl.md §9.5 E): an ALU/FWD stream whose ``a`` and ``b`` are
                    # the next layer's bounds (either order), neither of them the stream itself,
                    # can carry that layer's ENTER (layers are written before streams).
                    inner = (st_layer + 1)[:8]
                    inner_cfg = pick(m, Array(t.layers[i] for i in range(c.layers)),
                                     inner[:lbits], LayerCfg, "enter_layer_cfg")
                    lb_word, ub_word = inner_cfg.lb.as_value(), inner_cfg.ub.as_value()
                    reads_self = (stream_bit(w1) | stream_bit(w2)).bit_select(d[:sbits], 1)
                    in_order = (w1 == lb_word) & (w2 == ub_word)
                    swapped = (w1 == ub_word) & (w2 == lb_word)
                    m.d.sync += [
                        t.enter_bounds.bit_select(d[:sbits], 1).eq(
                            ~is_mem & (inner < self.checked.counts.layers) & ~reads_self
                            & (in_order | swapped)),
                        t.enter_swap.bit_select(d[:sbits], 1).eq(~in_order),
                    ]
                    chain.stream(d, w1, w2, w3, st_kind, st_sub, st_layer, st_lockstep,
                                 self.stream_table.data)
                    if chain_engine is not None:
                        chain_engine.stream(d, w1, w2, w3, st_kind, st_sub, st_layer,
                                            st_lockstep, sw0.region)
                    if c.has("lockstep"):
                        st_step = pick(m, Array(t.layers[i].step for i in range(c.layers)),
                                       st_layer[:lbits], signed(28), "st_step")
                        self._detect_lanes(m, d, w1, w2, w3, st_kind, st_sub, st_layer,
                                           layer_of, st_lockstep, st_step)
                with m.Case(3):
                    aw0, ow0 = ActionWord0(w0), OperandWord0V1(w0)
                    ac_layer, ac_event = aw0.layer, aw0.event.as_value()
                    ac_kind = aw0.kind.as_value()
                    is_op = ac_kind == ActionKind.OPERAND.value
                    is_ctl = ac_kind == ActionKind.CONTROL.value
                    is_iter = ac_event == Event.ITER.value
                    op_v1 = v1 & is_op
                    reads_stream = is_op & (s_kind(w1) == SourceKind.STREAM.value)
                    op_sid = s_val(w1)[:sbits]
                    m.d.comb += [
                        self.action_table.addr.eq(d),
                        self.action_table.en.eq(1),
                        self.action_table.data.kind.eq(ac_kind),
                        self.action_table.data.src.eq(w1),
                        self.action_table.data.pack.eq(Mux(op_v1, ow0.pack, 0)),
                        self.action_table.data.operand_mem.eq(
                            reads_stream & t.memory_stream.bit_select(op_sid, 1)),
                        self.action_table.data.operand_mode.eq(
                            Mux(reads_stream, pick(m, stream_mode, op_sid, 4, "operand_mode"), 0)),
                    ]
                    # The packer flushes after an OPERAND action without JOIN and after the
                    # last OPERAND action of a firing.
                    ac_lk = (pick(m, layer_mode, ac_layer[:lbits], 2, "ac_mode")
                             == LayerMode.LOCKSTEP.value)
                    a_k, a_v = s_kind(w1), s_val(w1)
                    m.d.sync += t.act_vec.bit_select(d[:abits], 1).eq(
                        is_op & is_iter & ac_lk
                        & (((a_k == SourceKind.INDEX.value) & (a_v == ac_layer))
                           | ((a_k == SourceKind.STREAM.value) & (layer_of(a_v) == ac_layer))))
                    with m.If(is_op):
                        m.d.sync += [
                            act_join.bit_select(d[:abits], 1).eq(op_v1 & ow0.join),
                            act_last.bit_select(d[:abits], 1).eq(1),
                        ]
                        for j_ in range(c.actions):
                            with m.If((j_ < d) & (act_layer[j_] == ac_layer)
                                      & (act_event[j_] == ac_event)):
                                m.d.sync += act_last[j_].eq(0)
                    m.d.sync += [
                        t.operand_read.eq(t.operand_read | Mux(is_op, stream_bit(w1), 0)),
                        read_other.eq(read_other | Mux(is_op, stream_bit(w1), 0)),
                        read_past_next.eq(read_past_next | Mux(is_op, stream_bit(w1), 0)),
                        act_layer[d].eq(ac_layer), act_event[d].eq(ac_event),
                        t.act_reads.bit_select(d[:abits], 1).eq(
                            is_op & (s_kind(w1) == SourceKind.STREAM.value)),
                        act_sid[d].eq(s_val(w1)),
                        t.act_control.bit_select(d[:abits], 1).eq(is_ctl),
                    ]
        return m
