"""The dependent-index-chain benchmarks (``sw/chained_workloads.py``): inputs, references and the
compiled kernels on the golden model.

The references are checked against computations that share nothing with them (the hash in
Python's unbounded integers, the groups summed element by element), the inputs against the
shapes the docstrings promise, and the kernels at -O0 and -O3 against the references through
``Workload.check`` (which must also reject a changed result)."""

from __future__ import annotations

import numpy as np
import pytest

from sw import chained_workloads as chained
from sw.compiler import compile_mlir
from sw.runtime.drivers import run_kernel
from sw.workloads import BENCH_WORKLOADS, WORKLOADS

NAMES = ["hashed_gather", "csr_of_csr"]


def _copy(args):
    return [a.copy() if hasattr(a, "copy") else a for a in args]


def test_registered_for_the_benchmarks_only():
    for name in NAMES:
        assert name in BENCH_WORKLOADS and name not in WORKLOADS
        assert BENCH_WORKLOADS[name].path.exists()


@pytest.mark.parametrize("size", ["small", "full"])
def test_hashed_gather_reference_is_the_hash_in_python_integers(size):
    from tb.seeds import fresh_seed
    args = chained.hashed_gather_make(size, fresh_seed(f"hashed_gather {size}"))
    table, remap, ids, logb, logd, out = args
    assert out.shape == (len(ids), 1 << logd) and not out.any()
    assert len(remap) == 1 << logb and 0 <= remap.min() and remap.max() < len(table) >> logd
    got, = chained.hashed_gather_reference(args)
    rows = table.reshape(-1, 1 << logd)
    for i in range(0, len(ids), 7):
        h = (int(ids[i]) * chained.HASH_MULTIPLIER) % 2**64 >> (64 - logb)
        assert np.array_equal(got[i], rows[remap[h]]), i
    assert chained.hashed_gather_lookups(args) == out.size


@pytest.mark.parametrize("size", ["small", "full"])
def test_csr_of_csr_inputs_are_nested_csr_with_empty_parts(size):
    from tb.seeds import fresh_seed
    args = chained.csr_of_csr_make(size, fresh_seed(f"csr_of_csr {size}"))
    table, gptr, sptr, items, out = args
    assert gptr[0] == 0 and gptr[-1] == len(sptr) - 1 and (np.diff(gptr) >= 0).all()
    assert sptr[0] == 0 and sptr[-1] == len(items) and (np.diff(sptr) >= 0).all()
    assert 0 <= items.min() and items.max() < len(table)
    assert out.shape == (len(gptr) - 1, table.shape[1]) and not out.any()
    if size == "full":          # real traces have empty groups and sessions
        assert (np.diff(gptr) == 0).any() and (np.diff(sptr) == 0).any()
    assert chained.csr_of_csr_lookups(args) == len(items) * table.shape[1]


def test_csr_of_csr_references_agree_bit_for_bit_and_sum_each_group():
    from tb.seeds import fresh_seed
    args = chained.csr_of_csr_make("full", fresh_seed("csr_of_csr references"))
    table, gptr, sptr, items = args[:4]
    torch_ref, = chained.csr_of_csr_reference(args)
    seq, = chained.csr_of_csr_sequential(args)
    np.testing.assert_array_equal(torch_ref, seq)
    for g in (0, len(gptr) // 2, len(gptr) - 2):      # in float64, per group: close, not equal
        lo, hi = sptr[gptr[g]], sptr[gptr[g + 1]]
        want = table[items[lo:hi]].astype(np.float64).sum(axis=0)
        np.testing.assert_allclose(seq[g], want, rtol=1e-5, atol=1e-5)
    empty = np.flatnonzero(sptr[gptr[1:]] == sptr[gptr[:-1]])
    assert len(empty) and not seq[empty].any()


@pytest.mark.parametrize("level", [0, 3])
@pytest.mark.parametrize("name", NAMES)
def test_kernels_on_the_golden_model_match_the_references(name, level):
    from tb.seeds import fresh_seed
    w = BENCH_WORKLOADS[name]
    args = w.make("small", fresh_seed(f"{name} -O{level}"))
    kernel = compile_mlir(w.path.read_text(), filename=w.example, opt_level=level)
    got = run_kernel(kernel, _copy(args), "golden")
    w.check(_copy(args), got.results)
    wrong = [r.copy() for r in got.results]
    wrong[0].reshape(-1)[3] += 1.0
    with pytest.raises(AssertionError):
        w.check(_copy(args), wrong)


@pytest.mark.parametrize("name", NAMES)
def test_full_inputs_at_O3_on_the_golden_model(name):
    w = BENCH_WORKLOADS[name]
    args = w.make("full", 0)
    kernel = compile_mlir(w.path.read_text(), filename=w.example, opt_level=3)
    w.check(_copy(args), run_kernel(kernel, _copy(args), "golden").results)
