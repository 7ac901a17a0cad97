"""Ember's own input (issue 12): ``tests/eb_scf.mlir`` of bsc-loca/ember, verbatim
(``tests/compiler/fixtures/ember``, MIT), with its ``!llvm.struct`` storage specifier and
``llvm.extractvalue``: compiled at every level and run against ``F.embedding_bag`` (f64 sums in
lookup order: bit for bit). The specifier is passed as an int64 array of its fields flattened
(level sizes, then memory sizes). Random data draws a fresh seed each run and prints it."""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np
import pytest
import torch

from sw.compiler import CompileError, compile_mlir
from sw.runtime.drivers import run_kernel

EB_SCF = Path(__file__).parent / "fixtures" / "ember" / "eb_scf.mlir"


@pytest.fixture
def rng():
    seed = int(os.environ.get("EMBER_SEED", np.random.SeedSequence().entropy % 2**32))
    print(f"seed {seed}")
    return np.random.default_rng(seed)


def case(rng, nbags=9, rows=30, dim=8):
    table = rng.standard_normal((rows, dim))
    lengths = rng.integers(0, 7, nbags)
    pos = np.concatenate([[0], np.cumsum(lengths)]).astype(np.int64)
    crd = rng.integers(0, rows, int(pos[-1])).astype(np.int64)
    specifier = np.array([nbags, rows, pos.size, crd.size, 0], np.int64)   # lvlSizes, memSizes
    want = torch.nn.functional.embedding_bag(torch.from_numpy(crd), torch.from_numpy(table),
                                             torch.from_numpy(pos[:-1]), mode="sum").numpy()
    return [pos, crd, specifier, table, np.zeros((nbags, dim))], want


def test_the_fixture_is_ember_s_file_verbatim():
    text = EB_SCF.read_text()
    assert "!llvm.struct<(array<2 x i64>, array<3 x i64>)>" in text
    assert "llvm.extractvalue %arg3[0, 0]" in text


@pytest.mark.parametrize("level", [0, 1, 2, 3])
def test_eb_scf_compiles_and_matches_pytorch_at_every_level(rng, level):
    kernel = compile_mlir(EB_SCF.read_text(), filename="eb_scf.mlir", opt_level=level)
    assert [p.dtype for p in kernel.params][2] == "int64"          # the specifier, flattened
    args, want = case(rng)
    got = run_kernel(kernel, args, "golden").results[0]
    assert np.array_equal(got, want)


def test_unsupported_uses_of_a_struct_are_named():
    text = EB_SCF.read_text().replace(
        "    %1 = arith.index_cast", "    %x = llvm.extractvalue %arg3[1] : !llvm.struct<(array<2 x i64>, "
        "array<3 x i64>)>\n    %1 = arith.index_cast")             # a whole array field
    with pytest.raises(CompileError, match=r"unsupported use of the !llvm.struct argument %arg3 in "
                       r"'llvm.extractvalue' \(llvm.extractvalue of one i64 field is\)"):
        compile_mlir(text)
    other = EB_SCF.read_text().replace("array<3 x i64>", "array<3 x f32>")
    with pytest.raises(CompileError, match="unsupported type"):
        compile_mlir(other)


@pytest.mark.rtl
@pytest.mark.slow
def test_eb_scf_on_rtl(rng):
    kernel = compile_mlir(EB_SCF.read_text(), filename="eb_scf.mlir", opt_level=3)
    args, want = case(rng)
    got = run_kernel(kernel, args, "rtl").results[0]
    assert np.array_equal(got, want)
