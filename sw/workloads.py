"""The five workload classes of Ember's evaluation, as compiled kernels with inputs and references.

Each :class:`Workload` names an MLIR kernel in ``examples/``, builds its positional arguments
(NumPy, the kernel's signature) from real or generated data, and computes the expected results
with PyTorch (the framework whose semantics the kernel implements):

=================  ==========================================  ===================================
name               kernel / operation                           input
=================  ==========================================  ===================================
``eb_sum``         ``embedding_bag_sum.mlir``, EmbeddingBag sum  DLRM trace, Meta's reuse histogram
``eb_mean``        ``embedding_bag_mean.mlir``, mode ``mean``     DLRM trace
``eb_max``         ``embedding_bag_max.mlir``, mode ``max``       DLRM trace
``eb_weighted``    ``embedding_bag_weighted.mlir``, sum with      DLRM trace, weights ~ U[0, 1)
                   ``per_sample_weights``
``spmm_cora``      ``spmm_csr.mlir``, CSR x dense (GCN)          Cora, GCN normalisation D^-1/2 A D^-1/2
``spmv_csr``       ``spmv_csr.mlir``, CSR x vector               Cora, GCN normalisation
``kg_transe``      ``transe_score.mlir``, ||h + r - t||_2        triples over Cora's ids
``spattn_gather``  ``block_sparse_gather.mlir``, K/V blocks      generated block mask (local + random)
                   selected by a block mask
=================  ==========================================  ===================================

Agreement with the reference (``Workload.exact``): the EmbeddingBag kernels accumulate in
PyTorch's order with PyTorch's rounding (sum in index order; the mean as one division; ``max``
with NaN propagation; weights with one fused multiply-add in float32), so they equal
``torch.nn.functional.embedding_bag`` bit for bit, as does the gather (a copy). SpMV
(``spmv_csr.mlir``) accumulates each row in CSR order with ``math.fma`` (one rounding); PyTorch's
CPU kernel for a sparse CSR tensor ``@`` dense uses the same order but fuses the multiply-add or
not depending on the processor (bit-exact on an AVX-512 Intel machine, not on an AVX2 AMD EPYC),
so SpMV is bit-exact against :func:`csr_fma_sequential` (a true FMA from exact rationals) and
within :func:`csr_summation_bound` of PyTorch. The SpMM example
(``spmm_csr.mlir``) multiplies, then adds (two roundings), and TransE sums the squares in feature
order while ``torch.linalg.vector_norm`` reduces in its own order: for those two the comparison
is ``rtol = atol = 1e-5`` against PyTorch and bit-exact against a sequential NumPy reference of
the kernel's order (``Workload.sequential``).

Index traces (:func:`dlrm_trace`) follow Meta's published reuse statistics
(``data/dlrm/locality_stats_2022_trace0.txt``, see ``data/README.md``).
"""

from __future__ import annotations

import re
import warnings
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

import numpy as np
import torch

from . import chained_workloads as chained
from .runtime.datasets import DATA_DIR, Graph, load_cora

__all__ = ["EXAMPLES", "Workload", "WORKLOADS", "BENCH_WORKLOADS", "DLRM_SHAPE", "dlrm_trace", "load_reuse_histogram",
           "gcn_normalised", "transe_triples", "block_mask", "widen", "fma_f32", "csr_fma_sequential",
           "csr_summation_bound"]

EXAMPLES = Path(__file__).resolve().parents[1] / "examples"
REUSE_STATS = DATA_DIR / "dlrm" / "locality_stats_2022_trace0.txt"


# ------------------------------------------------------------------------------------------------
# Generators
# ------------------------------------------------------------------------------------------------

