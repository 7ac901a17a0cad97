"""PyTorch frontend, a whole DLRM sparse module (issue 12): several EmbeddingBags with different
dims, modes, dtypes, padding_idx, include_last_offset and max_norm in one module, returned as a
tensor (torch.cat along dim 1), a tuple or a dict — compiled into one table-batched program per
group of compatible bags and checked bit for bit against the module on the golden model.
Random inputs draw a fresh seed each run and print it (``EMBER_SEED=<seed>`` reproduces)."""

from __future__ import annotations

import copy
import os

import numpy as np
import pytest
import torch

from sw.api import compile_torch

EB = torch.nn.EmbeddingBag


@pytest.fixture
def rng():
    seed = int(os.environ.get("EMBER_SEED", np.random.SeedSequence().entropy % 2**32))
    print(f"seed {seed}")
    return np.random.default_rng(seed)


def same(a, b) -> bool:
    if isinstance(a, dict):
        return a.keys() == b.keys() and all(same(a[k], b[k]) for k in a)
    if isinstance(a, (tuple, list)):
        return type(a) is type(b) and len(a) == len(b) and all(same(x, y) for x, y in zip(a, b))
    b = b.detach()
    return a.dtype == b.dtype and a.shape == b.shape and torch.equal(a, b)


class Sparse(torch.nn.Module):
    """DLRM's sparse part with heterogeneous tables."""

    def __init__(self, out="cat"):
        super().__init__()
        self.out = out
        self.user = EB(50, 8, mode="sum")
        self.item = EB(40, 8, mode="sum", padding_idx=0)
        self.cat_ = EB(30, 4, mode="mean", include_last_offset=True)
        self.geo = EB(20, 8, mode="max", dtype=torch.float16)
        self.tag = EB(60, 8, mode="sum", dtype=torch.bfloat16, padding_idx=5)
        self.hist = EB(25, 8, mode="sum", max_norm=1.0)

    def forward(self, u, uo, i, io, c, co, g, t, h, ho):
        outs = {"user": self.user(u, uo), "item": self.item(i, io), "cat": self.cat_(c, co),
                "geo": self.geo(g), "tag": self.tag(t), "hist": self.hist(h, ho)}
        if self.out == "dict":
            return outs
        if self.out == "tuple":
            return tuple(outs.values())
        return torch.cat([outs["user"], outs["item"], outs["hist"]], dim=1), outs["geo"], outs["tag"]


def inputs(rng, batch=4):
    def jag(rows, pad=None):
        lengths = rng.integers(0, 6, batch)
        idx = rng.integers(0, rows, int(lengths.sum()))
        if pad is not None and idx.size:
            idx[rng.random(idx.size) < 0.3] = pad
        return torch.from_numpy(idx), torch.from_numpy(np.concatenate([[0], np.cumsum(lengths)[:-1]]))
    u, uo = jag(50)
    i, io = jag(40, pad=0)
    c, co = jag(30)
    co = torch.cat([co, torch.tensor([c.numel()])])
    g = torch.from_numpy(rng.integers(0, 20, (batch, 3)))
    t = torch.from_numpy(rng.integers(0, 60, (batch, 5)))
    t[0] = 5                                                   # a bag of padding only
    h, ho = jag(25)
    return u, uo, i, io, c, co, g, t, h, ho


@pytest.mark.parametrize("out", ["cat", "tuple", "dict"])
def test_dlrm_sparse_module_matches_pytorch_bit_for_bit(rng, out):
    torch.manual_seed(int(rng.integers(2**31)))
    m = Sparse(out)
    with torch.no_grad():
        m.hist.weight.mul_(3)                                  # rows above max_norm
    ref = copy.deepcopy(m)
    ins = inputs(rng)
    op = compile_torch(m, ins)
    # groups: f32 sum dim 8 (user, item, hist), f32 mean dim 4, f16 max, bf16 padded sum
    assert len(op.kernels) == 4
    assert same(op(*ins), ref(*ins))
    assert torch.equal(m.hist.weight, ref.hist.weight)         # max_norm renormalised in place
    ins2 = inputs(rng, batch=7)                                # another batch size
    assert same(op(*ins2), ref(*ins2))
    assert len(op.last_runs) == 4


