"""PyTorch frontend: op discovery, the generated SCF, argument binding and its validation."""

from __future__ import annotations

import itertools

import numpy as np
import pytest
import torch
import torch.nn.functional as F

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


@pytest.mark.parametrize("opt_level", [0, 3])
@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
def test_per_sample_weights_with_padding_idx_bit_for_bit(opt_level, dtype):
    """With padding_idx PyTorch's CPU kernel (no FBGEMM) multiplies, then adds (two roundings)
    where without it float32 is one FMA: the SCF follows it (was an FMA: 1-ulp differences)."""
    from tb.seeds import fresh_seed
    from sw.api import compile_torch as api_compile
    gen = torch.Generator().manual_seed(fresh_seed("psw_padding"))
    bag = torch.nn.EmbeddingBag(50, 16, mode="sum", padding_idx=3, dtype=dtype)
    with torch.no_grad():
        bag.weight.copy_(torch.randn(50, 16, generator=gen, dtype=dtype))
        bag.weight[3] = 0
    inp = torch.randint(0, 50, (60,), generator=gen)
    inp[::4] = 3
    offsets = torch.tensor([0, 7, 7, 20, 33, 59])
    weights = torch.randn(60, generator=gen, dtype=dtype)
    op = api_compile(bag, (inp, offsets, weights), opt_level=opt_level)
    scf = op._parts[0].scf
    assert ("math.fma" in scf) is False and "arith.mulf %w, %v" in scf
    assert torch.equal(op(inp, offsets, weights), bag(inp, offsets, weights).detach())


@pytest.mark.parametrize("dtype, strided", [(torch.float32, "per_sample_weights"),
                                             (torch.float32, "weight"), (torch.bfloat16, "weight")])
def test_strides_that_take_pytorchs_kernel_without_fbgemm_bit_for_bit(dtype, strided):
    """PyTorch's CPU bag takes FBGEMM only for a unit-stride weight row and per_sample_weights;
    otherwise its own kernel multiplies, then adds (float32 weights) and rounds bfloat16 ties to
    even. A call with such strides runs the bag compiled that way (it ran the FBGEMM form:
    1-ulp differences); a contiguous call still runs the FBGEMM form."""
    from tb.seeds import fresh_seed
    from sw.api import compile_torch as api_compile
    gen = torch.Generator().manual_seed(fresh_seed("bag_strides"))

    def fn(i, o, w, p):
        return torch.nn.functional.embedding_bag(i, w, o, mode="sum", per_sample_weights=p)

    n = 800
    inp, offsets = torch.randint(0, 50, (n,), generator=gen), torch.arange(0, n, 8)
    weight = torch.randn(50, 16, generator=gen).to(dtype)
    psw = torch.randn(n, 2, generator=gen).to(dtype)
    if dtype == torch.bfloat16:     # exact products: sums that end on a bfloat16 tie, often
        psw = (2.0 ** torch.randint(-2, 3, (n, 2), generator=gen)).to(dtype)
    contiguous = (inp, offsets, weight, psw[:, 0].contiguous())
    call = (inp, offsets, weight.t().contiguous().t() if strided == "weight" else weight,
            psw[:, 0] if strided == "per_sample_weights" else psw[:, 0].contiguous())
    assert not torch.equal(fn(*call), fn(*contiguous))   # the inputs tell the two kernels apart
    op = api_compile(fn, contiguous)
    assert torch.equal(op(*call), fn(*call))
    assert torch.equal(op(*contiguous), fn(*contiguous))


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


def test_2d_example_is_traced():
    bag = torch.nn.EmbeddingBag(10, 3)
    fixed = torch.tensor([[1, 2], [3, 4]])
    tk = compile_torch(bag, (fixed,))
    assert tk.traced_with == "torch.export"
    assert torch.equal(run(tk, fixed), bag(fixed).detach())
    other = torch.tensor([[1, 2, 9], [3, 4, 4], [0, 0, 0]])                # another batch and length
    assert torch.equal(run(tk, other), bag(other).detach())


@pytest.mark.parametrize("mode", ["sum", "mean", "max"])
@pytest.mark.parametrize("weighted", [False, True])
def test_f_embedding_bag_with_2d_input(mode, weighted):
    """Issue 8 item 7 / issue 12: F.embedding_bag reshapes a 2-D input and makes offsets with
    aten.arange before the aten op (was "unsupported PyTorch operation aten.arange")."""
    if weighted and mode != "sum":
        return
    torch.manual_seed(12)
    weight = torch.randn(20, 6)
    if weighted:
        def fn(i, p):
            return torch.nn.functional.embedding_bag(i, weight, mode=mode, per_sample_weights=p)
    else:
        def fn(i):
            return torch.nn.functional.embedding_bag(i, weight, mode=mode)
    i = torch.randint(0, 20, (4, 5))
    ins = (i, torch.randn(4, 5)) if weighted else (i,)
    tk = compile_torch(fn, ins)
    assert torch.equal(run(tk, *ins), fn(*ins))
    i2 = torch.randint(0, 20, (7, 3))
    ins2 = (i2, torch.randn(7, 3)) if weighted else (i2,)
    assert torch.equal(run(tk, *ins2), fn(*ins2))


