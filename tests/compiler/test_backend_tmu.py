"""DLC -> tmu -> access program: the tmu dialect round trip, -O0 byte identity, ISA v1 forms,
resource mapping and refusals (docs/backend.md)."""

import glob
import os
import struct

import numpy as np
import pytest
from xdsl.context import Context
from xdsl.dialects.builtin import Builtin
from xdsl.parser import Parser

from sw.compiler.backend.resources import check_fits, to_program, to_tmu, usage, ResourceError
from sw.compiler.backend.tmu import build_program
from sw.compiler.dialects.tmu import TMU
from sw.compiler.errors import CompileError
from sw.runtime.golden import run_golden
from sw.runtime.isa import Feature, Limits, Program

GOLDEN = os.path.join(os.path.dirname(__file__), "golden")
RTL = Limits.from_file("tmu_rtl")
VECTOR = Limits.from_file("tmu_vector")
V0 = Limits(name="tmu_v0")                  # a unit that implements ISA version 0 only


def dlc_function(text: str):
    from sw.compiler.context import make_context
    module = Parser(make_context(), text).parse_module()
    module.verify()
    return next(iter(module.ops))


def tmu_context() -> Context:
    ctx = Context()
    ctx.load_dialect(Builtin)
    ctx.load_dialect(TMU)
    return ctx


@pytest.mark.parametrize("path", sorted(glob.glob(os.path.join(GOLDEN, "*.dlc.mlir"))))
def test_o0_program_is_byte_identical_and_tmu_round_trips(path):
    access = build_program(dlc_function(open(path).read()), RTL)
    assert access.program.to_asm() == open(path.replace(".dlc.mlir", ".asm")).read()
    text = str(access.tmu)
    again = Parser(tmu_context(), text).parse_module()
    again.verify()
    assert str(again) == text                                  # print, parse, print
    assert to_program(again).encode() == access.program.encode()
    assert 'mode "single" lanes 1' in text and 'config "tmu_rtl"' in text


VECTOR_EB = """
func.func @eb(%table: memref<?x?xf32>, %indices: memref<?xindex>, %offsets: memref<?xindex>, %out: memref<?x?xf32>) -> memref<?x?xf32> {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %nbags = memref.dim %out, %c0 : memref<?x?xf32>
  %dim = memref.dim %table, %c1 : memref<?x?xf32>
  dlc.configure_access {
    %b = dlc.tu layer 0 %c0 to %nbags step 1 : index, index
    %b1 = dlc.alu_stream layer 0 add %b, %c1 : !dlc.stream<index>, index -> !dlc.stream<index>
    %start = dlc.mem_stream layer 0 %offsets[%b] stride 8 : memref<?xindex>, !dlc.stream<index>
    %end = dlc.mem_stream layer 0 %offsets[%b1] stride 8 : memref<?xindex>, !dlc.stream<index>
    %j = dlc.tu layer 1 %start to %end step 1 check_order : !dlc.stream<index>, !dlc.stream<index>
    %row = dlc.mem_stream layer 1 %indices[%j] stride 8 : memref<?xindex>, !dlc.stream<index>
    %base = dlc.alu_stream layer 1 mul %row, %dim : !dlc.stream<index>, index -> !dlc.stream<index>
    %d = dlc.tu layer 2 %c0 to %dim step 1 vlen 4 config vector : index, index
    %e = dlc.alu_stream layer 2 add %base, %d : !dlc.stream<index>, !dlc.vstream<index, 4> -> !dlc.vstream<index, 4>
    %v = dlc.mem_stream layer 2 %table[%e] stride 4 : memref<?x?xf32>, !dlc.vstream<index, 4>
    %d0 = dlc.first_lane layer 2 %d : !dlc.vstream<index, 4> -> !dlc.stream<index>
    %m = dlc.mask_stream layer 2 %d : !dlc.vstream<index, 4> -> !dlc.vstream<i1, 4>
    dlc.register_operand layer 2 iter %b : !dlc.stream<index>
    dlc.register_operand layer 2 iter %d0 : !dlc.stream<index>
    dlc.register_operand layer 2 iter %m : !dlc.vstream<i1, 4>
    dlc.register_operand layer 2 iter %v packed : !dlc.vstream<f32, 4>
    dlc.register_callback layer 2 iter 0
  }
  dlc.compute_loop {
  }
  func.return %out : memref<?x?xf32>
}
"""


