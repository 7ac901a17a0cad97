"""simplify-streams (-O3): rows of an innermost loop become block loads; what it must leave alone.

The golden files (tests/compiler/golden/passes/simplify-streams/) fix the rewrite of the
examples as they reach the pass in the pipeline (after bufferize, before vectorize-access).
These tests check the rest of its contract (sw/compiler/transforms/simplify_streams.py):

* it gives the same IR whether it runs before or after vectorize-access/-callbacks (a buffer
  collected over a vector layer is a row too; the broadcast layer above goes back to scalar);
* on SLC that bufferize has not touched, a loop whose callback reads one row is rewritten as
  bufferize + simplify-streams would;
* a loop whose callback reads a row and a value that is not a row, or a "row" whose other index
  depends on the loop, stays as it is;
* a row starting at a lower bound other than 0 runs right end to end (block start ``m[row, lb]``,
  length ``ub - lb``, element ``d - lb`` on the core), against NumPy.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path

import numpy as np
import pytest

from sw.compiler import compile_mlir
from sw.compiler import pipelines as P
from sw.compiler.transforms.bufferize import bufferize
from sw.compiler.transforms.move_to_callback import move_to_callback
from sw.compiler.transforms.simplify_streams import simplify_streams
from sw.compiler.transforms.vectorize_access import vectorize_access
from sw.compiler.transforms.vectorize_callbacks import vectorize_callbacks
from sw.compiler.backend.python import run_access
from sw.compiler.frontends.mlir import check_supported, parse_mlir
from sw.runtime.drivers import run_kernel
from sw.runtime.isa import Limits

VECTOR = dataclasses.replace(Limits.from_file("configs/tmu_vector.json"), streams=32,
                             streams_per_layer=None, actions=32, args=32)
STEPS = {"move": move_to_callback, "buf": bufferize, "simp": simplify_streams,
         "va": lambda f: vectorize_access(f, 8), "vc": vectorize_callbacks}


def _after(text: str, steps: list[str]) -> str:
    module = P._slc(check_supported(parse_mlir(text)))
    fn = P._kernel_fn(module)
    for s in steps:
        STEPS[s](fn)
    module.verify()
    return str(module)


def _example(name: str) -> str:
    return (Path("examples") / f"{name}.mlir").read_text()


@pytest.mark.parametrize("name", ["embedding_bag_sum", "embedding_bag_mean", "spmm_csr",
                                  "embedding_bag_weighted"])
def test_same_result_before_and_after_vectorisation(name):
    text = _example(name)
    before = _after(text, ["move", "buf", "simp", "va", "vc"])      # the -O3 pipeline order
    after = _after(text, ["move", "buf", "va", "vc", "simp"])       # on the vector layer
    assert "slcv.buf_stream" in before and "vlen 8" not in before
    assert after == before


def test_rewrites_a_row_read_by_a_callback_without_bufferize():
    text = _example("embedding_bag_sum")
    alone = _after(text, ["move", "simp"])
    assert alone == _after(text, ["move", "buf", "simp"])
    assert alone.count("slcv.buf_stream %table[%row, %c0] len %dim") == 1
    assert "slc.for %d" not in alone and "slcv.for" not in alone


ROW_AND_GATHER = """
func.func @row_and_gather(%x: memref<?x?xf32>, %y: memref<?xf32>, %idx: memref<?x?xindex>, %out: memref<?x?xf32>) -> memref<?x?xf32> {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %n = memref.dim %out, %c0 : memref<?x?xf32>
  %dim = memref.dim %out, %c1 : memref<?x?xf32>
  scf.for %i = %c0 to %n step %c1 {
    scf.for %d = %c0 to %dim step %c1 {
      %a = memref.load %x[%i, %d] : memref<?x?xf32>
      %k = memref.load %idx[%i, %d] : memref<?x?xindex>
      %b = memref.load %y[%k] : memref<?xf32>
      %s = arith.addf %a, %b : f32
      memref.store %s, %out[%i, %d] : memref<?x?xf32>
    }
  }
  return %out : memref<?x?xf32>
}
"""

DIAGONAL = """
func.func @diagonal(%x: memref<?x?xf32>, %out: memref<?x?xf32>) -> memref<?x?xf32> {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %n = memref.dim %out, %c0 : memref<?x?xf32>
  %dim = memref.dim %out, %c1 : memref<?x?xf32>
  scf.for %i = %c0 to %n step %c1 {
    scf.for %d = %c0 to %dim step %c1 {
      %a = memref.load %x[%d, %d] : memref<?x?xf32>
      memref.store %a, %out[%i, %d] : memref<?x?xf32>
    }
  }
  return %out : memref<?x?xf32>
}
"""


@pytest.mark.parametrize("text", [ROW_AND_GATHER, DIAGONAL], ids=["row_and_gather", "diagonal"])
def test_leaves_loops_that_do_not_only_read_rows(text):
    for steps in (["move"], ["move", "buf"]):
        assert _after(text, [*steps, "simp"]) == _after(text, steps)


OFFSET_ROWS = """
func.func @offset_rows(%table: memref<?x?xf32>, %indices: memref<?xindex>, %lo: index, %out: memref<?x?xf32>) -> memref<?x?xf32> {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %n = memref.dim %out, %c0 : memref<?x?xf32>
  %dim = memref.dim %table, %c1 : memref<?x?xf32>
  scf.for %i = %c0 to %n step %c1 {
    %row = memref.load %indices[%i] : memref<?xindex>
    scf.for %d = %lo to %dim step %c1 {
      %v = memref.load %table[%row, %d] : memref<?x?xf32>
      %w = arith.mulf %v, %v : f32
      memref.store %w, %out[%i, %d] : memref<?x?xf32>
    }
  }
  return %out : memref<?x?xf32>
}
"""


@pytest.mark.parametrize("level", [2, 3])
def test_row_from_a_lower_bound_other_than_zero(level):
    rng = np.random.default_rng(11)
    table = rng.standard_normal((9, 13)).astype(np.float32)
    indices = rng.integers(0, 9, 6).astype(np.int64)
    lo = 3
    args = [table, indices, lo, np.zeros((6, 13), np.float32)]
    slcv_text = str(P.run_pipeline(OFFSET_ROWS, until="slcv", opt_level=level, limits=VECTOR))
    if level == 3:
        assert "%len = arith.subi %dim, %lo : index" in slcv_text
        assert "slcv.buf_stream %table[%row, %lo] len %len" in slcv_text
    kernel = compile_mlir(OFFSET_ROWS, limits=VECTOR, opt_level=level)
    got = run_kernel(kernel, [a.copy() if isinstance(a, np.ndarray) else a for a in args],
                     "golden", limits=VECTOR)
    expected = np.zeros((6, 13), np.float32)
    expected[:, lo:] = table[indices, lo:] * table[indices, lo:]
    np.testing.assert_array_equal(got.results[0], expected)
    dlc_fn = P._kernel_fn(P.run_pipeline(OFFSET_ROWS, until="dlc", opt_level=level, limits=VECTOR))
    data, control = run_access(dlc_fn, [a.copy() if isinstance(a, np.ndarray) else a for a in args])
    assert data == [t & (2**64 - 1) for t in got.access.data_tokens]
    assert control == got.access.control_tokens
    if level == 3:      # one row of 10 f32 packed (5 tokens) per lookup (i is counted on the
        # core: replace-to-val-ops), one control token
        assert len(got.access.data_tokens) == 6 * 5
        assert len(got.access.control_tokens) == 6 + 1


# Rows of a flattened (1-D) table: m[X + d] with X invariant in the loop, in either operand
# order; X an outer stream (row * dim) or a register (a fixed row start).
FLAT_ROWS = """
func.func @flat_rows(%table: memref<?xf32>, %indices: memref<?xindex>, %dim: index, %lo: index, %out: memref<?x?xf32>) -> memref<?x?xf32> {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %n = memref.dim %out, %c0 : memref<?x?xf32>
  scf.for %i = %c0 to %n step %c1 {
    %row = memref.load %indices[%i] : memref<?xindex>
    %base = arith.muli %row, %dim : index
    scf.for %d = %lo to %dim step %c1 {
      %a = arith.addi %ORDER : index
      %v = memref.load %table[%a] : memref<?xf32>
      %w = arith.mulf %v, %v : f32
      memref.store %w, %out[%i, %d] : memref<?x?xf32>
    }
  }
  return %out : memref<?x?xf32>
}
"""

FLAT_REGISTER_ROW = """
func.func @flat_register_row(%table: memref<?xf32>, %start: index, %dim: index, %out: memref<?x?xf32>) -> memref<?x?xf32> {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %n = memref.dim %out, %c0 : memref<?x?xf32>
  scf.for %i = %c0 to %n step %c1 {
    scf.for %d = %c1 to %dim step %c1 {
      %a = arith.addi %start, %d : index
      %v = memref.load %table[%a] : memref<?xf32>
      memref.store %v, %out[%i, %d] : memref<?x?xf32>
    }
  }
  return %out : memref<?x?xf32>
}
"""

# Not rows: the offset depends on the loop (a gather), or the index is not X + d (a stride of 2).
FLAT_NOT_ROWS = {
    "gather": FLAT_ROWS.replace("%ORDER", "%base, %k").replace(
        "      %a = arith.addi",
        "      %k = memref.load %indices[%d] : memref<?xindex>\n      %a = arith.addi"),
    "stride_two": FLAT_ROWS.replace("%ORDER", "%base, %dd").replace(
        "      %a = arith.addi",
        "      %dd = arith.addi %d, %d : index\n      %a = arith.addi"),
}


@pytest.mark.parametrize("order", ["%base, %d", "%d, %base"])
@pytest.mark.parametrize("lo", [0, 3])
def test_row_of_a_flattened_table(order, lo):
    """m[X + d] is loaded as one block from m[X + lo] (the start an ALU stream of the enclosing
    layer, lo a register: 0 and 3 at run time), and gives NumPy's result and the DLC's own
    tokens. (A constant lower bound of 0 starts the block at X itself: hashed_gather's golden
    file.)"""
    text = FLAT_ROWS.replace("%ORDER", order)
    rng = np.random.default_rng()
    seed = int(rng.integers(2**32))
    print(f"seed={seed}")
    rng = np.random.default_rng(seed)
    dim, rows, n = 11, 9, 7
    table = rng.standard_normal(rows * dim).astype(np.float32)
    indices = rng.integers(0, rows, n).astype(np.int64)
    args = [table, indices, dim, lo, np.zeros((n, dim), np.float32)]
    slcv_text = str(P.run_pipeline(text, until="slcv", opt_level=3, limits=VECTOR))
    # %lo is a register (an argument), so the block starts at an ALU stream %base + %lo
    assert "slcv.buf_stream %table[%start] len %len" in slcv_text
    assert "%start = slc.alu_stream add %base, %lo" in slcv_text
    assert "slcv.for" not in slcv_text and "slc.for %d" not in slcv_text
    kernel = compile_mlir(text, limits=VECTOR, opt_level=3)
    got = run_kernel(kernel, [a.copy() if isinstance(a, np.ndarray) else a for a in args],
                     "golden", limits=VECTOR)
    expected = np.zeros((n, dim), np.float32)
    flat = table.reshape(rows, dim)[indices]
    expected[:, lo:] = flat[:, lo:] * flat[:, lo:]
    np.testing.assert_array_equal(got.results[0], expected)
    dlc_fn = P._kernel_fn(P.run_pipeline(text, until="dlc", opt_level=3, limits=VECTOR))
    data, control = run_access(dlc_fn, [a.copy() if isinstance(a, np.ndarray) else a for a in args])
    assert data == [t & (2**64 - 1) for t in got.access.data_tokens]
    assert control == got.access.control_tokens
    assert len(control) == n + 1                    # one firing per lookup, then DONE


def test_row_of_a_flattened_table_from_a_register():
    """A register start with a lower bound of 1: the block starts at an ``arith.addi`` of the
    function (no stream), and the result is NumPy's."""
    slcv_text = str(P.run_pipeline(FLAT_REGISTER_ROW, until="slcv", opt_level=3, limits=VECTOR))
    assert "arith.addi %start, %c1 : index" in slcv_text
    assert "slcv.buf_stream %table[" in slcv_text and "slc.for %d" not in slcv_text
    table = np.arange(40, dtype=np.float32)
    args = [table, 5, 9, np.zeros((3, 9), np.float32)]
    kernel = compile_mlir(FLAT_REGISTER_ROW, limits=VECTOR, opt_level=3)
    got = run_kernel(kernel, [a.copy() if isinstance(a, np.ndarray) else a for a in args],
                     "golden", limits=VECTOR)
    expected = np.zeros((3, 9), np.float32)
    expected[:, 1:] = table[6:14]
    np.testing.assert_array_equal(got.results[0], expected)


@pytest.mark.parametrize("name", list(FLAT_NOT_ROWS))
def test_leaves_flattened_accesses_that_are_not_rows(name):
    text = FLAT_NOT_ROWS[name]
    for steps in (["move"], ["move", "buf"]):
        assert _after(text, [*steps, "simp"]) == _after(text, steps)
