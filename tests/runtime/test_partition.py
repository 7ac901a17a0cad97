"""Splitting a call by batch (``sw/runtime/partition.py``) on the golden model: every unit's slice,
run from the one shared image with its own registers, gives tokens that execute to the slice's
results; concatenated they equal PyTorch (EmbeddingBag: bit for bit; SpMM: the sequential
float32 reference of ``sw.workloads``, bit for bit)."""

from pathlib import Path

import numpy as np
import pytest
import torch

from sw.compiler import compile_mlir
from sw.runtime.execute import execute_tokens
from sw.runtime.golden import run_golden
from sw.runtime.partition import (batch_ranges, shared_image, split_csr, split_embedding_bag)
from tb.seeds import fresh_seed

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"


def _kernel(name):
    path = EXAMPLES / name
    return compile_mlir(path.read_text(), filename=path.name, opt_level=3)


def _run_units(kernel, unit_args, shared):
    image, regs = shared_image(kernel, unit_args, shared=shared)
    program = kernel.program.encode()
    for args, r in zip(unit_args, regs):
        g = run_golden(program, image.data, r, limits=kernel.limits)
        assert g.fault_code == 0
        execute_tokens(kernel, args, g.data_tokens, g.control_tokens, None)
    return image


def test_batch_ranges():
    assert batch_ranges(10, 4) == [(0, 2), (2, 5), (5, 7), (7, 10)]
    assert batch_ranges(1, 2) == [(0, 0), (0, 1)]
    with pytest.raises(ValueError, match="units"):
        batch_ranges(4, 0)
    with pytest.raises(ValueError, match="batch"):
        batch_ranges(-1, 2)


@pytest.mark.parametrize("units", [1, 2, 3, 4, 8])
@pytest.mark.parametrize("weighted", [False, True])
def test_embedding_bag_split_equals_torch(units, weighted):
    seed = fresh_seed(f"partition eb units={units} weighted={weighted}")
    rng = np.random.default_rng(seed)
    rows, dim, bags = 50, 8, 13
    table = rng.standard_normal((rows, dim)).astype(np.float32)
    lengths = rng.integers(0, 6, bags)
    offsets = np.concatenate([[0], np.cumsum(lengths)]).astype(np.int64)
    indices = rng.integers(0, rows, offsets[-1]).astype(np.int64)
    weights = rng.random(len(indices)).astype(np.float32) if weighted else None
    out = np.zeros((bags, dim), np.float32)
    parts = split_embedding_bag(indices, offsets, units=units, per_sample_weights=weights)
    assert [(p.start, p.stop) for p in parts] == batch_ranges(bags, units)
    if weighted:
        kernel = _kernel("embedding_bag_weighted.mlir")
        unit_args = [[table, p.indices, p.offsets, p.per_sample_weights, out[p.start:p.stop]]
                     for p in parts]
    else:
        kernel = _kernel("embedding_bag_sum.mlir")
        unit_args = [[table, p.indices, p.offsets, out[p.start:p.stop]] for p in parts]
    image = _run_units(kernel, unit_args, shared=[0])
    # the table is in the image once
    assert sum(p.name == "table" for p in image.placements.values()) == 1
    want = torch.nn.functional.embedding_bag(
        torch.from_numpy(indices), torch.from_numpy(table), torch.from_numpy(offsets[:-1]),
        mode="sum", per_sample_weights=None if weights is None else torch.from_numpy(weights))
    assert np.array_equal(out.view(np.uint32), want.numpy().view(np.uint32)), seed


@pytest.mark.parametrize("units", [1, 2, 4])
def test_spmm_split_by_rows(units):
    from sw.workloads import _spmm_sequential
    seed = fresh_seed(f"partition spmm units={units}")
    rng = np.random.default_rng(seed)
    nrows, ncols, dim = 11, 20, 4
    lengths = rng.integers(0, 5, nrows)
    rowptr = np.concatenate([[0], np.cumsum(lengths)]).astype(np.int64)
    col = rng.integers(0, ncols, rowptr[-1]).astype(np.int64)
    val = rng.standard_normal(rowptr[-1]).astype(np.float32)
    x = rng.standard_normal((ncols, dim)).astype(np.float32)
    out = np.zeros((nrows, dim), np.float32)
    kernel = _kernel("spmm_csr.mlir")
    parts = split_csr(rowptr, col, val, units=units)
    unit_args = [[p.rowptr, p.col, p.val, x, np.array([p.stop - p.start], np.int64),
                  out[p.start:p.stop]] for p in parts]
    _run_units(kernel, unit_args, shared=[3])
    want = _spmm_sequential([rowptr, col, val, x])[0]
    assert np.array_equal(out.view(np.uint32), want.view(np.uint32)), seed


def test_bad_arguments():
    kernel = _kernel("embedding_bag_sum.mlir")
    table = np.zeros((4, 2), np.float32)
    with pytest.raises(ValueError, match="offsets"):
        split_embedding_bag(np.zeros(3, np.int64), np.array([0, 2], np.int64), units=2)
    with pytest.raises(ValueError, match="per_sample_weights"):
        split_embedding_bag(np.zeros(3, np.int64), np.array([0, 3], np.int64), units=2,
                            per_sample_weights=np.zeros(2, np.float32))
    with pytest.raises(ValueError, match="rowptr"):
        split_csr(np.array([0, 1], np.int64), np.zeros(2, np.int64), np.zeros(2), units=2)
    args = [[table.copy(), np.zeros(1, np.int64), np.array([0, 1], np.int64),
             np.zeros((1, 2), np.float32)] for _ in range(2)]
    with pytest.raises(ValueError, match="shared"):
        shared_image(kernel, args, shared=[0])
    with pytest.raises(ValueError, match="unit_args"):
        shared_image(kernel, [], shared=[0])
