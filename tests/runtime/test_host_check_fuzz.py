"""Randomised test of the host-side argument checks (docs/compiler.md, "Host-side argument checks").

Each run draws a fresh seed (printed, ``EMBER_SEED`` to replay: ``tb/seeds.py``). For every
kernel of ``examples/*.mlir``, compiled for the golden target at -O0 and -O3, it builds valid
small inputs (``sw/workloads.py``'s generators, or a few lines here for the kernels no workload
runs), corrupts one of them at random and runs the kernel:

* an element of an index or offsets array set to -1, to the bound it is checked against, to the
  bound + 1, to a huge value (2**62; 2**31 - 1 for i32 arrays) or to a random value in range;
* an offsets array made decreasing at one place (two neighbours swapped);
* an array one entry short along one axis, or empty along it;
* a scalar argument (a block size, a log2 width, a row count) made larger than the array it
  describes, 0, or negative.

What the corrupted call must give is decided by a plain NumPy loop of the kernel (``_model_*``):
the kernel's own loops over the corrupted inputs, every load and store checked against its
array's shape (MLIR's ``memref.load`` out of bounds is undefined behaviour), a decreasing range
of a loop whose bounds are two loads of one offsets array refused (the compiler gives such loops
``check_order``: the project's semantics is a refusal, not an empty bag), index arithmetic exact
(a product that wraps past 2**64 into range is an error, as the host checks say), and the hash of
``hashed_gather`` mod 2**64. Then:

* the loop touches memory outside an argument (or a decreasing range): the run must be a
  ``ValueError`` that names the corrupted argument (``argN``), raised before the access unit
  starts;
* otherwise, when an index array has an element outside the range its check claims for every
  element (PyTorch refuses an out-of-range index whether or not it is used), or the shapes are
  not those an extent check asks for whether or not its loop runs (``Spec.extents``): that
  ``ValueError``, or the loop's result;
* otherwise the run's results must equal the loop's (bit for bit: the loops compute in the
  kernels' order and types).

Never an ``AccessFault`` (the unit's fault names an address, not the value), never an exception
of another kind, never a result that differs. A negative block size (``block_sparse_gather``'s
``bs``) counts as undefined too: -O3 loads a block's rows as one block of ``bs`` times their
length, so the host refuses it at every level.

Its first runs found six misses, each fixed with a deterministic test beside the other host-check
tests: decreasing offsets (the unit's ``RANGE_ORDER`` fault; kind ``order``), empty offsets of
``embedding_bag_alloc`` (a negative allocation, NumPy's error after the run; kind ``alloc``), a
negative ``bs`` (-O0 ran, -O3 refused it with a message about ``max_block``), ``hashed_gather``'s
``logb``/``logd``/``remap`` (the unit's ``ADDR_RANGE``/``ADDR_OVERFLOW``; kind ``computed``),
``spmm_csr``'s ``out`` shorter than ``nrows[0]`` and ``block_sparse_gather``'s outputs one row
short (the execute side's error after the run). ``python -m pytest
tests/runtime/test_host_check_fuzz.py`` with ``EMBER_SEED=<the printed seed>`` replays a run.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

import numpy as np
import pytest

from sw.compiler import compile_mlir
from sw.chained_workloads import HASH_MULTIPLIER, hashed_gather_make
from sw.runtime.drivers import GoldenTransport, run_kernel
from sw.runtime.kernel import fma32
from sw.workloads import BENCH_WORKLOADS, dlrm_trace
from tb.seeds import fresh_seed, seed_range

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"


# ------------------------------------------------------------------------------------------------
# The kernels as plain loops
# ------------------------------------------------------------------------------------------------

class Undefined(Exception):
    """The kernel's loops over these arguments access memory outside an argument, run a
    decreasing checked range, or shift by an amount MLIR leaves undefined (poison)."""


class TooLong(Exception):
    """The loop would run too long to model (the case is skipped)."""


class Mem:
    """The call's arguments (copies: the kernel writes its outputs in place), every access
    checked; ``budget`` bounds the rows touched."""

    def __init__(self, args: list):
        self.a = [np.array(x, copy=True) if isinstance(x, np.ndarray) else x for x in args]
        self.budget = 200_000

    def _tick(self):
        self.budget -= 1
        if self.budget < 0:
            raise TooLong()

    def ld(self, k: int, *idx):
        self._tick()
        arr = self.a[k]
        for i, n in zip(idx, arr.shape):
            if not 0 <= i < n:
                raise Undefined(f"arg{k}[{', '.join(map(str, idx))}] outside shape {arr.shape}")
        return arr[tuple(int(i) for i in idx)]

    def row(self, k: int, i, n: int) -> np.ndarray:
        """``arr[i, 0:n]`` (a loop from 0 to ``n`` over the second axis), a view."""
        self._tick()
        arr = self.a[k]
        if n <= 0:
            return arr[0:0, 0:0].reshape(0) if arr.ndim == 2 else arr[0:0]
        if not 0 <= i < arr.shape[0] or n > arr.shape[1]:
            raise Undefined(f"arg{k}[{i}, 0:{n}] outside shape {arr.shape}")
        return arr[int(i), :n]

    def span(self, k: int, lo, n: int) -> np.ndarray:
        """``arr[lo:lo + n]`` of a 1-D argument (a loop from 0 to ``n`` over ``lo + d``)."""
        self._tick()
        arr = self.a[k]
        if n <= 0:
            return arr[0:0]
        if lo < 0 or lo + n > arr.shape[0]:
            raise Undefined(f"arg{k}[{lo}:{lo + n}] outside shape {arr.shape}")
        return arr[int(lo):int(lo) + n]

    def ordered(self, k: int, lo, hi) -> range:
        """The range of a loop whose bounds are two loads of argument ``k`` (``check_order``)."""
        if hi < lo:
            raise Undefined(f"decreasing range [{lo}, {hi}) of arg{k}")
        return range(int(lo), int(hi))


def _bag_loop(m: Mem, table: int, indices: int, offsets: int, nbags: int, *, begin, item, end):
    dim = m.a[table].shape[1]
    for b in range(nbags):
        start, stop = int(m.ld(offsets, b)), int(m.ld(offsets, b + 1))
        begin(b, dim)
        for j in m.ordered(offsets, start, stop):
            item(b, j, m.row(table, int(m.ld(indices, j)), dim), dim)
        end(b, dim, start, stop)


def _eb_accumulate(op):
    """embedding_bag_sum / _f64 / _mean's first half / alloc: ``out[b, :dim] op= table[row]``."""
    def model(m: Mem, out: int = 3, nbags: int | None = None, mean: bool = False, weights=None):
        nbags = m.a[out].shape[0] if nbags is None else nbags

        def item(b, j, row, dim):
            acc = m.row(out, b, dim)
            if weights is None:
                acc[:] = op(acc, row)
            else:
                acc[:] = fma32(m.ld(weights, j), row, acc)

        def end(b, dim, start, stop):
            if mean:
                acc = m.row(out, b, dim)
                acc[:] = acc / np.float32(max(stop - start, 1))
        _bag_loop(m, 0, 1, 2, nbags, begin=lambda b, dim: None, item=item, end=end)
        return [m.a[out]]
    return model


