"""PyTorch frontend: op discovery, the generated SCF, argument binding and its validation."""

from __future__ import annotations

import itertools

import numpy as np
import pytest
import torch

from sw.compiler import CompileError
from sw.compiler.frontends.torch import BagSpec, compile_torch, scf_for_bag
from sw.runtime.drivers import run_kernel

SUM_SCF = """\
func.func @embedding_bag(%table: memref<?x?xf32>, %indices: memref<?xi64>, %offsets: memref<?xi64>, %out: memref<?x?xf32>) -> memref<?x?xf32> {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %nbags = memref.dim %out, %c0 : memref<?x?xf32>
  %dim = memref.dim %table, %c1 : memref<?x?xf32>
  scf.for %b = %c0 to %nbags step %c1 {
    %b1 = arith.addi %b, %c1 : index
    %start_i64 = memref.load %offsets[%b] : memref<?xi64>
    %start = arith.index_cast %start_i64 : i64 to index
    %end_i64 = memref.load %offsets[%b1] : memref<?xi64>
    %end = arith.index_cast %end_i64 : i64 to index
    scf.for %j = %start to %end step %c1 {
      %row_i64 = memref.load %indices[%j] : memref<?xi64>
      %row = arith.index_cast %row_i64 : i64 to index
      scf.for %d = %c0 to %dim step %c1 {
        %v = memref.load %table[%row, %d] : memref<?x?xf32>
        %acc = memref.load %out[%b, %d] : memref<?x?xf32>
        %new = arith.addf %acc, %v : f32
        memref.store %new, %out[%b, %d] : memref<?x?xf32>
      }
    }
  }
  return %out : memref<?x?xf32>
}
"""


def test_scf_of_a_sum_bag():
    assert scf_for_bag(BagSpec()) == SUM_SCF


def run(tk, *inputs):
    return tk.unbind(run_kernel(tk.kernel, tk.bind(*inputs), "golden").results)


INP = torch.tensor([1, 3, 4, 3, 3, 9, 0, 2])


@pytest.mark.parametrize("mode, padding_idx, include_last_offset, dtype", list(itertools.product(
    ["sum", "mean", "max"], [None, 3], [False, True], [torch.float32, torch.float64])))
def test_embedding_bag_module_matches_pytorch_bit_for_bit(mode, padding_idx, include_last_offset, dtype):
    torch.manual_seed(0)
    bag = torch.nn.EmbeddingBag(10, 5, mode=mode, padding_idx=padding_idx,
                                include_last_offset=include_last_offset, dtype=dtype)
    offsets = torch.tensor([0, 2, 2, 5, 8] if include_last_offset else [0, 2, 2, 5])
    tk = compile_torch(bag, (INP, offsets))
    assert tk.traced_with == "torch.export"
    assert tk.spec == BagSpec(mode, str(dtype).removeprefix("torch."), False, include_last_offset,
                              padding_idx)
    assert torch.equal(run(tk, INP, offsets), bag(INP, offsets).detach())
    if not include_last_offset:
        fixed = torch.tensor([[1, 3, 4], [3, 3, 9]])                  # 2-D input: fixed-length bags
        assert torch.equal(run(tk, fixed), bag(fixed).detach())


def test_per_sample_weights():
    torch.manual_seed(1)
    bag = torch.nn.EmbeddingBag(10, 5, mode="sum")
    offsets, weights = torch.tensor([0, 2, 2, 5]), torch.randn(8)
    tk = compile_torch(bag, (INP, offsets, weights))
    assert tk.spec.per_sample_weights
    assert "%new = math.fma %w, %v, %acc : f32" in tk.scf      # as PyTorch: one rounding
    assert torch.equal(run(tk, INP, offsets, weights), bag(INP, offsets, weights).detach())


def test_per_sample_weights_f64():
    torch.manual_seed(2)
    bag = torch.nn.EmbeddingBag(10, 5, mode="sum", dtype=torch.float64)
    offsets, weights = torch.tensor([0, 2, 2, 5]), torch.randn(8, dtype=torch.float64)
    tk = compile_torch(bag, (INP, offsets, weights))
    assert torch.equal(run(tk, INP, offsets, weights), bag(INP, offsets, weights).detach())