def _renorm_cases():
    w = torch.randn(12, 5) * 2
    return {
        "nn.Embedding": (lambda: torch.nn.Embedding(12, 5, max_norm=1.5, _weight=w.clone()),
                         (torch.tensor([[1, 3, 3], [11, 0, 3]]),)),
        "nn.EmbeddingBag": (lambda: torch.nn.EmbeddingBag(12, 5, max_norm=1.0, norm_type=1.0, mode="mean",
                                                          _weight=w.clone()),
                            (torch.tensor([1, 3, 3, 11, 0]), torch.tensor([0, 2]))),
        "nn.EmbeddingBag 2-D": (lambda: torch.nn.EmbeddingBag(12, 5, max_norm=2.0, _weight=w.clone()),
                                (torch.tensor([[1, 3], [3, 7]]),)),
    }


@pytest.mark.parametrize("case", list(_renorm_cases()))
def test_max_norm_renormalises_the_weight_in_place_like_pytorch(case):
    """max_norm: the looked-up rows of the weight are renormalised in place (torch.embedding_renorm_,
    on the host), then looked up on the access unit; output and weight equal PyTorch's."""
    make, ins = _renorm_cases()[case]
    ours, ref = make(), make()
    tk = compile_torch(ours, ins)
    assert torch.equal(ours.weight, make().weight)           # compiling does not renormalise
    got, want = run(tk, *ins), ref(*ins).detach()
    assert torch.equal(got, want)
    assert torch.equal(ours.weight, ref.weight)               # the same rows renormalised in place
    assert not torch.equal(ours.weight, make().weight)


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


@pytest.mark.parametrize("offsets, message", [
    (torch.tensor([0.0, 1.7]), "offsets must be an integer tensor, not float32"),
    (torch.tensor([[0, 1]]), "offsets must be 1-D, not 2-D (shape (1, 2))"),
])
def test_bind_refuses_offsets_pytorch_refuses(offsets, message):
    """Float offsets were truncated (1.7 read as 1: a silent wrong bag) and 2-D offsets
    flattened; PyTorch refuses both."""
    bag = torch.nn.EmbeddingBag(10, 2)
    inp = torch.tensor([1, 2, 3])
    with pytest.raises((RuntimeError, ValueError)):
        bag(inp, offsets)
    tk = compile_torch(bag, (inp, torch.tensor([0, 1])))
    with pytest.raises(ValueError) as info:
        tk.bind(inp, offsets)
    assert str(info.value) == message


@pytest.mark.parametrize("mode", ["sum", "mean", "max"])
def test_include_last_offset_short_of_the_input_is_refused(mode):
    """PyTorch runs embedding_bag(include_last_offset=True) with offsets[-1] < len(input), but its
    modes disagree on the ids after offsets[-1] (this test shows it: a PyTorch upgrade that makes
    them agree fails it, and the refusal can be revisited)."""
    torch.manual_seed(0)
    bag = torch.nn.EmbeddingBag(10, 3, mode=mode, include_last_offset=True)
    inp, short, full = torch.tensor([1, 2, 3, 4]), torch.tensor([0, 2, 3]), torch.tensor([0, 2, 4])
    tk = compile_torch(bag, (inp, full))
    with pytest.raises(ValueError, match=r"offsets\[-1\] must be the input's length 4 with "
                                         r"include_last_offset=True, not 3"):
        tk.bind(inp, short)
    weight = bag.weight.detach()
    last_bag = bag(inp, short).detach()[1]
    if mode == "sum":
        assert torch.equal(last_bag, weight[3])                 # id 4 left out
    elif mode == "mean":
        assert torch.equal(last_bag, weight[3] / 2)             # id 4 left out, yet counted
    else:
        assert torch.equal(last_bag, torch.maximum(weight[3], weight[4]))   # id 4 taken
    assert torch.equal(run(tk, inp, full), bag(inp, full).detach())


def test_bind_converts_pytorch_offsets_to_nbags_plus_one():
    bag = torch.nn.EmbeddingBag(10, 2)
    tk = compile_torch(bag, (torch.tensor([1, 2]), torch.tensor([0])))
    table, indices, offsets, out = tk.bind(torch.tensor([4, 5, 6]), torch.tensor([0, 1]))
    assert table is not None and table.shape == (10, 2) and table.dtype == np.float32
    assert indices.tolist() == [4, 5, 6] and indices.dtype == np.int64
    assert offsets.tolist() == [0, 1, 3] and offsets.dtype == np.int64
    assert out.shape == (2, 2) and not out.any()


