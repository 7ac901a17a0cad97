"""PyTorch frontend, the ops after a lookup fused into the callbacks (issue 12): element-wise
``relu`` and arithmetic with a number after an embedding bag (bit-exact: one rounding per op, as
PyTorch), and ``F.embedding(x, w).sum(1)`` / ``.mean(1)`` compiled as fixed-length bags (within a
stated bound: PyTorch's reduction over dim 1 adds in an order of its own for more than 3 rows).
Random data draws a fresh seed each run and prints it (``EMBER_SEED=<seed>`` reproduces)."""

from __future__ import annotations

import os

import numpy as np
import pytest
import torch

from sw.compiler.frontends.torch import compile_torch
from sw.runtime.drivers import run_kernel

F = torch.nn.functional


@pytest.fixture
def rng():
    seed = int(os.environ.get("EMBER_SEED", np.random.SeedSequence().entropy % 2**32))
    print(f"seed {seed}")
    torch.manual_seed(seed)
    return np.random.default_rng(seed)


def run(tk, *inputs):
    return tk.unbind(run_kernel(tk.kernel, tk.bind(*inputs), "golden").results)


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
@pytest.mark.parametrize("mode", ["sum", "mean", "max"])
def test_elementwise_ops_after_a_bag_are_bit_exact(rng, dtype, mode):
    bag = torch.nn.EmbeddingBag(30, 8, mode=mode, dtype=dtype)

    def fn(i, o):
        return torch.relu(bag(i, o) * 0.3 + 1.0) / 3 - 0.1

    i = torch.from_numpy(rng.integers(0, 30, 50))
    o = torch.tensor([0, 4, 4, 20])
    tk = compile_torch(fn, (i, o))
    assert [op for op, _ in tk.spec.post] == ["mul", "add", "relu", "div", "sub"]
    assert "arith.select" in tk.scf and "arith.mulf" in tk.scf
    assert torch.equal(run(tk, i, o), fn(i, o).detach())


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
def test_negation_and_a_number_minus_the_bag_are_bit_exact(dtype):
    """``-bag(...)`` (a sign flip: NaN's sign and -0.0 too) and ``c - bag(...)`` (``aten.rsub``,
    one rounding) were refused as unsupported operations."""
    nan = float("nan")
    w = torch.tensor([[-0.0, 0.0, nan, 1.0 / 3, -2.5, 1e300 if dtype == torch.float64 else 3e38]],
                     dtype=dtype)
    i, o = torch.tensor([0, 0]), torch.tensor([0, 1])         # bags of one row (its exact values)
    bits = torch.int64 if dtype == torch.float64 else torch.int32
    for fn in (lambda i, o: -F.embedding_bag(i, w, o, mode="sum"),
               lambda i, o: 0.1 - F.embedding_bag(i, w, o, mode="sum"),
               lambda i, o: -(2.0 - F.embedding_bag(i, w, o, mode="max") * 3)):
        tk = compile_torch(fn, (i, o))
        got, want = run(tk, i, o), fn(i, o)
        assert torch.equal(got.view(bits), want.view(bits)), (got, want)


def test_relu_keeps_negative_zero_and_nan_like_pytorch():
    w = torch.tensor([[-0.0, float("nan"), -1.0, 2.0]])
    fn = lambda i, o: torch.relu(F.embedding_bag(i, w, o, mode="sum"))      # noqa: E731
    i, o = torch.tensor([0]), torch.tensor([0])
    got, want = run(compile_torch(fn, (i, o)), i, o), fn(i, o)
    assert torch.equal(torch.signbit(got), torch.signbit(want)) and torch.isnan(got[0, 1])
    assert torch.equal(got.nan_to_num(), want.nan_to_num())


@pytest.mark.parametrize("reduce", ["sum", "mean"])
@pytest.mark.parametrize("length", [3, 7, 40])
def test_embedding_then_sum_over_dim_1(rng, reduce, length):
    """Bound: any order of adding L rows differs from another by at most 2 (L - 1) u sum|row|
    (u = 2^-24), divided by L for the mean; up to 3 rows PyTorch adds in order (bit-exact)."""
    w = torch.from_numpy(rng.standard_normal((40, 16)).astype(np.float32))
    fn = (lambda x: F.embedding(x, w).sum(1)) if reduce == "sum" else (lambda x: F.embedding(x, w).mean(1))
    x = torch.from_numpy(rng.integers(0, 40, (7, length)))
    tk = compile_torch(fn, (x,))
    assert tk.spec.mode == reduce
    got, want = run(tk, x), fn(x)
    if length <= 3:
        assert torch.equal(got, want)
    scale = F.embedding(x, w).abs().sum(1) / (length if reduce == "mean" else 1)
    assert bool(((got - want).abs() <= 2 * (length - 1) * 2.0 ** -24 * scale).all())
    x2 = torch.from_numpy(rng.integers(0, 40, (3, length)))
    assert run(tk, x2).shape == (3, 16)


@pytest.mark.parametrize("dtype, reduce, length", [
    (torch.bfloat16, "sum", 2), (torch.bfloat16, "sum", 3), (torch.bfloat16, "mean", 2),
    (torch.bfloat16, "mean", 3), (torch.float16, "mean", 3)])      # float16's sum: no difference
