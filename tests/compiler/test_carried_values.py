"""Values carried by decoupled loops (``scf.for ... iter_args``, Ember's ``slc.for`` results; issue
12): kept on the core in one-element memrefs (``sw/compiler/conversion/carried_values.py``), at
every -O level on the golden model, in C, and against PyTorch where PyTorch computes the same
thing. The refusals (a carried value as a decoupled loop's bound, an ``i1``) are in
``test_compile_errors.py`` and ``filecheck/diagnostics.mlir``. Random data draws a fresh seed each
run and prints it (``EMBER_SEED`` replays it)."""

from __future__ import annotations

import os

import numpy as np
import pytest
import torch

from sw.compiler import compile_mlir
from sw.compiler.pipelines import run_pipeline
from sw.runtime.drivers import run_kernel

LEVELS = (0, 1, 2, 3)


@pytest.fixture
def rng():
    seed = int(os.environ.get("EMBER_SEED", np.random.SeedSequence().entropy % 2**32))
    print(f"seed {seed}")
    return np.random.default_rng(seed)


# The sum of a vector, carried by the one decoupled loop; the result used after it (epilogue).
TOTAL = """
func.func @total(%t: memref<?xf32>, %out: memref<1xf32>) -> memref<1xf32> {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %zero = arith.constant 0.0 : f32
  %n = memref.dim %t, %c0 : memref<?xf32>
  %s = scf.for %i = %c0 to %n step %c1 iter_args(%acc = %zero) -> (f32) {
    %v = memref.load %t[%i] : memref<?xf32>
    %a = arith.addf %acc, %v : f32
    scf.yield %a : f32
  }
  memref.store %s, %out[%c0] : memref<1xf32>
  return %out : memref<1xf32>
}
"""

# Per bag: the sum of squares of its rows, carried by two nested decoupled loops (the inner
# loop's result is the outer loop's yield), and the bag's length counted in an index carried by
# the bag loop, then the mean of the rows divided by that count (PyTorch's mode="mean").
BAGS = """
func.func @bags(%table: memref<?x?xf32>, %indices: memref<?xindex>, %offsets: memref<?xindex>,
                %norm: memref<?xf32>, %mean: memref<?x?xf32>) -> (memref<?xf32>, memref<?x?xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %zero = arith.constant 0.0 : f32
  %nbags = memref.dim %norm, %c0 : memref<?xf32>
  %dim = memref.dim %table, %c1 : memref<?x?xf32>
  scf.for %b = %c0 to %nbags step %c1 {
    %b1 = arith.addi %b, %c1 : index
    %start = memref.load %offsets[%b] : memref<?xindex>
    %end = memref.load %offsets[%b1] : memref<?xindex>
    %total, %count = scf.for %j = %start to %end step %c1 iter_args(%acc = %zero, %k = %c0) -> (f32, index) {
      %row = memref.load %indices[%j] : memref<?xindex>
      %s = scf.for %d = %c0 to %dim step %c1 iter_args(%a = %acc) -> (f32) {
        %v = memref.load %table[%row, %d] : memref<?x?xf32>
        %m = memref.load %mean[%b, %d] : memref<?x?xf32>
        %m2 = arith.addf %m, %v : f32
        memref.store %m2, %mean[%b, %d] : memref<?x?xf32>
        %sq = arith.mulf %v, %v : f32
        %n = arith.addf %a, %sq : f32
        scf.yield %n : f32
      }
      %k1 = arith.addi %k, %c1 : index
      scf.yield %s, %k1 : f32, index
    }
    memref.store %total, %norm[%b] : memref<?xf32>
    %one = arith.maxsi %count, %c1 : index
    %ki = arith.index_cast %one : index to i64
    %kf = arith.sitofp %ki : i64 to f32
    scf.for %d2 = %c0 to %dim step %c1 {
      %x = memref.load %mean[%b, %d2] : memref<?x?xf32>
      %y = arith.divf %x, %kf : f32
      memref.store %y, %mean[%b, %d2] : memref<?x?xf32>
    }
  }
  return %norm, %mean : memref<?xf32>, memref<?x?xf32>
}
"""


def _bags(rng, rows=30, dim=13, nbags=7):
    table = rng.standard_normal((rows, dim)).astype(np.float32)
    lengths = rng.integers(0, 6, nbags)
    lengths[0] = 0                                      # an empty bag
    indices = rng.integers(0, rows, int(lengths.sum())).astype(np.int64)
    offsets = np.concatenate([[0], np.cumsum(lengths)]).astype(np.int64)
    return [table, indices, offsets, np.zeros(nbags, np.float32), np.zeros((nbags, dim), np.float32)]