def _model_eb_sum(m: Mem):
    return _eb_accumulate(np.add)(m)


def _model_eb_mean(m: Mem):
    return _eb_accumulate(np.add)(m, mean=True)


def _model_eb_weighted(m: Mem):
    return _eb_accumulate(np.add)(m, out=4, weights=3)


def _model_eb_alloc(m: Mem):
    nbags = m.a[2].shape[0] - 1
    if nbags < 0:
        raise Undefined("memref.alloc of -1 rows")
    m.a.append(np.zeros((nbags, m.a[0].shape[1]), np.float32))
    return _eb_accumulate(np.add)(m, out=3, nbags=nbags)


def _model_eb_max(m: Mem):
    out = 3

    def begin(b, dim):
        m.row(out, b, dim)[:] = -np.inf

    def item(b, j, row, dim):
        acc = m.row(out, b, dim)
        acc[:] = np.maximum(acc, row)

    def end(b, dim, start, stop):
        if start == stop:
            m.row(out, b, dim)[:] = 0
    _bag_loop(m, 0, 1, 2, m.a[out].shape[0], begin=begin, item=item, end=end)
    return [m.a[out]]


def _model_eb_half(widen, narrow):
    def model(m: Mem):
        out, acc = 3, [None]

        def begin(b, dim):
            acc[0] = np.zeros(dim, np.float32)

        def item(b, j, row, dim):
            acc[0] = acc[0] + widen(row)

        def end(b, dim, start, stop):
            m.row(out, b, dim)[:] = narrow(acc[0])
        _bag_loop(m, 0, 1, 2, m.a[out].shape[0], begin=begin, item=item, end=end)
        return [m.a[out]]
    return model