@pytest.mark.parametrize("make, message", [
    (lambda: (lambda i, o, w=torch.ones(4, 2, dtype=torch.float8_e4m3fn): torch.nn.functional.embedding_bag(i, w, o),
              (torch.tensor([1]), torch.tensor([0]))),
     "unsupported embedding weight dtype torch.float8_e4m3fn (float32, float64, float16 and bfloat16 are)"),
    (lambda: (lambda i, o, w=torch.ones(4, 2): torch.sigmoid(torch.nn.functional.embedding_bag(i, w, o)),
              (torch.tensor([1]), torch.tensor([0]))),
     "unsupported PyTorch operation aten.sigmoid.default (supported: embedding_bag (then relu, negation, "
     "* / + - by a number, a number -), embedding (then .sum(1)/.mean(1)), index_select/x[src] + "
     "index_add/scatter_reduce, "
     "sparse CSR @ dense)"),
    (lambda: (lambda i, o, w=torch.ones(4, 2, dtype=torch.float16): torch.nn.functional.embedding_bag(i, w, o) * 2,
              (torch.tensor([1]), torch.tensor([0]))),
     "unsupported mul after a float16 embedding_bag (fused element-wise ops and casts: float32 and float64)"),
    (lambda: (lambda x, s, d: torch.zeros(3, 2).scatter_reduce(0, d[:, None].expand(-1, 2), x[s], "prod"),
              (torch.ones(4, 2), torch.tensor([0, 1]), torch.tensor([2, 2]))),
     "unsupported scatter_reduce reduce='prod' (sum, mean, amax, amin are)"),
    (lambda: (lambda x, s, d: torch.zeros(3, 2).index_add(0, d, x.index_select(0, s), alpha=2.0),
              (torch.ones(4, 2), torch.tensor([0, 1]), torch.tensor([2, 2]))),
     "unsupported index_add alpha=2.0 (alpha=1 is)"),
    (lambda: (lambda i, w=torch.ones(4, 2, dtype=torch.complex64): torch.nn.functional.embedding(i, w),
              (torch.tensor([1]),)),
     "unsupported embedding weight dtype torch.complex64 (float32, float64, float16, bfloat16, int32 and "
     "int64 are)"),
    (lambda: (lambda i, o, w=torch.ones(4, 2): torch.cat([torch.nn.functional.embedding_bag(i, w, o)] * 2),
              (torch.tensor([1]), torch.tensor([0]))),
     "unsupported torch.cat of embedding bags along dim=0 (dim 1 is)"),
])
def test_unsupported_torch_programs(make, message):
    """Each unsupported graph is a CompileError naming the op or option (full message)."""
    fn, inputs = make()
    with pytest.raises(CompileError) as info:
        compile_torch(fn, inputs)
    assert str(info.value) == message


# ------------------------------------------------------------------------------------------------
# nn.Embedding, segment reductions (GNN aggregation), sparse CSR x dense, several bags
# ------------------------------------------------------------------------------------------------

@pytest.mark.parametrize("dtype", [torch.float32, torch.float64, torch.int32, torch.int64])
def test_embedding_matches_pytorch(dtype):
    torch.manual_seed(3)
    weight = (torch.randn(20, 5) * 100).to(dtype)
    weight[4, 0] = -0.0 if dtype.is_floating_point else weight[4, 0]     # a copy keeps -0.0

    def fn(i):
        return torch.nn.functional.embedding(i, weight)

    i = torch.tensor([[1, 4, 19], [0, 0, 7]])
    tk = compile_torch(fn, (i,))
    assert tk.kind == "embedding"
    got = run(tk, i)
    assert got.shape == (2, 3, 5) and torch.equal(got, fn(i))
    if dtype.is_floating_point:
        assert torch.signbit(got[0, 1, 0])
    other = torch.tensor([3, 3, 2, 1])                                      # another shape
    assert torch.equal(run(tk, other), fn(other))
    with pytest.raises(ValueError, match=r"input\[1\] = 20 is out of range for 20 rows"):
        tk.bind(torch.tensor([0, 20]))


def test_nn_embedding_module():
    torch.manual_seed(4)
    emb = torch.nn.Embedding(30, 4, padding_idx=0)         # padding_idx only affects the gradient
    i = torch.tensor([0, 29, 3])
    tk = compile_torch(emb, (i,))
    assert torch.equal(run(tk, i), emb(i).detach())


def _segment_fns(n_out, dim):
    fns = {"index_add_": lambda x, s, d: torch.zeros(n_out, dim, dtype=x.dtype).index_add_(0, d, x.index_select(0, s)),
           "index_add x[src]": lambda x, s, d: torch.zeros(n_out, dim, dtype=x.dtype).index_add(0, d, x[s])}
    for reduce in ("sum", "mean", "amax", "amin"):
        for include_self in (True, False):
            fns[f"scatter_reduce {reduce} include_self={include_self}"] = (
                lambda r, inc: lambda x, s, d: torch.zeros(n_out, dim, dtype=x.dtype).scatter_reduce(
                    0, d[:, None].expand(-1, dim), x.index_select(0, s), reduce=r, include_self=inc))(
                        reduce, include_self)
    return fns


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64, torch.int32, torch.int64])
@pytest.mark.parametrize("name", list(_segment_fns(1, 1)))
def test_gather_scatter_reduce_matches_pytorch_bit_for_bit(dtype, name):
    """GNN aggregation: exact for every dtype (the accumulation is PyTorch's: edges in order)."""
    torch.manual_seed(5)
    n, dim, e, n_out = 40, 6, 300, 25
    x = (torch.randn(n, dim) * 100).to(dtype)
    src, dst = torch.randint(0, n, (e,)), torch.randint(0, n_out - 3, (e,))   # 3 rows get nothing
    fn = _segment_fns(n_out, dim)[name]
    tk = compile_torch(fn, (x, src, dst))
    assert tk.kind == "segment"
    assert torch.equal(run(tk, x, src, dst), fn(x, src, dst))


