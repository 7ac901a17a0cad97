"""Data types of the MLIR frontend's subset on the golden model, against PyTorch and NumPy.

* f16 / bf16 tables: the access unit moves 2-byte raw bits (MEM size 2), the execute side
  reinterprets them; the EmbeddingBag examples equal ``F.embedding_bag`` on the CPU bit for bit
  (f32 accumulation, one rounding per output: to nearest even for f16, to nearest with ties away
  from zero for bf16, fbgemm's conversion).
* Callbacks computing *in* f16/bf16 round every op to that type, as PyTorch's CPU elementwise ops.
* i8/i16/i32 elements are loaded sign-extended (MEM ``signed``), i64/index/f64 as 8 bytes.
* Reductions in callbacks (``scf.for`` with ``iter_args``: maximumf/minimumf/addi).
(The -O1..-O3 forms of the examples: tests/compiler/test_opt_levels.py.)
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import torch

from sw.compiler import compile_mlir, emit
from sw.runtime.drivers import run_kernel

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"


def bits16(t: torch.Tensor) -> np.ndarray:
    """The bit patterns of a bf16 tensor as NumPy uint16 (how a bf16 memref is passed)."""
    return t.view(torch.int16).numpy().view(np.uint16)


def bags(seed, rows=16, dim=7, nbags=5):
    rng = np.random.default_rng(seed)
    lengths = rng.integers(0, 9, nbags)
    lengths[0] = 0
    indices = rng.integers(0, rows, int(lengths.sum())).astype(np.int64)
    offsets = np.concatenate([[0], np.cumsum(lengths)]).astype(np.int64)
    table = torch.from_numpy(rng.standard_normal((rows, dim)).astype(np.float32) * 16)
    return table, indices, offsets


def torch_sum(table, indices, offsets):
    return torch.nn.functional.embedding_bag(torch.from_numpy(indices), table,
                                             torch.from_numpy(offsets[:-1]), mode="sum")


@pytest.mark.parametrize("seed", range(3))
def test_f16_embedding_bag_equals_pytorch_bit_for_bit(seed):
    table, indices, offsets = bags(seed)
    t16 = table.half()
    kernel = compile_mlir((EXAMPLES / "embedding_bag_sum_f16.mlir").read_text())
    out = np.zeros((len(offsets) - 1, t16.shape[1]), np.float16)
    got = run_kernel(kernel, [t16.numpy(), indices, offsets, out], "golden").results[0]
    np.testing.assert_array_equal(got, torch_sum(t16, indices, offsets).numpy())


@pytest.mark.parametrize("seed", range(3))
def test_bf16_embedding_bag_equals_pytorch_bit_for_bit(seed):
    table, indices, offsets = bags(seed)
    tb = table.bfloat16()
    kernel = compile_mlir((EXAMPLES / "embedding_bag_sum_bf16.mlir").read_text())
    out = np.zeros((len(offsets) - 1, tb.shape[1]), np.uint16)
    got = run_kernel(kernel, [bits16(tb), indices, offsets, out], "golden").results[0]
    np.testing.assert_array_equal(got, bits16(torch_sum(tb, indices, offsets)))


def test_bf16_rounding_mode_matters():
    """With the default truncf (ties to even) the bf16 example differs from PyTorch on some
    output: the to_nearest_away attribute is what makes it match (and the test above can fail)."""
    text = (EXAMPLES / "embedding_bag_sum_bf16.mlir").read_text()
    rne = compile_mlir(text.replace(" {roundingmode = 4 : i32}", ""))
    differs = 0
    for seed in range(6):
        table, indices, offsets = bags(seed, dim=16, nbags=8)
        tb = table.bfloat16()
        out = np.zeros((len(offsets) - 1, 16), np.uint16)
        got = run_kernel(rne, [bits16(tb), indices, offsets, out], "golden").results[0]
        ref = bits16(torch_sum(tb, indices, offsets))
        assert np.all(np.abs(got.astype(np.int32) - ref.astype(np.int32)) <= 1)   # 1 ulp at most
        differs += int(np.any(got != ref))
    assert differs > 0


PER_OP = """\
func.func @decay(%table: memref<?x?xT>, %indices: memref<?xindex>, %out: memref<?xT>) -> memref<?xT> {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %half = arith.constant 0.75 : T
  %n = memref.dim %indices, %c0 : memref<?xindex>
  %dim = memref.dim %table, %c1 : memref<?x?xT>
  scf.for %j = %c0 to %n step %c1 {
    %row = memref.load %indices[%j] : memref<?xindex>
    scf.for %d = %c0 to %dim step %c1 {
      %v = memref.load %table[%row, %d] : memref<?x?xT>
      %acc = memref.load %out[%d] : memref<?xT>
      %scaled = arith.mulf %acc, %half : T
      %sum = arith.addf %scaled, %v : T
      %sq = arith.mulf %v, %v : T
      %dv = arith.divf %sum, %sq : T
      %lo = arith.minimumf %dv, %sum : T
      memref.store %lo, %out[%d] : memref<?xT>
    }
  }
  return %out : memref<?xT>
}
"""


@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16])
def test_callback_arithmetic_in_f16_bf16_rounds_every_op_like_pytorch(dtype):
    """out = min((0.75 * out + v) / (v * v), 0.75 * out + v) per lookup, every op in the type,
    against the same sequence of PyTorch CPU tensor ops on that dtype."""
    name = "f16" if dtype == torch.float16 else "bf16"
    kernel = compile_mlir(PER_OP.replace("T", name).replace("memref<?x?x", "memref<?x?x"))
    table, indices, _ = bags(4, dim=9)
    table = table.to(dtype)
    acc = torch.zeros(9, dtype=dtype)
    for row in indices:
        v = table[row]
        s = acc * torch.tensor(0.75, dtype=dtype) + v
        acc = torch.minimum(s / (v * v), s)
    as_np = (lambda t: t.numpy()) if dtype == torch.float16 else bits16
    out = np.zeros(9, np.float16 if dtype == torch.float16 else np.uint16)
    got = run_kernel(kernel, [as_np(table), indices, out], "golden").results[0]
    np.testing.assert_array_equal(got, as_np(acc))


@pytest.mark.parametrize("mode, expected", [
    (0, [0x3F80, 0x3F82, 0xBF82, 0x3F82, 0x7F80]),     # ties to even
    (3, [0x3F80, 0x3F81, 0xBF81, 0x3F81, 0x7F7F]),     # toward zero (saturates)
    (4, [0x3F81, 0x3F82, 0xBF82, 0x3F82, 0x7F80]),     # ties away from zero
])
def test_truncf_rounding_modes_to_bf16(mode, expected):
    """f32 -> bf16 (ulp 2^-7 at 1) of 1 + 2^-8 (a tie), 1 + 3*2^-8 (a tie), its negation,
    1 + 7*2^-9 (1.75 ulp) and f32's largest finite 2^128 - 2^104 (past bf16's largest finite
    2^128 - 2^120 by more than half an ulp), by hand."""
    text = f"""\