def _bf16_widen(bits):
    return (np.asarray(bits, np.uint32) << 16).view(np.float32)


def _bf16_narrow(x):
    """f32 -> bf16 bits, to nearest with ties away from zero (the example's rounding mode 4)."""
    return ((np.asarray(x, np.float32).view(np.uint32) + np.uint32(0x8000)) >> 16).astype(np.uint16)


def _model_eb_i8(m: Mem):
    out, amax = 3, 4

    def item(b, j, row, dim):
        acc = m.row(out, b, dim)
        acc[:] = acc + row.astype(np.int32)

    def end(b, dim, start, stop):
        x = m.row(out, b, dim)
        best = np.int32(0)
        for v in x:
            best = max(best, max(v, np.int32(0) - v))
        m.ld(amax, b)
        m.a[amax][b] = best
    _bag_loop(m, 0, 1, 2, m.a[out].shape[0], begin=lambda b, dim: None, item=item, end=end)
    return [m.a[out], m.a[amax]]


def _model_block_sparse_gather(m: Mem):
    block_ptr, block_idx, key, value, k_out, v_out = 0, 1, 2, 3, 5, 6
    bs = int(m.a[4])
    if bs < 0:          # no rows at -O0, a block of bs * dim elements at -O3: refused (as decreasing ranges)
        raise Undefined(f"block size {bs}")
    dim = m.a[key].shape[1]
    for q in range(m.a[block_ptr].shape[0] - 1):
        start, end = int(m.ld(block_ptr, q)), int(m.ld(block_ptr, q + 1))
        for j in m.ordered(block_ptr, start, end):
            blk = int(m.ld(block_idx, j))
            for r in range(max(bs, 0)):
                row, orow = blk * bs + r, j * bs + r
                k, v = m.row(key, row, dim), m.row(value, row, dim)
                m.row(k_out, orow, dim)[:] = k
                m.row(v_out, orow, dim)[:] = v
    return [m.a[k_out], m.a[v_out]]


def _model_csr_of_csr(m: Mem):
    table, gptr, sptr, items, out = 0, 1, 2, 3, 4
    dim = m.a[table].shape[1]
    for g in range(m.a[out].shape[0]):
        s0, s1 = int(m.ld(gptr, g)), int(m.ld(gptr, g + 1))
        for s in m.ordered(gptr, s0, s1):
            k0, k1 = int(m.ld(sptr, s)), int(m.ld(sptr, s + 1))
            for k in m.ordered(sptr, k0, k1):
                v = m.row(table, int(m.ld(items, k)), dim)
                acc = m.row(out, g, dim)
                acc[:] = acc + v
    return [m.a[out]]


def _model_hashed_gather(m: Mem):
    table, remap, ids, out = 0, 1, 2, 5
    logb, logd = int(m.a[3]), int(m.a[4])
    shift = 64 - logb
    if not 0 <= shift < 64 or not 0 <= logd < 64:
        raise Undefined(f"shift by {shift} or {logd} (poison)")
    dim = m.a[out].shape[1]
    for i in range(m.a[ids].shape[0]):
        prod = (int(m.ld(ids, i)) * HASH_MULTIPLIER) % (1 << 64)
        h = prod >> shift
        h = h - (1 << 64) if h >> 63 else h           # the index is signed
        row = int(m.ld(remap, h))
        base = row << logd if row >= 0 else -((-row) << logd)
        m.row(out, i, dim)[:] = m.span(table, base, dim)
    return [m.a[out]]


def _model_segment_sum(m: Mem):
    data, src, seg, out = 0, 1, 2, 3
    dim = m.a[data].shape[1]
    for i in range(m.a[src].shape[0]):
        r, s = int(m.ld(src, i)), int(m.ld(seg, i))
        v = m.row(data, r, dim)
        acc = m.row(out, s, dim)
        acc[:] = acc + v
    return [m.a[out]]


