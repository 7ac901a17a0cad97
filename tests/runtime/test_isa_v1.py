"""ISA version 1 (docs/isa.md §7): bit positions, decode checks and faults, assembly round trip,
configuration files."""

import json
import struct

import pytest

from hw.tmu.config import TmuConfig
from sw.runtime.isa import (CONFIG_DIR, Action, ActionKind, Event, Fault, Feature, Layer, LayerMode,
                            Limits, Program, ProgramError, Region, Source, SrcKind, Stream,
                            StreamKind)

VECTOR = Limits.from_file("tmu_vector")
RTL = Limits.from_file("tmu_rtl")
V0 = Limits(name="v0")                      # a unit that implements ISA version 0 only

ASM = """\
.version 1
.args 4
layer 0  lb=#0 ub=a1 step=#1 broadcast
layer 1  lb=#0 ub=a2 step=#2 lockstep lanes=8
region 0 base=a0 size=a3
stream 0 layer=0 alu  mul a=i0 b=a2
stream 1 layer=0 mem  region=0 a=a0 b=s0 size=2 signed block n=a2
stream 2 layer=1 alu  add a=s0 b=i1
stream 3 layer=1 mem  region=0 a=a0 b=s2 stride=2 size=2
action layer=0 iter operand s1 esize=2
action layer=1 iter operand c1 esize=4 join
action layer=1 iter operand f1 esize=4
action layer=1 iter operand s3 esize=1
action layer=1 iter control 7
"""


def words(data: bytes) -> list[int]:
    return list(struct.unpack(f"<{len(data) // 4}I", data))


def put(data: bytes, index: int, value: int) -> bytes:
    w = words(data)
    w[index] = value
    return struct.pack(f"<{len(w)}I", *w)


PROG = Program.from_asm(ASM)
GOOD = PROG.encode()
# word offsets: header 4, layers at 4 and 8, region at 12, streams at 16.., actions at 32..
L0, L1, R0, S0, A0 = 4, 8, 12, 16, 32


def test_v1_bits_are_where_the_spec_says():
    w = words(GOOD)
    assert w[1] == 1                                              # version 1
    assert w[L0] == 0 | LayerMode.BROADCAST << 9                  # mode at [10:9], lanes-1 = 0
    assert w[L1] == 1 | LayerMode.LOCKSTEP << 9 | 7 << 16         # lanes-1 = 7 at [23:16]
    # block MEM stream: log2 size 1 at [21:20], signed bit 22, BLOCK bit 23; word 3 = count source a2
    assert w[S0 + 4:S0 + 8] == [1 | 0 << 8 | 0 << 16 | (1 | 1 << 2 | 1 << 3) << 20,
                                1 << 28 | 0, 2 << 28 | 0, 1 << 28 | 2]
    # operand c1 packed 4-byte (p=1 at [13:12]) with JOIN (bit 14); COUNT source kind 4
    assert w[A0 + 4:A0 + 8] == [1 | 1 << 8 | 0 << 10 | 1 << 12 | 1 << 14, 4 << 28 | 1, 0, 0]
    assert w[A0 + 8 + 1] == 5 << 28 | 1                           # FIRST source kind 5
    assert w[A0 + 12] == 1 | 1 << 8 | 3 << 12                     # esize=1 -> p=3


def test_v1_round_trips():
    assert Program.decode(GOOD, VECTOR) == PROG
    assert PROG.to_asm() == ASM
    assert Program.from_asm(PROG.to_asm()).encode() == GOOD
    assert PROG.features_used() == set(Feature)
    assert PROG.required_version() == 1


def test_v0_program_is_decoded_as_before_by_a_v1_unit():
    v0 = Program(n_args=1, layers=[Layer(Source.imm(0), Source.arg(0))],
                 actions=[Action(0, Event.ITER, ActionKind.OPERAND, source=Source.index(0))])
    assert Program.decode(v0.encode(), VECTOR) == Program.decode(v0.encode(), V0) == v0
    assert v0.required_version() == 0


