"""PyTorch frontend, float16 and bfloat16 tables (issue 12): nn.EmbeddingBag / F.embedding_bag and
nn.Embedding compiled through the torch frontend, bit for bit against PyTorch's CPU kernels.

What PyTorch 2.13 computes on the CPU (measured, and what ``torch_scf_half.scf_for_half_bag``
generates): each bag accumulated in float32 in lookup order, rounded once to the type (float16: to
nearest even; bfloat16: ties away from zero, fbgemm's conversion, but ties to even when
``padding_idx`` is set: PyTorch's other kernel); ``mean`` divides that rounded
sum by the bag length converted to the type, in the type. Random data draws a fresh seed each run
and prints it (``-s``), so a failure reproduces with ``EMBER_SEED=<seed>``.
"""

from __future__ import annotations

import os

import numpy as np
import pytest
import torch

from sw.compiler.frontends.torch import BagSpec, compile_torch
from sw.runtime.drivers import run_kernel

HALF = [torch.float16, torch.bfloat16]


@pytest.fixture
def rng():
    seed = int(os.environ.get("EMBER_SEED", np.random.SeedSequence().entropy % 2**32))
    print(f"seed {seed}")
    return np.random.default_rng(seed)


def run(tk, *inputs):
    return tk.unbind(run_kernel(tk.kernel, tk.bind(*inputs), "golden").results)


def same_bits(a: torch.Tensor, b: torch.Tensor) -> bool:
    return a.dtype == b.dtype and a.shape == b.shape and torch.equal(
        a.view(torch.int16), b.view(torch.int16))


def bags(rng, rows, nbags=6, longest=12, padding_idx=None):
    lengths = rng.integers(0, longest, nbags)
    lengths[0] = 0
    idx = rng.integers(0, rows, int(lengths.sum()))
    if padding_idx is not None and idx.size:
        idx[rng.random(idx.size) < 0.3] = padding_idx
        idx[int(lengths[:1].sum()):int(lengths[:2].sum())] = padding_idx     # an all-padding bag
    return torch.from_numpy(idx), torch.from_numpy(np.concatenate([[0], np.cumsum(lengths)[:-1]]))


@pytest.mark.parametrize("dtype", HALF)
@pytest.mark.parametrize("mode", ["sum", "mean", "max"])
@pytest.mark.parametrize("padding_idx", [None, 2])
@pytest.mark.parametrize("include_last_offset", [False, True])
def test_half_embedding_bag_matches_pytorch_bit_for_bit(rng, dtype, mode, padding_idx, include_last_offset):
    rows, dim = 40, 16
    bag = torch.nn.EmbeddingBag(rows, dim, mode=mode, padding_idx=padding_idx,
                                include_last_offset=include_last_offset, dtype=dtype)
    with torch.no_grad():
        bag.weight.copy_(torch.from_numpy(rng.standard_normal((rows, dim)).astype(np.float32) * 8))
    idx, off = bags(rng, rows, padding_idx=padding_idx)
    if include_last_offset:
        off = torch.cat([off, torch.tensor([idx.numel()])])
    tk = compile_torch(bag, (idx, off))
    assert tk.spec == BagSpec(mode, str(dtype).removeprefix("torch."), False, include_last_offset, padding_idx)
    assert same_bits(run(tk, idx, off), bag(idx, off).detach())
    if not include_last_offset:
        fixed = torch.from_numpy(rng.integers(0, rows, (5, 7)))
        assert same_bits(run(tk, fixed), bag(fixed).detach())


@pytest.mark.parametrize("dtype", HALF)
def test_half_per_sample_weights(rng, dtype):
    rows, dim = 30, 8
    weight = torch.from_numpy(rng.standard_normal((rows, dim)).astype(np.float32) * 4).to(dtype)

    def fn(i, o, p):
        return torch.nn.functional.embedding_bag(i, weight, o, mode="sum", per_sample_weights=p)

    idx, off = bags(rng, rows)
    psw = torch.from_numpy(rng.standard_normal(idx.numel()).astype(np.float32)).to(dtype)
    tk = compile_torch(fn, (idx, off, psw))
    assert same_bits(run(tk, idx, off, psw), fn(idx, off, psw))
    with pytest.raises(ValueError, match=f"per_sample_weights must have the weight's dtype "
                       f"{str(dtype).removeprefix('torch.')}, not float32"):
        tk.bind(idx, off, psw.float())


