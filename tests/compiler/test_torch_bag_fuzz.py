"""Randomised differential tests of the PyTorch frontend's embedding bags against PyTorch itself.

Each run draws a fresh seed (printed, ``EMBER_SEED`` to replay: ``tb/seeds.py``) and from it
configurations across what a user may give an ``nn.EmbeddingBag``: mode (sum, mean, max), dtype
(float32, float64, float16, bfloat16), table size and embedding dim, ``padding_idx`` (none, first,
last, negative), ``include_last_offset``, ``per_sample_weights`` (sum), a 1-D input with offsets
(empty bags among them) or a 2-D input (0 columns among them), and the -O level; modules of several
bags (returned as a tuple or ``torch.cat``, same or different modes and dtypes). Each op is traced
on one input and called on another, on the golden model. The claim checked is the frontend's
(docs/compiler.md, "Numerics"): results equal PyTorch's CPU results bit for bit (NaN-free inputs),
same shape and dtype; an input PyTorch refuses is a ``ValueError``.
"""

from __future__ import annotations

import random

import pytest
import torch

from sw.api import compile_torch
from tb.seeds import fresh_seed, seed_range

_DTYPES = [torch.float32, torch.float64, torch.float16, torch.bfloat16]


def _bag(rng: random.Random, gen: torch.Generator, *, mode=None, dtype=None, dim=None):
    n = rng.choice([1, 2, 7, 50, 300])
    padding_idx = rng.choice([None, None, 0, n - 1, -1])
    bag = torch.nn.EmbeddingBag(n, dim or rng.choice([1, 3, 4, 16, 17, 64]),
                                mode=mode or rng.choice(["sum", "mean", "max"]),
                                padding_idx=padding_idx, dtype=dtype or rng.choice(_DTYPES),
                                include_last_offset=rng.random() < 0.3)
    with torch.no_grad():
        bag.weight.copy_(torch.randn(bag.weight.shape, generator=gen).to(bag.weight.dtype))
        if padding_idx is not None:
            bag.weight[padding_idx] = 0
    return bag


def _bag_inputs(rng: random.Random, gen: torch.Generator, bag, *, two_d: bool, weighted: bool,
                nbags: int | None = None) -> tuple:
    """(input, offsets[, per_sample_weights]) or (input[, None, per_sample_weights]) for 2-D."""
    nbags = nbags or rng.choice([1, 2, 5, 13])
    if two_d:
        indices = torch.randint(0, bag.num_embeddings, (nbags, rng.choice([0, 1, 3, 5])), generator=gen)
        offsets = None
    else:
        lengths = [rng.choice([0, 0, 1, 2, 5, 9]) for _ in range(nbags)]
        ends = torch.tensor(lengths).cumsum(0).tolist()
        indices = torch.randint(0, bag.num_embeddings, (ends[-1],), generator=gen)
        offsets = torch.tensor([0] + ends if bag.include_last_offset else [0] + ends[:-1])
    if not weighted:
        return (indices, offsets)
    return (indices, offsets, torch.randn(indices.shape, generator=gen).to(bag.weight.dtype))


def _assert_same(got, want, what: str):
    assert got.shape == want.shape and got.dtype == want.dtype, (what, got.shape, want.shape)
    assert torch.equal(got, want), (what, (got.double() - want.double()).abs().max().item())


def _call(fn, args):
    try:
        return fn(*args), None
    except (RuntimeError, ValueError, IndexError) as e:
        return None, e


def test_random_embedding_bags_equal_pytorch_bit_for_bit():
    base = fresh_seed("bag_fuzz")
    for seed in seed_range(base, 10):
        rng, gen = random.Random(seed), torch.Generator().manual_seed(seed)
        bag = _bag(rng, gen)
        two_d = rng.random() < 0.3
        weighted = bag.mode == "sum" and rng.random() < 0.4
        opt_level = rng.choice([0, 1, 2, 3])
        what = (f"seed {seed}: mode={bag.mode} dtype={bag.weight.dtype} rows={bag.num_embeddings} "
                f"dim={bag.embedding_dim} padding_idx={bag.padding_idx} "
                f"include_last_offset={bag.include_last_offset} 2-D={two_d} weighted={weighted} "
                f"-O{opt_level}")
        example = _bag_inputs(rng, gen, bag, two_d=two_d, weighted=weighted)
        while two_d and example[0].shape[1] == 0:       # traced on an input PyTorch accepts
            example = _bag_inputs(rng, gen, bag, two_d=two_d, weighted=weighted)
        op = compile_torch(bag, example, opt_level=opt_level)
        for _ in range(2):
            call = _bag_inputs(rng, gen, bag, two_d=two_d, weighted=weighted)
            want, refused = _call(lambda *a: bag(*a).detach(), call)
            if refused is not None:
                with pytest.raises(ValueError):
                    op(*call)
                continue
            _assert_same(op(*call), want, what)


class _Bags(torch.nn.Module):
    def __init__(self, bags, weighted, cat):
        super().__init__()
        self.bags, self.weighted, self.cat = torch.nn.ModuleList(bags), weighted, cat

    def forward(self, *args):
        outs, w = [], 2 * len(self.bags)
        for k, bag in enumerate(self.bags):
            if self.weighted[k]:
                outs.append(bag(args[2 * k], args[2 * k + 1], args[w]))
                w += 1
            else:
                outs.append(bag(args[2 * k], args[2 * k + 1]))
        return torch.cat(outs, 1) if self.cat else tuple(outs)


def _module_inputs(rng, gen, m: _Bags) -> tuple:
    nbags = rng.choice([1, 3, 6])
    args, weights = [], []
    for bag, weighted in zip(m.bags, m.weighted):
        one = _bag_inputs(rng, gen, bag, two_d=False, weighted=weighted,
                          nbags=nbags if m.cat else None)
        args += one[:2]
        weights += one[2:]
    return (*args, *weights)


def test_random_modules_of_several_bags_equal_pytorch_bit_for_bit():
    base = fresh_seed("bags_fuzz")
    for seed in seed_range(base, 4):
        rng, gen = random.Random(seed), torch.Generator().manual_seed(seed)
        shared = rng.random() < 0.6           # one program (tables batched) or several groups
        mode, dtype, dim = rng.choice(["sum", "mean", "max"]), rng.choice(_DTYPES[:2]), rng.choice([2, 4, 16])
        bags = [_bag(rng, gen, mode=mode, dtype=dtype, dim=dim) if shared
                else _bag(rng, gen, dtype=dtype) for _ in range(rng.choice([2, 3]))]
        weighted = [b.mode == "sum" and rng.random() < 0.4 for b in bags]
        m = _Bags(bags, weighted, cat=rng.random() < 0.5)
        opt_level = rng.choice([0, 3])
        what = (f"seed {seed}: modes={[b.mode for b in bags]} dtype={dtype} "
                f"padding_idx={[b.padding_idx for b in bags]} weighted={weighted} cat={m.cat} "
                f"-O{opt_level}")
        example = _module_inputs(rng, gen, m)
        op = compile_torch(m, example, opt_level=opt_level)
        for _ in range(2):
            call = _module_inputs(rng, gen, m)
            want, got = m(*call), op(*call)
            want = want if isinstance(want, tuple) else (want,)
            got = got if isinstance(got, (tuple, list)) else (got,)
            assert len(got) == len(want), what
            for g, w in zip(got, want):
                _assert_same(g, w.detach(), what)
