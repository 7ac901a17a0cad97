"""The host's order check (kind ``order``, sw/compiler/backend/host_checks.py): a loop from
``A[i]`` to ``A[i + 1]`` (offsets, row pointers) must not run backwards.

The compiler gives such loops ``check_order`` and the access unit stops on a decreasing pair with
fault ``RANGE_ORDER`` (an ``AccessFault`` that names neither the position nor the values; found
by tests/runtime/test_host_check_fuzz.py). Now a ``ValueError`` names the argument, both
positions and values and the loop, before the unit starts. Only the pairs the kernel reads are
checked: ``i`` below the trip count the host knows, or inside the ranges of the enclosing loop
(``csr_of_csr.mlir``'s ``sptr[s]``, ``sptr[s + 1]`` for ``s`` from ``gptr[g]`` to
``gptr[g + 1]``); equal neighbours (an empty bag) pass.
"""

from pathlib import Path

import numpy as np
import pytest

from sw.compiler import compile_mlir
from sw.runtime.drivers import run_kernel
from sw.workloads import BENCH_WORKLOADS

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"


def _kernel(name: str, opt_level: int = 0):
    return compile_mlir((EXAMPLES / name).read_text(), filename=name, opt_level=opt_level)


@pytest.mark.parametrize("opt_level", [0, 3])
def test_decreasing_offsets_are_refused_before_the_unit_runs(opt_level):
    kernel = _kernel("embedding_bag_sum.mlir", opt_level)
    table = np.arange(12, dtype=np.float32).reshape(4, 3)
    indices = np.array([0, 1, 2, 3, 1], np.int64)
    offsets = np.array([0, 2, 2, 5], np.int64)                    # an empty bag: equal neighbours
    got = run_kernel(kernel, [table, indices, offsets, np.zeros((3, 3), np.float32)], "golden")
    np.testing.assert_array_equal(got.results[0], [table[0] + table[1], 0 * table[0],
                                                   table[2] + table[3] + table[1]])
    bad = np.array([0, 3, 2, 5], np.int64)                        # bag 1 would run from 3 to 2
    with pytest.raises(ValueError) as info:
        run_kernel(kernel, [table, indices, bad, np.zeros((3, 3), np.float32)], "golden")
    assert str(info.value) == (
        "arg2 (offsets)[2] = 2 is less than arg2 (offsets)[1] = 3: they are the upper and lower "
        "bound of the loop at embedding_bag_sum.mlir:10:5 (entries i + 1 and i of arg2 (offsets) "
        "for i < 3, the size of arg3 (out) along axis 0), which must not run backwards")
    # a decreasing pair past the bags the loop runs over is not read
    kernel.check_arguments([table, indices, np.array([0, 2, 2, 5, 1], np.int64),
                            np.zeros((3, 3), np.float32)])


@pytest.mark.parametrize("opt_level", [0, 3])
def test_row_pointers_of_a_loaded_row_count_are_checked_up_to_it(opt_level):
    """``spmm_csr.mlir`` runs over ``nrows[0]`` rows: the pairs up to it are checked."""
    kernel = _kernel("spmm_csr.mlir", opt_level)
    rowptr, col, val, x, nrows, out = BENCH_WORKLOADS["spmm_cora"].make("small", 3)
    bad = rowptr.copy()
    bad[5], bad[6] = rowptr[6], rowptr[5]
    assert bad[5] > bad[6]
    with pytest.raises(ValueError, match=rf"^arg0 \(rowptr\)\[6\] = {bad[6]} is less than arg0 "
                                         rf"\(rowptr\)\[5\] = {bad[5]}: they are the upper and lower "
                                         r"bound of the loop at spmm_csr.mlir:13:5 \(entries i \+ 1 "
                                         r"and i of arg0 \(rowptr\) for i < 12, the value of arg4 "
                                         r"\(nrows\)\[0\]\), which must not run backwards$"):
        run_kernel(kernel, [bad, col, val, x, nrows, out.copy()], "golden")
    kernel.check_arguments([bad, col, val, x, np.array([5], np.int64), out])     # rows 0..4 only


@pytest.mark.parametrize("opt_level", [0, 3])
def test_inner_offsets_are_checked_inside_the_outer_ranges(opt_level):
    """``csr_of_csr.mlir``: ``sptr[s] <= sptr[s + 1]`` for the sessions ``s`` of the groups
    (``gptr[g] <= s < gptr[g + 1]``, ``g < ngroups``); ``gptr`` itself for ``g < ngroups``."""
    kernel = _kernel("csr_of_csr.mlir", opt_level)
    table = np.arange(8, dtype=np.float32).reshape(4, 2)
    items = np.array([0, 1, 2, 3], np.int64)
    gptr = np.array([0, 2, 2], np.int64)                          # sessions 0, 1; group 1 empty
    sptr = np.array([0, 3, 4, 1], np.int64)                       # sptr[2:4] (session 2) unread
    got = run_kernel(kernel, [table, gptr, sptr, items, np.zeros((2, 2), np.float32)], "golden")
    np.testing.assert_array_equal(got.results[0], [table.sum(0), [0, 0]])
    bad = np.array([0, 3, 2, 4], np.int64)                        # session 1 from 3 to 2
    with pytest.raises(ValueError) as info:
        run_kernel(kernel, [table, gptr, bad, items, np.zeros((2, 2), np.float32)], "golden")
    assert str(info.value) == (
        "arg2 (sptr)[2] = 2 is less than arg2 (sptr)[1] = 3: they are the upper and lower bound of "
        "the loop at csr_of_csr.mlir:18:7 (entries i + 1 and i of arg2 (sptr) for each i from "
        "arg1 (gptr)[g] to arg1 (gptr)[g + 1], g < 2, the size of arg4 (out) along axis 0), which "
        "must not run backwards")
    with pytest.raises(ValueError, match=r"^arg1 \(gptr\)\[2\] = 1 is less than arg1 \(gptr\)\[1\] "
                                         r"= 2: they are the upper and lower bound of the loop at "
                                         r"csr_of_csr.mlir:14:5 \(entries i \+ 1 and i of arg1 "
                                         r"\(gptr\) for i < 2, "):
        run_kernel(kernel, [table, np.array([0, 2, 1], np.int64), sptr, items,
                            np.zeros((2, 2), np.float32)], "golden")


def test_shipped_inputs_pass():
    for name in ("eb_sum", "eb_weighted", "spmm_cora", "spmv_csr", "spattn_gather", "csr_of_csr"):
        w = BENCH_WORKLOADS[name]
        kernel = _kernel(w.example)
        for size in ("small", "full"):
            kernel.check_arguments(w.make(size, 1))
