"""arith.maximumf / minimumf on the Python execute side (the golden model's core) follow MLIR's
definition, IEEE 754-2019 maximum / minimum: NaN propagates and -0.0 < +0.0 whatever the order of
the operands (np.maximum / np.minimum return the second operand of two equal zeros, so
maximumf(+0.0, -0.0) was -0.0). The reference below is written from that definition, not NumPy;
the C execute side (``ember_maximum_f32``) already computed it."""

from __future__ import annotations

import math

import numpy as np
import pytest

from sw.compiler import compile_mlir
from sw.runtime.drivers import run_kernel

MINMAX = """\
func.func @minmax(%x: memref<?xf32>, %y: memref<?xf32>, %hi: memref<?xf32>, %lo: memref<?xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %n = memref.dim %hi, %c0 : memref<?xf32>
  scf.for %i = %c0 to %n step %c1 {
    %a = memref.load %x[%i] : memref<?xf32>
    %b = memref.load %y[%i] : memref<?xf32>
    %h = arith.maximumf %a, %b : f32
    %l = arith.minimumf %a, %b : f32
    memref.store %h, %hi[%i] : memref<?xf32>
    memref.store %l, %lo[%i] : memref<?xf32>
  }
  return
}
"""


def ieee_maximum(a: float, b: float) -> float:
    if math.isnan(a) or math.isnan(b):
        return math.nan
    if a == b:                                  # only zeros differ: +0.0 is the larger
        return b if math.copysign(1.0, a) < 0 else a
    return a if a > b else b


def ieee_minimum(a: float, b: float) -> float:
    if math.isnan(a) or math.isnan(b):
        return math.nan
    if a == b:
        return a if math.copysign(1.0, a) < 0 else b
    return a if a < b else b


def same(got: np.ndarray, want: list[float]) -> bool:
    want = np.array(want, np.float32)
    return bool(np.array_equal(np.isnan(got), np.isnan(want))
                and np.array_equal(np.nan_to_num(got), np.nan_to_num(want))
                and np.array_equal(np.signbit(got), np.signbit(want)))


X = [0.0, -0.0, -0.0, 0.0, math.nan, 1.0, -1.0, 2.0, math.inf, -math.inf]
Y = [-0.0, 0.0, -0.0, 0.0, 1.0, math.nan, -2.0, 2.0, -math.inf, 0.0]


@pytest.mark.parametrize("opt_level", [0, 1, 3])
def test_maximumf_and_minimumf_order_signed_zeros(opt_level):
    kernel = compile_mlir(MINMAX, opt_level=opt_level)
    x, y = np.array(X, np.float32), np.array(Y, np.float32)
    hi, lo = np.zeros(len(X), np.float32), np.zeros(len(X), np.float32)
    run_kernel(kernel, [x, y, hi, lo], "golden")
    assert same(hi, [ieee_maximum(a, b) for a, b in zip(X, Y)])
    assert same(lo, [ieee_minimum(a, b) for a, b in zip(X, Y)])


@pytest.mark.parametrize("opt_level", [0, 1, 3])
def test_embedding_bag_max_of_signed_zeros(opt_level):
    """examples/embedding_bag_max.mlir (at -O1 its maximumf runs on vectors): a bag of rows
    +0.0 then -0.0 has the maximum +0.0 in every column, as a bag of -0.0 then +0.0."""
    kernel = compile_mlir(open("examples/embedding_bag_max.mlir").read(), opt_level=opt_level)
    table = np.array([[0.0] * 8, [-0.0] * 8], np.float32)
    indices, offsets = np.array([0, 1, 1, 0, 1, 1], np.int64), np.array([0, 2, 4, 6], np.int64)
    out = run_kernel(kernel, [table, indices, offsets, np.zeros((3, 8), np.float32)],
                     "golden").results[0]
    want = [[ieee_maximum(ieee_maximum(-math.inf, table[i, 0]), table[j, 0])] * 8
            for i, j in ((0, 1), (1, 0), (1, 1))]
    assert same(np.asarray(out).reshape(-1), [v for row in want for v in row])
