"""``hw.tmu.datapath``'s element extraction from a memory line (``select_word``,
``extract_aligned``: the run-ahead engines' heads, the chain engine's responses, the blocking
load's element) against Python integers: every naturally aligned element of 1, 2, 4 and 8 bytes
of fresh random lines of 64, 128 and 512 bits, zero- and sign-extended, and ``select_word`` with
an index wider than the line needs (past the last word: 0). Also ``one_hot`` (the reorder
buffer's ready-bit masks) against ``1 << index`` for every index of several widths."""

import random

import pytest
from amaranth.hdl import Module, Signal
from amaranth.sim import Simulator

from hw.tmu.datapath import extract_aligned, one_hot, select_word
from tb.seeds import fresh_seed


def _expected(line: int, offset: int, log2_size: int, sign: bool) -> int:
    bits = 8 << log2_size
    value = (line >> (8 * offset)) & ((1 << bits) - 1)
    if sign and value >> (bits - 1):
        value -= 1 << bits
    return value & ((1 << 64) - 1)


@pytest.mark.parametrize("line_bits", [64, 128, 512])
def test_extract_aligned_matches_python_integers(line_bits):
    rng = random.Random(fresh_seed(f"datapath extract {line_bits}"))
    offset_bits = (line_bits // 8 - 1).bit_length()
    line, offset = Signal(line_bits), Signal(max(offset_bits, 1))
    log2_size, sign = Signal(2), Signal()
    value = extract_aligned(line, offset, log2_size, sign)
    cases = []
    for _ in range(40):
        word = rng.getrandbits(line_bits)
        for log2 in range(4):
            for off in range(0, line_bits // 8, 1 << log2):
                cases.append((word, off, log2, rng.random() < 0.5))
    failures = []

    async def testbench(ctx):
        for word, off, log2, sgn in cases:
            ctx.set(line, word)
            ctx.set(offset, off)
            ctx.set(log2_size, log2)
            ctx.set(sign, sgn)
            got, want = ctx.get(value), _expected(word, off, log2, sgn)
            if got != want:
                failures.append((hex(word), off, log2, sgn, hex(got), hex(want)))

    sim = Simulator(Module())
    sim.add_testbench(testbench)
    sim.run()
    assert not failures, failures[:5]


def test_select_word_with_a_wide_index_gives_zero_past_the_line():
    rng = random.Random(fresh_seed("datapath select_word"))
    line, index = Signal(192), Signal(4)          # 3 words, indices 0..15
    word = select_word(line, index)
    words = [rng.getrandbits(64) for _ in range(3)]
    failures = []

    async def testbench(ctx):
        ctx.set(line, sum(w << (64 * k) for k, w in enumerate(words)))
        for k in range(16):
            ctx.set(index, k)
            want = words[k] if k < 3 else 0
            if ctx.get(word) != want:
                failures.append((k, hex(ctx.get(word)), hex(want)))

    sim = Simulator(Module())
    sim.add_testbench(testbench)
    sim.run()
    assert not failures, failures


def test_select_word_rejects_a_line_that_is_not_whole_words():
    with pytest.raises(ValueError, match="line must be a multiple of 64 bits wide, not 100"):
        select_word(Signal(100), Signal(1))


@pytest.mark.parametrize("width,index_bits", [(8, 3), (16, 5), (64, 6), (100, 7), (512, 9),
                                              (512, 10)])
def test_one_hot_is_one_shifted_by_the_index(width, index_bits):
    index = Signal(index_bits)
    value = one_hot(index, width)
    failures = []

    async def testbench(ctx):
        for k in range(1 << index_bits):
            ctx.set(index, k)
            want = (1 << k) & ((1 << width) - 1)
            if len(value) != width or ctx.get(value) != want:
                failures.append((k, len(value), hex(ctx.get(value)), hex(want)))

    sim = Simulator(Module())
    sim.add_testbench(testbench)
    sim.run()
    assert not failures, failures[:5]