def _model_spmm(m: Mem):
    rowptr, col, val, x, nrows, out = range(6)
    dim = m.a[x].shape[1]
    for i in range(int(m.ld(nrows, 0))):
        start, end = int(m.ld(rowptr, i)), int(m.ld(rowptr, i + 1))
        for j in m.ordered(rowptr, start, end):
            c, a = int(m.ld(col, j)), m.ld(val, j)
            v = m.row(x, c, dim)
            acc = m.row(out, i, dim)
            acc[:] = acc + a * v
    return [m.a[out]]


def _model_spmv(m: Mem):
    rowptr, col, val, x, y = range(5)
    for i in range(m.a[y].shape[0]):
        start, end = int(m.ld(rowptr, i)), int(m.ld(rowptr, i + 1))
        for j in m.ordered(rowptr, start, end):
            c, a = int(m.ld(col, j)), m.ld(val, j)
            xv = m.ld(x, c)
            m.a[y][i] = fma32(a, xv, m.ld(y, i))
    return [m.a[y]]


def _model_transe(m: Mem):
    triples, entity, relation, out = range(4)
    dim = m.a[entity].shape[1]
    for t in range(m.a[out].shape[0]):
        h, r, tl = (int(m.ld(triples, 3 * t + k)) for k in range(3))
        eh, er, et = m.row(entity, h, dim), m.row(relation, r, dim), m.row(entity, tl, dim)
        diff = (eh + er) - et
        acc = m.ld(out, t)
        for d in range(dim):
            acc = np.float32(acc + diff[d] * diff[d])
        m.a[out][t] = np.sqrt(acc)
    return [m.a[out]]


# ------------------------------------------------------------------------------------------------
# Valid inputs, and what may be corrupted
# ------------------------------------------------------------------------------------------------

def _eb_inputs(rng: np.random.Generator, index_dtype=np.int64, table_dtype=np.float32):
    rows, dim, nbags = int(rng.integers(1, 40)), int(rng.integers(1, 12)), int(rng.integers(1, 10))
    indices, offsets = dlrm_trace(rows, nbags, int(rng.integers(0, 5)), seed=int(rng.integers(1 << 31)))
    table = rng.standard_normal((rows, dim)).astype(np.float32)
    if table_dtype == "bf16":
        table = (table.view(np.uint32) >> 16).astype(np.uint16)
    elif table_dtype == np.int8:
        table = rng.integers(-128, 128, (rows, dim)).astype(np.int8)
    else:
        table = table.astype(table_dtype)
    out_dtype = {"bf16": np.uint16, np.int8: np.int32}.get(table_dtype, table_dtype)
    return [table, indices.astype(index_dtype), offsets.astype(index_dtype),
            np.zeros((nbags, dim), out_dtype)]


def _workload(name: str) -> Callable:
    return lambda rng: BENCH_WORKLOADS[name].make("small", int(rng.integers(1 << 31)))


def _weighted_inputs(rng):
    args = _eb_inputs(rng)
    return args[:3] + [rng.random(len(args[1])).astype(np.float32), args[3]]


def _segment_inputs(rng):
    rows, dim, nseg, n = (int(rng.integers(1, k)) for k in (30, 10, 8, 40))
    return [rng.integers(-1000, 1000, (rows, dim)).astype(np.int32),
            rng.integers(0, rows, n).astype(np.int32), rng.integers(0, nseg, n).astype(np.int32),
            np.zeros((nseg, dim), np.int32)]


def _hashed_inputs(rng):
    args = hashed_gather_make("small", int(rng.integers(1 << 31)))
    args[2] = args[2][:int(rng.integers(1, 24))]                 # fewer ids: shorter loops
    args[5] = np.zeros((len(args[2]), args[5].shape[1]), np.float32)
    return args


def _rows(k: int, axis: int = 0, minus: int = 1):
    """The largest valid value of an index into axis ``axis`` of argument ``k``."""
    return lambda a: a[k].shape[axis] - minus


def _eb_domains():
    return {1: _rows(0), 2: _rows(1, minus=0)}


def _block_ids(a):
    bs = int(a[4])
    return min(len(a[2]), len(a[3])) // bs - 1 if bs > 0 else None


def _remap_rows(a):
    logd, dim = int(a[4]), a[5].shape[1]
    return (len(a[0]) - dim) >> logd if 0 <= logd < 64 and len(a[0]) >= dim else None