def test_bags_that_share_everything_are_one_program(rng):
    class Two(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.a, self.b = EB(10, 4, padding_idx=1), EB(20, 4, padding_idx=7, include_last_offset=True)

        def forward(self, i0, o0, i1, o1):
            return {"a": self.a(i0, o0), "b": self.b(i1, o1)}

    m = Two()
    ins = (torch.tensor([1, 2, 1, 9]), torch.tensor([0, 2]), torch.tensor([7, 7, 3, 19]), torch.tensor([0, 2, 4]))
    op = compile_torch(m, ins)
    assert len(op.kernels) == 1 and op.kernel is not None
    assert same(op(*ins), m(*ins))


@pytest.mark.parametrize("opt_level", [0, 3])
def test_weighted_bags_with_and_without_padding_idx_bit_for_bit(opt_level):
    """float32 per_sample_weights: PyTorch's kernel is one FMA per lookup (FBGEMM) without
    padding_idx, a multiply then an add with it; two such bags in one module are two programs,
    each as PyTorch computes it (they were one program of FMAs: 1-ulp differences in the padded
    bag)."""
    from tb.seeds import fresh_seed
    gen = torch.Generator().manual_seed(fresh_seed("dlrm_psw_padding"))

    class Two(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.a, self.b = EB(50, 16, mode="sum", padding_idx=3), EB(40, 16, mode="sum")

        def forward(self, i0, o0, w0, i1, o1, w1):
            return self.a(i0, o0, per_sample_weights=w0), self.b(i1, o1, per_sample_weights=w1)

    m = Two()
    with torch.no_grad():
        m.a.weight.copy_(torch.randn(50, 16, generator=gen))
        m.a.weight[3] = 0
        m.b.weight.copy_(torch.randn(40, 16, generator=gen))
    i0 = torch.randint(0, 50, (400,), generator=gen)
    i0[::5] = 3
    i1 = torch.randint(0, 40, (400,), generator=gen)
    offsets = torch.arange(0, 400, 8)
    ins = (i0, offsets, torch.randn(400, generator=gen), i1, offsets, torch.randn(400, generator=gen))
    op = compile_torch(m, ins, opt_level=opt_level)
    assert same(op(*ins), m(*ins))
    assert len(op.kernels) == 2


# ------------------------------------------------------------------------------------------------
# The jagged (KeyedJaggedTensor) entry point, without torchrec
# ------------------------------------------------------------------------------------------------

def _reference(tables, keys, values, lengths, weights, output):
    """What torchrec's EmbeddingBagCollection computes, written out with the tables."""
    batch = lengths.numel() // len(keys)
    ends = torch.cat([torch.zeros(1, dtype=torch.int64), lengths.cumsum(0)])
    outs = {}
    for key, table in tables.items():
        k = keys.index(key)
        lo = int(ends[k * batch])
        starts = ends[k * batch:(k + 1) * batch + 1] - lo
        idx = values[lo:int(ends[(k + 1) * batch])]
        w = None if weights is None else weights[lo:int(ends[(k + 1) * batch])]
        outs[key] = table(idx, starts if table.include_last_offset else starts[:-1], w).detach()
    return outs if output == "dict" else torch.cat(list(outs.values()), dim=1)


def _jagged(rng, keys, rows, batch, weighted=False):
    from sw.compiler.frontends.torch_jagged import Jagged
    lengths = torch.from_numpy(rng.integers(0, 5, len(keys) * batch))
    parts = [rng.integers(0, rows[k // batch], int(n)) for k, n in enumerate(lengths.tolist())]
    values = torch.from_numpy(np.concatenate(parts + [np.zeros(0, np.int64)]).astype(np.int64))
    weights = torch.from_numpy(rng.random(values.numel()).astype(np.float32)) if weighted else None
    return Jagged(keys, values, lengths=lengths, weights=weights), lengths


@pytest.mark.parametrize("output", ["cat", "dict"])
@pytest.mark.parametrize("by", ["lengths", "offsets"])
def test_jagged_entry_point_matches_the_collection(rng, output, by):
    from sw.api import compile_jagged
    from sw.compiler.frontends.torch_jagged import Jagged
    torch.manual_seed(int(rng.integers(2**31)))
    keys = ["f_item", "f_user", "f_geo"]                     # the input's key order
    tables = {"f_user": EB(30, 8), "f_item": EB(20, 4, mode="mean", include_last_offset=True),
              "f_geo": EB(10, 8, mode="max", dtype=torch.float16)}
    rows = [20, 30, 10]
    kjt, lengths = _jagged(rng, keys, rows, batch=5)
    if by == "offsets":
        kjt = Jagged(keys, kjt.values, offsets=torch.cat([torch.zeros(1, dtype=torch.int64), lengths.cumsum(0)]))
    op = compile_jagged(tables, kjt, output=output)
    got = op(kjt)
    want = _reference(tables, keys, kjt.values, lengths, None, output)
    if output == "cat":
        assert got.dtype == torch.float32 and got.shape == (5, 20)   # cat promotes float16
    assert same(got, want)
    kjt2, lengths2 = _jagged(rng, keys, rows, batch=9)             # another batch size
    assert same(op(kjt2), _reference(tables, keys, kjt2.values, lengths2, None, output))


def test_jagged_weighted_features_and_errors(rng):
    from sw.api import compile_jagged
    from sw.compiler.frontends.torch_jagged import Jagged
    keys = ["a", "b"]
    tables = {"a": EB(12, 4, mode="sum"), "b": EB(9, 4, mode="sum")}
    kjt, lengths = _jagged(rng, keys, [12, 9], batch=3, weighted=True)
    op = compile_jagged(tables, kjt)
    assert same(op(kjt), _reference(tables, keys, kjt.values, lengths, kjt.weights, "cat"))
    with pytest.raises(ValueError, match="key 'b' is not in the input's keys"):
        op(Jagged(["a"], kjt.values[:int(lengths[:3].sum())], lengths=lengths[:3], weights=kjt.weights))
    with pytest.raises(ValueError, match=f"lengths sum to {int(lengths.sum())}, but values has"):
        op(Jagged(keys, kjt.values[:-1] if kjt.values.numel() else torch.tensor([1]), lengths=lengths,
                  weights=kjt.weights))


def test_jagged_lengths_or_offsets_that_are_not_integers_are_refused():
    """Float lengths/offsets were truncated (offsets [0, 1.5, 3, ...] ran as [0, 1, 3, ...]:
    other bags, no error); they are refused, as PyTorch's embedding_bag refuses float offsets
    (checked here)."""
    from sw.api import compile_jagged
    from sw.compiler.frontends.torch_jagged import Jagged
    tables = {"a": EB(10, 4, mode="sum"), "b": EB(12, 4, mode="sum")}
    values = torch.tensor([1, 2, 3, 4, 5])
    op = compile_jagged(tables, Jagged(["a", "b"], values, lengths=torch.tensor([2, 1, 1, 1])))
    with pytest.raises((RuntimeError, ValueError)):
        tables["a"](values[:3], torch.tensor([0.0, 2.0]))
    for kind, bad in [("lengths", torch.tensor([1.5, 1.5, 1.0, 1.0])),
                      ("offsets", torch.tensor([0.0, 1.5, 3.0, 4.0, 5.0]))]:
        with pytest.raises(ValueError) as info:
            op(Jagged(["a", "b"], values, **{kind: bad}))
        assert str(info.value) == f"{kind} must be an integer tensor, not float32"


@pytest.mark.rtl
@pytest.mark.slow
def test_dlrm_sparse_module_on_rtl(rng):
    """The heterogeneous module at -O3 on the RTL: four programs, each equal to PyTorch."""
    torch.manual_seed(int(rng.integers(2**31)))
    m = Sparse("dict")
    ref = copy.deepcopy(m)
    ins = inputs(rng)
    op = compile_torch(m, ins, opt_level=3)
    assert same(op(*ins, target="rtl"), ref(*ins))
    assert len(op.last_runs) == 4 and all(r.cycles for r in op.last_runs)


@pytest.mark.parametrize("aliased", [True, False])
def test_an_example_input_given_twice_is_traced_as_two_inputs(aliased):
    """torch.export traces the same tensor object given at two positions as one input (the
    other's placeholder unused): traced on ``(x, x)`` the op read the second input for both
    bags at every later call. The frontend now clones the repeat before tracing."""
    from tb.seeds import fresh_seed
    gen = torch.Generator().manual_seed(fresh_seed("aliased_examples"))

    class TwoBags(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.a = torch.nn.EmbeddingBag(7, 3, mode="sum")
            self.b = torch.nn.EmbeddingBag(9, 3, mode="max")

        def forward(self, x, y):
            return torch.cat([self.a(x), self.b(y)], 1)

    m = TwoBags()
    x = torch.randint(0, 7, (4, 2), generator=gen)
    example = (x, x) if aliased else (x, x.clone())
    op = compile_torch(m, example, opt_level=3)
    x1, y1 = torch.randint(0, 7, (4, 2), generator=gen), torch.randint(0, 9, (4, 2), generator=gen)
    y1[:, 0] = 8                                   # a row of b that a's 7 rows do not have
    assert torch.equal(op(x1, y1), m(x1, y1).detach())


def test_a_bag_of_a_2d_input_with_no_columns_is_refused_as_pytorch_refuses_it():
    """PyTorch's embedding bag raises for a 2-D input of 0 columns (its offsets are
    ``arange(0, numel, 0)``); the op returned empty bags. Now a ValueError naming the shape, in a
    single bag and in a module of several."""
    bag = torch.nn.EmbeddingBag(7, 3, mode="mean")
    empty = torch.zeros((4, 0), dtype=torch.int64)
    with pytest.raises(RuntimeError):
        bag(empty)                                 # the reference: PyTorch refuses it
    op = compile_torch(bag, (torch.zeros((4, 2), dtype=torch.int64),))
    with pytest.raises(ValueError, match=r"input of shape \(4, 0\).*0 columns"):
        op(empty)

    class TwoBags(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.a, self.b = torch.nn.EmbeddingBag(7, 3), torch.nn.EmbeddingBag(9, 3)

        def forward(self, x, y):
            return torch.cat([self.a(x), self.b(y)], 1)

    x = torch.zeros((4, 2), dtype=torch.int64)
    op = compile_torch(TwoBags(), (x, x.clone()))
    with pytest.raises(ValueError, match=r"input of shape \(4, 0\)"):
        op(empty, x)