@pytest.mark.parametrize("data, limits, code, pc, message", [
    (GOOD, V0, Fault.BAD_VERSION, 1, "version must be 0, not 1"),
    (put(GOOD, 1, 2), VECTOR, Fault.BAD_VERSION, 1, "version must be one of 0, 1, not 2"),
    (put(GOOD, L0, 3 << 9), VECTOR, Fault.ILLEGAL_FIELD, L0, "layer 0 mode must be 0..2, not 3"),
    (put(GOOD, L0, LayerMode.BROADCAST << 9 | 1 << 16), VECTOR, Fault.ILLEGAL_FIELD, L0,
     "layer 0 lanes must be 1 in mode BROADCAST, not 2"),
    (put(GOOD, L0, 1 << 11), VECTOR, Fault.ILLEGAL_FIELD, L0, "layer word 0 has reserved bits set"),
    (put(GOOD, L1, 1 | LayerMode.LOCKSTEP << 9 | 15 << 16), VECTOR, Fault.RESOURCES, L1,
     "layer 1 lanes must be at most 8 for this unit, not 16"),
    (GOOD, Limits(versions=(0, 1), features={"broadcast", "block", "pack"}, max_block=8),
     Fault.RESOURCES, L1, "layer 1 \\(LOCKSTEP\\) needs the 'lockstep' feature"),
    (GOOD, Limits(versions=(0, 1), lanes=8, features={"lockstep", "broadcast", "pack"}),
     Fault.RESOURCES, S0 + 4, "stream 1 \\(BLOCK\\) needs the 'block' feature"),
    (GOOD, Limits(versions=(0, 1), lanes=8, features={"lockstep", "broadcast", "block"}, max_block=8),
     Fault.RESOURCES, A0, "action 0 \\(pack/JOIN\\) needs the 'pack' feature"),
    (GOOD, Limits(versions=(0, 1), lanes=8, features=set(Feature), max_block=8, streams_per_layer=1),
     Fault.RESOURCES, S0 + 4, "streams of layer 0 must be at most 1 for this unit \\(stream slots per layer\\), not 2"),
    (put(GOOD, A0 + 1, 6 << 28), VECTOR, Fault.ILLEGAL_FIELD, A0 + 1, "source kind must be 0..5, not 6"),
    (put(GOOD, A0, 1 << 15), VECTOR, Fault.ILLEGAL_FIELD, A0, "action word 0 has reserved bits set"),
    # structural rules (last phase)
    (put(put(GOOD, L0, LayerMode.LOCKSTEP << 9 | 1 << 16), L1, 1), VECTOR, Fault.ILLEGAL_FIELD, L0,
     "layer 0 is LOCKSTEP but not the last layer \\(2 layers\\)"),
    (put(GOOD, L0, 0), VECTOR, Fault.ILLEGAL_FIELD, S0 + 8 + 1,
     "stream 2: s0 of layer 0 reaches the lanes of LOCKSTEP layer 1 only if layer 0 is BROADCAST, not SINGLE"),
    (put(GOOD, S0 + 8 + 2, 2 << 28 | 1), VECTOR, Fault.ILLEGAL_FIELD, S0 + 8 + 2,
     "stream 2: block stream s1 may only be pushed by an operand action"),
])
def test_v1_decode_faults(data, limits, code, pc, message):
    with pytest.raises(ProgramError, match=message) as e:
        Program.decode(data, limits)
    assert (e.value.code, e.value.pc) == (code, pc)


def test_block_stream_of_a_lockstep_layer_is_illegal():
    prog = Program.from_asm(ASM)
    prog.streams[3].block, prog.streams[3].count = True, Source.arg(2)
    with pytest.raises(ProgramError, match="stream 3 is a block stream of LOCKSTEP layer 1"):
        prog.encode()