def test_index_add_into_an_input_tensor():
    torch.manual_seed(6)
    x, base = torch.randn(10, 3), torch.randn(4, 3)
    src, dst = torch.tensor([0, 9, 9, 2]), torch.tensor([3, 3, 0, 1])

    def fn(x, s, d, b):
        return b.index_add(0, d, x[s])

    tk = compile_torch(fn, (x, src, dst, base))
    assert torch.equal(run(tk, x, src, dst, base), fn(x, src, dst, base))
    with pytest.raises(ValueError, match=r"dst\[0\] = 4 is out of range for 4 rows"):
        tk.bind(x, src, torch.tensor([4, 0, 0, 0]), base)


_OUTPUTS = {"zeros_like(x)": lambda x: torch.zeros_like(x),
            "zeros(x.shape[0], d)": lambda x: torch.zeros(x.shape[0], x.shape[1]),
            "x.new_zeros(x.shape)": lambda x: x.new_zeros(x.shape),
            "zeros(10, d)": lambda x: torch.zeros(10, 4)}


@pytest.mark.parametrize("output", list(_OUTPUTS))
@pytest.mark.parametrize("reduce", ["index_add", "scatter_reduce sum", "scatter_reduce amax"])
def test_segment_output_rows_follow_the_input_they_come_from(reduce, output):
    """The output's rows at each call: x's when it is ``torch.zeros_like(x)``,
    ``torch.zeros(x.shape[0], d)`` or ``x.new_zeros(x.shape)``, 10 when the function says 10.
    torch.export writes all but the first as constants: the op kept the traced rows, so a smaller
    x returned the traced shape and a larger one refused valid dst."""
    def fn(x, s, d):
        out = _OUTPUTS[output](x)
        if reduce == "index_add":
            return out.index_add(0, d, x[s])
        return out.scatter_reduce(0, d[:, None].expand(-1, x.shape[1]), x[s], reduce.split()[1])

    gen = torch.Generator().manual_seed(11)

    def graph(n, e):
        return torch.randn(n, 4, generator=gen), torch.randint(0, n, (e,), generator=gen), \
            torch.randint(0, min(n, 10), (e,), generator=gen)

    tk = compile_torch(fn, graph(10, 30))
    for n, e in ((10, 30), (6, 12), (14, 40)):
        args = graph(n, e)
        got, want = run(tk, *args), fn(*args)
        assert got.shape == want.shape and torch.equal(got, want)


@pytest.mark.parametrize("dtype", [torch.float32, torch.int64])
@pytest.mark.parametrize("reduce", ["sum", "mean", "amax"])
def test_scatter_reduce_without_self_into_an_input(reduce, dtype):
    """``include_self=False`` into an input tensor: a row that gets contributions starts from
    them alone (PyTorch fills the rows ``dst`` names with 0, or the extremum's identity), the
    others keep ``self``. The sum and the mean added ``self`` in (only a zeros output, where
    that changes nothing, was tested)."""
    if reduce == "mean" and not dtype.is_floating_point:
        dtype = torch.float64
    gen = torch.Generator().manual_seed(12)
    x = (torch.randn(8, 3, generator=gen) * 100).round().to(dtype)
    base = (torch.randn(5, 3, generator=gen) * 100).round().to(dtype)
    src, dst = torch.tensor([0, 7, 3, 3, 1]), torch.tensor([4, 4, 0, 2, 4])     # rows 1, 3 get none

    def fn(x, s, d, b):
        return b.scatter_reduce(0, d[:, None].expand(-1, 3), x[s], reduce, include_self=False)

    tk = compile_torch(fn, (x, src, dst, base))
    got, want = run(tk, x, src, dst, base), fn(x, src, dst, base)
    assert not torch.equal(want, base.scatter_reduce(0, dst[:, None].expand(-1, 3), x[src], reduce))
    assert torch.equal(got, want)


@pytest.mark.parametrize("op", ["index_add_", "scatter_reduce_"])
def test_a_reduction_in_place_on_an_input_updates_it(op):
    """``b.index_add_(...)``/``b.scatter_reduce_(...)`` on an input ``b``: PyTorch writes into
    ``b`` and returns it; the op returned the right values but left ``b`` as it was (and
    ``scatter_reduce_`` was refused)."""
    from sw.api import compile_torch as api_compile
    x, src, dst = torch.randn(6, 2), torch.tensor([0, 5, 2]), torch.tensor([1, 1, 0])

    def fn(x, s, d, b):
        if op == "index_add_":
            return b.index_add_(0, d, x[s])
        return b.scatter_reduce_(0, d[:, None].expand(-1, 2), x[s], "sum")

    base = torch.randn(3, 2)
    compiled = api_compile(fn, (x, src, dst, base.clone()))
    ours, theirs = base.clone(), base.clone()
    got, want = compiled(x, src, dst, ours), fn(x, src, dst, theirs)
    assert torch.equal(got, want) and torch.equal(ours, theirs) and not torch.equal(ours, base)
    assert got is ours                                      # as PyTorch returns self


