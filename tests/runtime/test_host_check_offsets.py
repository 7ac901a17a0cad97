"""The host's extent check of an affine read ``a[i + c]`` (sw/compiler/backend/host_checks.py):
a loop from 0 to ``n`` that reads ``offsets[b + 1]`` / ``rowptr[i + 1]`` needs ``n + 1`` entries.

Before the check, offsets of ``nbags`` entries (one short) ran into the access unit and stopped
with fault ADDR_RANGE (an ``AccessFault``); now a ``ValueError`` names the argument, its length
and the length it needs before the unit starts. The right length still runs and matches PyTorch
(embedding bag) and a dense NumPy product (SpMV). The same file tests kind ``alloc``: an
allocation of ``dim(offsets) - 1`` rows (``embedding_bag_alloc.mlir``) or of a scalar's rows must
not get a negative size."""

from pathlib import Path

import numpy as np
import pytest
import torch

from sw.compiler import compile_mlir
from sw.runtime.drivers import run_kernel
from tb.seeds import fresh_seed

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"


def _kernel(name: str, opt_level: int):
    return compile_mlir((EXAMPLES / name).read_text(), filename=name, opt_level=opt_level)


def _bag_inputs(rng, nbags: int):
    rows, dim = int(rng.integers(2, 40)), int(rng.integers(1, 20))
    table = rng.standard_normal((rows, dim)).astype(np.float32)
    lengths = rng.integers(0, 6, nbags)
    offsets = np.concatenate([[0], np.cumsum(lengths)]).astype(np.int64)     # nbags + 1 entries
    indices = rng.integers(0, rows, int(offsets[-1]), dtype=np.int64)
    return table, indices, offsets, np.zeros((nbags, dim), np.float32)


@pytest.mark.parametrize("opt_level", [0, 3])
def test_embedding_bag_offsets_one_short_are_refused_before_the_unit_runs(opt_level):
    rng = np.random.default_rng(fresh_seed(f"embedding bag offsets, -O{opt_level}"))
    kernel = _kernel("embedding_bag_sum.mlir", opt_level)
    nbags = int(rng.integers(1, 12))
    table, indices, offsets, out = _bag_inputs(rng, nbags)

    got = run_kernel(kernel, [table, indices, offsets, out.copy()], "golden")
    expected = torch.nn.functional.embedding_bag(torch.from_numpy(indices), torch.from_numpy(table),
                                                 torch.from_numpy(offsets), mode="sum",
                                                 include_last_offset=True).numpy()
    np.testing.assert_allclose(got.results[0], expected, rtol=1e-5, atol=1e-5)

    with pytest.raises(ValueError) as info:
        run_kernel(kernel, [table, indices, offsets[:nbags].copy(), out.copy()], "golden")
    assert str(info.value) == (
        f"arg2 (offsets) has {nbags} entries along axis 0, fewer than the {nbags + 1} that the loop at "
        f"embedding_bag_sum.mlir:6:3 reads (it runs over {nbags}, the size of arg3 (out) along axis 0, "
        f"and reads entry i + 1)")


def test_embedding_bag_of_no_bags_needs_no_offsets():
    """The loop does not run for 0 bags: it reads no offsets, so none are required."""
    kernel = _kernel("embedding_bag_sum.mlir", 3)
    table = np.ones((3, 4), np.float32)
    empty = np.zeros(0, np.int64)
    kernel.check_arguments([table, empty, empty, np.zeros((0, 4), np.float32)])


def _csr(rng, n: int, ncols: int):
    dense = rng.standard_normal((n, ncols)).astype(np.float32)
    dense[rng.random((n, ncols)) < 0.6] = 0
    rowptr = np.concatenate([[0], np.cumsum((dense != 0).sum(1))]).astype(np.int64)
    rows, col = np.nonzero(dense)
    return dense, rowptr, col.astype(np.int64), dense[rows, col]


