"""The field tables of ``sw/runtime/isa_fields.py``: well formed, ``pack``/``unpack`` round-trip,
and the Amaranth layouts ``hw/tmu/isa.py`` builds from them put every field where ``pack`` does.

(These replace the mirror test that compared two hand-written copies of the format: there is one
copy now, and the bit positions themselves are checked against docs/isa.md in test_isa.py.)
"""

import random

import pytest
from amaranth.hdl import Const, Shape

import hw.tmu.isa as hw_isa
import sw.runtime.isa as sw_isa
from sw.runtime import isa_fields as F

#: Words that are exactly one 32-bit program word (the others are sub-fields of one).
SUB_FIELDS = {"MemMode", "MemModeV1"}


@pytest.fixture
def rng():
    seed = random.randrange(1 << 32)
    print(f"seed={seed}")
    return random.Random(seed)


@pytest.mark.parametrize("word", sorted(F.WORDS))
def test_word_is_well_formed(word):
    names = [name for name, _ in F.WORDS[word]]
    assert len(set(names)) == len(names), f"{word}: a field name twice"
    assert all(shape in F.ENUMS for _, shape in F.WORDS[word] if isinstance(shape, str))
    assert F.width_of(word) == (4 if word in SUB_FIELDS else 32)


@pytest.mark.parametrize("name", sorted(F.ENUMS))
def test_enum_codes_are_distinct_and_fit(name):
    width, members, _ = F.ENUMS[name]
    codes = [code for _, code in members]
    assert len(set(codes)) == len(codes) and all(0 <= c < 1 << width for c in codes)


@pytest.mark.parametrize("word", sorted(F.WORDS))
def test_pack_unpack_round_trip(word, rng):
    layout = F.fields_of(word)
    for _ in range(50):
        values = {name: rng.getrandbits(width) for name, (_, width) in layout.items()}
        packed = F.pack(word, **values)
        assert 0 <= packed < 1 << F.width_of(word)
        assert F.unpack(word, packed) == values
    value = rng.getrandbits(F.width_of(word))
    assert F.pack(word, **F.unpack(word, value)) == value


def test_pack_names_the_bad_field():
    with pytest.raises(ValueError, match=r"StreamWord0.kind must be in \[0, 15\], not 16"):
        F.pack("StreamWord0", kind=16)
    with pytest.raises(ValueError, match=r"ArgsWord has no field 'n_layers'"):
        F.pack("ArgsWord", n_layers=1)
    assert F.reserved_mask("LayerWord0V1") == 0xFF00_F800


HW_WORDS = sorted(set(F.WORDS) & set(dir(hw_isa)))


def test_hardware_builds_every_word_it_names():
    assert set(HW_WORDS) >= {"Source", "VersionWord", "CountsWord", "ArgsWord", "LayerWord0",
                             "LayerWord0V1", "RegionWord0", "StreamWord0", "MemMode",
                             "ActionWord0", "OperandWord0V1", "ControlWord1"}


@pytest.mark.parametrize("word", HW_WORDS)
def test_hardware_layout_reads_what_pack_writes(word, rng):
    """Amaranth's own layout arithmetic (``Struct.const``) against ``pack``: same bits."""
    struct = getattr(hw_isa, word)
    layout = F.fields_of(word)
    assert Shape.cast(struct).width == F.width_of(word)
    for _ in range(20):
        values = {name: rng.getrandbits(width) for name, (_, width) in layout.items()}
        shapes = dict(F.WORDS[word])
        # an enumeration field takes a member; pick a legal code for it
        for name, shape in shapes.items():
            if isinstance(shape, str):
                values[name] = rng.choice(F.ENUMS[shape][1])[1]
        const = struct.const({name: (getattr(hw_isa, shapes[name])(v) if isinstance(shapes[name], str)
                                     else v) for name, v in values.items()})
        assert Const.cast(const).value == F.pack(word, **values), values


@pytest.mark.parametrize("hw_enum, sw_enum", [
    (hw_isa.SourceKind, sw_isa.SrcKind), (hw_isa.StreamKind, sw_isa.StreamKind),
    (hw_isa.AluOp, sw_isa.AluOp), (hw_isa.Event, sw_isa.Event),
    (hw_isa.ActionKind, sw_isa.ActionKind), (hw_isa.LayerMode, sw_isa.LayerMode),
    (hw_isa.FaultCode, sw_isa.Fault),
])
def test_both_sides_take_their_enums_from_the_table(hw_enum, sw_enum):
    width, members, _ = F.ENUMS[hw_enum.__name__]
    assert Shape.cast(hw_enum).width == width
    assert [(m.name, m.value) for m in hw_enum] == list(members)
    assert [(m.name, int(m)) for m in sw_enum] == list(members)