def _norms(table, indices, offsets):
    """Σ over the bag's rows, then the row's elements, of v*v: one f32 rounding per op, in order."""
    out = np.zeros(len(offsets) - 1, np.float32)
    for b in range(len(out)):
        acc = np.float32(0)
        for j in range(offsets[b], offsets[b + 1]):
            for v in table[indices[j]]:
                acc = np.float32(acc + np.float32(v * v))
        out[b] = acc
    return out


@pytest.mark.parametrize("level", LEVELS)
def test_carried_sum_at_every_level(rng, level):
    t = rng.standard_normal(37).astype(np.float32)
    got = run_kernel(compile_mlir(TOTAL, opt_level=level), [t, np.zeros(1, np.float32)], "golden")
    want = np.float32(0)
    for v in t:
        want = np.float32(want + v)
    assert got.results[0][0] == want
    assert "memref.alloc() : memref<1xf32>" in str(run_pipeline(TOTAL, until="slc"))


@pytest.mark.parametrize("level", LEVELS)
def test_nested_carried_values_at_every_level_match_the_reference_and_pytorch(rng, level):
    args = _bags(rng)
    table, indices, offsets = args[:3]
    got = run_kernel(compile_mlir(BAGS, opt_level=level), [a.copy() for a in args], "golden")
    np.testing.assert_array_equal(got.results[0], _norms(table, indices, offsets))
    want = torch.nn.functional.embedding_bag(torch.from_numpy(indices), torch.from_numpy(table),
                                             torch.from_numpy(offsets[:-1]), mode="mean")
    assert torch.equal(torch.from_numpy(got.results[1]), want)


def test_carried_values_in_c(rng, tmp_path):
    """The C execute side on the golden model's tokens, bit for bit against the Python side."""
    test_c_levels = pytest.importorskip("test_c_levels")
    if test_c_levels.CC is None:
        pytest.skip("no C compiler (cc) on this machine")
    args = _bags(rng)
    table, indices, offsets = args[:3]

    def check(_, results):
        np.testing.assert_array_equal(results[0], _norms(table, indices, offsets))

    case = test_c_levels.Case("bags", BAGS, lambda: [a.copy() for a in args], check)
    test_c_levels._replay([(case, 0), (case, 3)], tmp_path)


@pytest.mark.rtl
@pytest.mark.slow
def test_carried_values_on_rtl(rng):
    args = _bags(rng)
    table, indices, offsets = args[:3]
    got = run_kernel(compile_mlir(BAGS, opt_level=3), [a.copy() for a in args], "rtl")
    np.testing.assert_array_equal(got.results[0], _norms(table, indices, offsets))
    want = torch.nn.functional.embedding_bag(torch.from_numpy(indices), torch.from_numpy(table),
                                             torch.from_numpy(offsets[:-1]), mode="mean")
    assert torch.equal(torch.from_numpy(got.results[1]), want)


CHASE = """
func.func @chase(%next: memref<?xindex>, %val: memref<?xf32>, %out: memref<1xf32>, %n: index) -> memref<1xf32> {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %zero = arith.constant 0.0 : f32
  %s, %p = scf.for %i = %c0 to %n step %c1 iter_args(%acc = %zero, %k = %c0) -> (f32, index) {
    %v = memref.load %val[%k] : memref<?xf32>
    %k2 = memref.load %next[%k] : memref<?xindex>
    %a = arith.addf %acc, %v : f32
    scf.yield %a, %k2 : f32, index
  }
  memref.store %s, %out[%c0] : memref<1xf32>
  return %out : memref<1xf32>
}
"""


def test_a_carried_index_that_feeds_addresses_keeps_those_loads_on_the_core(rng):
    """Pointer chasing: the next address depends on the value loaded in this iteration, which the
    access unit cannot know ahead; the loads through the carried index run in the callback (the
    unit only counts the iterations). Correct, not decoupled."""
    nxt = rng.permutation(20).astype(np.int64)
    val = rng.standard_normal(20).astype(np.float32)
    slc = str(run_pipeline(CHASE, until="slc"))
    assert "slc.mem_stream" not in slc and "memref.load %val[%k]" in slc
    got = run_kernel(compile_mlir(CHASE, opt_level=3), [nxt, val, np.zeros(1, np.float32), 15], "golden")
    want, k = np.float32(0), 0
    for _ in range(15):
        want, k = np.float32(want + val[k]), nxt[k]
    assert got.results[0][0] == want