def _triples_ids(a):
    pos = np.arange(len(a[0]))
    return np.where(pos % 3 == 1, len(a[2]) - 1, len(a[1]) - 1)


@dataclass(frozen=True)
class Spec:
    """One example: its inputs (``make(rng)``), its loops (``model``), the arrays whose elements
    index something (``domains``: argument -> the largest value every element may take, from the
    arguments, or ``None`` when there is none; 0 is the smallest; ``loose``: those whose domain
    only picks values to try, a count or a hash input, not a claim of the host checks), which of
    them are ordered offsets, the scalar arguments with values to try (``scalars``: argument ->
    values from the arguments), and the shapes the extent checks ask for whether or not the
    loops run (``extents(args)``: a refusal of other shapes is not a miss)."""
    example: str
    make: Callable
    model: Callable
    domains: dict
    ordered: tuple = ()
    scalars: dict | None = None
    loose: tuple = ()            # domains that only pick values (a count, a hash input)
    extents: Callable = lambda a: True


def _wide(*pairs):
    """The shapes the extent checks want whether or not the loops run: axis 1 of each ``m`` at
    least as wide as axis 1 of its ``x`` (a loop from 0 to ``dim(x, 1)`` indexes ``m``)."""
    return lambda a: all(a[m].shape[1] >= a[x].shape[1] for m, x in pairs)


_EB = dict(domains=_eb_domains(), ordered=(2,), extents=_wide((3, 0)))

SPECS = [
    Spec("embedding_bag_sum.mlir", _eb_inputs, _model_eb_sum, **_EB),
    Spec("embedding_bag_mean.mlir", _eb_inputs, _model_eb_mean, **_EB),
    Spec("embedding_bag_max.mlir", _eb_inputs, _model_eb_max, **_EB),
    Spec("embedding_bag_sum_f64.mlir", lambda r: _eb_inputs(r, table_dtype=np.float64),
         _model_eb_sum, **_EB),
    Spec("embedding_bag_sum_f16.mlir", lambda r: _eb_inputs(r, table_dtype=np.float16),
         _model_eb_half(lambda x: x.astype(np.float32), lambda x: x.astype(np.float16)), **_EB),
    Spec("embedding_bag_sum_bf16.mlir", lambda r: _eb_inputs(r, table_dtype="bf16"),
         _model_eb_half(_bf16_widen, _bf16_narrow), **_EB),
    Spec("embedding_bag_sum_i8.mlir",
         lambda r: (lambda a: a + [np.zeros(len(a[3]), np.int32)])(_eb_inputs(r, table_dtype=np.int8)),
         _model_eb_i8, **_EB),
    Spec("embedding_bag_weighted.mlir", _weighted_inputs, _model_eb_weighted,
         {1: _rows(0), 2: lambda a: min(len(a[1]), len(a[3]))}, (2,), extents=_wide((4, 0))),
    Spec("embedding_bag_alloc.mlir", lambda r: _eb_inputs(r, index_dtype=np.int32)[:3], _model_eb_alloc,
         _eb_domains(), (2,)),
    Spec("block_sparse_gather.mlir", _workload("spattn_gather"), _model_block_sparse_gather,
         {0: _rows(1, minus=0), 1: _block_ids}, (0,),
         {4: lambda a: [int(a[4]) + 1, 2 * int(a[4]), len(a[2]) + 1, 0, -1, 2**62]},
         extents=_wide((3, 2), (5, 2), (6, 2))),
    Spec("csr_of_csr.mlir", _workload("csr_of_csr"), _model_csr_of_csr,
         {1: _rows(2, minus=0), 2: _rows(3, minus=0), 3: _rows(0)}, (1, 2), extents=_wide((4, 0))),
    Spec("hashed_gather.mlir", _hashed_inputs, _model_hashed_gather,
         {1: _remap_rows, 2: lambda a: 1 << 40}, (),
         {3: lambda a: [int(a[3]) + 1, int(a[3]) + 2, 0, 64, 65, -1, 2**62],
          4: lambda a: [int(a[4]) + 1, int(a[4]) - 1, 0, 63, 64, -1, 2**62]}, loose=(2,)),
    Spec("segment_sum_i32.mlir", _segment_inputs, _model_segment_sum, {1: _rows(0), 2: _rows(3)},
         extents=lambda a: _wide((3, 0))(a) and len(a[2]) >= len(a[1])),
    Spec("spmm_csr.mlir", _workload("spmm_cora"), _model_spmm,
         {0: lambda a: min(len(a[1]), len(a[2])), 1: _rows(3), 4: lambda a: len(a[0]) - 1}, (0,),
         loose=(4,), extents=lambda a: _wide((5, 3))(a) and (a[4].size == 0 or len(a[5]) >= a[4][0])),
    Spec("spmv_csr.mlir", _workload("spmv_csr"), _model_spmv,
         {0: lambda a: min(len(a[1]), len(a[2])), 1: _rows(3)}, (0,)),
    Spec("transe_score.mlir", _workload("kg_transe"), _model_transe, {0: _triples_ids},
         extents=_wide((2, 1))),
]