@pytest.mark.parametrize("opt_level", [0, 3])
def test_spmv_rowptr_one_short_is_refused_before_the_unit_runs(opt_level):
    rng = np.random.default_rng(fresh_seed(f"spmv rowptr, -O{opt_level}"))
    kernel = _kernel("spmv_csr.mlir", opt_level)
    n, ncols = int(rng.integers(1, 16)), int(rng.integers(1, 16))
    dense, rowptr, col, val = _csr(rng, n, ncols)
    x = rng.standard_normal(ncols).astype(np.float32)

    got = run_kernel(kernel, [rowptr, col, val, x, np.zeros(n, np.float32)], "golden")
    np.testing.assert_allclose(got.results[0], dense.astype(np.float64) @ x, rtol=1e-4, atol=1e-5)

    with pytest.raises(ValueError) as info:
        run_kernel(kernel, [rowptr[:n].copy(), col, val, x, np.zeros(n, np.float32)], "golden")
    assert str(info.value) == (
        f"arg0 (rowptr) has {n} entries along axis 0, fewer than the {n + 1} that the loop at "
        f"spmv_csr.mlir:10:3 reads (it runs over {n}, the size of arg4 (y) along axis 0, "
        f"and reads entry i + 1)")


@pytest.mark.parametrize("opt_level", [0, 3])
def test_embedding_bag_alloc_of_no_offsets_is_refused_before_the_unit_runs(opt_level):
    """``embedding_bag_alloc.mlir`` allocates ``dim(offsets) - 1`` bags (kind ``alloc``): empty
    offsets would allocate -1 rows. It was a ValueError of NumPy ('negative dimensions are not
    allowed') from the execute side, after the unit had run, naming no argument (found by
    tests/runtime/test_host_check_fuzz.py). One offset is no bag."""
    kernel = _kernel("embedding_bag_alloc.mlir", opt_level)
    table = np.ones((4, 3), np.float32)
    none = np.zeros(0, np.int32)
    got = run_kernel(kernel, [table, none, np.zeros(1, np.int32)], "golden")
    assert got.results[0].shape == (0, 3)
    with pytest.raises(ValueError) as info:
        run_kernel(kernel, [table, none, none], "golden")
    assert str(info.value) == (
        "arg2 (offsets) has 0 entries along axis 0, fewer than the 1 that the allocation at "
        "embedding_bag_alloc.mlir:12:3 needs (the size of its axis 0 is -1, the size of arg2 "
        "(offsets) along axis 0 minus 1)")


SCALAR_ALLOC = """\
func.func @gather_n(%table: memref<?x?xf32>, %idx: memref<?xindex>, %n: index) -> memref<?x?xf32> {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %dim = memref.dim %table, %c1 : memref<?x?xf32>
  %out = memref.alloc(%n, %dim) : memref<?x?xf32>
  scf.for %i = %c0 to %n step %c1 {
    %r = memref.load %idx[%i] : memref<?xindex>
    scf.for %d = %c0 to %dim step %c1 {
      %v = memref.load %table[%r, %d] : memref<?x?xf32>
      memref.store %v, %out[%i, %d] : memref<?x?xf32>
    }
  }
  return %out : memref<?x?xf32>
}
"""


def test_a_negative_scalar_size_of_an_allocation_is_refused():
    kernel = compile_mlir(SCALAR_ALLOC, filename="g.mlir")
    table = np.arange(6, dtype=np.float32).reshape(3, 2)
    idx = np.array([2, 0], np.int64)
    np.testing.assert_array_equal(run_kernel(kernel, [table, idx, 2], "golden").results[0], table[[2, 0]])
    assert run_kernel(kernel, [table, idx, 0], "golden").results[0].shape == (0, 2)
    with pytest.raises(ValueError) as info:
        run_kernel(kernel, [table, idx, -1], "golden")
    assert str(info.value) == ("arg2 (n) = -1 is less than 0: it is a size of the allocation at g.mlir:5:3 "
                               "(the size of its axis 0 is -1, the value of arg2 (n))")
