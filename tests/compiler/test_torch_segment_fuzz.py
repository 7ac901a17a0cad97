"""Randomised differential tests of the PyTorch frontend's gather + segment reductions (GNN
message passing: ``out.index_add(0, dst, x[src])``, ``scatter_reduce``) against PyTorch itself.

Each run draws a fresh seed (printed; ``EMBER_SEED`` replays it, ``tb/seeds.py``) and from it
functions across what a user may write: ``index_add``/``index_add_``/``scatter_reduce(_)`` (sum,
mean, amax, amin, with and without ``include_self``; in place on an input, which PyTorch updates), the messages as ``x.index_select(0, src)``
or ``x[src]``, the output as ``torch.zeros(n, d)``, ``torch.zeros(x.shape[0], d)``,
``torch.zeros_like(x)``, ``x.new_zeros(x.shape)`` or an input tensor, dtypes float32, float64,
int32, int64. Each is traced on one graph and called on graphs of other sizes (and edge counts,
zero among them), on the golden model. The claim checked is docs/compiler.md's: bit for bit
(PyTorch's CPU loop reduces in edge order), the output's rows following the tensor they come
from at each call.
"""

from __future__ import annotations

import random

import torch

from sw.api import compile_torch
from tb.seeds import fresh_seed, seed_range

_OUTPUTS = {
    "zeros(10, d)": lambda x, base: torch.zeros(10, x.shape[1], dtype=x.dtype),
    "zeros(x.shape[0], d)": lambda x, base: torch.zeros(x.shape[0], x.shape[1], dtype=x.dtype),
    "zeros_like(x)": lambda x, base: torch.zeros_like(x),
    "x.new_zeros(x.shape)": lambda x, base: x.new_zeros(x.shape),
    "an input": lambda x, base: base,
}


def _function(reduce: str, include_self: bool, output: str, select: bool):
    def fn(x, src, dst, base):
        out = _OUTPUTS[output](x, base)
        msgs = x.index_select(0, src) if select else x[src]
        if reduce == "index_add_":                   # on an input: PyTorch writes into it
            return out.index_add_(0, dst, msgs)
        if reduce == "index_add":
            return out.index_add(0, dst, msgs)
        if reduce.endswith("_"):
            return out.scatter_reduce_(0, dst[:, None].expand(-1, x.shape[1]), msgs, reduce[:-1],
                                       include_self=include_self)
        return out.scatter_reduce(0, dst[:, None].expand(-1, x.shape[1]), msgs, reduce,
                                  include_self=include_self)
    return fn


def _graph(gen: torch.Generator, dtype, n: int, edges: int, dim: int, rows: int):
    x = torch.randn(n, dim, generator=gen) * 100
    base = torch.randn(rows, dim, generator=gen) * 100
    if not dtype.is_floating_point:
        x, base = x.round(), base.round()
    return (x.to(dtype), torch.randint(0, n, (edges,), generator=gen),
            torch.randint(0, rows, (edges,), generator=gen), base.to(dtype))


def test_random_segment_reductions_equal_pytorch_bit_for_bit():
    base_seed = fresh_seed("segment_fuzz")
    for seed in seed_range(base_seed, 8):
        rng, gen = random.Random(seed), torch.Generator().manual_seed(seed)
        reduce = rng.choice(["index_add", "index_add_", "sum", "mean", "amax", "amin", "sum_", "amax_"])
        include_self, output, select = rng.random() < 0.5, rng.choice(list(_OUTPUTS)), rng.random() < 0.5
        dtype = rng.choice([torch.float32, torch.float64, torch.int32, torch.int64])
        if reduce.startswith("mean") and not dtype.is_floating_point:
            dtype = torch.float64
        dim = rng.choice([1, 3, 8, 16])
        fn = _function(reduce, include_self, output, select)
        what = (f"seed {seed}: {reduce} include_self={include_self} output={output} "
                f"{'index_select' if select else 'x[src]'} {dtype} dim={dim}")

        def rows(n):           # the output's rows for x of n rows
            return 10 if output == "zeros(10, d)" else rng.choice([3, 10]) if output == "an input" else n

        n0 = rng.choice([5, 10, 20])
        op = compile_torch(fn, _graph(gen, dtype, n0, 30, dim, rows(n0)), opt_level=rng.choice([0, 3]))
        for n, edges in ((n0, 30), (rng.choice([4, 12, 25]), rng.choice([0, 7, 50])), (n0, 1)):
            args = _graph(gen, dtype, n, edges, dim, rows(n))
            theirs = (*args[:3], args[3].clone())
            got, want = op(*args), fn(*theirs)
            assert got.shape == want.shape and got.dtype == want.dtype, (what, n, got.shape, want.shape)
            assert torch.equal(got, want), (what, n, edges)
            assert torch.equal(args[3], theirs[3]), (what, "the input after the call")
