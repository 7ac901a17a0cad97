"""``scripts/print_microcode.py``: the RTL decoder's microcode for a compiled kernel, checked
against the program it was built from (every action fires from exactly one place, every stream
is evaluated by one ``STREAM`` uop, popped from its engine or chained, or skipped (``i + 1``,
``docs/rtl.md`` §9.5 C), every layer has one ``ENTER`` and one ``NEXT``, ``DONE`` last;
``docs/rtl.md`` §2.2), and the CLI's exit 2 on bad arguments."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from script_under_test import load_script

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO / "scripts"))
print_microcode = load_script("print_microcode")

EB = REPO / "examples" / "embedding_bag_sum.mlir"


def test_embedding_bag_microcode_covers_the_program(capsys):
    from hw.tmu import TmuConfig
    from hw.tmu.layouts import UopKind
    from sw.compiler import compile_mlir
    from sw.runtime.isa import Limits

    limits = Limits.from_file(REPO / "configs" / "tmu_rtl.json")
    prog = compile_mlir(EB.read_text(), filename=str(EB), limits=limits, opt_level=3).program
    r = print_microcode.decode_microcode(prog.encode(), TmuConfig())
    uops, engines = r["uops"], r["engines"]
    acts, streams, enters, nexts = [], [], [], []
    for u in uops:
        kind = UopKind(u.kind)
        if kind == UopKind.STREAM:
            streams.append(int(u.id))
            streams += [engines[e][0] for e in range(len(engines)) if int(u.pop) >> e & 1]
            if int(u.chain):
                streams.append(int(u.id) - 1)
            if int(u.fuse_enter):           # docs/rtl.md §9.5 E
                enters.append(int(u.next_layer))
        elif kind == UopKind.ACT:
            acts.append(int(u.id))
        elif kind == UopKind.ENTER:
            enters.append(int(u.id))
        elif kind == UopKind.NEXT:
            nexts.append(int(u.id))
        if kind in (UopKind.STREAM, UopKind.ACT):
            acts += [int(u.act_id)] * int(u.fuse_act and kind == UopKind.STREAM)
            acts += [int(u.act2_id)] * int(u.fuse_act2)
    assert UopKind(uops[-1].kind) == UopKind.DONE
    assert sorted(acts) == list(range(len(prog.actions)))
    # i + 1 (stream 0) has no uop: the fallback of rowptr[i + 1]'s engine evaluates it
    engine_of_s2 = next(e for e, (s, _, _) in enumerate(engines) if s == 2)
    assert r["skipped"] == [(engine_of_s2, 0)]
    assert sorted(streams + [0]) == list(range(len(prog.streams)))
    layers = list(range(len(prog.layers)))
    assert sorted(enters) == layers and sorted(nexts) == layers
    # the -O3 bag loop: one uop per lookup (index popped, row * dim chained, the row, NEXT)
    body = r["body_pc"][1]
    assert "pop s4" in print_microcode.format_uop(uops[body], engines)
    assert "+NEXT layer 1" in print_microcode.format_uop(uops[body], engines)

    assert print_microcode.main([str(EB), "-O3"]) == 0
    out = capsys.readouterr().out
    # header (with the skipped streams), labels, uops
    assert out.count("\n") == len(uops) + 3 + 2 * len(prog.layers)
    assert "body_1:" in out and out.rstrip().endswith("DONE     0")


@pytest.mark.parametrize("argv, word", [(["no_such_kernel.mlir"], "KERNEL.mlir"),
                                        ([str(EB), "-O", "7"], "-O"),
                                        ([str(EB), "--tmu-config", "/nonexistent.json"],
                                         "--tmu-config")])
def test_bad_arguments_exit_2(argv, word, capsys):
    with pytest.raises(SystemExit) as e:
        print_microcode.main(argv)
    assert e.value.code == 2
    assert word in capsys.readouterr().err


def test_bad_program_raises_value_error():
    with pytest.raises(ValueError, match="program"):
        print_microcode.decode_microcode(b"\x00\x00\x00")


def _shape(r):
    """The uops from ``body_pc[0]`` on, without stream, action and engine ids: (kind, actions
    fused with the kinds of their actions' descriptors, popped engines, chain, NEXT fused)."""
    from hw.tmu.layouts import UopKind
    return [(UopKind(u.kind).name, int(u.fuse_act) and UopKind(u.kind) == UopKind.STREAM,
             int(u.fuse_act2), bin(int(u.pop)).count("1"), int(u.chain), int(u.fuse_next))
            for u in r["uops"][r["body_pc"][0]:]]


def test_compiled_transe_gets_the_hand_written_programs_microcode():
    """TransE at -O3 pushes its control token before its three rows, as the hand-written program
    does (``control_first``, docs/compiler.md "Control tokens first"), and both get the same
    microcode: five uops per triple, the first row in the last stream's uop with the control
    token as its second action (fusion F, docs/rtl.md §9.5 F: the builder puts the row first),
    then the other two rows as ``ACT`` uops."""
    from hw.tmu import TmuConfig
    from hw.tmu.layouts import UopKind
    from sw.compiler import compile_mlir
    from sw.runtime.handwritten.suite import handwritten_kernel
    from sw.runtime.isa import ActionKind, Limits

    limits = Limits.from_file(REPO / "configs" / "tmu_rtl.json")
    path = REPO / "examples" / "transe_score.mlir"
    compiled = compile_mlir(path.read_text(), filename=str(path), limits=limits, opt_level=3).program
    hand = handwritten_kernel("kg_transe").program
    assert [a.kind for a in compiled.actions] == [a.kind for a in hand.actions] == \
        [ActionKind.CONTROL] + [ActionKind.OPERAND] * 3
    rc = print_microcode.decode_microcode(compiled.encode(), TmuConfig())
    rh = print_microcode.decode_microcode(hand.encode(), TmuConfig())
    assert _shape(rc) == _shape(rh)
    body = rc["uops"][rc["body_pc"][0]:rc["exit_pc"][0]]
    # STREAM pop (h, r, t), STREAM r * dim chained, STREAM t * dim chained + row h + control,
    # ACT row r, ACT row t + NEXT, NEXT (the jump target)
    assert [UopKind(u.kind).name for u in body] == ["STREAM"] * 3 + ["ACT"] * 2 + ["NEXT"]
    fused = body[2]
    assert int(fused.fuse_act) and int(fused.fuse_act2)
    assert compiled.actions[int(fused.act_id)].kind == ActionKind.OPERAND
    assert compiled.actions[int(fused.act2_id)].kind == ActionKind.CONTROL
    assert not any(int(u.fuse_act2) for u in body[3:])