def load_reuse_histogram(path: str | Path = REUSE_STATS) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The "Histogram of col sizes" of a dlrm_datasets locality-statistics block.

    Returns ``(lo, hi, share)``: bin ``k`` holds unique rows looked up ``lo[k] < n <= hi[k]`` times
    (``hi`` of the open last bin ``32768+`` is taken as ``2 * lo``); ``share`` sums to 1 (the file's
    three-decimal shares renormalised).

    Raises
    ------
    FileNotFoundError
        ``path`` does not exist. ``ValueError``: no histogram in the file.
    """
    path = Path(path)
    if not path.exists():
        raise FileNotFoundError(f"reuse statistics {str(path)!r} do not exist")
    text = path.read_text()
    block = text.split("Histogram of col sizes:", 1)
    if len(block) != 2:
        raise ValueError(f"{path}: no 'Histogram of col sizes:' section")
    lo, hi, share = [], [], []
    for line in block[1].splitlines()[1:]:
        m = re.fullmatch(r"\((\d+), (\d+)\]: ([\d.]+)", line.strip())
        m_open = re.fullmatch(r"\((\d+)\+: ([\d.]+)", line.strip())
        if m:
            lo.append(int(m[1])), hi.append(int(m[2])), share.append(float(m[3]))
        elif m_open:
            lo.append(int(m_open[1])), hi.append(2 * int(m_open[1])), share.append(float(m_open[2]))
            break
        else:
            break
    if not share:
        raise ValueError(f"{path}: the col-size histogram is empty")
    s = np.array(share)
    return np.array(lo), np.array(hi), s / s.sum()


def dlrm_trace(num_rows: int, nbags: int, pooling: int, *, seed: int = 0,
               stats: str | Path = REUSE_STATS) -> tuple[np.ndarray, np.ndarray]:
    """A DLRM-style EmbeddingBag index trace with Meta's per-row reuse distribution.

    Distinct rows of ``[0, num_rows)`` are drawn in random order; each gets a lookup count drawn
    from the col-size histogram (uniform within its bin, capped at the trace length) until
    ``nbags * pooling`` lookups exist; the lookups are shuffled and cut into ``nbags`` bags of
    lengths drawn uniformly from ``[0, 2 * pooling]`` (rescaled to the total), so some bags are
    empty as in real traces.

    Returns ``(indices int64 (L,), offsets int64 (nbags + 1,))`` with ``offsets[-1] == L``.

    Raises
    ------
    ValueError
        ``num_rows``, ``nbags`` < 1 or ``pooling`` < 0.
    """
    if num_rows < 1:
        raise ValueError(f"num_rows must be >= 1, not {num_rows}")
    if nbags < 1:
        raise ValueError(f"nbags must be >= 1, not {nbags}")
    if pooling < 0:
        raise ValueError(f"pooling must be >= 0, not {pooling}")
    rng = np.random.default_rng(seed)
    lo, hi, share = load_reuse_histogram(stats)
    total = nbags * pooling
    rows = rng.permutation(num_rows)
    counts: list[int] = []
    have = 0
    while have < total:
        k = int(rng.choice(len(share), p=share))
        n = int(rng.integers(lo[k] + 1, hi[k] + 1))
        n = min(n, total - have)
        counts.append(n)
        have += n
    distinct = rows[np.arange(len(counts)) % num_rows]
    indices = np.repeat(distinct, counts).astype(np.int64)
    rng.shuffle(indices)
    lengths = rng.integers(0, 2 * pooling + 1, nbags).astype(np.float64)
    if lengths.sum() == 0:
        lengths[:] = 1
    cuts = np.round(np.cumsum(lengths) / lengths.sum() * total).astype(np.int64)
    offsets = np.concatenate([[0], cuts]).astype(np.int64)
    offsets[-1] = total
    return indices, offsets


def gcn_normalised(graph: Graph, dtype=np.float32) -> np.ndarray:
    """Edge values of the GCN propagation matrix D^-1/2 A D^-1/2 (Kipf & Welling 2017, no self
    loops) in the CSR order of ``graph``: ``1 / sqrt(deg(i) deg(j))``, shape (num_edges,)."""
    deg = np.diff(graph.offsets).astype(np.float64)
    rows = np.repeat(np.arange(graph.num_nodes), np.diff(graph.offsets))
    return (1.0 / np.sqrt(deg[rows] * deg[graph.indices])).astype(dtype)


def transe_triples(graph: Graph, n: int, num_relations: int, *, seed: int = 0) -> np.ndarray:
    """``n`` (head, relation, tail) triples: a random edge of ``graph`` (head, tail: node ids) and a
    random relation id in ``[0, num_relations)``. int64, shape (n, 3)."""
    rng = np.random.default_rng(seed)
    e = rng.integers(0, graph.num_edges, n)
    rows = np.repeat(np.arange(graph.num_nodes), np.diff(graph.offsets))
    return np.stack([rows[e], rng.integers(0, num_relations, n), graph.indices[e]], 1).astype(np.int64)


def block_mask(n_query_blocks: int, n_key_blocks: int, n_random: int, *, seed: int = 0,
               local: bool = True) -> tuple[np.ndarray, np.ndarray]:
    """A block-sparse attention mask as CSR over query blocks (BigBird-style: the diagonal block
    when ``local``, plus ``n_random`` distinct random key blocks), each row sorted.

    Returns ``(block_ptr int64 (n_query_blocks + 1,), block_idx int64 (nnz,))``.
    """
    rng = np.random.default_rng(seed)
    ptr, idx = [0], []
    for q in range(n_query_blocks):
        chosen = set(rng.choice(n_key_blocks, min(n_random, n_key_blocks), replace=False).tolist())
        if local:
            chosen.add(q % n_key_blocks)
        idx += sorted(chosen)
        ptr.append(len(idx))
    return np.array(ptr, np.int64), np.array(idx, np.int64)


# ------------------------------------------------------------------------------------------------
# Workloads
# ------------------------------------------------------------------------------------------------

@dataclass(frozen=True)
class Workload:
    """One compiled workload.

    ``make(size, seed) -> list`` builds the kernel's positional arguments (``size``: ``"small"``
    for RTL runs and the default tests, ``"full"`` for the golden model and the benchmark);
    ``reference(args) -> list`` the framework's results; ``sequential(args) -> list`` (optional)
    a NumPy reference in the kernel's accumulation order and rounding (always bit for bit);
    ``exact`` whether ``reference`` must match bit for bit, else within ``bound(args) -> list`` of
    absolute per-element bounds if given, else ``rtol``; ``lookups(args)`` the number of gathered elements (the
    denominator of "tokens per lookup").
    """
    name: str
    cls: str
    example: str
    make: Callable[[str, int], list]
    reference: Callable[[list], list]
    lookups: Callable[[list], int]
    exact: bool = True
    rtol: float = 1e-5
    sequential: Callable[[list], list] | None = None
    bound: Callable[[list], list] | None = None

    @property
    def path(self) -> Path:
        return EXAMPLES / self.example

    def check(self, args: list, results) -> None:
        """Assert ``results`` (the kernel's) against the references.

        Raises
        ------
        AssertionError
            Naming the workload and the first mismatch.
        """
        for k, (got, want) in enumerate(zip(results, self.reference(args))):
            if self.exact:
                np.testing.assert_array_equal(got, want, err_msg=f"{self.name}: result {k} vs PyTorch")
            elif self.bound is not None:
                allowed = self.bound(args)[k]
                diff = np.abs(np.asarray(got, np.float64) - np.asarray(want, np.float64))
                assert (diff <= allowed).all(), (
                    f"{self.name}: result {k} differs from PyTorch by more than the summation bound "
                    f"(worst: {diff.max()} at {np.unravel_index(np.argmax(diff - allowed), diff.shape)})")
            else:
                np.testing.assert_allclose(got, want, rtol=self.rtol, atol=self.rtol,
                                           err_msg=f"{self.name}: result {k} vs PyTorch")
        if self.sequential is not None:
            for k, (got, want) in enumerate(zip(results, self.sequential(args))):
                np.testing.assert_array_equal(got, want, err_msg=f"{self.name}: result {k} vs the "
                                              "sequential NumPy reference")


def widen(args: list, dim: int, seed: int) -> list:
    """A ``"small"`` workload's arguments at embedding width ``dim`` instead of 8: every (n, 8)
    float32 matrix (tables, outputs) becomes (n, dim) — standard normal (``seed``) where the
    original holds data, zeros where it is an output. Used to test widths that are not a multiple
    of the vector lanes."""
    rng = np.random.default_rng(seed)
    out = []
    for a in args:
        if isinstance(a, np.ndarray) and a.dtype == np.float32 and a.ndim == 2 and a.shape[1] == 8:
            a = (rng.standard_normal((a.shape[0], dim)).astype(np.float32) if a.any()
                 else np.zeros((a.shape[0], dim), np.float32))
        out.append(a)
    return out


def _t(a) -> torch.Tensor:
    return torch.from_numpy(np.ascontiguousarray(a))


# --- EmbeddingBag (DLRM) --------------------------------------------------------------------------

_EB_SIZES = {"small": (64, 8, 12, 4), "full": (10_000, 16, 256, 16)}   # rows, dim, bags, pooling


def _eb_make(weighted: bool, index_dtype=np.int64):
    def make(size: str, seed: int) -> list:
        rows, dim, nbags, pooling = _EB_SIZES[size]
        rng = np.random.default_rng(seed)
        table = rng.standard_normal((rows, dim)).astype(np.float32)
        indices, offsets = dlrm_trace(rows, nbags, pooling, seed=seed)
        args = [table, indices.astype(index_dtype), offsets.astype(index_dtype)]
        if weighted:
            args.append(rng.random(len(indices)).astype(np.float32))
        args.append(np.zeros((nbags, dim), np.float32))
        return args
    return make


def _eb_reference(mode: str):
    def ref(args: list) -> list:
        table, indices, offsets = args[:3]
        psw = _t(args[3]) if len(args) == 5 else None
        return [torch.nn.functional.embedding_bag(_t(indices.astype(np.int64)), _t(table),
                                                  _t(offsets[:-1].astype(np.int64)), mode=mode,
                                                  per_sample_weights=psw).numpy()]
    return ref


def _eb_lookups(args: list) -> int:
    return len(args[1]) * args[0].shape[1]


# --- SpMM / SpMV over Cora (GNN) ------------------------------------------------------------------

def _cora_csr(size: str) -> tuple[np.ndarray, np.ndarray, np.ndarray, int]:
    g = load_cora()
    vals = gcn_normalised(g)
    if size == "small":       # rows 1..12 (105 nonzeros; row 0 is a hub of 168), all columns
        lo, hi = g.offsets[1], g.offsets[13]
        return g.offsets[1:14] - lo, g.indices[lo:hi], vals[lo:hi], g.num_nodes
    return g.offsets, g.indices, vals, g.num_nodes


def _spmm_make(size: str, seed: int) -> list:
    rowptr, col, val, ncols = _cora_csr(size)
    dim = 8 if size == "small" else 16
    x = np.random.default_rng(seed).standard_normal((ncols, dim)).astype(np.float32)
    n = len(rowptr) - 1
    return [rowptr.copy(), col.copy(), val, x, np.array([n], np.int64), np.zeros((n, dim), np.float32)]


def _csr_torch(rowptr, col, val, ncols) -> torch.Tensor:
    with warnings.catch_warnings():           # "Sparse CSR tensor support is in beta state"
        warnings.simplefilter("ignore", UserWarning)
        return torch.sparse_csr_tensor(_t(rowptr), _t(col), _t(val), size=(len(rowptr) - 1, ncols),
                                       check_invariants=True)


def _spmm_reference(args: list) -> list:
    rowptr, col, val, x = args[:4]
    return [(_csr_torch(rowptr, col, val, x.shape[0]) @ _t(x)).numpy()]


def _spmm_sequential(args: list) -> list:
    rowptr, col, val, x = args[:4]
    out = np.zeros((len(rowptr) - 1, x.shape[1]), np.float32)
    for i in range(len(rowptr) - 1):
        for j in range(rowptr[i], rowptr[i + 1]):
            out[i] = out[i] + val[j] * x[col[j]]          # float32: a multiply, then an add
    return [out]


def _spmv_make(size: str, seed: int) -> list:
    rowptr, col, val, ncols = _cora_csr(size)
    x = np.random.default_rng(seed).standard_normal(ncols).astype(np.float32)
    return [rowptr.copy(), col.copy(), val, x, np.zeros(len(rowptr) - 1, np.float32)]


def _spmv_reference(args: list) -> list:
    rowptr, col, val, x = args[:4]
    return [(_csr_torch(rowptr, col, val, x.shape[0]) @ _t(x)[:, None]).numpy()[:, 0]]


def fma_f32(a, b, c) -> np.float32:
    """The float32 fused multiply-add ``a * b + c`` rounded once to nearest even (IEEE 754
    fusedMultiplyAdd, C's ``fmaf``), from the exact rational value: it is rounded to float64
    with round-to-odd (nearest float64, moved one ulp towards the exact value when inexact and
    even), which then rounds to the correctly rounded float32 (53 >= 24 + 2 bits). Rounding the
    exact value to nearest float64 first and then to float32 would round twice."""
    from fractions import Fraction
    a, b, c = float(np.float32(a)), float(np.float32(b)), float(np.float32(c))
    if not all(map(np.isfinite, (a, b, c))):
        return np.float32(a * b + c)
    exact = Fraction(a) * Fraction(b) + Fraction(c)
    d = float(exact)
    if Fraction(d) != exact and not (np.float64(d).view(np.int64) & 1):
        d = float(np.nextafter(d, np.inf if exact > Fraction(d) else -np.inf))
    return np.float32(d)


def csr_fma_sequential(rowptr, col, val, x) -> np.ndarray:
    """``A @ x`` for the CSR matrix ``(rowptr, col, val)`` and a float32 ``x`` (a vector, or a
    matrix column by column): each row accumulated from 0 in CSR order with one
    :func:`fma_f32` per nonzero (``acc = fma(val, x[col], acc)``), the order and rounding of
    ``spmv_csr.mlir`` and of the PyTorch frontend's sparse-CSR x dense kernel."""
    x = np.asarray(x, np.float32)
    out = np.zeros((len(rowptr) - 1,) + x.shape[1:], np.float32)
    for i in range(len(rowptr) - 1):
        for j in range(rowptr[i], rowptr[i + 1]):
            for k in np.ndindex(x.shape[1:]):
                out[(i, *k)] = fma_f32(val[j], x[(col[j], *k)], out[(i, *k)])
    return out


def csr_summation_bound(rowptr, col, val, x) -> np.ndarray:
    """Largest difference (absolute, per output element) between two float32 evaluations of
    ``A @ x`` that each sum a row's ``n`` products in some order, fused or not: each is within
    ``gamma_n * sum |val * x|`` of the exact value (recursive summation, Higham, "Accuracy and
    Stability of Numerical Algorithms", 2nd ed., §4.2; ``gamma_n = n u / (1 - n u)``, ``u = 2^-24``,
    with ``n`` counting the product's rounding too), so two of them are within twice that.
    PyTorch's CPU kernel for sparse CSR @ dense fuses the multiply-add or not depending on the
    processor's vector extension; the compiled kernels are checked against it with this bound."""
    x = np.asarray(x, np.float64)
    out = np.zeros((len(rowptr) - 1,) + x.shape[1:], np.float64)
    u = 2.0 ** -24
    for i in range(len(rowptr) - 1):
        lo, hi = rowptr[i], rowptr[i + 1]
        n = (hi - lo) + 1
        terms = np.abs(np.asarray(val[lo:hi], np.float64).reshape((-1,) + (1,) * (x.ndim - 1))
                       * x[col[lo:hi]])
        out[i] = 2 * (n * u / (1 - n * u)) * terms.sum(axis=0)
    return out


def _spmv_sequential(args: list) -> list:
    rowptr, col, val, x = args[:4]
    return [csr_fma_sequential(rowptr, col, val, x)]


def _spmv_bound(args: list) -> list:
    rowptr, col, val, x = args[:4]
    return [csr_summation_bound(rowptr, col, val, x)]


# --- Knowledge graph (TransE) ---------------------------------------------------------------------

def _transe_make(size: str, seed: int) -> list:
    g = load_cora()
    n, dim, nrel = (24, 8, 8) if size == "small" else (2_000, 32, 64)
    rng = np.random.default_rng(seed)
    triples = transe_triples(g, n, nrel, seed=seed)
    entity = rng.standard_normal((g.num_nodes, dim)).astype(np.float32)
    relation = rng.standard_normal((nrel, dim)).astype(np.float32)
    return [triples.reshape(-1), entity, relation, np.zeros(n, np.float32)]


def _transe_reference(args: list) -> list:
    tri, entity, relation = args[0].reshape(-1, 3), _t(args[1]), _t(args[2])
    h, r, t = (_t(tri[:, k]) for k in range(3))
    return [torch.linalg.vector_norm(entity[h] + relation[r] - entity[t], dim=1).numpy()]


def _transe_sequential(args: list) -> list:
    tri, entity, relation = args[0].reshape(-1, 3), args[1], args[2]
    diff = (entity[tri[:, 0]] + relation[tri[:, 1]]) - entity[tri[:, 2]]   # float32, elementwise
    acc = np.zeros(len(tri), np.float32)
    for d in range(entity.shape[1]):                                       # feature order
        acc = acc + diff[:, d] * diff[:, d]
    return [np.sqrt(acc)]


def _transe_lookups(args: list) -> int:
    return 3 * (len(args[0]) // 3) * args[1].shape[1]


# --- Block-sparse attention: the K/V gather -------------------------------------------------------

def _spattn_make(size: str, seed: int) -> list:
    nq, nk, nrand, bs, dim = (4, 6, 1, 4, 8) if size == "small" else (32, 32, 3, 16, 32)
    rng = np.random.default_rng(seed)
    ptr, idx = block_mask(nq, nk, nrand, seed=seed)
    key = rng.standard_normal((nk * bs, dim)).astype(np.float32)
    value = rng.standard_normal((nk * bs, dim)).astype(np.float32)
    zeros = np.zeros((len(idx) * bs, dim), np.float32)
    return [ptr, idx, key, value, np.int64(bs), zeros, zeros.copy()]


def _spattn_reference(args: list) -> list:
    _, idx, key, value, bs = args[:5]
    rows = (_t(idx)[:, None] * int(bs) + torch.arange(int(bs))[None, :]).reshape(-1)
    return [torch.index_select(_t(key), 0, rows).numpy(), torch.index_select(_t(value), 0, rows).numpy()]


def _spattn_lookups(args: list) -> int:
    return 2 * len(args[1]) * int(args[4]) * args[2].shape[1]


WORKLOADS: dict[str, Workload] = {w.name: w for w in [
    Workload("eb_sum", "EB", "embedding_bag_sum.mlir", _eb_make(False), _eb_reference("sum"), _eb_lookups),
    Workload("eb_mean", "EB", "embedding_bag_mean.mlir", _eb_make(False), _eb_reference("mean"), _eb_lookups),
    Workload("eb_max", "EB", "embedding_bag_max.mlir", _eb_make(False), _eb_reference("max"), _eb_lookups),
    Workload("eb_weighted", "EB", "embedding_bag_weighted.mlir", _eb_make(True), _eb_reference("sum"),
             _eb_lookups),
    Workload("spmm_cora", "SpMM", "spmm_csr.mlir", _spmm_make, _spmm_reference,
             lambda a: len(a[1]) * a[3].shape[1], exact=False, sequential=_spmm_sequential),
    Workload("spmv_csr", "SpMM", "spmv_csr.mlir", _spmv_make, _spmv_reference, lambda a: len(a[1]),
             exact=False, sequential=_spmv_sequential, bound=_spmv_bound),
    Workload("kg_transe", "KG", "transe_score.mlir", _transe_make, _transe_reference, _transe_lookups,
             exact=False, sequential=_transe_sequential),
    Workload("spattn_gather", "SpAttn", "block_sparse_gather.mlir", _spattn_make, _spattn_reference,
             _spattn_lookups),
]}


# --- The DLRM shape of issues 10 and 11 (benchmarks only) ------------------------------------------

DLRM_SHAPE = (100_000, 64, 256, 32)     # rows, dim (f32: 256-byte rows), bags, pooling


def _dlrm_make(size: str, seed: int) -> list:
    """``full``: EmbeddingBag sum over a 100,000 x 64 float32 table (25.6 MB, far beyond a core's
    L2), 256 bags of exactly 32 indices uniform over the rows (``default_rng(seed)``), as
    ``scripts/bench_bandwidth.py``; ``small``: ``eb_sum``'s small input."""
    if size == "small":
        return _eb_make(False)("small", seed)
    rows, dim, nbags, pooling = DLRM_SHAPE
    rng = np.random.default_rng(seed)
    table = rng.standard_normal((rows, dim)).astype(np.float32)
    indices = rng.integers(0, rows, nbags * pooling, dtype=np.int64)
    offsets = np.arange(0, nbags * pooling + 1, pooling, dtype=np.int64)
    return [table, indices, offsets, np.zeros((nbags, dim), np.float32)]


# WORKLOADS (what the tests cover, every class) plus the benchmark-only shapes the scripts accept:
# the DLRM shape, and two dependent index chains (sw.chained_workloads; make report's "chained").
BENCH_WORKLOADS: dict[str, Workload] = {**WORKLOADS, **{w.name: w for w in [
    Workload("dlrm_sum", "EB", "embedding_bag_sum.mlir", _dlrm_make, _eb_reference("sum"), _eb_lookups),
    Workload("hashed_gather", "chain", "hashed_gather.mlir", chained.hashed_gather_make,
             chained.hashed_gather_reference, chained.hashed_gather_lookups),
    Workload("csr_of_csr", "chain", "csr_of_csr.mlir", chained.csr_of_csr_make,
             chained.csr_of_csr_reference, chained.csr_of_csr_lookups,
             sequential=chained.csr_of_csr_sequential),
]}}