def test_segment_output_rows_of_another_size_expression_are_refused():
    with pytest.raises(CompileError, match=r"unsupported output rows .* \+ 1: an expression of the inputs' sizes"):
        compile_torch(lambda x, s, d: torch.zeros(x.shape[0] + 1, 4).index_add(0, d, x[s]),
                      (torch.randn(10, 4), torch.tensor([1, 2]), torch.tensor([0, 3])))


def test_sparse_csr_times_dense_refuses_what_pytorch_refuses():
    """A sparse matrix of another dtype than x (PyTorch: "expected scalar type"), and an x that
    is not the traced 2-D dtype, are ValueErrors naming them (the values were cast to x's dtype,
    and a 1-D x an IndexError)."""
    a = (torch.randn(5, 7).relu()).to_sparse_csr()
    x = torch.randn(7, 3)
    tk = compile_torch(lambda a, x: a @ x, (a, x))
    with pytest.raises(RuntimeError):
        a.to_dense().double().to_sparse_csr() @ x             # the reference refuses it
    with pytest.raises(ValueError, match=r"sparse matrix must have x's dtype torch.float32, not torch.float64"):
        tk.bind(a.to_dense().double().to_sparse_csr(), x)
    with pytest.raises(ValueError, match=r"x must be a 2-D torch.float32 tensor \(as traced\), not 2-D float64"):
        tk.bind(a, x.double())
    with pytest.raises(ValueError, match=r"not 1-D float32"):
        tk.bind(a, torch.randn(7))


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
@pytest.mark.parametrize("call", ["matmul", "sparse.mm"])
def test_sparse_csr_times_dense_matches_the_fma_reference_and_pytorch(dtype, call):
    """The kernel accumulates each row in CSR order with one fused multiply-add per nonzero: bit
    for bit against that sequential reference (a true FMA from exact rationals), and within the
    summation bound of PyTorch, whose CPU kernel uses the same order but fuses or not depending on
    the processor (it differed on an AVX2 AMD EPYC; issue 8 item 4)."""
    from sw.workloads import csr_fma_sequential, csr_summation_bound
    torch.manual_seed(7)
    dense = torch.randn(30, 40, dtype=dtype).relu() * (torch.rand(30, 40) < 0.2)
    a, x = dense.to_sparse_csr(), torch.randn(40, 6, dtype=dtype)
    fn = (lambda a, x: a @ x) if call == "matmul" else (lambda a, x: torch.sparse.mm(a, x))
    tk = compile_torch(fn, (a, x))
    assert tk.kind == "csr_mm" and "math.fma" in tk.scf
    got = run(tk, a, x)
    csr = (a.crow_indices().numpy(), a.col_indices().numpy(), a.values().numpy())
    if dtype == torch.float32:
        np.testing.assert_array_equal(got.numpy(), csr_fma_sequential(*csr, x.numpy()))
        bound = csr_summation_bound(*csr, x.numpy())
        assert (np.abs(got.numpy().astype(np.float64) - fn(a, x).numpy()) <= bound).all()
    else:   # float64: an exact fma per nonzero (Fraction), the same order
        from fractions import Fraction
        want = np.zeros((30, 6))
        for i in range(30):
            for j in range(csr[0][i], csr[0][i + 1]):
                for k in range(6):
                    want[i, k] = float(Fraction(float(csr[2][j])) * Fraction(float(x[csr[1][j], k]))
                                       + Fraction(want[i, k]))
        np.testing.assert_array_equal(got.numpy(), want)
        np.testing.assert_allclose(got.numpy(), fn(a, x).numpy(), rtol=1e-12, atol=1e-12)


class _Dlrm(torch.nn.Module):
    """DLRM's sparse part: one EmbeddingBag per categorical feature, outputs concatenated."""

    def __init__(self, rows=(10, 30, 7), dim=4, mode="sum", cat=True):
        super().__init__()
        self.tables = torch.nn.ModuleList(torch.nn.EmbeddingBag(n, dim, mode=mode) for n in rows)
        self.cat = cat

    def forward(self, i0, o0, i1, o1, i2, o2):
        outs = [t(i, o) for t, i, o in zip(self.tables, (i0, i1, i2), (o0, o1, o2))]
        return torch.cat(outs, dim=1) if self.cat else tuple(outs)


@pytest.mark.parametrize("mode", ["sum", "mean", "max"])
@pytest.mark.parametrize("cat", [True, False])
def test_several_embedding_bags_compile_into_one_program(mode, cat):
    torch.manual_seed(8)
    m = _Dlrm(mode=mode, cat=cat)
    ins = (torch.tensor([1, 2, 9]), torch.tensor([0, 1]), torch.tensor([29, 0, 3, 3]),
           torch.tensor([0, 0]), torch.tensor([6, 5]), torch.tensor([0, 1]))
    tk = compile_torch(m, ins)
    assert tk.kind == "multi_bag" and tk.spec["tables"] == 3
    assert len(tk.kernel.program.layers) == 3                 # one loop nest for all tables
    got, want = run(tk, *ins), m(*ins)
    if cat:
        assert torch.equal(got, want.detach())
    else:
        assert all(torch.equal(g, w.detach()) for g, w in zip(got, want))
    bad = list(ins)
    bad[2] = torch.tensor([30, 0, 0, 0])
    with pytest.raises(ValueError, match="input\\[0\\] = 30 is out of range for an embedding table of 30 rows"):
        tk.bind(*bad)