def test_every_example_is_covered():
    assert sorted(s.example for s in SPECS) == sorted(p.name for p in EXAMPLES.glob("*.mlir"))


# ------------------------------------------------------------------------------------------------
# Corruptions
# ------------------------------------------------------------------------------------------------

def _huge(dtype) -> int:
    return 2**62 if np.dtype(dtype).itemsize == 8 else int(np.iinfo(dtype).max)


def _set(args: list, k: int, value) -> list:
    return [value if n == k else a for n, a in enumerate(args)]


def corrupt(spec: Spec, args: list, rng: np.random.Generator) -> tuple[list, int, str] | None:
    """``(args', k, what)``: the arguments with argument ``k`` corrupted as ``what`` says, or
    None when the draw finds nothing to corrupt."""
    kinds = ["element"] * 4 + ["decreasing"] * (2 if spec.ordered else 0) + ["short"] * 2 + ["empty"] + \
        ["scalar"] * (2 if spec.scalars else 0)
    kind = kinds[int(rng.integers(len(kinds)))]
    arrays = [n for n, a in enumerate(args) if isinstance(a, np.ndarray) and a.ndim > 0]
    if kind == "element":
        k = int(rng.choice(list(spec.domains)))
        a = args[k]
        if a.size == 0:
            return None
        pos = tuple(int(rng.integers(n)) for n in a.shape)
        hi = spec.domains[k](args)
        hi = int(np.asarray(hi).reshape(-1)[np.ravel_multi_index(pos, a.shape)]) if np.ndim(hi) else hi
        hi = int(rng.integers(0, 64)) if hi is None else hi
        value = int(rng.choice([-1, hi - 1, hi, hi + 1, hi + 2, _huge(a.dtype), int(rng.integers(0, hi + 1))]))
        info = np.iinfo(a.dtype)
        value = min(max(value, info.min), info.max)
        b = a.copy()
        b[pos] = value
        return _set(args, k, b), k, f"arg{k}[{', '.join(map(str, pos))}] = {value} (was {a[pos]})"
    if kind == "decreasing":
        k = int(rng.choice(spec.ordered))
        a = args[k].copy()
        if a.size < 2:
            return None
        up = np.flatnonzero(a[:-1] < a[1:])
        p = int(rng.choice(up)) if up.size else int(rng.integers(a.size - 1))
        if up.size:
            a[p], a[p + 1] = a[p + 1], a[p]
        else:
            a[p + 1] = a[p] - 1
        return _set(args, k, a), k, f"arg{k} decreasing at {p}: {a[p]}, {a[p + 1]}"
    if kind in ("short", "empty"):
        k = int(rng.choice(arrays))
        a = args[k]
        axis = int(rng.integers(a.ndim))
        if a.shape[axis] == 0:
            return None
        keep = a.shape[axis] - 1 if kind == "short" else 0
        return _set(args, k, np.ascontiguousarray(np.take(a, range(keep), axis=axis))), k, \
            f"arg{k} {a.shape} -> {keep} entries along axis {axis}"
    k = int(rng.choice(list(spec.scalars)))
    value = int(rng.choice(spec.scalars[k](args)))
    return _set(args, k, type(args[k])(value)), k, f"arg{k} = {value} (was {args[k]})"


