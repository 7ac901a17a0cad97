"""Each stage of the pipeline on the examples, compared in full with reviewed golden text.

The golden files in ``tests/compiler/golden`` are ``<example>.<stage>.mlir`` (or ``<example>.asm``); they
were reviewed line by line against the decoupling rules of docs/compiler.md. To see a difference,
run ``ember compile examples/<example>.mlir --emit <stage>``.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from sw.compiler import STAGES, compile_mlir, emit
from sw.runtime.isa import Program

REPO = Path(__file__).resolve().parents[2]
EXAMPLES = REPO / "examples"
GOLDEN = Path(__file__).resolve().parent / "golden"

CASES = sorted(p.name for p in GOLDEN.iterdir() if p.suffix in (".mlir", ".asm"))


@pytest.mark.parametrize("golden", CASES)
def test_stage_matches_golden(golden):
    example, _, rest = golden.partition(".")
    stage = rest.split(".")[0]
    path = EXAMPLES / f"{example}.mlir"
    got = emit(path.read_text(), stage, filename=f"examples/{example}.mlir")
    assert got == (GOLDEN / golden).read_text()


@pytest.mark.parametrize("example", sorted(p.stem for p in EXAMPLES.glob("*.mlir")))
def test_asm_assembles_to_the_emitted_binary(example):
    text = (EXAMPLES / f"{example}.mlir").read_text()
    assert Program.from_asm(emit(text, "asm")).encode() == emit(text, "bin")


def test_emit_rejects_an_unknown_stage():
    with pytest.raises(ValueError, match=r"^stage must be one of scf, slc, slcv, dlc, tmu, asm, "
                                         r"bin, c, not 'llvm'$"):
        emit("", "llvm")


def test_emit_rejects_an_unknown_opt_level():
    with pytest.raises(ValueError, match=r"^opt_level must be one of 0, 1, 2, 3, not 4$"):
        emit("", "slc", opt_level=4)


def test_stages_are_the_cli_choices():
    assert STAGES == ("scf", "slc", "slcv", "dlc", "tmu", "asm", "bin", "c")


def test_kernel_of_the_sum_example():
    kernel = compile_mlir((EXAMPLES / "embedding_bag_sum.mlir").read_text())
    assert kernel.name == "embedding_bag"
    assert [(p.name, p.kind.value, p.dtype, p.rank, p.in_image) for p in kernel.params] == [
        ("table", "memref", "float32", 2, True),
        ("indices", "memref", "int64", 1, True),
        ("offsets", "memref", "int64", 1, True),
        ("out", "memref", "float32", 2, False),
    ]
    assert [str(a) for a in kernel.arg_map] == [
        "dim arg3[0]", "base arg2", "bytes arg2", "base arg1", "bytes arg1", "dim arg0[1]",
        "base arg0", "bytes arg0"]
    assert kernel.callbacks == {0: ("layer2_iter", 3)}
    assert (kernel.n_results, kernel.result_dtypes) == (1, ["float32"])


def test_alloc_example_computes_nbags_in_an_expr_register():
    kernel = compile_mlir((EXAMPLES / "embedding_bag_alloc.mlir").read_text())
    assert str(kernel.arg_map[0]) == "expr (args[2].shape[0] - 1)"
    assert [p.in_image for p in kernel.params] == [True, True, True]


def test_execute_side_of_the_mean_example_matches_golden():
    kernel = compile_mlir((EXAMPLES / "embedding_bag_mean.mlir").read_text())
    assert kernel.execute_source == (GOLDEN / "embedding_bag_mean.execute.py").read_text()


def test_passes_run_as_an_xdsl_pipeline():
    from xdsl.passes import PassPipeline

    from sw.compiler.context import make_context
    from sw.compiler.conversion.scf_to_slc import ConvertScfToSlc
    from sw.compiler.conversion.slc_to_dlc import ConvertSlcToDlc
    from sw.compiler.frontends.mlir import parse_mlir

    text = (EXAMPLES / "embedding_bag_mean.mlir").read_text()
    module = parse_mlir(text)
    PassPipeline((ConvertScfToSlc(), ConvertSlcToDlc())).apply(make_context(), module)
    module.verify()
    assert str(module) + "\n" == emit(text, "dlc")
    assert (ConvertScfToSlc.name, ConvertSlcToDlc.name) == ("convert-scf-to-slc", "convert-slc-to-dlc")