def test_opt_level_is_passed_to_the_compiler():
    import inspect
    from sw.compiler import compile_mlir
    bag = torch.nn.EmbeddingBag(10, 4)
    inp = (torch.tensor([1, 2]), torch.tensor([0]))
    if "opt_level" not in inspect.signature(compile_mlir).parameters:
        with pytest.raises(CompileError, match="opt_level 2 is not available yet"):
            compile_torch(bag, inp, opt_level=2)
        return
    from sw.runtime.isa import Limits
    vector = Limits.from_file("configs/tmu_vector.json")
    o0 = compile_torch(bag, inp, opt_level=0)
    o3 = compile_torch(bag, inp, opt_level=3, limits=vector)
    assert o3.kernel.program != o0.kernel.program
    r0 = run_kernel(o0.kernel, o0.bind(*inp), "golden")
    r3 = run_kernel(o3.kernel, o3.bind(*inp), "golden", limits=vector)
    assert torch.equal(o3.unbind(r3.results), o0.unbind(r0.results))
    assert len(r3.access.data_tokens) < len(r0.access.data_tokens)
    with pytest.raises(CompileError, match="ISA version"):     # -O3 needs the vector extension
        compile_torch(bag, inp, opt_level=3, limits=Limits())     # Limits(): the ISA-v0 unit
    with pytest.raises(ValueError, match="7"):
        compile_torch(bag, inp, opt_level=7)


# ------------------------------------------------------------------------------------------------
# Issue 8 item 3: a compiled op reads the module's current parameters at each call
# ------------------------------------------------------------------------------------------------

def _replace_parameter(m, name, how):
    """Give ``m.<name>`` new values: a new Parameter, ``.data =``, or in place."""
    old = getattr(m, name)
    new = torch.randn_like(old) * 3 + 1
    if how == "parameter":
        setattr(m, name, torch.nn.Parameter(new))
    elif how == "data":
        old.data = new
    else:
        with torch.no_grad():
            old.copy_(new)


@pytest.mark.parametrize("how", ["parameter", "data", "in place"])
@pytest.mark.parametrize("case", ["bag", "bag 2-D (attributes)", "embedding", "several bags"])
def test_compiled_op_reads_the_current_parameters(case, how):
    torch.manual_seed(11)
    if case == "bag":
        m, ins, holders = torch.nn.EmbeddingBag(10, 5, mode="mean"), (INP, torch.tensor([0, 2, 2, 5])), None
    elif case == "bag 2-D (attributes)":
        m, ins, holders = torch.nn.EmbeddingBag(10, 5), (torch.tensor([[1, 3], [4, 9]]),), None
    elif case == "embedding":
        m, ins, holders = torch.nn.Embedding(10, 5), (torch.tensor([[1, 3], [4, 9]]),), None
    else:
        m = _Dlrm()
        ins = (torch.tensor([1, 2, 9]), torch.tensor([0, 1]), torch.tensor([29, 0, 3, 3]),
               torch.tensor([0, 0]), torch.tensor([6, 5]), torch.tensor([0, 1]))
        holders = list(m.tables)
    tk = compile_torch(m, ins)
    assert torch.equal(run(tk, *ins), m(*ins).detach())
    for h in holders or [m]:
        _replace_parameter(h, "weight", how)
    assert torch.equal(run(tk, *ins), m(*ins).detach())


@pytest.mark.parametrize("how", ["data", "in place"])
def test_compiled_function_reads_its_captured_tensor_at_each_call(how):
    weight = torch.randn(12, 4)

    def fn(indices, offsets):
        return torch.nn.functional.embedding_bag(indices, weight, offsets, mode="sum")

    inp, offsets = torch.tensor([0, 11, 5, 5]), torch.tensor([0, 2, 3])
    tk = compile_torch(fn, (inp, offsets))
    if how == "data":
        weight.data = torch.randn(12, 4)
    else:
        weight.mul_(2)
    assert torch.equal(run(tk, inp, offsets), fn(inp, offsets))