func.func @cvt(%x: memref<?xf32>, %out: memref<?xbf16>) -> memref<?xbf16> {{
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %n = memref.dim %x, %c0 : memref<?xf32>
  scf.for %i = %c0 to %n step %c1 {{
    %v = memref.load %x[%i] : memref<?xf32>
    %h = arith.truncf %v {{roundingmode = {mode} : i32}} : f32 to bf16
    memref.store %h, %out[%i] : memref<?xbf16>
  }}
  return %out : memref<?xbf16>
}}
"""
    x = np.array([1 + 2**-8, 1 + 3 * 2**-8, -(1 + 3 * 2**-8), 1 + 7 * 2**-9,
                  2.0**128 - 2.0**104], np.float32)
    assert np.all(np.isfinite(x))
    got = run_kernel(compile_mlir(text), [x, np.zeros(5, np.uint16)], "golden").results[0]
    assert [int(v) for v in got] == expected
    if mode == 0:   # PyTorch's own f32 -> bf16 conversion rounds to nearest even
        np.testing.assert_array_equal(got, bits16(torch.from_numpy(x).bfloat16()))


@pytest.mark.parametrize("elem, size, signed", [
    ("i8", 1, True), ("i16", 2, True), ("i32", 4, True), ("i64", 8, False), ("f16", 2, False),
    ("bf16", 2, False), ("f32", 4, False), ("f64", 8, False),
])
def test_memory_stream_element_size_and_sign_extension(elem, size, signed):
    """The table's MEM stream loads ``size`` bytes, sign-extended for narrow integers
    (docs/isa.md §1); the gathered values come back unchanged."""
    text = f"""\
