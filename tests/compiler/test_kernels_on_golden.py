"""Compiled kernels run end to end on the golden model (sw.runtime), checked against PyTorch/NumPy.

Covers the examples (sum, mean, f64, allocated output with i32 indices), a load whose address
comes from a memref the kernel writes (it must stay on the core), and the execute side's
translation of arith ops inside callbacks.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path

import numpy as np
import pytest
import torch

from sw.compiler import compile_mlir
from sw.runtime.drivers import run_kernel
from sw.runtime.golden import AccessFault

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"


def bags(seed, dtype=np.float32, index_dtype=np.int64):
    rng = np.random.default_rng(seed)
    rows, dim, nbags = int(rng.integers(1, 20)), int(rng.integers(1, 7)), int(rng.integers(1, 8))
    table = rng.standard_normal((rows, dim)).astype(dtype)
    lengths = rng.integers(0, 5, nbags)
    lengths[0] = 0                                            # an empty bag
    indices = rng.integers(0, rows, int(lengths.sum())).astype(index_dtype)
    offsets = np.concatenate([[0], np.cumsum(lengths)]).astype(index_dtype)
    return table, indices, offsets


def torch_bag(table, indices, offsets, mode):
    return torch.nn.functional.embedding_bag(
        torch.from_numpy(indices.astype(np.int64)), torch.from_numpy(table),
        torch.from_numpy(offsets[:-1].astype(np.int64)), mode=mode).numpy()


@pytest.fixture(scope="module")
def kernels():
    return {p.stem: compile_mlir(p.read_text(), filename=p.name) for p in EXAMPLES.glob("*.mlir")}


@pytest.mark.parametrize("seed", range(4))
@pytest.mark.parametrize("example, mode, dtype, index_dtype, out_param", [
    ("embedding_bag_sum", "sum", np.float32, np.int64, True),
    ("embedding_bag_mean", "mean", np.float32, np.int64, True),
    ("embedding_bag_sum_f64", "sum", np.float64, np.int64, True),
    ("embedding_bag_alloc", "sum", np.float32, np.int32, False),
])
def test_example_matches_pytorch_bit_for_bit(kernels, example, mode, dtype, index_dtype, out_param, seed):
    table, indices, offsets = bags(seed, dtype, index_dtype)
    args = [table, indices, offsets]
    if out_param:
        args.append(np.zeros((len(offsets) - 1, table.shape[1]), dtype))
    result = run_kernel(kernels[example], args, "golden")
    np.testing.assert_array_equal(result.results[0], torch_bag(table, indices, offsets, mode))


def test_token_counts_of_the_sum_kernel(kernels):
    table, indices, offsets = bags(1)
    out = np.zeros((len(offsets) - 1, table.shape[1]), np.float32)
    result = run_kernel(kernels["embedding_bag_sum"], [table, indices, offsets, out], "golden")
    lookups = len(indices) * table.shape[1]
    assert result.access.control_tokens == [0] * lookups + [0xFFFF]
    assert len(result.access.data_tokens) == 3 * lookups


def test_decreasing_offsets_fault_on_the_check_order_layer(kernels):
    table, indices, offsets = bags(2)
    offsets = np.array([0, 2, 1, 3], dtype=np.int64)
    indices = np.zeros(3, dtype=np.int64)
    out = np.zeros((3, table.shape[1]), np.float32)
    kernel = kernels["embedding_bag_sum"]
    with pytest.raises(ValueError, match=r"^arg2 \(offsets\)\[2\] = 1 is less than"):   # the host's check
        run_kernel(kernel, [table, indices, offsets, out], "golden")
    unchecked = dataclasses.replace(kernel, host_checks=[c for c in kernel.host_checks if c.kind != "order"])
    with pytest.raises(AccessFault, match="RANGE_ORDER"):
        run_kernel(unchecked, [table, indices, offsets, out], "golden")


REMAP = """\
func.func @remapped(%table: memref<?x?xf32>, %indices: memref<?xindex>, %offsets: memref<?xindex>, %remap: memref<?xindex>, %out: memref<?x?xf32>) -> memref<?x?xf32> {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %nbags = memref.dim %out, %c0 : memref<?x?xf32>
  %dim = memref.dim %table, %c1 : memref<?x?xf32>
  scf.for %b = %c0 to %nbags step %c1 {
    %b1 = arith.addi %b, %c1 : index
    %start = memref.load %offsets[%b] : memref<?xindex>
    %end = memref.load %offsets[%b1] : memref<?xindex>
    scf.for %j = %start to %end step %c1 {
      %i = memref.load %indices[%j] : memref<?xindex>
      scf.for %d = %c0 to %dim step %c1 {
        %row = memref.load %remap[%i] : memref<?xindex>
        %v = memref.load %table[%row, %d] : memref<?x?xf32>
        %acc = memref.load %out[%b, %d] : memref<?x?xf32>
        %sum = arith.addf %acc, %v : f32
        memref.store %sum, %out[%b, %d] : memref<?x?xf32>
      }
    }
  }
  memref.store %c0, %remap[%c0] : memref<?xindex>
  return %out : memref<?x?xf32>
}
"""


def test_address_from_a_written_memref_stays_on_the_core():
    from sw.compiler import emit
    slc = emit(REMAP, "slc")
    # %remap is written, so its load and the table load it addresses run in the callback.
    assert "%row = memref.load %remap[%i_1] : memref<?xindex>" in slc
    assert "%v = memref.load %table[%row, %d_1] : memref<?x?xf32>" in slc
    kernel = compile_mlir(REMAP)
    assert [p.in_image for p in kernel.params] == [False, True, True, False, False]
    table, indices, offsets = bags(5)
    remap = np.random.default_rng(0).permutation(table.shape[0]).astype(np.int64)
    out = np.zeros((len(offsets) - 1, table.shape[1]), np.float32)
    result = run_kernel(kernel, [table, indices, offsets, remap.copy(), out], "golden")
    np.testing.assert_array_equal(result.results[0], torch_bag(table, remap[indices], offsets, "sum"))


OPS = """\
func.func @ops(%x: memref<?xi64>, %y: memref<?xi64>, %f: memref<?xf32>, %g: memref<?xf32>, %iout: memref<?x18xi64>, %fout: memref<?x12xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c2 = arith.constant 2 : index
  %c3 = arith.constant 3 : index
  %c4 = arith.constant 4 : index
  %c5 = arith.constant 5 : index
  %c6 = arith.constant 6 : index
  %c7 = arith.constant 7 : index
  %c8 = arith.constant 8 : index
  %c9 = arith.constant 9 : index
  %c10 = arith.constant 10 : index
  %c11 = arith.constant 11 : index
  %c12 = arith.constant 12 : index
  %c13 = arith.constant 13 : index
  %c14 = arith.constant 14 : index
  %c15 = arith.constant 15 : index
  %c16 = arith.constant 16 : index
  %c17 = arith.constant 17 : index
  %k3 = arith.constant 3 : i64
  %n = memref.dim %x, %c0 : memref<?xi64>
  scf.for %i = %c0 to %n step %c1 {
    %a = memref.load %x[%i] : memref<?xi64>
    %b = memref.load %y[%i] : memref<?xi64>
    %p = memref.load %f[%i] : memref<?xf32>
    %q = memref.load %g[%i] : memref<?xf32>
    %r0 = arith.addi %a, %b : i64
    memref.store %r0, %iout[%i, %c0] : memref<?x18xi64>
    %r1 = arith.subi %a, %b : i64
    memref.store %r1, %iout[%i, %c1] : memref<?x18xi64>
    %r2 = arith.muli %a, %b : i64
    memref.store %r2, %iout[%i, %c2] : memref<?x18xi64>
    %r3 = arith.divsi %a, %b : i64
    memref.store %r3, %iout[%i, %c3] : memref<?x18xi64>
    %r4 = arith.remsi %a, %b : i64
    memref.store %r4, %iout[%i, %c4] : memref<?x18xi64>
    %r5 = arith.divui %a, %b : i64
    memref.store %r5, %iout[%i, %c5] : memref<?x18xi64>
    %r6 = arith.remui %a, %b : i64
    memref.store %r6, %iout[%i, %c6] : memref<?x18xi64>
    %r7 = arith.floordivsi %a, %b : i64
    memref.store %r7, %iout[%i, %c7] : memref<?x18xi64>
    %r8 = arith.ceildivsi %a, %b : i64
    memref.store %r8, %iout[%i, %c8] : memref<?x18xi64>
    %r9 = arith.xori %a, %b : i64
    memref.store %r9, %iout[%i, %c9] : memref<?x18xi64>
    %r10 = arith.shli %a, %k3 : i64
    memref.store %r10, %iout[%i, %c10] : memref<?x18xi64>
    %r11 = arith.shrsi %a, %k3 : i64
    memref.store %r11, %iout[%i, %c11] : memref<?x18xi64>
    %r12 = arith.shrui %a, %k3 : i64
    memref.store %r12, %iout[%i, %c12] : memref<?x18xi64>
    %r13 = arith.maxui %a, %b : i64
    memref.store %r13, %iout[%i, %c13] : memref<?x18xi64>
    %lt = arith.cmpi ult, %a, %b : i64
    %r14 = arith.select %lt, %a, %b : i64
    memref.store %r14, %iout[%i, %c14] : memref<?x18xi64>
    %t32 = arith.trunci %a : i64 to i32
    %r15 = arith.extsi %t32 : i32 to i64
    memref.store %r15, %iout[%i, %c15] : memref<?x18xi64>
    %r16 = arith.extui %t32 : i32 to i64
    memref.store %r16, %iout[%i, %c16] : memref<?x18xi64>
    %r17 = arith.fptosi %p : f32 to i64
    memref.store %r17, %iout[%i, %c17] : memref<?x18xi64>
    %s0 = arith.addf %p, %q : f32
    memref.store %s0, %fout[%i, %c0] : memref<?x12xf32>
    %s1 = arith.subf %p, %q : f32
    memref.store %s1, %fout[%i, %c1] : memref<?x12xf32>
    %s2 = arith.mulf %p, %q : f32
    memref.store %s2, %fout[%i, %c2] : memref<?x12xf32>
    %s3 = arith.divf %p, %q : f32
    memref.store %s3, %fout[%i, %c3] : memref<?x12xf32>
    %s4 = arith.maximumf %p, %q : f32
    memref.store %s4, %fout[%i, %c4] : memref<?x12xf32>
    %s5 = arith.minnumf %p, %q : f32
    memref.store %s5, %fout[%i, %c5] : memref<?x12xf32>
    %s6 = arith.negf %p : f32
    memref.store %s6, %fout[%i, %c6] : memref<?x12xf32>
    %gt = arith.cmpf ogt, %p, %q : f32
    %s7 = arith.select %gt, %p, %q : f32
    memref.store %s7, %fout[%i, %c7] : memref<?x12xf32>
    %s8 = arith.sitofp %a : i64 to f32
    memref.store %s8, %fout[%i, %c8] : memref<?x12xf32>
    %wide = arith.extf %p : f32 to f64
    %sq = arith.mulf %wide, %wide : f64
    %s9 = arith.truncf %sq : f64 to f32
    memref.store %s9, %fout[%i, %c9] : memref<?x12xf32>
    %une = arith.cmpf une, %p, %p : f32
    %s10 = arith.uitofp %une : i1 to f32
    memref.store %s10, %fout[%i, %c10] : memref<?x12xf32>
    %half = arith.constant 0.5 : f32
    %sum = scf.for %k = %c0 to %c3 step %c1 iter_args(%acc = %p) -> (f32) {
      %nxt = arith.addf %acc, %half : f32
      scf.yield %nxt : f32
    }
    %pos = arith.cmpf oge, %p, %half : f32
    %s11 = scf.if %pos -> (f32) {
      scf.yield %sum : f32
    } else {
      %z = arith.constant -1.0 : f32
      scf.yield %z : f32
    }
    memref.store %s11, %fout[%i, %c11] : memref<?x12xf32>
  }
  func.return
}
"""


def _wrap64(v):
    v &= (1 << 64) - 1
    return v - (1 << 64) if v >> 63 else v


def _trunc_div(a, b):
    q = abs(a) // abs(b)
    return q if (a < 0) == (b < 0) else -q


def test_callback_arith_follows_mlir_semantics():
    kernel = compile_mlir(OPS)
    x = np.array([7, -7, 2**62, -(2**63), 5, 123456789123], dtype=np.int64)
    y = np.array([2, 2, 5, 3, -3, -1000], dtype=np.int64)
    f = np.array([1.5, -2.25, np.nan, 3e38, 0.25, -0.0], dtype=np.float32)
    g = np.array([0.5, 4.0, 1.0, 3e38, 0.0, 0.0], dtype=np.float32)
    iout = np.zeros((6, 18), np.int64)
    fout = np.zeros((6, 12), np.float32)
    f_for_int = np.where(np.isnan(f) | (np.abs(f) > 1e18), 0, f)   # fptosi of nan/huge is UB
    run_kernel(kernel, [x, y, f_for_int.astype(np.float32), g, iout, fout], "golden")
    m = (1 << 64) - 1
    for k in range(6):
        a, b = int(x[k]), int(y[k])
        p = np.float32(f_for_int[k])
        expected = [
            _wrap64(a + b), _wrap64(a - b), _wrap64(a * b), _trunc_div(a, b),
            a - b * _trunc_div(a, b), _wrap64((a & m) // (b & m)), _wrap64((a & m) % (b & m)),
            a // b, -(-a // b), a ^ b, _wrap64(a << 3), a >> 3, (a & m) >> 3,
            a if (a & m) >= (b & m) else b, a if (a & m) < (b & m) else b,
            _wrap64(((a & 0xFFFFFFFF) ^ 0x80000000) - 0x80000000), a & 0xFFFFFFFF, int(p)]
        assert iout[k].tolist() == expected, k
    p, q = f_for_int.astype(np.float32), g
    with np.errstate(all="ignore"):
        cols = [p + q, p - q, p * q, p / q, np.maximum(p, q), np.fmin(p, q), -p,
                np.where(p > q, p, q), x.astype(np.float32),
                (p.astype(np.float64) ** 2).astype(np.float32), np.zeros(6, np.float32),
                np.where(p >= 0.5, p + np.float32(1.5), np.float32(-1.0))]
    np.testing.assert_array_equal(fout, np.stack(cols, axis=1).astype(np.float32))


SCALED = """\
func.func @scaled(%table: memref<10x4xf32>, %indices: memref<?xi64>, %n: index, %scale: f32, %out: memref<?x4xf32>) -> memref<?x4xf32> {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c4 = arith.constant 4 : index
  scf.for %j = %c0 to %n step %c1 {
    %r = memref.load %indices[%j] : memref<?xi64>
    %row = arith.index_cast %r : i64 to index
    scf.for %d = %c0 to %c4 step %c1 {
      %v = memref.load %table[%row, %d] : memref<10x4xf32>
      %w = arith.mulf %v, %scale : f32
      memref.store %w, %out[%j, %d] : memref<?x4xf32>
    }
  }
  return %out : memref<?x4xf32>
}
"""


def test_static_shapes_and_scalar_arguments():
    kernel = compile_mlir(SCALED)
    assert [str(a) for a in kernel.arg_map] == ["scalar arg2", "base arg1", "bytes arg1",
                                               "base arg0", "bytes arg0"]
    assert "stream 1 layer=1 alu  mul a=s0 b=#4" in kernel.program.to_asm()   # static dim: IMM
    rng = np.random.default_rng(3)
    table = rng.standard_normal((10, 4)).astype(np.float32)
    indices = np.array([9, 0, 3], dtype=np.int64)
    out = np.zeros((3, 4), np.float32)
    result = run_kernel(kernel, [table, indices, 3, 0.5, out], "golden")
    np.testing.assert_array_equal(result.results[0], table[indices] * np.float32(0.5))


FMA = """\
func.func @fma(%a: memref<?xf64>, %b: memref<?xf64>, %c: memref<?xf64>, %out: memref<?xf64>) -> memref<?xf64> {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %n = memref.dim %a, %c0 : memref<?xf64>
  scf.for %i = %c0 to %n step %c1 {
    %x = memref.load %a[%i] : memref<?xf64>
    %y = memref.load %b[%i] : memref<?xf64>
    %z = memref.load %c[%i] : memref<?xf64>
    %r = math.fma %x, %y, %z : f64
    memref.store %r, %out[%i] : memref<?xf64>
  }
  return %out : memref<?xf64>
}
"""


def test_math_fma_rounds_once():
    from fractions import Fraction
    kernel = compile_mlir(FMA)
    a = np.array([1 + 2.0**-30, 0.1, np.inf], dtype=np.float64)
    b = np.array([1 - 2.0**-30, 3.0, 1.0], dtype=np.float64)
    c = np.array([-1.0, -0.3, 1.0], dtype=np.float64)
    result = run_kernel(kernel, [a, b, c, np.zeros(3)], "golden").results[0]
    exact = [float(Fraction(x) * Fraction(y) + Fraction(z)) for x, y, z in zip(a[:2], b[:2], c[:2])]
    assert result.tolist() == exact + [np.inf]
    assert result[0] == -(2.0**-60) != a[0] * b[0] + c[0]      # a separate multiply would give 0


def test_f32_math_fma_rounds_once():
    """An f32 math.fma is one rounding (C's fmaf). The execute side formed it in f64 and rounded
    twice: a * b + c = (1 + 2^-23) + 2^-24 - 2^-70 rounded to f64 lands on the f32 midpoint
    1 + 1.5 * 2^-23 and then rounded up to 1 + 2^-22, where one rounding gives 1 + 2^-23.
    Random operands (fresh seed, printed) against the reference from exact rationals."""
    from sw.workloads import fma_f32
    kernel = compile_mlir(FMA.replace("f64", "f32"))
    a = [np.float32(1 + 2**-23)]
    b = [np.float32(2**-24 - 2**-47)]
    c = [np.float32(1 + 2**-23)]
    seed = int(np.random.SeedSequence().entropy % 2**32)
    print(f"seed {seed}")
    rng = np.random.default_rng(seed)
    x, y = rng.standard_normal((2, 2000)).astype(np.float32)
    z = (-(x.astype(np.float64) * y) * (1 + rng.standard_normal(2000) * 2.0**-20)).astype(np.float32)
    a, b, c = (np.concatenate([np.array(u, np.float32), v]) for u, v in ((a, x), (b, y), (c, z)))
    result = run_kernel(kernel, [a, b, c, np.zeros(len(a), np.float32)], "golden").results[0]
    assert result[0] == np.float32(1 + 2**-23)
    np.testing.assert_array_equal(result, [fma_f32(*t) for t in zip(a, b, c)])


@pytest.mark.filterwarnings("ignore:Sparse CSR tensor support is in beta state")
def test_spmm_csr_example_against_torch_sparse(kernels):
    rng = np.random.default_rng(7)
    dense = rng.standard_normal((6, 9)).astype(np.float32) * (rng.random((6, 9)) < 0.4)
    dense[2] = 0                                                    # an empty row
    csr = torch.from_numpy(dense).to_sparse_csr()
    x = rng.standard_normal((9, 5)).astype(np.float32)
    rowptr, col = csr.crow_indices().numpy(), csr.col_indices().numpy()
    val = csr.values().numpy()
    kernel = kernels["spmm_csr"]
    assert str(kernel.arg_map[0]) == "expr args[4][0]"
    out = np.zeros((6, 5), np.float32)
    result = run_kernel(kernel, [rowptr, col, val, x, np.array([6]), out], "golden").results[0]
    expected = np.zeros((6, 5), np.float32)
    for i in range(6):                                              # the kernel's order of sums
        for j in range(rowptr[i], rowptr[i + 1]):
            expected[i] = expected[i] + val[j] * x[col[j]]
    np.testing.assert_array_equal(result, expected)
    np.testing.assert_allclose(result, (csr @ torch.from_numpy(x)).numpy(), rtol=1e-5, atol=1e-6)