@pytest.mark.parametrize("opt_level", [0, 3])
def test_compiled_op_gives_the_dlc_module_of_each_program(opt_level):
    """``CompiledOp.dlc_modules``: one DLC module per program, recompiled from its SCF to the
    same access program (a module of two bags of different modes compiles into two programs)."""
    from sw.api import compile_torch
    from xdsl.dialects.builtin import ModuleOp
    bags = torch.nn.ModuleDict({"a": torch.nn.EmbeddingBag(10, 4, mode="sum"),
                                "b": torch.nn.EmbeddingBag(12, 4, mode="max")})

    class Two(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.bags = bags

        def forward(self, i, o, j, p):
            return self.bags["a"](i, o), self.bags["b"](j, p)

    inputs = (torch.tensor([1, 2, 3]), torch.tensor([0, 1]), torch.tensor([4, 5]), torch.tensor([0, 1]))
    op = compile_torch(Two(), inputs, opt_level=opt_level)
    dlcs = op.dlc_modules()
    assert len(dlcs) == len(op.kernels) == 2
    assert all(isinstance(d, ModuleOp) for d in dlcs) and op.dlc_modules() is dlcs


def test_compiled_op_refuses_inputs_it_would_ignore():
    """An op compiled without per_sample_weights ignored a third input or a keyword one and
    returned the unweighted sums; now a TypeError names what would be ignored. The weighted op
    still needs its weights (ValueError)."""
    from sw.api import compile_torch as api_compile
    bag = torch.nn.EmbeddingBag(10, 4, mode="sum")
    inp, offsets, weights = torch.tensor([1, 2, 2]), torch.tensor([0, 1]), torch.tensor([2., 3., 4.])
    op = api_compile(bag, (inp, offsets))
    with pytest.raises(TypeError, match=r"compiled with 2 example input\(s\) and called with 3"):
        op(inp, offsets, weights)
    with pytest.raises(TypeError, match=r"'per_sample_weights' is not a run option"):
        op(inp, offsets, per_sample_weights=weights)
    weighted = api_compile(bag, (inp, offsets, weights))
    assert torch.equal(weighted(inp, offsets, weights), bag(inp, offsets, weights).detach())
    with pytest.raises(ValueError, match="per_sample_weights must be given"):
        weighted(inp, offsets)
    from sw.api import compile_jagged
    from sw.compiler.frontends.torch_jagged import Jagged
    jagged = Jagged(["a"], torch.tensor([1, 2]), torch.tensor([1, 1]))
    jop = compile_jagged({"a": bag}, jagged)
    with pytest.raises(TypeError, match=r"compiled with 1 example input\(s\) and called with 2"):
        jop(jagged, weights)


@pytest.mark.parametrize("opt_level", [0, 1, 3])
@pytest.mark.parametrize("dtype", [torch.float32, torch.float64, torch.float16, torch.bfloat16])
@pytest.mark.parametrize("padding_idx", [None, 4])
def test_max_takes_the_first_entry_then_greater_ones_as_pytorch(opt_level, dtype, padding_idx):
    """PyTorch's CPU max bag takes a bag's first (non-padding) entry, then an entry only when it
    is greater: a NaN counts only as the first entry, and of equal zeros the first stays. The
    bag was arith.maximumf, which propagates every NaN and makes +0.0 the larger zero."""
    from tb.seeds import fresh_seed
    from sw.api import compile_torch as api_compile
    gen = torch.Generator().manual_seed(fresh_seed("max_nan_zeros"))
    nan, inf = float("nan"), float("inf")
    special = torch.tensor([nan, -nan, 0.0, -0.0, inf, -inf, 1.0, -1.0])
    weight = special[torch.randint(0, 8, (5, 16), generator=gen)].to(dtype)
    weight[:, 0] = torch.tensor([0.0, -0.0, nan, 1.0, -0.0])     # the same cases every run
    inp = torch.randint(0, 5, (200,), generator=gen)
    inp[:6] = torch.tensor([1, 0, 0, 1, 2, 3])
    offsets = torch.cat([torch.tensor([0, 2, 4]), torch.sort(torch.randint(6, 200, (30,), generator=gen))[0]])
    bag = torch.nn.EmbeddingBag(5, 16, mode="max", padding_idx=padding_idx, _weight=weight.clone())
    op = api_compile(bag, (inp, offsets), opt_level=opt_level)
    got, want = op(inp, offsets), bag(inp, offsets).detach()
    bits = torch.int16 if dtype in (torch.float16, torch.bfloat16) else (
        torch.int32 if dtype == torch.float32 else torch.int64)
    assert torch.equal(got.view(bits), want.view(bits))
    assert torch.signbit(want[0, 0]) and not torch.signbit(want[1, 0])   # the first zero stays


@pytest.mark.parametrize("opt_level", [0, 1, 3])
@pytest.mark.parametrize("reduce", ["amax", "amin"])
@pytest.mark.parametrize("include_self", [True, False])
def test_scatter_reduce_extrema_of_nan_and_signed_zeros_bit_for_bit(opt_level, reduce, include_self):
    """PyTorch's scatter_reduce amax/amin takes a contribution when it is NaN or beyond the row's
    value (of equal zeros the row's stays); the kernel was arith.maximumf/minimumf."""
    from tb.seeds import fresh_seed
    from sw.api import compile_torch as api_compile
    gen = torch.Generator().manual_seed(fresh_seed("scatter_extrema"))
    special = torch.tensor([float("nan"), 0.0, -0.0, float("inf"), float("-inf"), 1.0, -1.0])
    x = special[torch.randint(0, 7, (6, 8), generator=gen)]
    self_ = special[torch.randint(0, 7, (5, 8), generator=gen)]
    # rows 0 and 1 (no random contribution): self, x[0], x[1] and self, x[1], x[0] in column 0,
    # a lesser zero (amax) or greater zero (amin) first: PyTorch keeps it, maximumf would not
    first, other = (-0.0, 0.0) if reduce == "amax" else (0.0, -0.0)
    x[:2, 0] = torch.tensor([other, first])
    self_[:2, 0] = first

    def fn(src, dst):
        return self_.scatter_reduce(0, dst[:, None].expand(-1, 8), x.index_select(0, src),
                                    reduce=reduce, include_self=include_self)

    src = torch.cat([torch.tensor([0, 1, 1, 0]), torch.randint(0, 6, (60,), generator=gen)])
    dst = torch.cat([torch.tensor([0, 0, 1, 1]), torch.randint(2, 5, (60,), generator=gen)])
    op = api_compile(fn, (src, dst), opt_level=opt_level)
    assert torch.equal(op(src, dst).view(torch.int32), fn(src, dst).view(torch.int32))


def test_max_tells_the_first_entry_without_a_callback_per_lookup():
    """The max bag counts its entries at column 0 of the row loop: at -O3 it sends the core as
    many control tokens as the sum bag of the same shape (one per bag and DONE), not one more per
    lookup (a count in the lookup loop did: 2177 instead of 65 here)."""
    from sw.api import compile_torch as api_compile
    inp, offsets = torch.randint(0, 100, (2048,)), torch.arange(0, 2048, 32)
    tokens = {}
    for mode in ("sum", "max"):
        bag = torch.nn.EmbeddingBag(100, 64, mode=mode)
        op = api_compile(bag, (inp, offsets), opt_level=3)
        assert torch.equal(op(inp, offsets), bag(inp, offsets).detach())
        tokens[mode] = len(op.last_run.access.control_tokens)
    assert tokens["max"] == tokens["sum"] == 65


def test_a_python_number_input_other_than_the_traced_one_is_refused():
    """torch.export bakes a Python number of the example inputs into the graph: traced with
    ``n = 7`` the op returned 7 rows for ``n = 9``, traced with ``scale = 2.0`` it scaled by 2.0
    for ``scale = 3.0``. Now a ValueError naming the input; the traced number still runs."""
    from sw.api import compile_torch as api_compile
    x, src, dst = torch.randn(10, 4), torch.randint(0, 10, (20,)), torch.randint(0, 5, (20,))

    def segment(x, s, d, n):
        return torch.zeros(n, 4).index_add(0, d, x[s])

    op = api_compile(segment, (x, src, dst, 7))
    assert torch.equal(op(x, src, dst, 7), segment(x, src, dst, 7))
    with pytest.raises(ValueError, match=r"input 3 is 9, but the op was traced with 7"):
        op(x, src, dst, 9)
    bag = torch.nn.EmbeddingBag(10, 4, mode="sum")

    def scaled(i, o, scale):
        return bag(i, o) * scale

    i, o = torch.tensor([1, 2, 3]), torch.tensor([0, 1])
    op = api_compile(scaled, (i, o, 2.0))
    assert torch.equal(op(i, o, 2.0), scaled(i, o, 2.0).detach())
    with pytest.raises(ValueError, match=r"input 2 is 3.0, but the op was traced with 2.0"):
        op(i, o, 3.0)
    assert torch.equal(op(i, o, 2), scaled(i, o, 2).detach())      # the same number, an int
    with pytest.raises(ValueError, match=r"input 2 is True, but the op was traced with 2.0"):
        op(i, o, True)


_INDEX_TYPES = [torch.int8, torch.int16, torch.uint8, torch.int32, torch.int64]


@pytest.mark.parametrize("indices", _INDEX_TYPES)
def test_index_dtypes_are_refused_where_pytorch_refuses_them(indices):
    """PyTorch's index ops take int32 and int64 indices only; its embedding bag promotes a 1-D
    input with its offsets first (int16 with int64 offsets runs, int16 with int16 does not).
    The ops ran any integer type. Every pair, against PyTorch itself: refused (ValueError)
    exactly where PyTorch raises, else the same result."""
    w = torch.randn(10, 4)
    bag = compile_torch(lambda i, o: F.embedding_bag(i, w, o), (torch.tensor([1, 2, 3]), torch.tensor([0, 1])))
    bag2d = compile_torch(lambda i: F.embedding_bag(i, w), (torch.tensor([[1, 2], [3, 4]]),))
    segment = compile_torch(lambda x, s, d: torch.zeros(4, 4).index_add(0, d, x[s]),
                            (w, torch.tensor([1, 2]), torch.tensor([0, 3])))
    calls = [((lambda i, o: F.embedding_bag(i, w, o)), lambda i, o: run(bag, i, o),
              (torch.tensor([1, 2, 3]).to(indices), torch.tensor([0, 1]).to(offsets)))
             for offsets in _INDEX_TYPES]
    calls.append(((lambda i: F.embedding_bag(i, w)), lambda i: run(bag2d, i),
                  (torch.tensor([[1, 2], [3, 4]]).to(indices),)))
    calls.append(((lambda x, s, d: torch.zeros(4, 4).index_add(0, d, x[s])),
                  lambda x, s, d: run(segment, x, s, d),
                  (w, torch.tensor([1, 2]).to(indices), torch.tensor([0, 3]).to(indices))))
    for reference, ours, args in calls:
        try:
            want = reference(*args)
        except (RuntimeError, IndexError):
            with pytest.raises(ValueError, match=r"must (be an int32 or int64 tensor|promote to int32 or int64)"):
                ours(*args)
            continue
        assert torch.equal(ours(*args), want), [a.dtype for a in args]
