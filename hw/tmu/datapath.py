"""Combinational datapath pieces shared by the traversal and the reorder buffer."""

from amaranth.hdl import Cat, Const, Module, Mux, Signal, signed

from .isa import AluOp


__all__ = ["extend", "extract", "alu", "outside_int64"]


def extend(value, width, sign):
    """Zero- or (if ``sign``) sign-extend the low ``width`` bits of ``value`` to 64 bits."""
    if width == 64:
        return value[:64]
    msb = value[width - 1] & sign
    return Cat(value[:width], msb.replicate(64 - width))


def extract(word, offset, log2_size, sign):
    """The element of ``1 << log2_size`` bytes at byte ``offset`` of ``word`` (a 64-bit word or
    a memory line of any width).

    Returns an unsigned 64-bit value: the element zero- or sign-extended (``sign``).
    """
    shifted = (word >> Cat(Const(0, 3), offset))[:64]
    return Mux(log2_size == 0, extend(shifted, 8, sign),
           Mux(log2_size == 1, extend(shifted, 16, sign),
           Mux(log2_size == 2, extend(shifted, 32, sign),
               shifted)))


def outside_int64(x):
    """Whether the signed value ``x`` lies outside the signed 64-bit range."""
    return (x < -(1 << 63)) | (x >= (1 << 63))


def alu(m, op, a, b):
    """64-bit ALU of ``docs/isa.md`` (``a``, ``b`` signed 64-bit). Returns a ``signed(64)`` signal
    (the result's low 64 bits) and a 1-bit signal: the exact result lies outside the signed
    64-bit range (only ``ADD``, ``SUB``, ``MUL``, ``SHL`` can; docs/isa.md §1 "Address
    overflow")."""
    res = Signal(signed(64))
    wrapped = Signal()
    ua = a.as_unsigned()
    sh = b[:6]
    with m.Switch(op):
        with m.Case(AluOp.ADD):
            exact = Signal(signed(65))
            m.d.comb += [exact.eq(a + b), res.eq(exact), wrapped.eq(outside_int64(exact))]
        with m.Case(AluOp.SUB):
            exact = Signal(signed(65))
            m.d.comb += [exact.eq(a - b), res.eq(exact), wrapped.eq(outside_int64(exact))]
        with m.Case(AluOp.MUL):
            exact = Signal(signed(128))
            m.d.comb += [exact.eq(a * b), res.eq(exact[:64]), wrapped.eq(outside_int64(exact))]
        with m.Case(AluOp.SHL):
            low = Signal(signed(64))
            m.d.comb += [low.eq((ua << sh)[:64]), res.eq(low), wrapped.eq((low >> sh) != a)]
        with m.Case(AluOp.SHR):
            m.d.comb += res.eq(ua >> sh)
        with m.Case(AluOp.SRA):
            m.d.comb += res.eq(a >> sh)
        with m.Case(AluOp.AND):
            m.d.comb += res.eq(a & b)
        with m.Case(AluOp.OR):
            m.d.comb += res.eq(a | b)
        with m.Case(AluOp.XOR):
            m.d.comb += res.eq(a ^ b)
        with m.Case(AluOp.MIN):
            m.d.comb += res.eq(Mux(a < b, a, b))
        with m.Case(AluOp.MAX):
            m.d.comb += res.eq(Mux(a < b, b, a))
        with m.Case(AluOp.LT):
            m.d.comb += res.eq(a < b)
        with m.Case(AluOp.EQ):
            m.d.comb += res.eq(a == b)
    return res, wrapped
