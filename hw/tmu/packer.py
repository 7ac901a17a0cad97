"""Operand packer (ISA v1, ``docs/isa.md`` §7.5): elements into 64-bit data tokens."""

from amaranth.hdl import Cat, Const, Module, Mux, Signal
from amaranth.lib import data, stream, wiring
from amaranth.lib.wiring import In, Out

from .datapath import extract


__all__ = ["ChunkLayout", "Packer"]


class ChunkLayout(data.Struct):
    """One reorder-buffer entry as the packer sees it: ``count`` consecutive elements of
    ``1 << log2_size`` bytes, the first at byte ``offset`` of ``word``, each to be packed as an
    element of ``8 >> pack`` bytes."""
    word:      64   # the operand (immediate) or the aligned 64-bit word a load returned
    offset:    3    # bytes: position of the first element in ``word``
    log2_size: 2    # log2 of the element size in ``word``, bytes (3 for an immediate operand)
    sign:      1    # sign-extend an element that is narrower than its packed width
    count:     4    # elements, 0..8 (0: no element, only the ``flush``)
    pack:      2    # packed element width = 8 >> pack bytes
    flush:     1    # after the last element: flush the partial token (no JOIN, or end of firing)


class Packer(wiring.Component):
    """The data-queue packer of ``docs/isa.md`` §7.5: one partial 64-bit token and a byte
    offset ``o``.

    For each element of ``w = 8 >> pack`` bytes: ``o' = round_up(o, w)``; if ``o' + w > 8`` the
    partial token is emitted first; the element's low ``w`` bytes go to bytes ``[o', o' + w)``;
    a full token is emitted. After the entry's last element, ``flush`` emits a partial token
    (bytes ``[o, 8)`` zero). Elements whose size in memory equals their packed width are moved
    several per cycle (as many as fit the token: a 64-bit word of a BLOCK row becomes one token);
    others one per cycle, zero-/sign-extended to 64 bits and truncated to ``w`` bytes. So a
    version-0 operand (``pack`` 0, ``flush``) is one token in one cycle, as before the packer.

    Members
    -------
    i : In(stream.Signature(ChunkLayout))
        Entries from the reorder buffer, in program order. An entry is taken (``ready``) in the
        cycle its last element is placed (and its token, if any, accepted by ``o``).
    o : Out(stream.Signature(64))
        Data tokens. At most one per cycle; ``valid`` does not depend on ``ready``.
    clear : In(1)
        Drop the partial token (start of a run).
    """

    i: In(stream.Signature(ChunkLayout))
    o: Out(stream.Signature(64))
    clear: In(1)

    def elaborate(self, platform):
        m = Module()
        e = self.i.payload

        tok  = Signal(64)
        off  = Signal(4)        # bytes used in ``tok``, 0..7
        used = Signal(4)        # elements of the head entry already placed

        log2w = Signal(2)
        m.d.comb += log2w.eq(3 - e.pack)
        w = Signal(4)
        m.d.comb += w.eq(Const(1, 4) << log2w)
        at = Signal(5)          # round_up(off, w)
        m.d.comb += at.eq(((off + w - 1) >> log2w) << log2w)
        space = Signal(4)       # elements of width w that fit from ``at``
        m.d.comb += space.eq(Mux(at >= 8, 0, (8 - at) >> log2w))
        rem = Signal(4)
        m.d.comb += rem.eq(e.count - used)
        same = e.log2_size == log2w
        k = Signal(4)           # elements placed this cycle
        m.d.comb += k.eq(Mux(same, Mux(rem < space, rem, space), Mux(space != 0, 1, 0)))
        pos = Signal(3)         # byte of the next element in ``word``
        m.d.comb += pos.eq(e.offset + (used << e.log2_size))
        src = Signal(64)
        m.d.comb += src.eq(Mux(same, e.word >> Cat(Const(0, 3), pos),
                               extract(e.word, pos, e.log2_size, e.sign)))
        nbytes = Signal(4)
        m.d.comb += nbytes.eq(k << log2w)
        mask = Signal(64)
        with m.Switch(nbytes):
            for n in range(9):
                with m.Case(n):
                    m.d.comb += mask.eq((1 << (8 * n)) - 1)
        new_tok = Signal(64)
        m.d.comb += new_tok.eq(tok | ((src & mask) << Cat(Const(0, 3), at))[:64])
        new_off = Signal(5)
        m.d.comb += new_off.eq(at + nbytes)
        last = Signal()
        m.d.comb += last.eq(rem == k)

        with m.If(self.i.valid):
            with m.If((rem == 0)):
                # No element (an empty BLOCK row): only the flush.
                with m.If(e.flush & (off != 0)):
                    m.d.comb += [self.o.valid.eq(1), self.o.payload.eq(tok),
                                 self.i.ready.eq(self.o.ready)]
                    with m.If(self.o.ready):
                        m.d.sync += [tok.eq(0), off.eq(0)]
                with m.Else():
                    m.d.comb += self.i.ready.eq(1)
                m.d.sync += used.eq(Mux(self.i.ready, 0, used))
            with m.Elif(k == 0):
                # The element does not fit: emit the partial token first.
                m.d.comb += [self.o.valid.eq(1), self.o.payload.eq(tok)]
                with m.If(self.o.ready):
                    m.d.sync += [tok.eq(0), off.eq(0)]
            with m.Else():
                emit = (new_off == 8) | (last & e.flush)
                with m.If(emit):
                    m.d.comb += [self.o.valid.eq(1), self.o.payload.eq(new_tok)]
                with m.If(~emit | self.o.ready):
                    m.d.comb += self.i.ready.eq(last)
                    m.d.sync += [
                        tok.eq(Mux(emit, 0, new_tok)),
                        off.eq(Mux(emit, 0, new_off)),
                        used.eq(Mux(last, 0, used + k)),
                    ]

        with m.If(self.clear):
            m.d.sync += [tok.eq(0), off.eq(0), used.eq(0)]
        return m
