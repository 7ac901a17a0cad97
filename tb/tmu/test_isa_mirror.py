"""``hw/tmu/isa.py`` mirrors the same tables as ``sw/runtime/isa.py`` (both from docs/isa.md)."""

import pytest

import hw.tmu.isa as hw_isa
import sw.runtime.isa as sw_isa


@pytest.mark.parametrize("hw_enum, sw_enum", [
    (hw_isa.SourceKind, sw_isa.SrcKind),
    (hw_isa.StreamKind, sw_isa.StreamKind),
    (hw_isa.AluOp, sw_isa.AluOp),
    (hw_isa.Event, sw_isa.Event),
    (hw_isa.ActionKind, sw_isa.ActionKind),
    (hw_isa.FaultCode, sw_isa.Fault),
])
def test_enums(hw_enum, sw_enum):
    assert {m.name: m.value for m in hw_enum} == {m.name: int(m) for m in sw_enum}


def test_constants():
    assert hw_isa.MAGIC == sw_isa.MAGIC
    assert hw_isa.VERSION == sw_isa.VERSION
    assert hw_isa.DONE_TOKEN == sw_isa.DONE_TOKEN
    assert hw_isa.HEADER_WORDS == sw_isa.HEADER_WORDS
    assert hw_isa.DESCRIPTOR_WORDS == sw_isa.DESCRIPTOR_WORDS
    assert -(1 << (hw_isa.IMM_BITS - 1)) == sw_isa.IMM_MIN


def _field(struct, name, word):
    """The field ``name`` of the Amaranth layout ``struct`` in the integer ``word``."""
    from amaranth.hdl import Shape
    f = struct.as_shape()[name]
    return (word >> f.offset) & ((1 << Shape.cast(f.shape).width) - 1)


def test_field_positions():
    """Encode descriptors with the Python assembler, read them back through the Amaranth layouts."""
    import struct
    S = sw_isa.Source
    src = S.stream(5).encode()
    assert (_field(hw_isa.Source, "kind", src), _field(hw_isa.Source, "value", src)) == \
        (int(sw_isa.SrcKind.STREAM), 5)
    imm = S.imm(-3).encode()
    assert _field(hw_isa.Source, "value", imm) == (-3) & ((1 << hw_isa.IMM_BITS) - 1)
    prog = sw_isa.Program(
        n_args=3,
        layers=[sw_isa.Layer(S.imm(0), S.arg(2), check_order=False),
                sw_isa.Layer(S.stream(0), S.stream(1), check_order=True)],
        regions=[sw_isa.Region(S.arg(0), S.arg(1))],
        streams=[sw_isa.Stream(0, sw_isa.StreamKind.MEM, S.arg(0), S.index(0), size=4, signed=True,
                               stride=-4, region=0),
                 sw_isa.Stream(0, sw_isa.StreamKind.ALU, S.index(0), S.imm(1), op=sw_isa.AluOp.SRA)],
        actions=[sw_isa.Action(1, sw_isa.Event.END, sw_isa.ActionKind.CONTROL, callback=77)])
    words = struct.unpack(f"<{len(prog.encode()) // 4}I", prog.encode())
    assert [_field(hw_isa.CountsWord, n, words[2])
            for n in ("n_layers", "n_regions", "n_streams", "n_actions")] == [2, 1, 2, 1]
    assert _field(hw_isa.ArgsWord, "n_args", words[3]) == 3
    assert (_field(hw_isa.LayerWord0, "id", words[8]),
            _field(hw_isa.LayerWord0, "check_order", words[8])) == (1, 1)
    w = words[16]
    mode = _field(hw_isa.StreamWord0, "mode", w)
    assert (_field(hw_isa.StreamWord0, "id", w), _field(hw_isa.StreamWord0, "layer", w),
            _field(hw_isa.StreamWord0, "kind", w), _field(hw_isa.MemMode, "log2_size", mode),
            _field(hw_isa.MemMode, "sign", mode), _field(hw_isa.StreamWord0, "region", w)) == \
        (0, 0, int(sw_isa.StreamKind.MEM), 2, 1, 0)
    assert _field(hw_isa.StreamWord0, "mode", words[20]) == int(sw_isa.AluOp.SRA)
    w = words[24]
    assert (_field(hw_isa.ActionWord0, "layer", w), _field(hw_isa.ActionWord0, "event", w),
            _field(hw_isa.ActionWord0, "kind", w)) == \
        (1, int(sw_isa.Event.END), int(sw_isa.ActionKind.CONTROL))
    assert _field(hw_isa.ControlWord1, "callback", words[25]) == 77
