"""Combinational datapath pieces shared by the traversal and the reorder buffer."""

from amaranth.hdl import Cat, Const, Module, Mux, Signal, signed

from .isa import AluOp


__all__ = ["extend", "extract", "extract_aligned", "select_word", "one_hot", "alu",
           "outside_int64", "sum_below", "sum_above", "sum_outside_int64"]


def extend(value, width, sign):
    """Zero- or (if ``sign``) sign-extend the low ``width`` bits of ``value`` to 64 bits.

    The fill is one multiplexer of a constant, not ``msb.replicate``: Amaranth writes an
    expression once per use, so a replicated sign bit of a wide ``value`` (a shifted memory line)
    made Verilator evaluate that shift once per fill bit, every cycle (140 copies of a 512-bit
    shift per run-ahead engine until 2026-11-28)."""
    if width == 64:
        return value[:64]
    fill = Mux(value[width - 1] & sign, Const((1 << (64 - width)) - 1, 64 - width), 0)
    return Cat(value[:width], fill)


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


def extract_aligned(line, offset, log2_size, sign):
    """:func:`extract` of a naturally aligned element (``offset`` a multiple of its size, inside
    ``line``): the element lies in the 64-bit word ``offset // 8``, so a word select and a shift
    within 64 bits do what a shift of the whole line does (an engine's head, a blocking load's
    element; for Verilator a 64-bit select of a wide value instead of a wide shift, ~512 bits
    per engine every cycle).

    The word select is a tree of multiplexers over the line's constant 64-bit slices, one level
    per bit of ``offset // 8``, rather than ``word_select`` with a variable index: Amaranth
    writes that as a shift of the whole line, which Verilator computes as a 512-bit shift every
    cycle for each engine's two heads (``docs/performance.md``, "The engines' element extraction
    without wide shifts"). Synthesis maps either to the same multiplexers (Yosys: 776 2:1
    multiplexers for one extraction from a 512-bit line, either way).

    Returns an unsigned 64-bit value: the element zero- or sign-extended (``sign``)."""
    if len(line) > 64:
        word = select_word(line, offset[3:])
    else:
        word = line
    return extract(word, offset[:3], log2_size, sign)


