"""Program checker: reads an access program from the program memory and applies the checks of
``docs/isa.md`` in the order of the Python loader (``sw.runtime.isa.Program.decode``)."""

from amaranth.hdl import Array, Cat, Const, Module, Mux, Signal
from amaranth.lib import wiring
from amaranth.lib.wiring import In, Out

from .config import TmuConfig
from .isa import (MAGIC, VERSION, VERSION_V1, DONE_TOKEN, HEADER_WORDS, ActionKind, ActionWord0,
                  ArgsWord, ControlWord1, CountsWord, Event, FaultCode, LayerMode, LayerWord0,
                  LayerWord0V1, MemMode, OperandWord0V1, RegionWord0, Source, SourceKind,
                  StreamKind, StreamWord0, VersionWord)
from .signatures import (CheckedProgramSignature, check_result_stream,
                         descriptor_stream, index_bits, program_read_port)
from .source_fields import pick, source_imm, source_kind, source_number


__all__ = ["ProgramChecker"]


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


class ProgramChecker(wiring.Component):
    """Reads the program and checks it: the header, then phase 1 (every descriptor in program
    order: ids, kinds, reserved bits, source kinds), then phase 2 (every descriptor again:
    visibility of sources, ranges of layer/region/argument numbers, ``step``), exactly the
    checks and order of ``sw.runtime.isa.Program.decode`` (``docs/isa.md`` §2 "Decode order",
    §7.7), so the first failing check gives the same fault code and PC. Each phase-2 descriptor
    that passes is handed on (``descriptor``) to fill the configuration.

    Timing: the program memory returns a line of 4 words (a descriptor, or the header) a cycle
    after its address, so the header takes 1 cycle to read and 1 to check; each descriptor and
    phase 1 cycle to read and 1 to check (plus the cycles ``descriptor`` waits for ``ready``);
    1 cycle per section boundary and per empty section, 1 at the end of each phase. (Until
    2026-11-28 the memory returned one word per read: 5 cycles to read 4 words.)

    Parameters
    ----------
    config : TmuConfig
        Resources (``layers``, ``regions``, ``streams``, ``actions``, ``args``), ISA versions
        and v1 features (``block``, ``pack``, ``lockstep``, ``broadcast``, ``lanes``) the
        program is checked against (``RESOURCES`` faults).

    Members
    -------
    start : In(1)
        Pulse: check the program now in the program memory. Ignored while ``busy``.
    prog_len : In(32)
        Program length in bytes (``PROG_LEN``); must not change while ``busy``.
    program : In(memory.ReadPort.Signature(addr_width, ProgramLine))
        The program memory's read port (``signatures.program_read_port``: line address, i.e.
        word address // 4; ``data``, 4 words, the cycle after ``addr``).
    checked : Out(CheckedProgramSignature(config))
        Header counts, version, layer modes, stream layers, BLOCK streams: valid from the first
        ``descriptor`` of a decode until the next ``start``.
    descriptor : Out(stream.Signature(CheckedDescriptor))
        Phase 2: each descriptor after it passed its checks, in program order.
    result : Out(stream.Signature(CheckResult))
        One per decode, after the last ``descriptor``: no fault, or the fault code
        (``BAD_MAGIC``, ``BAD_VERSION``, ``ILLEGAL_FIELD``, ``RESOURCES``, ``TRUNCATED``) and PC
        (word index; for ``TRUNCATED`` the length in words) of the first failing check.
    busy : Out(1)
        From ``start`` until ``result`` is accepted.
    """

    def __init__(self, config):
        if not isinstance(config, TmuConfig):
            raise TypeError(f"config must be a TmuConfig, not {config!r}")
        self._cfg = config
        super().__init__({
            "start":      In(1),
            "prog_len":   In(32),
            "program":    In(program_read_port(config)),
            "checked":    Out(CheckedProgramSignature(config)),
            "descriptor": Out(descriptor_stream()),
            "result":     Out(check_result_stream()),
            "busy":       Out(1),
        })

    def elaborate(self, platform):
        m = Module()
        c = self._cfg
        sbits, lbits = index_bits(c.streams), index_bits(c.layers)

        counts = self.checked.counts
        nl, nr, ns, na, nargs = (counts.layers, counts.regions, counts.streams, counts.actions,
                                 counts.args)
        v1 = self.checked.version1
        layer_mode = Array(self.checked.layer_mode[i] for i in range(c.layers))
        stream_layer = Array(self.checked.stream_layer[i] for i in range(c.streams))
        stream_blk = self.checked.stream_block

        # Walker over the descriptors: section (0 layers, 1 regions, 2 streams, 3 actions),
        # descriptor number within the section, its first word, the phase (1 or 2).
        section = Signal(2)
        d       = Signal(8)
        dbase   = Signal(16)
        phase   = Signal(2)
        # The descriptor's 4 words: the program memory's line at ``dbase`` (a multiple of 4
        # words), read while the checker fetches it and held while it checks it (``dbase``
        # does not change, and the memory is not written while ``busy``).
        w       = [self.program.data[i] for i in range(4)]
        count   = Array([nl, nr, ns, na])
        outcome = Signal.like(self.result.payload)

        def layer_of(v):
            return pick(m, stream_layer, v, 8, "layer_of")

        n_words = Signal(30)
        m.d.comb += n_words.eq(self.prog_len[2:])

        def fault(code, pc):
            m.d.sync += [outcome.fault.eq(1), outcome.code.eq(code), outcome.pc.eq(pc)]
            m.next = "RESULT"

        # --- source-word predicates ------------------------------------------------------
        s_kind, s_val = source_kind, source_number

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
                                     & stream_blk.bit_select(v[:sbits], 1))
            bad = arg_bad | idx_bad | stm_bad
            if reader is not None:
                src_layer = Mux(k == SourceKind.STREAM.value, layer_of(v), v)
                bad = bad | (((k == SourceKind.STREAM.value) | layer_kind(k))
                             & (src_layer < reader)
                             & (pick(m, layer_mode, src_layer[:lbits], 2, "reader_mode")
                                != LayerMode.BROADCAST.value))
            return bad

        m.d.comb += [
            self.busy.eq(1),
            self.descriptor.payload.section.eq(section),
            self.descriptor.payload.number.eq(d),
            self.descriptor.payload.words.eq(Cat(*(w[i] for i in range(4)))),
            self.result.payload.eq(outcome),
        ]

        m.d.comb += self.program.addr.eq(dbase[2:])

        with m.FSM():
            with m.State("IDLE"):
                m.d.comb += self.busy.eq(0)
                with m.If(self.start):
                    m.d.sync += [dbase.eq(0), stream_blk.eq(0), outcome.eq(0)]
                    m.next = "HDR_FETCH"

            # ---------------------------------------------------------------- header
            with m.State("HDR_FETCH"):          # the memory answers a cycle after its address
                m.next = "HDR_CHECK"

            with m.State("HDR_CHECK"):
                cw, argsw, version = CountsWord(w[2]), ArgsWord(w[3]), VersionWord(w[1])
                h_nl, h_nr, h_ns, h_na = cw.n_layers, cw.n_regions, cw.n_streams, cw.n_actions
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
                m.next = "D_CHECK"

            with m.State("D_CHECK"):
                w0, w1, w2, w3 = w[0], w[1], w[2], w[3]
                lw0, rw0, sw0, aw0 = (LayerWord0(w0), RegionWord0(w0), StreamWord0(w0),
                                      ActionWord0(w0))
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
                    ((s_kind(w3) != SourceKind.IMM.value) | (source_imm(w3) <= 0), 3),
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
                st_lockstep = pick(m, layer_mode, st_layer[:lbits], 2,
                                   "st_mode") == LayerMode.LOCKSTEP.value
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
                for phase_, conds in ((1, conds1), (2, conds2)):
                    with m.If(phase == phase_):
                        with m.Switch(section):
                            for s_ in range(4):
                                with m.Case(s_):
                                    e_, o_, c_ = _first(conds[s_])
                                    m.d.comb += [err.eq(e_), off.eq(o_), code.eq(c_)]

                advance = Signal()
                with m.If(err):
                    fault(code, dbase + off)
                with m.Elif(phase == 1):
                    # Store what phase 1 learned.
                    m.d.comb += advance.eq(1)
                    with m.If(section == 0):
                        m.d.sync += layer_mode[d].eq(Mux(v1, l_mode, 0))
                    with m.If(section == 2):
                        m.d.sync += [stream_layer[d].eq(st_layer),
                                     stream_blk.bit_select(d[:sbits], 1).eq(is_blk)]
                with m.Else():
                    m.d.comb += [self.descriptor.valid.eq(1), advance.eq(self.descriptor.ready)]
                with m.If(advance):
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
                    m.d.comb += self.result.valid.eq(1)
                    with m.If(self.result.ready):
                        m.next = "IDLE"

            with m.State("RESULT"):         # a fault: ``outcome`` holds its code and PC
                m.d.comb += self.result.valid.eq(1)
                with m.If(self.result.ready):
                    m.next = "IDLE"

        return m