def test_vector_dlc_maps_onto_lockstep_and_broadcast_layers():
    access = build_program(dlc_function(VECTOR_EB), VECTOR)
    prog = access.program
    assert prog.version == 1
    assert [layer.mode.name for layer in prog.layers] == ["SINGLE", "BROADCAST", "LOCKSTEP"]
    assert prog.layers[2].lanes == 4
    assert usage(prog).features == {Feature.LOCKSTEP, Feature.BROADCAST, Feature.PACK}
    asm = prog.to_asm()
    assert "action layer=2 iter operand f2\n" in asm and "action layer=2 iter operand c2\n" in asm
    assert "operand s6 esize=4\n" in asm
    # run it: 2 bags over a 3 x 6 table; bag 0 = rows {2}, bag 1 = rows {0, 1}
    table = np.arange(18, dtype=np.float32).reshape(3, 6)
    indices = np.array([2, 0, 1], dtype=np.int64)
    offsets = np.array([0, 1, 3], dtype=np.int64)
    memory = table.tobytes() + indices.tobytes() + offsets.tobytes()
    base = {"table": 0, "indices": 72, "offsets": 96}
    args = []
    for spec in access.arg_map:            # fill the registers by hand (the test's own binding)
        kind, param = spec.kind.value, spec.param
        name = ["table", "indices", "offsets", "out"][param]
        arr = {"table": table, "indices": indices, "offsets": offsets, "out": np.zeros((2, 6))}[name]
        args.append({"base": base.get(name, 0), "bytes": arr.nbytes,
                     "dim": arr.shape[spec.axis] if kind == "dim" else 0}[kind])
    r = run_golden(prog, memory, args, limits=VECTOR)
    assert not r.faulted, r.fault_message

    def f32x2(a, b):
        return int(np.float32(a).view(np.uint32)) | int(np.float32(b).view(np.uint32)) << 32

    expected = []
    for bag, rows in ((0, [2]), (1, [0, 1])):
        for row in rows:
            for d0, count in ((0, 4), (4, 2)):
                lanes = [table[row, d0 + l] if l < count else 0.0 for l in range(4)]
                expected += [bag, d0, count, f32x2(*lanes[:2]), f32x2(*lanes[2:])]
    assert r.data_tokens == expected
    assert r.control_tokens == [0] * 6 + [0xFFFF]


def test_vector_dlc_is_refused_on_a_v0_configuration():
    with pytest.raises(CompileError, match=r"the kernel needs ISA version 1 \(a vector \(lockstep\) layer, "
                                           r"ISA feature 'lockstep'\); 'tmu_v0' supports ISA version\(s\) 0 "
                                           r"only \(Limits.versions\)"):
        build_program(dlc_function(VECTOR_EB), V0)


def test_lanes_and_features_are_checked_against_the_configuration():
    fewer = Limits.from_dict({**VECTOR.to_dict(), "lanes": 2, "name": "two_lanes"})
    with pytest.raises(CompileError, match=r"layer 2 needs 4 lanes, the unit has 2 \(Limits.lanes\)"):
        build_program(dlc_function(VECTOR_EB), fewer)
    no_pack = Limits.from_dict({**VECTOR.to_dict(), "features": ["lockstep", "broadcast", "block"],
                                "name": "no_pack"})
    with pytest.raises(CompileError, match=r"the kernel needs the ISA feature 'pack' \(packed operands\); "
                                           r"'no_pack' has \['block', 'broadcast', 'lockstep'\]"):
        build_program(dlc_function(VECTOR_EB), no_pack)


def test_stream_slots_per_layer():
    tight = Limits.from_dict({**RTL.to_dict(), "streams_per_layer": 2, "name": "tight"})
    text = open(os.path.join(GOLDEN, "embedding_bag_sum.dlc.mlir")).read()
    with pytest.raises(CompileError, match=r"layer 0 needs 3 stream slots, the unit has 2 per layer "
                                           r"\(Limits.streams_per_layer\)"):
        build_program(dlc_function(text), tight)