def test_v0_fields_need_version_1():
    prog = Program.from_asm(ASM)
    prog.version = 0
    with pytest.raises(ProgramError, match=r"word 4: layer 0 mode BROADCAST lanes=1 needs version 1 "
                                           r"\(the program is version 0\) \(fault ILLEGAL_FIELD\)"):
        prog.encode()
    # a v0 decoder sees the new fields as reserved bits / illegal kinds
    bits = put(words_to_bytes([0x554D5445, 0, 1, 0, 0 | 1 << 9, 0, 0x1000_0003, 1]), 1, 0)
    with pytest.raises(ProgramError, match="layer word 0 has reserved bits set"):
        Program.decode(bits)


def words_to_bytes(w):
    return struct.pack(f"<{len(w)}I", *w)


def test_asm_errors_name_the_line():
    with pytest.raises(ValueError, match=r"line 3: esize must be 1, 2, 4 or 8 bytes, not 3"):
        Program.from_asm(".version 1\nlayer 0 lb=#0 ub=#4\naction layer=0 iter operand i0 esize=3\n")
    with pytest.raises(ValueError, match=r"line 2: a layer has one mode, not lockstep and broadcast"):
        Program.from_asm(".version 1\nlayer 0 lb=#0 ub=#4 lockstep broadcast\n")
    with pytest.raises(ValueError, match=r"line 1: version must be one of 0, 1, not 5"):
        Program.from_asm(".version 5\n")


# -------------------------------------------------------------------------------- configurations

def _hw_fields(cfg):
    """What a TmuConfig says about ISA support (fields the RTL may not have yet default to v0)."""
    return (cfg.layers, cfg.regions, cfg.streams, cfg.actions, cfg.args,
            tuple(getattr(cfg, "versions", (0,))), frozenset(getattr(cfg, "features", ())),
            getattr(cfg, "lanes", 1), getattr(cfg, "max_block", 0))


def _sw_fields(limits):
    return (limits.layers, limits.regions, limits.streams, limits.actions, limits.args,
            limits.versions, frozenset(f.value for f in limits.features), limits.lanes,
            limits.max_block)


def test_rtl_configurations_are_what_the_rtl_builds():
    assert _sw_fields(RTL) == _hw_fields(TmuConfig())
    assert _sw_fields(Limits.from_file("tmu_small")) == _hw_fields(TmuConfig.small())
    # the RTL implements all of ISA v1 (docs/isa.md §7.9), so the compiler may emit -O1..-O3 for it
    assert 1 in RTL.versions and set(Feature) <= RTL.features and RTL.lanes == TmuConfig().lanes


def test_configuration_files_round_trip(tmp_path):
    path = tmp_path / "v.json"
    VECTOR.to_file(path, "a copy")
    assert Limits.from_file(path) == VECTOR
    assert json.loads(path.read_text())["description"] == "a copy"


@pytest.mark.parametrize("data, message", [
    ({"lanes": 4}, "lanes must be 1 without the 'lockstep' feature, not 4"),
    ({"layers": 0}, "layers must be an integer in 1..255, not 0"),
    ({"versions": [1]}, "versions must be a list of ISA versions from \\[0, 1\\] containing 0, not \\(1,\\)"),
    ({"features": ["lockstep"]}, "features must be empty when version 1 is not supported"),
    ({"versions": [0, 1], "features": ["warp"]}, "features must be names from"),
    ({"data_bits": 128}, "data_bits must be 64 \\(the ISA's token width\\), not 128"),
    ({"lane": 4}, "unknown key 'lane'"),
    ({"versions": [0, 1], "features": ["block"]}, "max_block must be > 0 exactly when the 'block' feature is present, not 0"),
])
def test_bad_configuration_is_named(tmp_path, data, message):
    path = tmp_path / "bad.json"
    path.write_text(json.dumps(data))
    with pytest.raises(ValueError, match=f"{path}: {message}"):
        Limits.from_file(path)


def test_config_dir_holds_the_three_configurations():
    import os
    assert {"tmu_rtl.json", "tmu_small.json", "tmu_vector.json"} <= set(os.listdir(CONFIG_DIR))
