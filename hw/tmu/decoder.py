"""Program decoder: checks an access program and fills the configuration and the microcode."""

from amaranth.hdl import Array, Const, Module, Mux, Signal, signed
from amaranth.lib import data, wiring
from amaranth.lib.wiring import In, Out

from .config import TmuConfig
from .isa import (MAGIC, VERSION, VERSION_V1, DONE_TOKEN, HEADER_WORDS, ActionKind, ActionWord0,
                  ArgsWord, ControlWord1, CountsWord, Event, FaultCode, LayerMode, LayerWord0,
                  LayerWord0V1, MemMode, OperandWord0V1, RegionWord0, Source, SourceKind,
                  StreamKind, StreamWord0, VersionWord)
from .layouts import ActionCfg, LayerCfg, RegionCfg, StreamCfg, Uop, UopKind


__all__ = ["Decoder"]


def _pick(m, array, index, shape, name):
    """``array[index]`` as a signal (operations on an ``Array`` proxy would be replicated)."""
    sig = Signal(shape, name=name)
    m.d.comb += sig.eq(array[index])
    return sig


def _src_kind(word):
    """Kind of a source word, as a plain value (4..15 are illegal)."""
    return Source(word).kind.as_value()


def _src_num(word):
    """Argument, stream or layer number of a non-IMM source (bits [27:8] are reserved)."""
    return Source(word).value[:8]


def _src_imm(word):
    """The signed immediate of an IMM source."""
    return Source(word).value.as_signed()


def _first(conds):
    """Priority encoder over ``[(condition, pc_offset[, fault code]), ...]`` (code default
    ``ILLEGAL_FIELD``): (any, offset of the first, its code)."""
    err = Const(0)
    off = Const(0, 2)
    code = Const(FaultCode.ILLEGAL_FIELD.value, 8)
    for entry in reversed(conds):
        cond, o = entry[0], entry[1]
        fc = entry[2] if len(entry) > 2 else FaultCode.ILLEGAL_FIELD
        err = cond | err
        off = Mux(cond, o, off)
        code = Mux(cond, fc.value, code)
    return err, off, code


