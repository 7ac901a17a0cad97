"""Benchmark inputs with dependent index chains: an index read through another index.

Issue 10 asks that "an index read through another index ... is fetched ahead like the affine
ones", so that a chain costs one memory latency per chain, not per element. These two kernels of
``examples/`` are such chains; ``sw.workloads.BENCH_WORKLOADS`` registers them (``hashed_gather``,
``csr_of_csr``) so that ``scripts/bench_compiler.py`` and ``make report``'s ``chained`` step
measure them on the RTL (a regression of 36 % on ``hashed_gather`` went unseen for four sessions
because no benchmark ran it: ``docs/performance.md``, "``hashed_gather`` re-measured").

=================  ==========================================  ===================================
name               kernel                                       chain
=================  ==========================================  ===================================
``hashed_gather``  ``hashed_gather.mlir``: ``out[i] =           ``ids[i]`` -> multiplicative hash ->
                   table[remap[h(ids[i])]]``, 1-D table of       ``remap[h]`` -> a row (the chain
                   ``2**logd``-element f32 rows                  engine's case, ``docs/rtl.md`` §2.3)
``csr_of_csr``     ``csr_of_csr.mlir``: ``out[g]`` = the sum     ``gptr[g]`` -> ``sptr[s]`` ->
                   of the rows of every item of every session   ``items[k]`` -> a row (layers
                   of group ``g``                                 nested three deep)
=================  ==========================================  ===================================

Each ``*_make(size, seed)`` returns the kernel's positional arguments (NumPy; ``"small"`` for
RTL tests, ``"full"`` for benchmarks); each ``*_reference(args)`` the expected results computed
without the compiler (NumPy's uint64 arithmetic and ``torch.index_select`` for the gather, which
copies: bit for bit; ``torch.nn.functional.embedding_bag(mode="sum")`` for the groups, which
sums each group's rows in index order as the kernel does, unweighted, so an FMA by 1.0 would
round as the add; compared bit for bit, as ``eb_sum`` is, and re-run under PyTorch's older CPU
kernels by ``tests/compiler/test_cpu_capabilities.py``); ``*_sequential(args)`` the kernel's
own order in NumPy float32 (bit for bit, the order ours); ``*_lookups(args)`` the gathered
elements.
"""

from __future__ import annotations

import numpy as np
import torch

__all__ = ["HASH_MULTIPLIER", "hashed_gather_make", "hashed_gather_reference", "hashed_gather_lookups",
           "csr_of_csr_make", "csr_of_csr_reference", "csr_of_csr_sequential", "csr_of_csr_lookups"]

#: The hash's multiplier in ``examples/hashed_gather.mlir`` (Knuth's 2**64 / golden ratio).
HASH_MULTIPLIER = 0x9E3779B97F4A7C15

# size -> (table rows, log2 of the row width, log2 of the buckets, ids): "full" is the input of
# docs/performance.md, "A row of a flattened table" (512 lookups of 256-byte rows out of 20,000).
_HASHED_SIZES = {"small": (50, 3, 6, 64), "full": (20_000, 6, 12, 512)}
# size -> (table rows, dim, sessions, mean items per session, mean sessions per group)
_CSR_SIZES = {"small": (64, 8, 24, 4, 2), "full": (10_000, 16, 1_024, 8, 4)}


def _hash(ids: np.ndarray, logb: int) -> np.ndarray:
    """``(ids * HASH_MULTIPLIER mod 2**64) >> (64 - logb)`` as the kernel computes it (unsigned)."""
    product = ids.astype(np.uint64) * np.uint64(HASH_MULTIPLIER)      # wraps mod 2**64
    return (product >> np.uint64(64 - logb)).astype(np.int64)


def hashed_gather_make(size: str, seed: int) -> list:
    """``[table f32 (rows << logd,), remap int64 (2**logb,), ids int64 (n,), logb, logd,
    out f32 (n, 2**logd) zeros]``: ids uniform over [0, 2**40) as in the performance note,
    ``remap`` uniform over the rows (``default_rng(seed)``)."""
    rows, logd, logb, n = _HASHED_SIZES[size]
    rng = np.random.default_rng(seed)
    table = rng.standard_normal(rows << logd).astype(np.float32)
    remap = rng.integers(0, rows, 1 << logb).astype(np.int64)
    ids = rng.integers(0, 2**40, n).astype(np.int64)
    return [table, remap, ids, logb, logd, np.zeros((n, 1 << logd), np.float32)]


def hashed_gather_reference(args: list) -> list:
    """``[out f32 (n, 2**logd)]``: the rows ``remap[h(ids)]`` of the table seen as
    ``(rows, 2**logd)``, gathered with ``torch.index_select``."""
    table, remap, ids, logb, logd = args[:5]
    rows = remap[_hash(ids, int(logb))]
    view = torch.from_numpy(np.ascontiguousarray(table)).reshape(-1, 1 << int(logd))
    return [torch.index_select(view, 0, torch.from_numpy(rows)).numpy()]


def hashed_gather_lookups(args: list) -> int:
    return len(args[2]) << int(args[4])


def _cut(total: int, mean: int, rng: np.random.Generator) -> np.ndarray:
    """Offsets ``(m + 1,)`` from 0 to ``total`` of parts with lengths uniform in [0, 2 * mean]
    (the last part takes what is left), so some parts are empty as in real traces."""
    lengths = []
    while sum(lengths) < total:
        lengths.append(int(rng.integers(0, 2 * mean + 1)))
    lengths[-1] -= sum(lengths) - total
    return np.concatenate([[0], np.cumsum(lengths)]).astype(np.int64)


def csr_of_csr_make(size: str, seed: int) -> list:
    """``[table f32 (rows, dim), gptr int64 (groups + 1,), sptr int64 (sessions + 1,),
    items int64 (L,), out f32 (groups, dim) zeros]``: items from ``sw.workloads.dlrm_trace``
    (Meta's reuse histogram), its bags the sessions, groups of sessions cut at random."""
    from .workloads import dlrm_trace
    rows, dim, sessions, per_session, per_group = _CSR_SIZES[size]
    rng = np.random.default_rng(seed)
    table = rng.standard_normal((rows, dim)).astype(np.float32)
    items, sptr = dlrm_trace(rows, sessions, per_session, seed=seed)
    gptr = _cut(sessions, per_group, rng)
    return [table, gptr, sptr, items, np.zeros((len(gptr) - 1, dim), np.float32)]


def csr_of_csr_reference(args: list) -> list:
    """``[out f32 (groups, dim)]``: a group's items are ``items[sptr[gptr[g]] : sptr[gptr[g+1]]]``,
    summed as one EmbeddingBag."""
    table, gptr, sptr, items = args[:4]
    offsets = torch.from_numpy(sptr[gptr[:-1]].astype(np.int64))
    return [torch.nn.functional.embedding_bag(torch.from_numpy(items.astype(np.int64)),
                                              torch.from_numpy(table), offsets, mode="sum").numpy()]


def csr_of_csr_sequential(args: list) -> list:
    """``[out f32 (groups, dim)]`` summed in the kernel's order, group, session, item, in float32."""
    table, gptr, sptr, items = args[:4]
    out = np.zeros((len(gptr) - 1, table.shape[1]), np.float32)
    for g in range(len(gptr) - 1):
        for k in range(sptr[gptr[g]], sptr[gptr[g + 1]]):
            out[g] += table[items[k]]
    return [out]


def csr_of_csr_lookups(args: list) -> int:
    return len(args[3]) * args[0].shape[1]