func.func @gather(%t: memref<?x{elem}>, %idx: memref<?xindex>, %out: memref<?x{elem}>) -> memref<?x{elem}> {{
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %n = memref.dim %idx, %c0 : memref<?xindex>
  scf.for %i = %c0 to %n step %c1 {{
    %r = memref.load %idx[%i] : memref<?xindex>
    %v = memref.load %t[%r] : memref<?x{elem}>
    memref.store %v, %out[%i] : memref<?x{elem}>
  }}
  return %out : memref<?x{elem}>
}}
"""
    kernel = compile_mlir(text)
    table_stream = kernel.program.streams[-1]
    assert (table_stream.size, table_stream.signed) == (size, signed)
    dtype = kernel.params[0].dtype
    rng = np.random.default_rng(size)
    if dtype.startswith("int"):
        info = np.iinfo(dtype)
        t = rng.integers(info.min, info.max, 12, dtype=dtype, endpoint=True)
        t[:2] = info.min, info.max                       # sign bit set and clear
    elif dtype == "uint16":                              # bf16 bit patterns
        t = bits16(torch.from_numpy(rng.standard_normal(12).astype(np.float32)).bfloat16())
    else:
        t = rng.standard_normal(12).astype(dtype)
    idx = rng.integers(0, 12, 20).astype(np.int64)
    got = run_kernel(kernel, [t, idx, np.zeros(20, dtype)], "golden").results[0]
    np.testing.assert_array_equal(got, t[idx])


REDUCE = """\
func.func @bag_range(%table: memref<?x?xf32>, %indices: memref<?xindex>, %offsets: memref<?xindex>, %out: memref<?x?xf32>, %stats: memref<?x2xf32>, %count: memref<?xi64>) -> (memref<?x2xf32>, memref<?xi64>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %inf = arith.constant 0x7F800000 : f32
  %ninf = arith.constant 0xFF800000 : f32
  %zf = arith.constant 0.0 : f32
  %z = arith.constant 0 : i64
  %one = arith.constant 1 : i64
  %nbags = memref.dim %out, %c0 : memref<?x?xf32>
  %dim = memref.dim %table, %c1 : memref<?x?xf32>
  scf.for %b = %c0 to %nbags step %c1 {
    %b1 = arith.addi %b, %c1 : index
    %start = memref.load %offsets[%b] : memref<?xindex>
    %end = memref.load %offsets[%b1] : memref<?xindex>
    scf.for %j = %start to %end step %c1 {
      %row = memref.load %indices[%j] : memref<?xindex>
      scf.for %d = %c0 to %dim step %c1 {
        %v = memref.load %table[%row, %d] : memref<?x?xf32>
        %acc = memref.load %out[%b, %d] : memref<?x?xf32>
        %sum = arith.addf %acc, %v : f32
        memref.store %sum, %out[%b, %d] : memref<?x?xf32>
      }
    }
    %mx, %mn, %pos = scf.for %k = %c0 to %dim step %c1 iter_args(%a = %ninf, %m = %inf, %p = %z) -> (f32, f32, i64) {
      %x = memref.load %out[%b, %k] : memref<?x?xf32>
      %a2 = arith.maximumf %a, %x : f32
      %m2 = arith.minimumf %m, %x : f32
      %gt = arith.cmpf ogt, %x, %zf : f32
      %inc = arith.select %gt, %one, %z : i64
      %p2 = arith.addi %p, %inc : i64
      scf.yield %a2, %m2, %p2 : f32, f32, i64
    }
    memref.store %mx, %stats[%b, %c0] : memref<?x2xf32>
    memref.store %mn, %stats[%b, %c1] : memref<?x2xf32>
    memref.store %pos, %count[%b] : memref<?xi64>
  }
  return %stats, %count : memref<?x2xf32>, memref<?xi64>
}
"""


def test_reduction_with_iter_args_in_an_end_callback():
    """Per bag: the sum row (iter callback), then max/min/count of positives over it in one
    scf.for with three iter_args on the bag's end callback; against NumPy."""
    kernel = compile_mlir(REDUCE)
    assert [name for name, _ in kernel.callbacks.values()] == ["layer2_iter", "layer1_end"]
    table, indices, offsets = bags(5)
    table = table.numpy()
    n = len(offsets) - 1
    args = [table, indices, offsets, np.zeros((n, 7), np.float32), np.zeros((n, 2), np.float32),
            np.zeros(n, np.int64)]
    stats, count = run_kernel(kernel, args, "golden").results
    sums = np.zeros((n, 7), np.float32)
    for b in range(n):
        for j in range(offsets[b], offsets[b + 1]):
            sums[b] += table[indices[j]]
    np.testing.assert_array_equal(stats, np.stack([sums.max(1), sums.min(1)], axis=1))
    np.testing.assert_array_equal(count, (sums > 0).sum(1))


def test_three_levels_of_indirection_are_streams_of_one_layer():
    """hashed_gather: ids[i] -> remap[h] -> table[(row << logd) + d], the hash (muli, shrui) and
    the address (shli, addi) all on the access unit."""
    slc = emit((EXAMPLES / "hashed_gather.mlir").read_text(), "slc")
    for piece in ("slc.mem_stream %ids[%i]", "slc.alu_stream mul %id,", "slc.alu_stream shr %prod,",
                  "slc.mem_stream %remap[%h]", "slc.alu_stream shl %row,",
                  "slc.alu_stream add %base, %d", "slc.mem_stream %table[%a]"):
        assert piece in slc, piece
    assert "slc.callback iter" in slc and slc.count("slc.from_stream") == 3