def test_check_fits_names_resource_needed_and_available():
    prog = build_program(dlc_function(open(os.path.join(GOLDEN, "embedding_bag_sum.dlc.mlir")).read()),
                         RTL).program
    with pytest.raises(ResourceError, match=r"it needs 4 actions, the unit has 3 \(Limits.actions\)") as e:
        check_fits(prog, Limits(actions=3))
    assert (e.value.resource, e.value.needed, e.value.available) == ("actions", 4, 3)
    assert usage(prog).as_dict() == {"version": 0, "layers": 3, "regions": 3, "streams": 7,
                                     "streams_per_layer": 3, "actions": 4, "args": 8, "lanes": 1,
                                     "features": []}
    module = to_tmu(prog, [], RTL)
    assert to_program(module) == prog


def test_a_row_longer_than_max_block_is_refused_at_compile_time():
    """Issue 8 item 6: -O3 loads a row as one block stream of at most Limits.max_block elements
    (1024 in configs/tmu_rtl.json); a static embedding_dim above it compiled and then faulted
    BLOCK_LENGTH at run time without a word of the dimension."""
    from pathlib import Path

    from sw.compiler import compile_mlir
    text = (Path(__file__).resolve().parents[2] / "examples" / "embedding_bag_sum.mlir").read_text()
    compile_mlir(text.replace("memref<?x?xf32>", "memref<?x1024xf32>"), opt_level=3)
    wide = text.replace("memref<?x?xf32>", "memref<?x1025xf32>")
    with pytest.raises(CompileError) as info:
        compile_mlir(wide, filename="eb.mlir", opt_level=3)
    assert str(info.value) == ("eb.mlir:13:9: a block stream loads rows of embedding_dim = 1025 elements, "
                               "more than max_block = 1024 of 'tmu_rtl' (Limits.max_block); compile at "
                               "-O2 or lower, or for a configuration with a larger max_block")
    assert compile_mlir(wide, opt_level=2).program.version == 1      # -O2 has no block streams


def test_control_first_keeps_each_queue_in_order():
    """``control_first``: a firing's control actions before its operands, each queue's order
    unchanged, every firing keeping its own places in the list; the RTL and the golden model
    give the same tokens for both orders (``tests/runtime/test_handwritten_suite.py`` runs the
    hand-written programs, which all push control first)."""
    import random

    from sw.compiler.backend.tmu import control_first
    from sw.runtime.isa import Action, ActionKind, Event, Source
    from tb.seeds import fresh_seed

    rng = random.Random(fresh_seed("control_first"))
    for _ in range(200):
        actions = []
        for n in range(rng.randint(0, 12)):
            layer, event = rng.randint(0, 2), rng.choice(list(Event))
            if rng.random() < 0.4:
                actions.append(Action(layer, event, ActionKind.CONTROL, callback=n))
            else:
                actions.append(Action(layer, event, ActionKind.OPERAND, source=Source.imm(n)))
        out = control_first(actions)
        assert sorted(map(id, out)) == sorted(map(id, actions))
        for key in {(a.layer, a.event) for a in actions}:
            mine = [n for n, a in enumerate(actions) if (a.layer, a.event) == key]
            assert [n for n, a in enumerate(out) if (a.layer, a.event) == key] == mine
            group = [out[n] for n in mine]
            kinds = [a.kind for a in group]
            assert kinds == sorted(kinds, key=lambda k: k != ActionKind.CONTROL)
            for kind in ActionKind:
                assert [a for a in group if a.kind == kind] == \
                    [actions[n] for n in mine if actions[n].kind == kind]


@pytest.mark.parametrize("level", [0, 1, 2, 3])
def test_transe_pushes_its_control_token_first_at_o3_only(level):
    """At -O3 each firing's control token goes before its operands (TransE: before its three
    rows, as in the hand-written program); -O0..-O2 keep the DLC's order (operands first)."""
    from sw.compiler import compile_mlir
    from sw.runtime.isa import ActionKind

    path = os.path.join(os.path.dirname(__file__), "..", "..", "examples", "transe_score.mlir")
    with open(path) as f:
        prog = compile_mlir(f.read(), limits=Limits.from_file("tmu_rtl"), opt_level=level).program
    groups = {}
    for a in prog.actions:
        groups.setdefault((a.layer, a.event), []).append(a.kind)
    mixed = [g for g in groups.values() if len(set(g)) == 2]
    assert mixed                  # -O3: layer 0's iter; -O0..-O2: the element layer's iter and end
    for kinds in mixed:
        assert kinds.count(ActionKind.CONTROL) == 1
        assert kinds.index(ActionKind.CONTROL) == (0 if level == 3 else len(kinds) - 1)
