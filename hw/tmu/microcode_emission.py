"""Microcode emission of the builder: uops appended with a one-entry delay, so that the next
uop can be fused into the pending one (``fuse_act``, ``fuse_act2``, ``fuse_next``,
``fuse_lane``, engine pops, ``chain``; ``docs/rtl.md`` §2.2 and §9.5).

Adds its logic to the microcode builder's ``Module`` (``microcode_builder.py`` drives it from
its FSM).
"""

from amaranth.hdl import Array, Const, Mux, Signal

from .isa import Event
from .layouts import Uop, UopKind
from .source_fields import pick


__all__ = ["MicrocodeEmission"]


class MicrocodeEmission:
    """The pending uop and its write to the microcode memory.

    Parameters
    ----------
    m : Module
        The builder's module.
    builder : MicrocodeBuilder
        Its ``microcode`` write port, ``blocking``, ``stream_prefetched`` and
        ``stream_prefetch_engine``.
    config : TmuConfig
    tables : ConfigTablesSignature
        The configuration writer's classification (``act_reads``, ``act_control``,
        ``memory_stream``, ``act_vec``, ``chain``, the LOCKSTEP layer).
    arrays : (act_sid, act_layer, act_event, stream_block, action_count)
        Each action's stream, layer and event (``Array``s), the BLOCK streams and the number of
        actions of the program.
    layer_of : callable
        ``layer_of(stream)``: the layer of a stream.
    bits : (ubits, sbits, abits, ebits)
        Bits of a microcode address, a stream, an action and an engine number.

    Members
    -------
    write_pc : Signal
        Where the next uop is written (the pending one is not written yet).
    pend, pend_valid : Signal
        The pending uop (``Uop``) and whether there is one.
    """

    def __init__(self, m, builder, config, tables, arrays, layer_of, bits):
        self._m, self._b, self._c, self._t = m, builder, config, tables
        (self._act_sid, self._act_layer, self._act_event, self._stream_blk,
         self._na) = arrays
        self._layer_of = layer_of
        self._ubits, self._sb, self._ab, self._eb = bits
        self.write_pc = Signal(self._ubits + 1, name="ucode_write_pc")
        self.pend = Signal(Uop, name="pend")
        self.pend_valid = Signal(name="pend_valid")
        # the pending uop runs once per layer entry: fuse nothing into it
        self.pend_hoist = Signal(name="pend_hoist")
        # the pending uop has ``chain``: the ALU stream it evaluates
        self.pend_chained = Signal(8, name="pend_chained")

    def write_pending(self, uop):
        """Write ``uop`` at :attr:`write_pc` (when a uop is pending)."""
        m, b = self._m, self._b
        ucode_write_pc, pend_valid = self.write_pc, self.pend_valid
        m.d.comb += [
            b.microcode.addr.eq(ucode_write_pc),
            b.microcode.data.eq(uop),
            b.microcode.en.eq(pend_valid),
        ]
        m.d.sync += ucode_write_pc.eq(ucode_write_pc + pend_valid)

    def replace(self, kind, id_):
        """Write the pending uop and make ``kind id_`` the pending one."""
        m, pend, pend_valid = self._m, self.pend, self.pend_valid
        self.write_pending(pend)
        m.d.sync += [pend.eq(Uop.const({"kind": kind})), pend.id.eq(id_), pend_valid.eq(1)]

    def emit(self, kind, id_, hoisted=False):
        """Append a uop; returns its microcode address (before the append)."""
        m, b, c, t = self._m, self._b, self._c, self._t
        sb, ab, eb = self._sb, self._ab, self._eb
        pend, pend_valid = self.pend, self.pend_valid
        pend_hoist, pend_chained = self.pend_hoist, self.pend_chained
        ucode_write_pc = self.write_pc
        act_sid, act_layer, act_event = self._act_sid, self._act_layer, self._act_event
        stream_blk, na, layer_of = self._stream_blk, self._na, self._layer_of
        act_reads, act_ctl, stream_mem = t.act_reads, t.act_control, t.memory_stream
        lockstep_valid, lockstep_layer = t.lockstep_valid, t.lockstep_layer
        addr = ucode_write_pc + pend_valid
        m.d.sync += pend_hoist.eq(hoisted)
        if kind == UopKind.ACT:
            sid = pick(m, act_sid, id_[:ab], 8, "act_sid_j")[:sb]
            # A vector action (lane by lane, or a vector and its masked lanes) is neither
            # fused into another uop nor carries a second action. A BLOCK row (one cycle
            # per chunk of lines, docs/rtl.md §2.4) may be fused into a STREAM uop and
            # carry a second action, which fires with its last chunk; it is not a second
            # action itself.
            row = act_reads.bit_select(id_[:ab], 1) & stream_blk.bit_select(sid, 1)
            multi = t.act_vec.bit_select(id_[:ab], 1)
            pend_multi = ((pend.kind == UopKind.ACT)
                          & t.act_vec.bit_select(pend.id[:ab], 1))
            # A chained uop's actions would see D's old value: they may not read D.
            reads_chained = (pend.chain & act_reads.bit_select(id_[:ab], 1)
                             & (pick(m, act_sid, id_[:ab], 8, "act_sid_chain") == pend_chained))
            absorb = (pend_valid & ~pend_hoist & (pend.kind == UopKind.STREAM)
                      & ~pend.fuse_act & ~pend.fuse_lane & ~multi & ~reads_chained
                      & ~b.blocking.bit_select(pend.id[:sb], 1))
            immediate = ~(act_reads.bit_select(id_[:ab], 1)
                          & stream_mem.bit_select(sid, 1)
                          & ~b.blocking.bit_select(sid, 1))
            first = Mux(pend.kind == UopKind.ACT, pend.id, pend.act_id)[:ab]
            two_ctl = act_ctl.bit_select(first, 1) & act_ctl.bit_select(id_[:ab], 1)
            # The second action may be a load (a lazy entry through the reorder buffer's
            # port 2, docs/rtl.md §9.5 A) when the first is an immediate operand: a uop
            # still issues at most one load and allocates at most two entries.
            first_sid = pick(m, act_sid, first, 8, "act_sid_first")[:sb]
            first_reads_mem = (act_reads.bit_select(first, 1)
                               & (stream_mem.bit_select(first_sid, 1)
                                  | stream_blk.bit_select(first_sid, 1)))
            first_immediate = (~act_ctl.bit_select(first, 1)
                               & ~(first_reads_mem & ~b.blocking.bit_select(first_sid, 1))
                               & ~(act_reads.bit_select(first, 1)
                                   & stream_blk.bit_select(first_sid, 1)))
            absorb2 = (pend_valid & ~pend_hoist & ~pend.fuse_act2
                       & (immediate | first_immediate) & ~two_ctl
                       & ~multi & ~row & ~pend_multi & ~reads_chained
                       & ((pend.kind == UopKind.ACT)
                          | ((pend.kind == UopKind.STREAM) & pend.fuse_act)))
            # A BLOCK row is never a second action, but a control token may follow a row: when
            # the pending uop's (only) action is a control token and this one a row, the row
            # takes the first slot and the control token the second (it fires with the row's
            # last chunk). The two queues are ordered each in itself, not against each other
            # (docs/isa.md §4), so the tokens are the same; the firing takes one uop less
            # (docs/rtl.md §9.5 F).
            swap = (pend_valid & ~pend_hoist & ~pend.fuse_act2 & row & ~pend_multi
                    & ~reads_chained & act_ctl.bit_select(first, 1)
                    & ((pend.kind == UopKind.ACT)
                       | ((pend.kind == UopKind.STREAM) & pend.fuse_act)))
            with m.If(absorb):
                m.d.sync += [pend.fuse_act.eq(1), pend.act_id.eq(id_), pend_hoist.eq(0)]
            with m.Elif(absorb2):
                m.d.sync += [pend.fuse_act2.eq(1), pend.act2_id.eq(id_),
                             pend.act2_load.eq(~immediate), pend_hoist.eq(0)]
            with m.Elif(swap):
                m.d.sync += [pend.fuse_act2.eq(1), pend.act2_id.eq(first),
                             pend.act2_load.eq(0), pend_hoist.eq(0)]
                with m.If(pend.kind == UopKind.ACT):
                    m.d.sync += pend.id.eq(id_)
                with m.Else():
                    m.d.sync += pend.act_id.eq(id_)
            with m.Else():
                self.replace(kind, id_)
        elif kind == UopKind.NEXT:
            fused = Signal(Uop)
            can = pend_valid & ~pend_hoist & ~pend.fuse_lane & (
                (pend.kind == UopKind.STREAM) | (pend.kind == UopKind.ACT))
            # Leaving the range of a layer without END actions, its exit is the outer
            # layer's NEXT: the same uop performs it (docs/rtl.md §9.5 D).
            outer = Signal()
            no_end = Const(1)
            for a in range(c.actions):
                no_end = no_end & ~((a < na) & (act_layer[a] == id_)
                                    & (act_event[a] == Event.END.value))
            m.d.comb += [fused.eq(pend), outer.eq((id_ != 0) & no_end)]
            with m.If(can):
                m.d.comb += [fused.fuse_next.eq(1), fused.next_layer.eq(id_),
                             fused.next_outer.eq(outer)]
            self.write_pending(fused)
            m.d.sync += [pend.eq(Uop.const({"kind": kind})), pend.id.eq(id_),
                         pend.next_outer.eq(outer), pend_valid.eq(1)]
        elif kind == UopKind.LANE:
            # Folded into the layer's last STREAM uop when there is one (``fuse_lane``).
            with m.If(pend_valid & ~pend_hoist & (pend.kind == UopKind.STREAM)):
                m.d.sync += pend.fuse_lane.eq(1)
            with m.Else():
                self.replace(kind, id_)
        elif kind == UopKind.STREAM and not hoisted:
            # A body stream served by a run-ahead engine needs no evaluation: the next
            # stream's uop pops it (``pop``, one bit per engine; docs/rtl.md §2.2). Not in
            # a LOCKSTEP layer (lane values go to ``vreg``).
            psid = pend.id[:sb]
            pop_absorb = (pend_valid & ~pend_hoist & (pend.kind == UopKind.STREAM)
                          & ~pend.fuse_act & ~pend.fuse_act2 & ~pend.fuse_next
                          & ~pend.fuse_lane
                          & b.stream_prefetched.bit_select(psid, 1)
                          & ~(lockstep_valid & (layer_of(pend.id) == lockstep_layer)))
            pend_engine = pick(m, Array(b.stream_prefetch_engine[i]
                                        for i in range(c.streams)),
                               psid, eb, "pend_engine")
            # A chained MEM stream (hw/tmu/chain.py) takes the ALU stream just before it
            # into its uop (``chain``), with that uop's pops.
            chain_absorb = (pend_valid & ~pend_hoist & (pend.kind == UopKind.STREAM)
                            & ~pend.fuse_act & ~pend.fuse_act2 & ~pend.fuse_next
                            & ~pend.fuse_lane & ~pend.chain
                            & t.chain.bit_select(id_[:sb], 1)
                            & ~b.blocking.bit_select(id_[:sb], 1)
                            & (pend.id + 1 == id_))
            with m.If(pop_absorb):
                m.d.sync += [pend.id.eq(id_),
                             pend.pop.eq(pend.pop | (Const(1, 16) << pend_engine)[:16])]
            with m.Elif(chain_absorb):
                m.d.sync += [pend.id.eq(id_), pend.chain.eq(1), pend_chained.eq(pend.id)]
            with m.Else():
                self.replace(kind, id_)
        else:
            self.replace(kind, id_)
        return addr