def test_function_calling_f_embedding_bag_is_traced_with_torch_export():
    weight = torch.randn(12, 4, dtype=torch.float64)

    def fn(indices, offsets):
        return torch.nn.functional.embedding_bag(indices, weight, offsets, mode="mean")

    inp, offsets = torch.tensor([0, 11, 5, 5]), torch.tensor([0, 2, 3])
    tk = compile_torch(fn, (inp, offsets))
    assert (tk.traced_with, tk.spec.mode, tk.spec.dtype) == ("torch.export", "mean", "float64")
    assert torch.equal(run(tk, inp, offsets), fn(inp, offsets))


def test_weight_passed_as_an_input():
    def fn(offsets, weight, indices):
        return torch.nn.functional.embedding_bag(indices, weight, offsets)

    weight, inp, offsets = torch.randn(6, 3), torch.tensor([5, 0, 1]), torch.tensor([0, 1])
    tk = compile_torch(fn, (offsets, weight, inp))
    assert torch.equal(run(tk, offsets, weight, inp), fn(offsets, weight, inp))


def test_2d_example_falls_back_to_the_module_attributes():
    bag = torch.nn.EmbeddingBag(10, 3)
    fixed = torch.tensor([[1, 2], [3, 4]])
    tk = compile_torch(bag, (fixed,))
    assert tk.traced_with == "attributes"
    assert torch.equal(run(tk, fixed), bag(fixed).detach())


@pytest.mark.parametrize("inputs, message", [
    ((torch.tensor([1, 10]), torch.tensor([0])),
     "input[1] = 10 is out of range for an embedding table of 10 rows"),
    ((torch.tensor([1, -1]), torch.tensor([0])),
     "input[1] = -1 is out of range for an embedding table of 10 rows"),
    ((torch.tensor([1, 2]), torch.tensor([1])), "offsets[0] must be 0, not 1"),
    ((torch.tensor([1, 2, 3]), torch.tensor([0, 2, 1])),
     "offsets must be non-decreasing, but offsets[2] = 1 < offsets[1] = 2"),
    ((torch.tensor([1, 2]), torch.tensor([0, 3])),
     "offsets[-1] must be at most the input's length 2, not 3"),
    ((torch.tensor([[1, 2]]), torch.tensor([0])), "offsets must be None when input is 2-D"),
    ((torch.tensor([1, 2]),), "offsets must be given when input is 1-D"),
    ((torch.tensor([1.0, 2.0]), torch.tensor([0])), "input must be an integer tensor, not float32"),
])
def test_bind_validates_like_pytorch(inputs, message):
    tk = compile_torch(torch.nn.EmbeddingBag(10, 2), (torch.tensor([1, 2]), torch.tensor([0])))
    with pytest.raises(ValueError) as info:
        tk.bind(*inputs)
    assert str(info.value) == message


def test_bind_converts_pytorch_offsets_to_nbags_plus_one():
    bag = torch.nn.EmbeddingBag(10, 2)
    tk = compile_torch(bag, (torch.tensor([1, 2]), torch.tensor([0])))
    table, indices, offsets, out = tk.bind(torch.tensor([4, 5, 6]), torch.tensor([0, 1]))
    assert table is not None and table.shape == (10, 2) and table.dtype == np.float32
    assert indices.tolist() == [4, 5, 6] and indices.dtype == np.int64
    assert offsets.tolist() == [0, 1, 3] and offsets.dtype == np.int64
    assert out.shape == (2, 2) and not out.any()


@pytest.mark.parametrize("make, message", [
    (lambda: (torch.nn.EmbeddingBag(4, 2, max_norm=1.0), (torch.tensor([1]), torch.tensor([0]))),
     "unsupported nn.EmbeddingBag(max_norm=...): it renormalizes the weight in place"),
    (lambda: (torch.nn.EmbeddingBag(4, 2, dtype=torch.float16), (torch.tensor([1]), torch.tensor([0]))),
     "unsupported embedding weight dtype torch.float16 (float32 and float64 are)"),
    (lambda: (lambda i, o, w=torch.ones(4, 2): torch.relu(torch.nn.functional.embedding_bag(i, w, o)),
              (torch.tensor([1]), torch.tensor([0]))),
     "unsupported PyTorch operation aten.relu.default (the frontend compiles one embedding_bag "
     "per function)"),
])
def test_unsupported_torch_programs(make, message):
    fn, inputs = make()
    with pytest.raises(CompileError) as info:
        compile_torch(fn, inputs)
    assert str(info.value) == message
