"""The Python mirror of docs/isa.md: encoding bit positions, decode checks, assembly round trip."""

import struct

import pytest

from sw.runtime.handwritten import embedding_bag_program
from sw.runtime.isa import (MAGIC, Action, ActionKind, Event, Fault, Layer, Limits, Program,
                            ProgramError, Source, SrcKind, Stream, StreamKind)


def words(prog: bytes) -> list[int]:
    return list(struct.unpack(f"<{len(prog) // 4}I", prog))


def test_header_and_layer_bits_are_where_the_spec_says():
    w = words(embedding_bag_program(4).encode())
    assert w[0] == 0x554D5445 and bytes.fromhex("45544d55") == struct.pack("<I", MAGIC)
    assert w[1] == 0
    assert w[2] == 3 | 3 << 8 | 7 << 16 | 5 << 24          # layers, regions, streams, actions
    assert w[3] == 8                                        # n_args
    # layer 1: id 1, CHECK_ORDER bit 8, lb = STREAM s0, ub = STREAM s2, step = IMM 1
    assert w[8:12] == [1 | 1 << 8, 2 << 28 | 0, 2 << 28 | 2, 1]
    assert len(w) == 4 + 4 * (3 + 3 + 7 + 5)


def test_stream_and_action_bits():
    w = words(embedding_bag_program(4).encode())
    s6 = w[4 + 4 * 6 + 4 * 6: 4 + 4 * 6 + 4 * 7]         # after 3 layers + 3 regions, stream 6
    # id 6, layer 2, kind MEM(0), log2 size 2 at [21:20], region 2 at [31:24]
    assert s6 == [6 | 2 << 8 | 0 << 16 | 2 << 20 | 2 << 24, 1 << 28 | 2, 2 << 28 | 5, 4]
    a1 = w[-16:-12]                                         # action 1: layer 1 BEGIN operand i0
    assert a1 == [1 | 0 << 8 | 0 << 10, 3 << 28 | 0, 0, 0]


def test_negative_immediate_and_stride_round_trip():
    prog = Program(n_args=1, layers=[Layer(Source.imm(-5), Source.arg(0))],
                   streams=[Stream(0, StreamKind.ALU, Source.index(0), Source.imm(-(1 << 27)))])
    back = Program.decode(prog.encode())
    assert back.layers[0].lb == Source(SrcKind.IMM, -5)
    assert back.streams[0].b.value == -(1 << 27)


def test_decode_is_inverse_of_encode():
    prog = embedding_bag_program(8)
    assert Program.decode(prog.encode()) == prog


def test_asm_round_trip_gives_the_same_bytes():
    prog = embedding_bag_program(4)
    text = prog.to_asm()
    assert Program.from_asm(text).encode() == prog.encode()
    assert "layer 1  lb=s0 ub=s2 step=#1 check_order" in text
    assert "stream 6 layer=2 mem  region=2 a=a2 b=s5 stride=4 size=4" in text


def test_asm_comments_and_errors():
    text = "# a comment\n.args 1\nlayer 0 lb=#0 ub=a0 step=#1  # trailing comment\n"
    assert len(Program.from_asm(text).layers) == 1
    with pytest.raises(ValueError, match=r"line 2: unknown directive 'lair'"):
        Program.from_asm(".args 1\nlair 0 lb=#0 ub=a0\n")
    with pytest.raises(ValueError, match=r"source must look like"):
        Program.from_asm("layer 0 lb=x0 ub=#3\n")


def corrupt(prog: bytes, index: int, value: int) -> bytes:
    w = words(prog)
    w[index] = value
    return struct.pack(f"<{len(w)}I", *w)


GOOD = embedding_bag_program(4).encode()


@pytest.mark.parametrize("data, code, pc, message", [
    (corrupt(GOOD, 0, 0x12345678), Fault.BAD_MAGIC, 0, "magic must be 0x554d5445, not 0x12345678"),
    (corrupt(GOOD, 1, 7), Fault.BAD_VERSION, 1, "version must be 0, not 7"),
    (corrupt(GOOD, 2, 9 | 3 << 8 | 7 << 16 | 5 << 24), Fault.RESOURCES, 2,
     "n_layers must be at most 4 for this unit, not 9"),
    (GOOD[:-4], Fault.TRUNCATED, 75, "header announces 76 words, program has 75"),
    (corrupt(GOOD, 4 + 4 * 6 + 4 * 6, 6 | 2 << 8 | 5 << 16), Fault.ILLEGAL_FIELD, 52,
     "stream kind must be 0..2, not 5"),
    (corrupt(GOOD, 9, 2 << 28 | 3), Fault.ILLEGAL_FIELD, 9,
     "layer 1 lb: stream s3 is not visible here"),
    (corrupt(GOOD, 5, 7 << 28), Fault.ILLEGAL_FIELD, 5, "source kind must be 0..3, not 7"),
])
def test_malformed_programs_raise_with_code_and_pc(data, code, pc, message):
    with pytest.raises(ProgramError) as info:
        Program.decode(data)
    assert info.value.code == code and info.value.pc == pc
    assert str(info.value) == f"word {pc}: {message} (fault {code.name})"


def test_resource_limits_are_the_units():
    with pytest.raises(ProgramError, match="n_streams must be at most 4 for this unit, not 7"):
        Program.decode(GOOD, Limits(streams=4))


def test_begin_action_cannot_use_its_own_layer_index():
    prog = Program(n_args=1, layers=[Layer(Source.imm(0), Source.imm(3))],
                   actions=[Action(0, Event.BEGIN, ActionKind.OPERAND, source=Source.index(0))])
    with pytest.raises(ProgramError, match="action 0 \\(BEGIN\\): index i0 is not visible here"):
        prog.encode()


def test_zero_step_is_illegal():
    prog = Program(layers=[Layer(Source.imm(0), Source.imm(3), Source.imm(0))])
    with pytest.raises(ProgramError, match="layer 0 step must be an immediate > 0, not #0"):
        prog.encode()


def test_immediate_out_of_range_is_a_value_error():
    with pytest.raises(ValueError, match=r"immediate must be in \[-134217728, 134217727\], not 134217728"):
        Source.imm(1 << 27)