@pytest.mark.parametrize("dtype", HALF)
def test_half_mean_of_a_long_bag_divides_by_the_length_in_the_type(rng, dtype):
    """A bag of 259 (2051) lookups: PyTorch divides by the length rounded to bfloat16 (float16)."""
    rows, dim = 50, 8
    bag = torch.nn.EmbeddingBag(rows, dim, mode="mean", dtype=dtype)
    n = 259 if dtype == torch.bfloat16 else 2051
    idx, off = torch.from_numpy(rng.integers(0, rows, n)), torch.tensor([0])
    tk = compile_torch(bag, (idx, off))
    got, want = run(tk, idx, off), bag(idx, off).detach()
    assert same_bits(got, want)
    exact = (bag(idx, off, ).detach().float() * 0 +
             torch.nn.functional.embedding_bag(idx, bag.weight, off, mode="sum").detach().float() / n).to(dtype)
    assert not torch.equal(want, exact)             # the length rounding is visible in this case


@pytest.mark.parametrize("dtype", HALF)
def test_half_embedding_is_a_copy(rng, dtype):
    emb = torch.nn.Embedding(25, 6, dtype=dtype)
    i = torch.from_numpy(rng.integers(0, 25, (3, 4)))
    tk = compile_torch(emb, (i,))
    got = run(tk, i)
    assert same_bits(got, emb(i).detach())


def test_bf16_rounding_of_the_sum_is_ties_away():
    """Rows whose f32 sum is exactly halfway between two bfloat16 values: PyTorch rounds away
    from zero (ties to even would give the other neighbour), and so does the compiled op."""
    w = torch.tensor([[1.0], [2.0 ** -8], [2.0 ** -7 + 2.0 ** -8]], dtype=torch.bfloat16)
    bag = torch.nn.EmbeddingBag(3, 1, mode="sum", _weight=w)
    idx, off = torch.tensor([0, 1, 0, 2]), torch.tensor([0, 2])
    tk = compile_torch(bag, (idx, off))
    want = bag(idx, off).detach()
    assert same_bits(run(tk, idx, off), want)
    assert want[0, 0].item() == 1.0 + 2.0 ** -7        # 1 + 2^-8 is a tie: away from zero


def test_bf16_with_padding_idx_rounds_ties_to_even():
    """With padding_idx set PyTorch's bfloat16 bag rounds the same tie to even."""
    w = torch.tensor([[1.0], [2.0 ** -8], [2.0 ** -7 + 2.0 ** -8], [5.0]], dtype=torch.bfloat16)
    bag = torch.nn.EmbeddingBag(4, 1, mode="sum", padding_idx=3, _weight=w)
    idx, off = torch.tensor([0, 1, 3, 0, 2]), torch.tensor([0, 3])
    tk = compile_torch(bag, (idx, off))
    want = bag(idx, off).detach()
    assert same_bits(run(tk, idx, off), want)
    assert want[0, 0].item() == 1.0


def _level_case(rng, dtype, mode, padding_idx, weighted):
    bag = torch.nn.EmbeddingBag(30, 16, mode=mode, padding_idx=padding_idx, dtype=dtype)
    idx = torch.from_numpy(rng.integers(0, 30, 40))
    ins = (idx, torch.tensor([0, 3, 3, 10, 25]))
    if weighted:
        ins += (torch.from_numpy(rng.standard_normal(40).astype(np.float32)).to(dtype),)
    return bag, ins


LEVEL_CASES = [(torch.float16, "mean", 2, False), (torch.bfloat16, "sum", None, True),
               (torch.bfloat16, "max", None, False)]


@pytest.mark.parametrize("dtype, mode, padding_idx, weighted", LEVEL_CASES)
@pytest.mark.parametrize("level", [1, 3])
def test_half_bags_at_every_level(rng, dtype, mode, padding_idx, weighted, level):
    from sw.runtime.isa import Limits
    bag, ins = _level_case(rng, dtype, mode, padding_idx, weighted)
    tk = compile_torch(bag, ins, opt_level=level, limits=Limits.from_file("configs/tmu_rtl.json"))
    assert same_bits(run(tk, *ins), bag(*ins).detach())


RTL_CASES = [(torch.float16, "mean", None, False), (torch.bfloat16, "sum", None, True),
             (torch.bfloat16, "max", None, False),
             (torch.float16, "mean", 2, False)]   # RTL -O3 mean + padding_idx: fixed in 255afd0


@pytest.mark.rtl
@pytest.mark.slow
@pytest.mark.parametrize("dtype, mode, padding_idx, weighted", RTL_CASES)
def test_half_bags_on_rtl(rng, dtype, mode, padding_idx, weighted):
    from sw.api import compile_torch as api_compile
    from sw.runtime.isa import Limits
    bag, ins = _level_case(rng, dtype, mode, padding_idx, weighted)
    op = api_compile(bag, ins, opt_level=3, limits=Limits.from_file("configs/tmu_rtl.json"))
    assert same_bits(op(*ins, target="rtl"), bag(*ins).detach())