def _domain_violated(spec: Spec, args: list) -> bool:
    """An index array has an element outside its domain (or an ordered array decreases): the host
    may refuse it although the loops do not reach it (as PyTorch checks every index)."""
    for k, hi in spec.domains.items():
        if k in spec.loose:
            continue
        hi = hi(args)
        a = np.asarray(args[k])
        if hi is None or a.size == 0:
            continue
        if (a < 0).any() or (a > hi).any():
            return True
    return any(np.asarray(args[k]).size > 1 and (np.diff(args[k]) < 0).any() for k in spec.ordered)


# ------------------------------------------------------------------------------------------------
# Runs
# ------------------------------------------------------------------------------------------------

class _Recording(GoldenTransport):
    """The golden model, noting whether the access unit was started."""
    started = False

    def run(self, program, memory, args):
        self.started = True
        return super().run(program, memory, args)


def _names(message: str, k: int, name: str) -> bool:
    return re.search(rf"\barg{k}\b", message) is not None or re.search(rf"\b{re.escape(name)}\b", message) is not None


def _same(got, want) -> bool:
    got, want = np.asarray(got), np.asarray(want)
    if got.shape != want.shape or got.dtype != want.dtype:
        return False
    return bool(np.array_equal(got, want, equal_nan=want.dtype.kind == "f"))


def check_case(spec: Spec, kernel, args: list, k: int, what: str) -> str | None:
    """None when the run of ``kernel`` on ``args`` (argument ``k`` corrupted as ``what``) gives
    what the loops say (module docstring), else what went wrong."""
    try:
        want = spec.model(Mem(args))
        undefined = None
    except Undefined as e:
        want, undefined = None, str(e)
    except TooLong:
        return None
    may_refuse = undefined is not None or _domain_violated(spec, args) or not spec.extents(args)
    transport = _Recording(kernel.limits)
    name = kernel.params[k].name
    try:
        got = run_kernel(kernel, [a.copy() if isinstance(a, np.ndarray) else a for a in args], transport).results
    except ValueError as e:
        if transport.started:
            return f"ValueError after the access unit started: {e}"
        if not may_refuse:
            return f"refused a valid input: {e}"
        if not _names(str(e), k, name):
            return f"ValueError that does not name arg{k} ({name}): {e}"
        return None
    except Exception as e:        # noqa: BLE001 - AccessFault, IndexError, ... are all misses
        return f"{type(e).__name__} ({'undefined: ' + undefined if undefined else 'defined'}): {e}"
    if undefined is not None:
        return f"ran (no ValueError) although {undefined}"
    for n, (g, w) in enumerate(zip(got, want)):
        if not _same(g, w):
            return f"result {n} differs from the loop's"
    return None


_KERNELS: dict = {}


def _kernel(example: str, opt_level: int):
    key = (example, opt_level)
    if key not in _KERNELS:
        _KERNELS[key] = compile_mlir((EXAMPLES / example).read_text(), filename=example, opt_level=opt_level)
    return _KERNELS[key]


#: Corruptions per kernel and -O level (each run also checks the loops on 3 valid inputs): about
#: 7-9 s a level on 2 cores (18-22 s for the file, imports included).
CASES = 64


def _run(opt_level: int, base: int, cases: int) -> list[str]:
    """What went wrong for the seeds ``base`` .. ``base + cases - 1`` at ``-O{opt_level}``."""
    failures = []
    for number, spec in enumerate(SPECS):
        kernel = _kernel(spec.example, opt_level)
        for n, seed in enumerate(seed_range(base, cases)):
            rng = np.random.default_rng([seed, number])
            args = spec.make(rng)
            if n < 3:                     # the loops agree with the kernel on valid inputs
                found = check_case(spec, kernel, args, 0, "valid")
                assert found is None, f"{spec.example} -O{opt_level}, seed {seed}, valid input: {found}"
            case = corrupt(spec, args, rng)
            if case is None:
                continue
            bad, k, what = case
            found = check_case(spec, kernel, bad, k, what)
            if found is not None:
                failures.append(f"{spec.example} -O{opt_level}, seed {seed}, {what}: {found}")
    return failures


@pytest.mark.parametrize("opt_level", [0, 3])
def test_corrupted_inputs_are_refused_naming_the_argument_or_computed_right(opt_level):
    base = fresh_seed(f"host_check_fuzz -O{opt_level}")
    failures = _run(opt_level, base, CASES)
    assert not failures, f"EMBER_SEED={base}:\n" + "\n".join(failures)