class Decoder(wiring.Component):
    """Reads the program from the program memory, checks it, configures the traversal.

    The checks and their order are those of ``sw.runtime.isa.Program.decode`` (which implements
    ``docs/isa.md``): the header; then phase 1, every descriptor in program order, field checks
    (ids, kinds, reserved bits, source kinds); then phase 2, every descriptor in program order,
    semantic checks (visibility of sources, ranges of layer/region/argument numbers, ``step``).
    The first failing check stops the decoder with its fault code and PC. Phase 3 builds the
    traversal microcode (``docs/rtl.md``).

    Each descriptor takes 6 cycles per phase (5 to read its 4 words, 1 to check); the microcode
    build about ``n_layers * (n_streams + 3 * n_actions)`` cycles.

    Parameters
    ----------
    config : TmuConfig

    Members
    -------
    start : In(1)
        Pulse: decode the program now in the program memory.
    prog_len : In(32)
        Program length in bytes (``PROG_LEN``).
    args : In(ArrayLayout(64, config.args))
        Argument registers (region bases and sizes are resolved at decode time).
    prog_addr : Out(range(program memory depth))
        Program memory word address; ``prog_data`` is the word the cycle after.
    prog_data : In(32)
    done : Out(1)
        Pulse: decoding finished; ``fault``/``fault_code``/``fault_pc`` valid in the same cycle.
    fault, fault_code, fault_pc : Out
    layers, regions, blocking, body_pc, exit_pc : Out
        Configuration registers, valid after a ``done`` without ``fault``.
    scfg_w_*, acfg_w_*, ucode_w_* : Out
        Write ports into the stream/action configuration memories and the microcode memory.
    """

    def __init__(self, config):
        if not isinstance(config, TmuConfig):
            raise TypeError(f"config must be a TmuConfig, not {config!r}")
        self._cfg = config
        c = config
        self._pbits = max(1, (c.program_words - 1).bit_length())
        self._ubits = max(1, (c.ucode_depth - 1).bit_length())
        self._sbits = max(1, (c.streams - 1).bit_length())
        self._abits = max(1, (c.actions - 1).bit_length())
        self._engines = max(1, c.prefetchers)
        self._ebits = max(1, (self._engines - 1).bit_length())
        super().__init__({
            "start":      In(1),
            "prog_len":   In(32),
            "args":       In(data.ArrayLayout(64, c.args)),
            "prog_addr":  Out(self._pbits),
            "prog_data":  In(32),
            "busy":       Out(1),
            "done":       Out(1),
            "fault":      Out(1),
            "fault_code": Out(FaultCode),
            "fault_pc":   Out(32),
            "layers":     Out(data.ArrayLayout(LayerCfg, c.layers)),
            "regions":    Out(data.ArrayLayout(RegionCfg, c.regions)),
            "blocking":   Out(c.streams),
            "body_pc":    Out(data.ArrayLayout(self._ubits, c.layers)),
            "exit_pc":    Out(data.ArrayLayout(self._ubits, c.layers)),
            "scfg_w_addr": Out(self._sbits),
            "scfg_w_data": Out(StreamCfg),
            "scfg_w_en":   Out(1),
            "acfg_w_addr": Out(self._abits),
            "acfg_w_data": Out(ActionCfg),
            "acfg_w_en":   Out(1),
            "ucode_w_addr": Out(self._ubits),
            "ucode_w_data": Out(Uop),
            "ucode_w_en":   Out(1),
            # Run-ahead engines: which stream each serves, and each stream's engine.
            "prefetch_valid":         Out(self._engines),
            "prefetch_stream":        Out(data.ArrayLayout(8, self._engines)),
            "prefetch_layer":         Out(data.ArrayLayout(8, self._engines)),
            "prefetch_offset":        Out(data.ArrayLayout(signed(28), self._engines)),
            "stream_prefetched":      Out(c.streams),
            "stream_prefetch_engine": Out(data.ArrayLayout(self._ebits, c.streams)),
            # ISA v1: the data-queue packer flushes after these actions' last element (an
            # OPERAND action without JOIN, or the last OPERAND action of its firing).
            "act_flush":    Out(c.actions),
            # ISA v1 LOCKSTEP: the layer (at most one, the last), the ITER actions that push a
            # vector (its INDEX or one of its streams), and the streams evaluated once per entry.
            "lockstep_valid": Out(1),
            "lockstep_layer": Out(8),
            "act_vec":        Out(c.actions),
            "invariant":      Out(c.streams),
            # ISA v1 LOCKSTEP *vector mode* (docs/rtl.md §9.3): every stream of the layer is
            # lane-affine (ALU/FWD: lane l's value is lane 0's + c * l * step, c in -1, 0, +1,
            # ``lane_pos``/``lane_neg`` give c = +1/-1) or a contiguous vector MEM stream that
            # only actions read (``contiguous_vector``: lane l loads the element after lane
            # l-1's), so the layer is evaluated once per vector iteration instead of lane by lane.
            "lockstep_vector_mode": Out(1),
            "lane_pos":             Out(c.streams),
            "lane_neg":             Out(c.streams),
            "contiguous_vector":    Out(c.streams),
        })

    def _detect_affine(self, m, d, w1, w2, kind, sub, layer, layer_of, idxplus, idxplus_c,
                       cand, cand_c, inv):
        """Phase 2, stream ``d``: is it ``INDEX own + c``; is it a MEM stream whose address is
        ``a + (INDEX own + c) * stride`` with ``a`` invariant during its layer's traversal; is it
        an ALU/FWD stream whose value is invariant (it is then evaluated once per layer entry)?"""
        ka, va, kb, vb = _src_kind(w1), _src_num(w1), _src_kind(w2), _src_num(w2)

        def src_invariant(k_, v_):
            return ((k_ == SourceKind.IMM.value) | (k_ == SourceKind.ARG.value)
                    | ((k_ == SourceKind.INDEX.value) & (v_ < layer))
                    | ((k_ == SourceKind.STREAM.value)
                       & ((layer_of(v_) < layer)
                          | ((layer_of(v_) == layer) & inv.bit_select(v_[:self._sbits], 1)))))

        with m.If(((kind == StreamKind.FWD.value) & src_invariant(ka, va))
                  | ((kind == StreamKind.ALU.value) & src_invariant(ka, va)
                     & src_invariant(kb, vb))):
            m.d.sync += inv.bit_select(d[:self._sbits], 1).eq(1)
        imm_a, imm_b = _src_imm(w1), _src_imm(w2)
        own_a = (ka == SourceKind.INDEX.value) & (va == layer)
        own_b = (kb == SourceKind.INDEX.value) & (vb == layer)
        is_add = (kind == StreamKind.ALU.value) & (sub == 0)
        with m.If((kind == StreamKind.FWD.value) & own_a):
            m.d.sync += [idxplus.bit_select(d[:self._sbits], 1).eq(1),
                         idxplus_c[d[:self._sbits]].eq(0)]
        with m.Elif(is_add & own_a & (kb == SourceKind.IMM.value)):
            m.d.sync += [idxplus.bit_select(d[:self._sbits], 1).eq(1),
                         idxplus_c[d[:self._sbits]].eq(imm_b)]
        with m.Elif(is_add & own_b & (ka == SourceKind.IMM.value)):
            m.d.sync += [idxplus.bit_select(d[:self._sbits], 1).eq(1),
                         idxplus_c[d[:self._sbits]].eq(imm_a)]
        invariant = src_invariant(ka, va)
        via = ((kb == SourceKind.STREAM.value) & idxplus.bit_select(vb[:self._sbits], 1)
               & (layer_of(vb) == layer))
        is_mem = kind == StreamKind.MEM.value
        with m.If(is_mem & invariant & own_b):
            m.d.sync += [cand.bit_select(d[:self._sbits], 1).eq(1),
                         cand_c[d[:self._sbits]].eq(0)]
        with m.Elif(is_mem & invariant & via):
            m.d.sync += [cand.bit_select(d[:self._sbits], 1).eq(1),
                         cand_c[d[:self._sbits]].eq(
                             _pick(m, idxplus_c, vb[:self._sbits], signed(28), "idxplus_c_b"))]

    def _detect_lanes(self, m, d, w1, w2, w3, kind, sub, layer, layer_of, lockstep, step,
                      lane_ok):
        """Phase 2, stream ``d`` of a LOCKSTEP layer: its lane coefficient ``c`` (lane ``l``'s
        value is lane 0's ``+ c * l * step``), and whether it is a contiguous vector MEM stream.

        Sources: ``INDEX`` of the layer has ``c = 1``; a stream of the layer has its own
        coefficient (a MEM stream of the layer has none: its value is loaded data); every other
        source is the same in all lanes (``c = 0``). ``ADD``/``SUB`` add/subtract coefficients,
        ``FWD`` keeps it, any other ALU op needs ``c = 0`` operands; a result outside -1..1 has
        none. A MEM stream is contiguous when ``a`` has ``c = 0``, ``b`` has ``c = +-1``, the
        layer's step is 1 and ``c * stride`` is the element size: lane ``l`` reads the element
        at lane 0's address ``+ l * size``."""
        sb = self._sbits
        S, I = SourceKind.STREAM.value, SourceKind.INDEX.value

        def coef(word):
            k_, v_ = _src_kind(word), _src_num(word)
            own_stream = (k_ == S) & (layer_of(v_) == layer)
            ok = ~own_stream | lane_ok.bit_select(v_[:sb], 1)
            c_ = Signal(signed(3), name="lane_coef")
            with m.If((k_ == I) & (v_ == layer)):
                m.d.comb += c_.eq(1)
            with m.Elif(own_stream & self.lane_pos.bit_select(v_[:sb], 1)):
                m.d.comb += c_.eq(1)
            with m.Elif(own_stream & self.lane_neg.bit_select(v_[:sb], 1)):
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
                         self.lane_pos.bit_select(bit, 1).eq(res == 1),
                         self.lane_neg.bit_select(bit, 1).eq(res == -1)]
        esize = Signal(signed(5), name="lane_esize")
        m.d.comb += esize.eq(Const(1, 5) << MemMode(sub).log2_size)
        stride = w3.as_signed()
        with m.If(lockstep & is_mem & oka & (ca == 0) & okb & (step == 1)
                  & (((cb == 1) & (stride == esize)) | ((cb == -1) & (stride == -esize)))):
            m.d.sync += self.contiguous_vector.bit_select(bit, 1).eq(1)

    def elaborate(self, platform):
        m = Module()
        c = self._cfg

        # Header counts.
        nl    = Signal(8)
        nr    = Signal(8)
        ns    = Signal(8)
        na    = Signal(8)
        nargs = Signal(8)

        # Walker over the descriptors: section (0 layers, 1 regions, 2 streams, 3 actions),
        # descriptor number within the section, its first word, the phase (1 or 2).
        section   = Signal(2)
        d     = Signal(8)
        dbase = Signal(16)
        phase = Signal(2)
        fw    = Signal(3)               # word being fetched, 0..4
        w     = Array(Signal(32, name=f"w{i}") for i in range(4))   # staged descriptor words

        stream_layer = Array(Signal(8, name=f"stream_layer_{i}") for i in range(c.streams))
        act_layer    = Array(Signal(8, name=f"act_layer_{i}") for i in range(c.actions))
        act_event    = Array(Signal(2, name=f"act_event_{i}") for i in range(c.actions))
        # An action that reads a stream (which one), and the MEM streams: an OPERAND of a
        # non-blocking MEM stream issues a load, every other action is an immediate token.
        act_reads    = Signal(c.actions)
        act_ctl      = Signal(c.actions)
        act_sid      = Array(Signal(8, name=f"act_sid_{i}") for i in range(c.actions))
        stream_mem   = Signal(c.streams)
        # Streams an OPERAND action reads, and streams whose ``a`` is an IMM or ARG (constant
        # during the whole run): a lazy affine load of such a stream may get a spare run-ahead
        # engine (second pass of B_ASSIGN).
        operand_read = Signal(c.streams)
        global_base  = Signal(c.streams)
        assign_pass  = Signal()
        # ISA v1.
        v1           = Signal()             # the program is version 1
        layer_mode   = Array(Signal(2, name=f"layer_mode_{i}") for i in range(c.layers))
        stream_blk   = Signal(c.streams)    # BLOCK memory streams
        act_join     = Signal(c.actions)
        act_last     = Signal(c.actions)    # last OPERAND action of its (layer, event)
        m.d.comb += self.act_flush.eq(~act_join | act_last)

        # Phase 2: streams whose value is ``INDEX own + c`` and MEM streams affine in their index.
        idxplus   = Signal(c.streams)
        idxplus_c = Array(Signal(signed(28), name=f"idxplus_c_{i}") for i in range(c.streams))
        cand      = Signal(c.streams)
        inv       = Signal(c.streams)   # ALU/FWD stream constant during its layer's traversal
        cand_c    = Array(Signal(signed(28), name=f"cand_c_{i}") for i in range(c.streams))
        e_next    = Signal(range(self._engines + 1))
        m.d.comb += self.invariant.eq(inv)
        lane_ok   = Signal(c.streams)   # LOCKSTEP ALU/FWD stream with a lane coefficient

        args  = Array(self.args[i] for i in range(c.args))
        count = Array([nl, nr, ns, na])

        def layer_of(v):
            return _pick(m, stream_layer, v, 8, "layer_of")

        n_words = Signal(30)
        m.d.comb += n_words.eq(self.prog_len[2:])

        def fault(code, pc):
            m.d.sync += [self.fault_code.eq(code), self.fault_pc.eq(pc)]
            m.next = "FAULT"

        # --- source-word predicates ------------------------------------------------------
        s_kind, s_val = _src_kind, _src_num

        def src_bad_field(word):
            """Phase 1: kind 4..15 (v0) or 6..15 (v1), or a non-IMM source with bits [27:8] set."""
            return ((s_kind(word) > Mux(v1, SourceKind.FIRST.value, SourceKind.INDEX.value))
                    | ((s_kind(word) != SourceKind.IMM.value) & (Source(word).value[8:] != 0)))

        def layer_kind(k):
            return ((k == SourceKind.INDEX.value) | (k == SourceKind.COUNT.value)
                    | (k == SourceKind.FIRST.value))

        def src_bad_vis(word, *, index_ok, stream_ok, block_ok=False, reader=None):
            """Phase 2: ARG/INDEX/COUNT/FIRST/STREAM out of range or not visible; a BLOCK stream
            outside an OPERAND action; a LOCKSTEP ``reader`` layer's stream reading a layer
            above that is not BROADCAST (docs/isa.md §7.6)."""
            k, v = s_kind(word), s_val(word)
            arg_bad = (k == SourceKind.ARG.value) & (v >= nargs)
            idx_bad = layer_kind(k) & ~index_ok(v)
            stm_bad = (k == SourceKind.STREAM.value) & ((v >= ns) | ~stream_ok(v))
            if not block_ok:
                stm_bad = stm_bad | ((k == SourceKind.STREAM.value)
                                     & stream_blk.bit_select(v[:self._sbits], 1))
            bad = arg_bad | idx_bad | stm_bad
            if reader is not None:
                src_layer = Mux(k == SourceKind.STREAM.value, layer_of(v), v)
                bad = bad | (((k == SourceKind.STREAM.value) | layer_kind(k))
                             & (src_layer < reader)
                             & (_pick(m, layer_mode, src_layer[:max(1, (c.layers - 1).bit_length())],
                                      2, "reader_mode") != LayerMode.BROADCAST.value))
            return bad

        def resolve(word):
            """Value of an IMM or ARG source (regions)."""
            return Mux(s_kind(word) == SourceKind.ARG.value,
                       _pick(m, args, s_val(word), 64, "arg"),
                       _src_imm(word))

        def stream_bit(word):
            """One-hot of the stream a source reads, or 0."""
            return Mux(s_kind(word) == SourceKind.STREAM.value,
                       (Const(1, c.streams) << s_val(word))[:c.streams], 0)

        # --- microcode emission with a one-entry delay (to amend fusion flags) -------------
        ucode_write_pc        = Signal(self._ubits + 1)
        pend       = Signal(Uop)
        pend_valid = Signal()
        pend_hoist = Signal()       # the pending uop runs once per layer entry: fuse nothing into it
        k          = Signal(8)      # build: current layer
        j          = Signal(8)      # build: scan position

        def pend_write(uop):
            m.d.comb += [
                self.ucode_w_addr.eq(ucode_write_pc),
                self.ucode_w_data.eq(uop),
                self.ucode_w_en.eq(pend_valid),
            ]
            m.d.sync += ucode_write_pc.eq(ucode_write_pc + pend_valid)

        def emit(kind, id_, hoisted=False):
            """Append a uop; returns its microcode address (before the append)."""
            addr = ucode_write_pc + pend_valid
            m.d.sync += pend_hoist.eq(hoisted)
            if kind == UopKind.ACT:
                sid = _pick(m, act_sid, id_[:self._abits], 8, "act_sid_j")[:self._sbits]
                # A vector action (lane by lane, or a vector and its masked lanes) is neither
                # fused into another uop nor carries a second action. A BLOCK row (one cycle
                # per chunk of lines, docs/rtl.md §2.4) may be fused into a STREAM uop and
                # carry a second action, which fires with its last chunk; it is not a second
                # action itself.
                row = act_reads.bit_select(id_[:self._abits], 1) & stream_blk.bit_select(sid, 1)
                multi = self.act_vec.bit_select(id_[:self._abits], 1)
                pend_multi = ((pend.kind == UopKind.ACT)
                              & self.act_vec.bit_select(pend.id[:self._abits], 1))
                absorb = (pend_valid & ~pend_hoist & (pend.kind == UopKind.STREAM)
                          & ~pend.fuse_act & ~pend.fuse_lane & ~multi
                          & ~self.blocking.bit_select(pend.id[:self._sbits], 1))
                immediate = ~(act_reads.bit_select(id_[:self._abits], 1)
                              & stream_mem.bit_select(sid, 1)
                              & ~self.blocking.bit_select(sid, 1))
                first = Mux(pend.kind == UopKind.ACT, pend.id, pend.act_id)[:self._abits]
                two_ctl = (act_ctl.bit_select(first, 1)
                           & act_ctl.bit_select(id_[:self._abits], 1))
                absorb2 = (pend_valid & ~pend_hoist & ~pend.fuse_act2 & immediate & ~two_ctl
                           & ~multi & ~row & ~pend_multi
                           & ((pend.kind == UopKind.ACT)
                              | ((pend.kind == UopKind.STREAM) & pend.fuse_act)))
                with m.If(absorb):
                    m.d.sync += [pend.fuse_act.eq(1), pend.act_id.eq(id_),
                                 pend_hoist.eq(0)]
                with m.Elif(absorb2):
                    m.d.sync += [pend.fuse_act2.eq(1), pend.act2_id.eq(id_),
                                 pend_hoist.eq(0)]
                with m.Else():
                    pend_write(pend)
                    m.d.sync += [pend.eq(Uop.const({"kind": kind})), pend.id.eq(id_),
                                 pend_valid.eq(1)]
            elif kind == UopKind.NEXT:
                fused = Signal(Uop)
                can = pend_valid & ~pend_hoist & ~pend.fuse_lane & (
                    (pend.kind == UopKind.STREAM) | (pend.kind == UopKind.ACT))
                m.d.comb += fused.eq(pend)
                with m.If(can):
                    m.d.comb += [fused.fuse_next.eq(1), fused.next_layer.eq(id_)]
                pend_write(fused)
                m.d.sync += [pend.eq(Uop.const({"kind": kind})), pend.id.eq(id_),
                             pend_valid.eq(1)]
            elif kind == UopKind.LANE:
                # Folded into the layer's last STREAM uop when there is one (``fuse_lane``).
                with m.If(pend_valid & ~pend_hoist & (pend.kind == UopKind.STREAM)):
                    m.d.sync += pend.fuse_lane.eq(1)
                with m.Else():
                    pend_write(pend)
                    m.d.sync += [pend.eq(Uop.const({"kind": kind})), pend.id.eq(id_),
                                 pend_valid.eq(1)]
            elif kind == UopKind.STREAM and not hoisted:
                # A body stream served by a run-ahead engine needs no evaluation: the next
                # stream's uop pops it (``pop``, one bit per engine; docs/rtl.md §2.2). Not in
                # a LOCKSTEP layer (lane values go to ``vreg``).
                psid = pend.id[:self._sbits]
                pop_absorb = (pend_valid & ~pend_hoist & (pend.kind == UopKind.STREAM)
                              & ~pend.fuse_act & ~pend.fuse_act2 & ~pend.fuse_next
                              & ~pend.fuse_lane
                              & self.stream_prefetched.bit_select(psid, 1)
                              & ~(self.lockstep_valid & (layer_of(pend.id) == self.lockstep_layer)))
                pend_engine = _pick(m, Array(self.stream_prefetch_engine[i]
                                             for i in range(c.streams)),
                                    psid, self._ebits, "pend_engine")
                with m.If(pop_absorb):
                    m.d.sync += [pend.id.eq(id_),
                                 pend.pop.eq(pend.pop | (Const(1, 16) << pend_engine)[:16])]
                with m.Else():
                    pend_write(pend)
                    m.d.sync += [pend.eq(Uop.const({"kind": kind})), pend.id.eq(id_),
                                 pend_valid.eq(1)]
            else:
                pend_write(pend)
                m.d.sync += [pend.eq(Uop.const({"kind": kind})), pend.id.eq(id_),
                             pend_valid.eq(1)]
            return addr

        m.d.comb += self.busy.eq(1)
        m.d.comb += self.done.eq(0)

        with m.FSM():
            with m.State("IDLE"):
                m.d.comb += self.busy.eq(0)
                with m.If(self.start):
                    m.d.sync += [fw.eq(0), dbase.eq(0), self.blocking.eq(0),
                                 ucode_write_pc.eq(0), pend_valid.eq(0), idxplus.eq(0),
                                 cand.eq(0), inv.eq(0),
                                 act_reads.eq(0), stream_mem.eq(0), act_ctl.eq(0),
                                 stream_blk.eq(0), act_join.eq(0), act_last.eq(0),
                                 self.lockstep_valid.eq(0), self.act_vec.eq(0),
                                 self.lockstep_vector_mode.eq(0), lane_ok.eq(0),
                                 self.lane_pos.eq(0), self.lane_neg.eq(0),
                                 self.contiguous_vector.eq(0), self.prefetch_valid.eq(0),
                                 self.stream_prefetched.eq(0), e_next.eq(0),
                                 operand_read.eq(0), assign_pass.eq(0)]
                    m.next = "HDR_FETCH"

            # ---------------------------------------------------------------- header
            with m.State("HDR_FETCH"):
                m.d.comb += self.prog_addr.eq(fw)
                m.d.sync += fw.eq(fw + 1)
                with m.Switch(fw):
                    for i in range(1, 5):
                        with m.Case(i):
                            m.d.sync += w[i - 1].eq(self.prog_data)
                with m.If(fw == 4):
                    m.d.sync += fw.eq(0)
                    m.next = "HDR_CHECK"

            with m.State("HDR_CHECK"):
                counts, argsw, version = CountsWord(w[2]), ArgsWord(w[3]), VersionWord(w[1])
                h_nl, h_nr, h_ns, h_na = (counts.n_layers, counts.n_regions, counts.n_streams,
                                          counts.n_actions)
                h_nargs = argsw.n_args
                expected = Signal(16)
                m.d.comb += expected.eq(HEADER_WORDS + 4 * (h_nl + h_nr + h_ns + h_na))
                with m.If(self.prog_len[:2] != 0):
                    fault(FaultCode.TRUNCATED, n_words)
                with m.Elif(n_words < HEADER_WORDS):
                    with m.If((n_words >= 1) & (w[0] != MAGIC)):
                        fault(FaultCode.BAD_MAGIC, 0)
                    with m.Else():
                        fault(FaultCode.TRUNCATED, n_words)
                with m.Elif(w[0] != MAGIC):
                    fault(FaultCode.BAD_MAGIC, 0)
                with m.Elif((version.version != VERSION)
                            & ((version.version != VERSION_V1) | (1 not in c.versions))):
                    fault(FaultCode.BAD_VERSION, 1)
                with m.Elif(version.reserved != 0):
                    fault(FaultCode.ILLEGAL_FIELD, 1)
                with m.Elif(argsw.reserved != 0):
                    fault(FaultCode.ILLEGAL_FIELD, 3)
                with m.Elif((h_nl > c.layers) | (h_nr > c.regions) | (h_ns > c.streams)
                            | (h_na > c.actions)):
                    fault(FaultCode.RESOURCES, 2)
                with m.Elif(h_nargs > c.args):
                    fault(FaultCode.RESOURCES, 3)
                with m.Elif(h_nl == 0):
                    fault(FaultCode.RESOURCES, 2)
                with m.Elif(n_words != expected):
                    fault(FaultCode.TRUNCATED, n_words)
                with m.Else():
                    m.d.sync += [nl.eq(h_nl), nr.eq(h_nr), ns.eq(h_ns), na.eq(h_na),
                                 nargs.eq(h_nargs), v1.eq(version.version == VERSION_V1),
                                 phase.eq(1), section.eq(0), d.eq(0), dbase.eq(HEADER_WORDS)]
                    m.next = "D_FETCH"      # n_layers >= 1: section 0 is not empty

            # ---------------------------------------------------------------- descriptors
            with m.State("SEC_SKIP"):
                with m.If(count[section] != 0):
                    m.next = "D_FETCH"
                with m.Elif(section == 3):
                    m.next = "PHASE_END"
                with m.Else():
                    m.d.sync += section.eq(section + 1)

            with m.State("D_FETCH"):
                m.d.comb += self.prog_addr.eq(dbase + fw)
                m.d.sync += fw.eq(fw + 1)
                with m.Switch(fw):
                    for i in range(1, 5):
                        with m.Case(i):
                            m.d.sync += w[i - 1].eq(self.prog_data)
                with m.If(fw == 4):
                    m.d.sync += fw.eq(0)
                    m.next = "D_CHECK"

            with m.State("D_CHECK"):
                w0, w1, w2, w3 = w[0], w[1], w[2], w[3]
                lw0, rw0, sw0, aw0 = LayerWord0(w0), RegionWord0(w0), StreamWord0(w0), ActionWord0(w0)
                conds1 = {}
                conds2 = {}
                # Layers (v1: mode and lanes after the v0 field checks, docs/isa.md §7.7).
                lw1 = LayerWord0V1(w0)
                l_mode = lw1.mode
                l_lockstep = v1 & (l_mode == LayerMode.LOCKSTEP.value)
                RES = FaultCode.RESOURCES
                conds1[0] = [
                    (lw0.id != d, 0),
                    (Mux(v1, (lw1.reserved0 != 0) | (lw1.reserved1 != 0), lw0.reserved != 0), 0),
                    (src_bad_field(w1), 1), (src_bad_field(w2), 2), (src_bad_field(w3), 3),
                    (v1 & (l_mode == 3), 0),
                    (v1 & (lw1.lanes_m1 != 0) & (l_mode != LayerMode.LOCKSTEP.value), 0),
                    (l_lockstep & (not c.has("lockstep")), 0, RES),
                    (l_lockstep & (lw1.lanes_m1 >= c.lanes), 0, RES),
                    (v1 & (l_mode == LayerMode.BROADCAST.value) & (not c.has("broadcast")), 0, RES),
                ]
                conds2[0] = [
                    (src_bad_vis(w1, index_ok=lambda v: v < d,
                                 stream_ok=lambda v: layer_of(v) < d), 1),
                    (src_bad_vis(w2, index_ok=lambda v: v < d,
                                 stream_ok=lambda v: layer_of(v) < d), 2),
                    ((s_kind(w3) != SourceKind.IMM.value) | (_src_imm(w3) <= 0), 3),
                    (l_lockstep & (d != nl - 1), 0),
                ]
                # Regions.
                def region_bad(word):
                    k_ = s_kind(word)
                    return (((k_ != SourceKind.IMM.value) & (k_ != SourceKind.ARG.value))
                            | ((k_ == SourceKind.ARG.value) & (s_val(word) >= nargs)))
                conds1[1] = [
                    (rw0.id != d, 0), (rw0.reserved != 0, 0), (w3 != 0, 3),
                    (src_bad_field(w1), 1), (src_bad_field(w2), 2),
                ]
                conds2[1] = [(region_bad(w1), 1), (region_bad(w2), 2)]
                # Streams.
                st_layer, st_kind = sw0.layer, sw0.kind.as_value()
                st_sub, st_region = sw0.mode, sw0.region
                is_mem = st_kind == StreamKind.MEM.value
                is_alu = st_kind == StreamKind.ALU.value
                is_fwd = st_kind == StreamKind.FWD.value
                is_blk = is_mem & (MemMode(st_sub).reserved != 0)     # v1 BLOCK (v0: reserved)
                conds1[2] = [
                    (sw0.id != d, 0), (st_kind > 2, 0),
                    (is_blk & ~v1, 0),
                    (is_mem & src_bad_field(w1), 1), (is_mem & src_bad_field(w2), 2),
                    (is_blk & src_bad_field(w3), 3),
                    (is_blk & (not c.has("block")), 0, RES),
                    (is_alu & (st_sub > 12), 0), (is_alu & (st_region != 0), 0),
                    (is_alu & (w3 != 0), 3),
                    (is_alu & src_bad_field(w1), 1), (is_alu & src_bad_field(w2), 2),
                    (is_fwd & ((st_sub != 0) | (st_region != 0)), 0),
                    (is_fwd & (w2 != 0), 2), (is_fwd & (w3 != 0), 3),
                    (is_fwd & src_bad_field(w1), 1),
                ]
                def stream_src_ok(v):
                    return ((layer_of(v) < st_layer)
                            | ((layer_of(v) == st_layer) & (v < d)))
                st_lockstep = _pick(m, layer_mode, st_layer[:max(1, (c.layers - 1).bit_length())],
                                    2, "st_mode") == LayerMode.LOCKSTEP.value
                rdr = Mux(st_lockstep, st_layer, 0)     # no layer is below 0: no reader check
                conds2[2] = [
                    (st_layer >= nl, 0),
                    (is_mem & (st_region >= nr), 0),
                    (is_blk & st_lockstep, 0),
                    (src_bad_vis(w1, index_ok=lambda v: v <= st_layer, stream_ok=stream_src_ok,
                                 reader=rdr), 1),
                    (~is_fwd & src_bad_vis(w2, index_ok=lambda v: v <= st_layer,
                                           stream_ok=stream_src_ok, reader=rdr), 2),
                    (is_blk & src_bad_vis(w3, index_ok=lambda v: v <= st_layer,
                                          stream_ok=stream_src_ok, reader=rdr), 3),
                ]
                # Actions.
                ac_layer, ac_event, ac_kind = aw0.layer, aw0.event.as_value(), aw0.kind.as_value()
                cw1 = ControlWord1(w1)
                is_op  = ac_kind == ActionKind.OPERAND.value
                is_ctl = ac_kind == ActionKind.CONTROL.value
                is_iter = ac_event == Event.ITER.value
                ow0 = OperandWord0V1(w0)
                op_v1 = v1 & is_op
                packs = op_v1 & ((ow0.pack != 0) | (ow0.join != 0))
                conds1[3] = [
                    (Mux(op_v1, ow0.reserved != 0, aw0.reserved != 0), 0),
                    (ac_event > 2, 0), (ac_kind > 1, 0),
                    (w2 != 0, 2), (w3 != 0, 3),
                    (is_op & src_bad_field(w1), 1),
                    (packs & (not c.has("pack")), 0, RES),
                    (is_ctl & (cw1.reserved != 0), 1),
                    (is_ctl & (cw1.callback == DONE_TOKEN), 1),
                ]
                def act_index_ok(v):
                    return Mux(is_iter, v <= ac_layer, v < ac_layer)
                def act_stream_ok(v):
                    return Mux(is_iter, layer_of(v) <= ac_layer, layer_of(v) < ac_layer)
                conds2[3] = [
                    (ac_layer >= nl, 0),
                    (is_op & src_bad_vis(w1, index_ok=act_index_ok, stream_ok=act_stream_ok,
                                         block_ok=True), 1),
                ]

                err = Signal()
                off = Signal(2)
                code = Signal(FaultCode)
                with m.If(phase == 1):
                    with m.Switch(section):
                        for s_ in range(4):
                            with m.Case(s_):
                                e_, o_, c_ = _first(conds1[s_])
                                m.d.comb += [err.eq(e_), off.eq(o_), code.eq(c_)]
                with m.Else():
                    with m.Switch(section):
                        for s_ in range(4):
                            with m.Case(s_):
                                e_, o_, c_ = _first(conds2[s_])
                                m.d.comb += [err.eq(e_), off.eq(o_), code.eq(c_)]

                with m.If(err):
                    fault(code, dbase + off)
                with m.Else():
                    # Store what this phase learned.
                    with m.If(phase == 1):
                        with m.If(section == 0):
                            m.d.sync += layer_mode[d].eq(Mux(v1, l_mode, 0))
                        with m.If(section == 2):
                            m.d.sync += [stream_layer[d].eq(st_layer),
                                         stream_blk.bit_select(d[:self._sbits], 1).eq(is_blk)]
                    with m.Else():
                        with m.Switch(section):
                            with m.Case(0):
                                layer = self.layers[d[:max(1, (c.layers - 1).bit_length())]]
                                m.d.sync += [
                                    layer.lb.eq(w1), layer.ub.eq(w2),
                                    layer.step.eq(_src_imm(w3)),
                                    layer.check_order.eq(lw0.check_order),
                                    layer.mode.eq(Mux(v1, l_mode, 0)),
                                    layer.lanes_m1.eq(Mux(v1, lw1.lanes_m1, 0)),
                                    self.lockstep_valid.eq(self.lockstep_valid | l_lockstep),
                                    self.lockstep_layer.eq(Mux(l_lockstep, d, self.lockstep_layer)),
                                    self.blocking.eq(self.blocking | stream_bit(w1)
                                                     | stream_bit(w2)),
                                ]
                            with m.Case(1):
                                region = self.regions[d[:max(1, (c.regions - 1).bit_length())]]
                                m.d.sync += [region.base.eq(resolve(w1)),
                                             region.size.eq(resolve(w2))]
                            with m.Case(2):
                                m.d.comb += [
                                    self.scfg_w_addr.eq(d),
                                    self.scfg_w_en.eq(1),
                                    self.scfg_w_data.kind.eq(st_kind),
                                    self.scfg_w_data.mode.eq(st_sub),
                                    self.scfg_w_data.region.eq(st_region),
                                    self.scfg_w_data.layer.eq(st_layer),
                                    self.scfg_w_data.a.eq(w1),
                                    self.scfg_w_data.b.eq(w2),
                                    self.scfg_w_data.stride.eq(w3),
                                ]
                                m.d.sync += self.blocking.eq(self.blocking | stream_bit(w1)
                                                             | stream_bit(w2)
                                                             | Mux(is_blk, stream_bit(w3), 0))
                                m.d.sync += stream_mem.bit_select(d[:self._sbits], 1).eq(is_mem)
                                m.d.sync += global_base.bit_select(d[:self._sbits], 1).eq(
                                    (s_kind(w1) == SourceKind.IMM.value)
                                    | (s_kind(w1) == SourceKind.ARG.value))
                                self._detect_affine(m, d, w1, w2, st_kind, st_sub, st_layer,
                                                    layer_of, idxplus, idxplus_c, cand, cand_c,
                                                    inv)
                                if c.has("lockstep"):
                                    st_step = _pick(m, Array(self.layers[i].step
                                                             for i in range(c.layers)),
                                                    st_layer[:max(1, (c.layers - 1).bit_length())],
                                                    signed(28), "st_step")
                                    self._detect_lanes(m, d, w1, w2, w3, st_kind, st_sub,
                                                       st_layer, layer_of, st_lockstep, st_step,
                                                       lane_ok)
                            with m.Case(3):
                                m.d.comb += [
                                    self.acfg_w_addr.eq(d),
                                    self.acfg_w_en.eq(1),
                                    self.acfg_w_data.kind.eq(ac_kind),
                                    self.acfg_w_data.src.eq(w1),
                                    self.acfg_w_data.pack.eq(Mux(op_v1, ow0.pack, 0)),
                                ]
                                # The packer flushes after an OPERAND action without JOIN and
                                # after the last OPERAND action of a firing.
                                ac_lk = (_pick(m, layer_mode, ac_layer[:max(1, (c.layers - 1).bit_length())],
                                               2, "ac_mode") == LayerMode.LOCKSTEP.value)
                                a_k, a_v = s_kind(w1), s_val(w1)
                                m.d.sync += self.act_vec.bit_select(d[:self._abits], 1).eq(
                                    is_op & is_iter & ac_lk
                                    & (((a_k == SourceKind.INDEX.value) & (a_v == ac_layer))
                                       | ((a_k == SourceKind.STREAM.value)
                                          & (layer_of(a_v) == ac_layer))))
                                with m.If(is_op):
                                    m.d.sync += [
                                        act_join.bit_select(d[:self._abits], 1).eq(op_v1 & ow0.join),
                                        act_last.bit_select(d[:self._abits], 1).eq(1),
                                    ]
                                    for j_ in range(c.actions):
                                        with m.If((j_ < d) & (act_layer[j_] == ac_layer)
                                                  & (act_event[j_] == ac_event)):
                                            m.d.sync += act_last[j_].eq(0)
                                m.d.sync += operand_read.eq(operand_read
                                                            | Mux(is_op, stream_bit(w1), 0))
                                m.d.sync += [act_layer[d].eq(ac_layer), act_event[d].eq(ac_event),
                                             act_reads.bit_select(d[:self._abits], 1).eq(
                                                 is_op & (s_kind(w1) == SourceKind.STREAM.value)),
                                             act_sid[d].eq(s_val(w1)),
                                             act_ctl.bit_select(d[:self._abits], 1).eq(is_ctl)]
                    # Advance to the next descriptor.
                    m.d.sync += dbase.eq(dbase + 4)
                    with m.If(d + 1 == count[section]):
                        m.d.sync += d.eq(0)
                        with m.If(section == 3):
                            m.next = "PHASE_END"
                        with m.Else():
                            m.d.sync += section.eq(section + 1)
                            m.next = "SEC_SKIP"
                    with m.Else():
                        m.d.sync += d.eq(d + 1)
                        m.next = "D_FETCH"

            with m.State("PHASE_END"):
                with m.If(phase == 1):
                    m.d.sync += [phase.eq(2), section.eq(0), d.eq(0), dbase.eq(HEADER_WORDS)]
                    m.next = "D_FETCH"
                with m.Else():
                    m.d.sync += [k.eq(nl - 1), j.eq(0)]
                    # Vector mode: every stream of the LOCKSTEP layer has a lane coefficient or
                    # is a contiguous vector load that no stream reads (docs/rtl.md §9.3).
                    lane_bad = Const(0)
                    for s_ in range(c.streams):
                        lane_bad = lane_bad | ((s_ < ns) & (stream_layer[s_] == self.lockstep_layer)
                                               & ~lane_ok[s_]
                                               & ~(self.contiguous_vector[s_] & ~self.blocking[s_]))
                    m.d.sync += self.lockstep_vector_mode.eq(self.lockstep_valid & ~lane_bad)
                    m.next = "B_ASSIGN"

            # ---------------------------------------------------------------- run-ahead engines
            # Blocking affine streams get engines, deepest layer first, then by stream id. A
            # second pass gives the engines left to lazy affine loads that an OPERAND action
            # reads, whose base is constant for the run (SpMM's ``val[j]``): the engine
            # fetches them ahead (its sequence continues across CSR rows), the stream becomes
            # blocking (its value is the element) and its operand an immediate token, which a
            # STREAM uop may pop with the next stream (``Uop.pop``) and an action may carry as
            # a second action (``fuse_act2``). Not in a LOCKSTEP layer (lane values, vector mode).
            jb = j[:self._sbits]
            in_lockstep = self.lockstep_valid & (layer_of(j) == self.lockstep_layer)
            spare = (assign_pass & ~self.blocking.bit_select(jb, 1) & ~stream_blk.bit_select(jb, 1)
                     & operand_read.bit_select(jb, 1) & global_base.bit_select(jb, 1)
                     & ~in_lockstep)
            with m.State("B_ASSIGN"):
                with m.If(j < ns):
                    with m.If(cand.bit_select(j[:self._sbits], 1)
                              & (self.blocking.bit_select(j[:self._sbits], 1) & ~assign_pass
                                 | spare)
                              & (layer_of(j) == k) & (e_next < c.prefetchers)):
                        e = e_next[:self._ebits]
                        m.d.sync += self.blocking.bit_select(jb, 1).eq(1)
                        m.d.sync += [
                            self.prefetch_valid.bit_select(e, 1).eq(1),
                            self.prefetch_stream[e].eq(j),
                            self.prefetch_layer[e].eq(k),
                            self.prefetch_offset[e].eq(_pick(m, cand_c, j, signed(28), "cand_c_j")),
                            self.stream_prefetched.bit_select(j[:self._sbits], 1).eq(1),
                            self.stream_prefetch_engine[j[:self._sbits]].eq(e),
                            e_next.eq(e_next + 1),
                        ]
                    m.d.sync += j.eq(j + 1)
                with m.Else():
                    m.d.sync += j.eq(0)
                    with m.If((k == 0) & assign_pass):
                        m.next = "B_BEGIN"
                    with m.Elif(k == 0):
                        m.d.sync += [assign_pass.eq(1), k.eq(nl - 1)]
                    with m.Else():
                        m.d.sync += k.eq(k - 1)

            # ---------------------------------------------------------------- microcode
            def scan_actions(event, then):
                with m.If(j < na):
                    with m.If((act_layer[j] == k) & (act_event[j] == event.value)):
                        emit(UopKind.ACT, j)
                    m.d.sync += j.eq(j + 1)
                with m.Else():
                    m.d.sync += j.eq(0)
                    then()

            lbits = max(1, (c.layers - 1).bit_length())

            with m.State("B_BEGIN"):
                def to_enter():
                    m.next = "B_ENTER"
                scan_actions(Event.BEGIN, to_enter)

            with m.State("B_ENTER"):
                emit(UopKind.ENTER, k, hoisted=True)
                m.next = "B_HOIST"

            # Invariant ALU/FWD streams: once per layer entry, before the engines start (an
            # engine's base may be one of them).
            with m.State("B_HOIST"):
                with m.If(j < ns):
                    with m.If((stream_layer[j] == k) & inv.bit_select(j[:self._sbits], 1)):
                        emit(UopKind.STREAM, j, hoisted=True)
                    m.d.sync += j.eq(j + 1)
                with m.Else():
                    m.d.sync += j.eq(0)
                    m.next = "B_PF"

            with m.State("B_PF"):
                with m.If(j < self._engines):
                    e = j[:self._ebits]
                    with m.If(self.prefetch_valid.bit_select(e, 1) & (self.prefetch_layer[e] == k)):
                        emit(UopKind.PREFETCH, j, hoisted=True)
                    m.d.sync += j.eq(j + 1)
                with m.Else():
                    m.d.sync += [j.eq(0), self.body_pc[k[:lbits]].eq(ucode_write_pc + pend_valid)]
                    m.next = "B_STREAMS"

            with m.State("B_STREAMS"):
                with m.If(j < ns):
                    with m.If((stream_layer[j] == k) & ~inv.bit_select(j[:self._sbits], 1)):
                        emit(UopKind.STREAM, j)
                    m.d.sync += j.eq(j + 1)
                with m.Else():
                    m.d.sync += j.eq(0)
                    with m.If(self.lockstep_valid & (k == self.lockstep_layer)
                              & ~self.lockstep_vector_mode):
                        m.next = "B_LANE"
                    with m.Else():
                        m.next = "B_ITER"

            with m.State("B_LANE"):
                emit(UopKind.LANE, k)
                m.next = "B_ITER"

            with m.State("B_ITER"):
                def after_iter():
                    with m.If(k + 1 < nl):
                        m.d.sync += k.eq(k + 1)
                        m.next = "B_BEGIN"
                    with m.Else():
                        m.next = "B_NEXT"
                scan_actions(Event.ITER, after_iter)

            with m.State("B_NEXT"):
                addr = emit(UopKind.NEXT, k)
                m.d.sync += self.exit_pc[k[:lbits]].eq(addr + 1)
                m.next = "B_END"

            with m.State("B_END"):
                def after_end():
                    with m.If(k != 0):
                        m.d.sync += k.eq(k - 1)
                        m.next = "B_NEXT"
                    with m.Else():
                        m.next = "B_DONE"
                scan_actions(Event.END, after_end)

            with m.State("B_DONE"):
                emit(UopKind.DONE, 0)
                m.next = "B_FLUSH"

            with m.State("B_FLUSH"):
                pend_write(pend)
                m.d.sync += pend_valid.eq(0)
                m.next = "FINISH"

            with m.State("FINISH"):
                m.d.comb += [self.done.eq(1), self.fault.eq(0)]
                m.next = "IDLE"

            with m.State("FAULT"):
                m.d.comb += [self.done.eq(1), self.fault.eq(1)]
                m.next = "IDLE"

        return m