def test_embedding_then_reduce_16_bit_rows_bit_for_bit(rng, dtype, reduce, length):
    """PyTorch's sum(1)/mean(1) of 16-bit rows accumulates in f32, divides the mean in f32 and
    rounds once to nearest even; the folded bag did as PyTorch's embedding_bag does instead
    (bfloat16 ties away from zero, the rounded sum divided in the type): off by an ulp. A weight
    whose rows are not unit-stride changes nothing here (no embedding_bag kernel is involved)."""
    from sw.api import compile_torch as api_compile

    def fn(x, w):
        return F.embedding(x, w).sum(1) if reduce == "sum" else F.embedding(x, w).mean(1)

    w = torch.from_numpy(rng.standard_normal((50, 16)).astype(np.float32)).to(dtype)
    x = torch.from_numpy(rng.integers(0, 50, (300, length)))
    tk = compile_torch(fn, (x, w))
    got, want = run(tk, x, w), fn(x, w)
    assert got.dtype == want.dtype and torch.equal(got, want)
    op, strided = api_compile(fn, (x, w)), w.t().contiguous().t()
    assert torch.equal(op(x, strided), fn(x, strided)) and torch.equal(op(x, w), want)


@pytest.mark.parametrize("reduce", ["sum", "mean"])
@pytest.mark.parametrize("dtype", [torch.float32, torch.float64, torch.float16, torch.bfloat16])
def test_embedding_then_reduce_over_no_columns(reduce, dtype):
    """An x of shape (n, 0): .sum(1) is 0 and .mean(1) NaN (0 / 0) in PyTorch; the mean was 0
    (an empty bag's mean)."""
    w = torch.randn(10, 4).to(dtype)
    fn = (lambda x: F.embedding(x, w).sum(1)) if reduce == "sum" else (lambda x: F.embedding(x, w).mean(1))
    tk = compile_torch(fn, (torch.tensor([[1, 2, 3], [4, 5, 6]]),))
    empty = torch.zeros((3, 0), dtype=torch.long)
    got, want = run(tk, empty), fn(empty)
    assert got.dtype == want.dtype and got.shape == want.shape == (3, 4)
    assert torch.equal(got.isnan(), want.isnan()) and torch.equal(got.nan_to_num(), want.nan_to_num())
    x = torch.tensor([[1, 2], [3, 4]])                  # the next call is a mean again
    assert not run(tk, x).isnan().any()


@pytest.mark.rtl
@pytest.mark.slow
def test_fused_ops_on_rtl(rng):
    from sw.api import compile_torch as api_compile
    bag = torch.nn.EmbeddingBag(30, 16, mode="sum")
    fn = lambda i, o: torch.relu(bag(i, o) * 0.5 - 0.25)                    # noqa: E731
    i, o = torch.from_numpy(rng.integers(0, 30, 40)), torch.tensor([0, 5, 5, 30])
    op = api_compile(fn, (i, o), opt_level=3)
    assert torch.equal(op(i, o, target="rtl"), fn(i, o).detach())


@pytest.mark.parametrize("src, dst, how", [
    (torch.float32, torch.float16, "to"), (torch.float32, torch.float16, "half"),
    (torch.float32, torch.bfloat16, "to"), (torch.float32, torch.float64, "double"),
    (torch.float64, torch.float32, "float")])
@pytest.mark.parametrize("mode", ["sum", "mean", "max"])
@pytest.mark.parametrize("level", [0, 3])
def test_cast_after_a_bag_is_converted_on_the_core(rng, src, dst, how, mode, level):
    """``bag(x).to(dtype)`` (``.half()``, ``.double()``, ...) after element-wise ops: the output
    row is converted in the bag's last callback (``arith.truncf``: one rounding to nearest even,
    as PyTorch's CPU conversion; ``arith.extf``: exact), bit for bit. Values up to 2^17 reach
    float16's overflow to inf and its subnormals."""
    bag = torch.nn.EmbeddingBag(30, 8, mode=mode, dtype=src)
    with torch.no_grad():
        bag.weight.copy_(torch.from_numpy(rng.standard_normal((30, 8)) * 2.0 ** rng.integers(-26, 17, (30, 1))))

    def fn(i, o):
        y = torch.relu(bag(i, o) * 3.0)
        return {"to": lambda: y.to(dst), "half": y.half, "double": y.double, "float": y.float}[how]()

    i = torch.from_numpy(rng.integers(0, 30, 50))
    o = torch.tensor([0, 4, 4, 20])
    tk = compile_torch(fn, (i, o), opt_level=level)
    assert tk.spec.cast == str(dst).removeprefix("torch.") and "%cast_out" in tk.scf
    got, want = run(tk, i, o), fn(i, o).detach()
    assert got.dtype == want.dtype == dst
    assert torch.equal(got.view(torch.int16) if dst == torch.bfloat16 else got,
                       want.view(torch.int16) if dst == torch.bfloat16 else want)


@pytest.mark.parametrize("src, dst, message", [
    (torch.float64, torch.float16, "unsupported cast of a float64 embedding_bag to float16"),
    (torch.float16, torch.float32, "unsupported cast to float32 after a float16 embedding_bag")])
def test_casts_that_are_not_fused_are_refused_naming_the_cast(src, dst, message):
    bag = torch.nn.EmbeddingBag(30, 8, dtype=src)
    i, o = torch.tensor([1, 2, 3]), torch.tensor([0, 2])
    from sw.compiler import CompileError
    with pytest.raises(CompileError, match=message):
        compile_torch(lambda i, o: bag(i, o).to(dst), (i, o))


@pytest.mark.rtl
@pytest.mark.slow
def test_cast_after_a_bag_on_rtl(rng):
    from sw.api import compile_torch as api_compile
    bag = torch.nn.EmbeddingBag(30, 16, mode="mean")
    fn = lambda i, o: torch.relu(bag(i, o)).to(torch.bfloat16)               # noqa: E731
    i, o = torch.from_numpy(rng.integers(0, 30, 40)), torch.tensor([0, 5, 5, 30])
    op = api_compile(fn, (i, o), opt_level=3)
    assert torch.equal(op(i, o, target="rtl").view(torch.int16), fn(i, o).detach().view(torch.int16))