def select_word(line, index):
    """The 64-bit word ``index`` of ``line`` (``len(line)`` a multiple of 64), as a tree of
    multiplexers on the bits of ``index``, least significant first; an index past the line's
    last word gives 0."""
    if len(line) % 64:
        raise ValueError(f"line must be a multiple of 64 bits wide, not {len(line)}")
    words = [line.word_select(k, 64) for k in range(len(line) // 64)]
    for bit in range(len(index)):
        if len(words) == 1:
            words = [Mux(index[bit:] == 0, words[0], 0)]
            break
        if len(words) % 2:
            words.append(Const(0, 64))
        words = [Mux(index[bit], words[k + 1], words[k]) for k in range(0, len(words), 2)]
    return words[0]


def one_hot(index, width):
    """``1 << index`` as ``width`` bits (0 for an ``index`` of ``width`` or more), built per
    64-bit word: a 64-bit one-hot of ``index % 64`` placed in word ``index // 64`` by one
    multiplexer per word. ``Const(1, width) << index`` is the same value, but Amaranth writes it
    as a shift ``width + 2**len(index) - 1`` bits wide, which Verilator computes word by word
    every cycle (the reorder buffer's ready bits: six 1023-bit shifts per cycle at 512 entries).
    """
    if width <= 64:
        return (Const(1, 1) << index)[:width]
    low = (Const(1, 1) << index[:6])[:64]
    high = index[6:]
    words = [Mux(high == w, low, 0) for w in range((width + 63) // 64)]
    return Cat(*words)[:width]


def outside_int64(x):
    """Whether the signed value ``x`` lies outside the signed 64-bit range."""
    return (x < -(1 << 63)) | (x >= (1 << 63))


# Checks of a sum ``base + offset`` against a limit, written as ``offset`` against ``limit -
# base``: exact (Amaranth's arithmetic widens, nothing wraps), and the subtraction runs beside
# whatever computes ``offset`` (a stream's ``b * stride``, a multiplier) instead of an adder
# after it, so one carry chain follows the product, not two (``docs/synthesis.md``, "The
# address checks beside the multiplier").

def sum_below(base, offset, limit):
    """Whether ``base + offset < limit`` (signed or unsigned values of any width, exactly)."""
    return offset < limit - base


def sum_above(base, offset, limit):
    """Whether ``base + offset > limit`` (signed or unsigned values of any width, exactly)."""
    return offset > limit - base


def sum_outside_int64(base, offset):
    """Whether ``base + offset`` lies outside the signed 64-bit range (as
    :func:`outside_int64` of the sum, exactly)."""
    return sum_below(base, offset, -(1 << 63)) | ~sum_below(base, offset, 1 << 63)


def alu(m, op, a, b, *, mul_wrapped=True, product=None):
    """64-bit ALU of ``docs/isa.md`` (``a``, ``b`` signed 64-bit). Returns a ``signed(64)`` signal
    (the result's low 64 bits) and a 1-bit signal: the exact result lies outside the signed
    64-bit range (only ``ADD``, ``SUB``, ``MUL``, ``SHL`` can; docs/isa.md §1 "Address
    overflow"). ``ADD``/``SUB`` overflow comes from the sign bits (no 65-bit intermediate).

    ``mul_wrapped=False`` (the chain engine, ``hw/tmu/chain_engine.py``, whose decoder never
    needs it): ``MUL`` gives no wrapped bit, only the product's low 64 bits from 32 x 32 partial
    products, no 128-bit product — a cheaper cycle for the FPGA and for Verilator, which
    evaluates every op every cycle.

    ``product``: ``MUL``'s exact 128-bit product ``a * b`` taken elsewhere (the traversal's,
    registered: ``hw/tmu/registered_products.py``), instead of a multiplier here."""
    res = Signal(signed(64))
    wrapped = Signal()
    ua, ub = a.as_unsigned(), b.as_unsigned()
    sh = b[:6]
    with m.Switch(op):
        with m.Case(AluOp.ADD):
            s = (ua + ub)[:64]
            m.d.comb += [res.eq(s), wrapped.eq((a[63] == b[63]) & (s[63] != a[63]))]
        with m.Case(AluOp.SUB):
            s = (ua - ub)[:64]
            m.d.comb += [res.eq(s), wrapped.eq((a[63] != b[63]) & (s[63] != a[63]))]
        with m.Case(AluOp.MUL):
            if mul_wrapped:
                exact = Signal(signed(128))
                m.d.comb += [exact.eq(a * b if product is None else product), res.eq(exact[:64]),
                             wrapped.eq(outside_int64(exact))]
            else:
                cross = (ua[:32] * ub[32:64])[:32] + (ua[32:64] * ub[:32])[:32]
                m.d.comb += res.eq(ua[:32] * ub[:32] + (cross[:32] << 32))
        with m.Case(AluOp.SHL):
            # ``a · 2**sh`` fits in 64 signed bits when the top ``sh + 1`` bits of ``a`` are
            # all equal: a mask of those bits (bit ``i`` set when ``sh >= 63 - i``), not a
            # second shifter (``(low >> sh) != a``), which Yosys' ``share`` pass merged with
            # SRA's behind a multiplexer (``docs/synthesis.md``, "The placed critical path").
            top_bits = Signal(64, name="shl_top_bits")
            top = Signal(64, name="shl_top")
            m.d.comb += [top_bits.eq(Cat(*(sh >= 63 - i for i in range(64)))),
                         top.eq(ua & top_bits),
                         res.eq((ua << sh)[:64]),
                         wrapped.eq((top != 0) & (top != top_bits))]
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
