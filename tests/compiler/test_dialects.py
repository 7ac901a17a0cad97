"""The slc and dlc dialects: round trip (print, parse, print: identical) and their verifiers."""

from __future__ import annotations

from pathlib import Path

import pytest
from xdsl.parser import Parser
from xdsl.utils.exceptions import VerifyException

from sw.compiler.context import make_context
from sw.compiler.frontends.mlir import parse_mlir

GOLDEN = Path(__file__).resolve().parent / "golden"


def parse(text: str):
    return Parser(make_context(), text).parse_module()


@pytest.mark.parametrize("name", sorted(p.name for p in GOLDEN.glob("*.mlir")
                                        if ".slc." in p.name or ".dlc." in p.name))
def test_round_trip(name):
    text = (GOLDEN / name).read_text()
    module = parse(text)
    module.verify()
    printed = str(module) + "\n"
    assert printed == text
    again = parse(printed)
    again.verify()
    assert str(again) + "\n" == printed


def test_generic_form_parses_back_to_the_same_ir():
    from xdsl.printer import Printer
    import io
    module = parse((GOLDEN / "embedding_bag_mean.dlc.mlir").read_text())
    out = io.StringIO()
    Printer(stream=out, print_generic_format=True).print_op(module)
    assert str(parse(out.getvalue())) == str(module)


SLC_OK = """\
func.func @f(%m: memref<?x?xf32>, %n: index) {
  %c0 = arith.constant 0 : index
  slc.for %i = %c0 to %n step 1 : index, index {
    %v = slc.mem_stream %m[%i, %c0] : memref<?x?xf32>, !slc.stream<index>, index
    slc.callback iter {
      %x = slc.from_stream %v : !slc.stream<f32>
    }
  }
  func.return
}
"""


def verify_error(text: str) -> str:
    module = parse(text)
    with pytest.raises(VerifyException) as info:
        module.verify()
    return str(info.value)


def test_slc_ok():
    parse(SLC_OK).verify()


@pytest.mark.parametrize("old, new, message", [
    ("step 1", "step 0", "Expected a step > 0, got 0. Traversal units count upwards."),
    ("slc.callback iter", "slc.callback end",
     "Expected event iter, got end. A callback in the innermost loop fires on its iterations."),
    ("slc.callback iter", "slc.callback sometimes",
     "Expected an event in begin, iter, end, got 'sometimes'. These are the layer events of the "
     "access unit."),
    ("%m[%i, %c0] : memref<?x?xf32>, !slc.stream<index>, index",
     "%m[%i] : memref<?x?xf32>, !slc.stream<index>",
     "Expected 2 indices for memref<?x?xf32>, got 1. One index per dimension."),
])
def test_slc_verifier(old, new, message):
    assert message in verify_error(SLC_OK.replace(old, new))


def test_slc_callback_beside_a_nested_loop_must_be_begin_or_end():
    text = SLC_OK.replace("""    slc.callback iter {
      %x = slc.from_stream %v : !slc.stream<f32>
    }""", """    slc.callback iter {
    }
    slc.for %j = %c0 to %n step 1 : index, index {
    }""")
    assert ("Expected event begin or end, got iter. A callback beside a nested slc.for fires on "
            "that loop's begin or end.") in verify_error(text)
    text = text.replace("slc.callback iter", "slc.callback end")
    assert ("Expected event begin, got end. A callback before the nested slc.for fires on its "
            "begin, after it on its end.") in verify_error(text)


def test_slc_alu_op_must_be_an_access_unit_op():
    text = SLC_OK.replace("    slc.callback", "    %s = slc.alu_stream div %i, %c0 : "
                                               "!slc.stream<index>, index -> !slc.stream<index>\n"
                                               "    slc.callback")
    assert ("Expected an ALU op in add, sub, mul, shl, shr, sra, and, or, xor, min, max, lt, eq, "
            "got 'div'. These are the access unit's ALU operations.") in verify_error(text)


def test_slc_from_stream_only_in_a_callback():
    text = SLC_OK.replace("    slc.callback", "    %y = slc.from_stream %v : !slc.stream<f32>\n"
                                               "    slc.callback")
    assert "'slc.from_stream' expects ancestor op 'slc.callback'" in verify_error(text)


def test_slc_bounds_must_be_integers():
    text = SLC_OK.replace("%n: index)", "%n: index, %f: f32)").replace(
        "to %n step 1 : index, index", "to %f step 1 : index, f32")
    assert ("Expected an integer stream or register as a bound of slc.for, got f32. Addresses and "
            "bounds are integer values.") in verify_error(text)


DLC_OK = """\
func.func @f(%m: memref<?xindex>, %n: index) {
  %c0 = arith.constant 0 : index
  dlc.configure_access {
    %i0 = dlc.tu layer 0 %c0 to %n step 1 : index, index
    %s0 = dlc.mem_stream layer 0 %m[%i0] stride 8 : memref<?xindex>, !dlc.stream<index>
    %s1 = dlc.fwd_stream layer 0 %n : index
    dlc.register_operand layer 0 iter %s0 : !dlc.stream<index>
    dlc.register_callback layer 0 iter 0
  }
  dlc.compute_loop {
    dlc.case 0 {
      %v = dlc.pop_operand : index
    }
  }
  func.return
}
"""


def test_dlc_ok():
    parse(DLC_OK).verify()


@pytest.mark.parametrize("old, new, message", [
    ("step 1", "step -1", "Expected a step > 0, got -1. Traversal units count upwards."),
    ("register_callback layer 0 iter", "register_callback layer 0 later",
     "Expected an event in begin, iter, end, got 'later'."),
    ("%v = dlc.pop_operand : index\n", "%v = dlc.pop_operand : index\n      %w = dlc.tu layer 1 "
                                       "%c0 to %n step 1 : index, index\n",
     "'dlc.tu' expects parent op 'dlc.configure_access'"),
])
def test_dlc_verifier(old, new, message):
    assert message in verify_error(DLC_OK.replace(old, new))


def test_frontend_reports_verifier_errors_at_the_op():
    from sw.compiler import CompileError
    with pytest.raises(CompileError) as info:
        parse_mlir(SLC_OK.replace("step 1", "step 0"), "s.mlir")
    assert str(info.value) == ("s.mlir:3:3: invalid 'slc.for': Expected a step > 0, got 0. "
                               "Traversal units count upwards.")
