"""replace-to-val-ops (-O3): layer 0's index (the bag, the CSR row) counted on the core instead of
pushed per firing (Ember's ReplaceToValOps, issue 12).

Checked: the tokens it saves (exactly one data token per firing that used the index; one control
token per bag added when no callback fires once per bag), results bit for bit against PyTorch
(EmbeddingBag sum/mean/max/per_sample_weights through the PyTorch frontend; SpMM, TransE and the
MLIR workloads at every level in ``test_opt_levels.py``), a non-zero register lower bound and a
step of 2 with each of the two increment placements, on the golden model and (EmbeddingBag sum)
on the RTL. Random data draws a fresh seed each run and prints it (``EMBER_SEED`` replays it).
"""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np
import pytest
import torch

from sw.api import compile_torch
from sw.compiler import compile_mlir
from sw.compiler.backend.python import run_access
from sw.compiler.conversion.slc_to_dlc import ConvertSlcToDlc
from sw.compiler.pipelines import _apply, _kernel_fn, run_pipeline
from sw.compiler.transforms.affine_streams import AffineStreams
from sw.compiler.transforms.align_queues import AlignQueues
from sw.compiler.transforms.hoist_streams import HoistStreams
from sw.compiler.transforms.segment_callbacks import SegmentCallbacks
from sw.runtime.drivers import run_kernel
from sw.workloads import WORKLOADS

REPO = Path(__file__).resolve().parents[2]


@pytest.fixture
def rng():
    seed = int(os.environ.get("EMBER_SEED", np.random.SeedSequence().entropy % 2**32))
    print(f"seed {seed}")
    return np.random.default_rng(seed)


def _bags(rng, rows=30, nbags=7, max_len=6):
    lengths = rng.integers(0, max_len, nbags)
    lengths[0] = 0                                   # an empty first bag
    lengths[-1] = 0                                  # and an empty last one
    lengths[1] = max(lengths[1], 2)
    indices = rng.integers(0, rows, int(lengths.sum())).astype(np.int64)
    return indices, np.concatenate([[0], np.cumsum(lengths)]).astype(np.int64)


def _tokens_without_the_pass(text, args):
    """(data, control) tokens of the -O3 pipeline with replace-to-val-ops left out."""
    slcv = run_pipeline(text, until="slcv", opt_level=3)
    dlc = _apply((ConvertSlcToDlc(), AffineStreams(), HoistStreams(), SegmentCallbacks(), AlignQueues()),
                 slcv.clone())
    return run_access(_kernel_fn(dlc), [a.copy() for a in args])


def test_o3_dlc_counts_the_bag_on_the_core():
    text = (REPO / "examples" / "embedding_bag_sum.mlir").read_text()
    dlc = str(run_pipeline(text, until="dlc", opt_level=3))
    assert "register_operand layer 1 iter %b" not in dlc and "register_operand layer 1 begin %b" not in dlc
    # the segment's callback (segment-callbacks) fires first in each bag: it increments first
    assert "dlc.set_var 0, %cm1 : index" in dlc and "dlc.get_var 0 : index" in dlc
    assert "dlc.register_callback layer 1 begin 0" in dlc and "dlc.increment_var 0 by 1" in dlc
    assert "dlc.get_var" not in str(run_pipeline(text, until="dlc", opt_level=2))


@pytest.mark.parametrize("example", ["embedding_bag_sum", "embedding_bag_mean"])
def test_tokens_saved(rng, example):
    """At -O3 segment-callbacks has put the bag's callback on layer 1's begin, with the bag
    index b hoisted there (one token per bag, beside the segment length n; a row is 7 packed
    tokens at dim 13); replace-to-val-ops counts b on the core from that callback (-1 data token
    per bag, no control token added). mean: the end callback (the division) is merged into the
    segment's, its max(n, 1) computed on the core from the segment length."""
    text = (REPO / "examples" / f"{example}.mlir").read_text()
    dim = 13
    table = rng.standard_normal((30, dim)).astype(np.float32)
    indices, offsets = _bags(rng)
    nbags, rows = len(offsets) - 1, len(indices)
    args = [table, indices, offsets, np.zeros((nbags, dim), np.float32)]
    got = run_kernel(compile_mlir(text, opt_level=3), [a.copy() for a in args], "golden")
    data, control = _tokens_without_the_pass(text, args)
    if example == "embedding_bag_sum":
        assert (len(data), len(control)) == (rows * 7 + 2 * nbags, nbags + 1)
        assert len(got.access.data_tokens) == rows * 7 + nbags
        assert len(got.access.control_tokens) == nbags + 1
    else:   # the end callback merged into the segment's, its max(n, 1) computed on the core
        assert (len(data), len(control)) == (rows * 7 + 2 * nbags, nbags + 1)
        assert len(got.access.data_tokens) == rows * 7 + nbags
        assert len(got.access.control_tokens) == nbags + 1
    ref = torch.nn.functional.embedding_bag(torch.from_numpy(indices), torch.from_numpy(table),
                                            torch.from_numpy(offsets[:-1]), mode=example[14:])
    assert torch.equal(torch.from_numpy(got.results[0]), ref)


@pytest.mark.parametrize("mode, weighted, padding_idx", [
    ("sum", False, None), ("mean", False, None), ("max", False, None), ("sum", True, None),
    ("sum", False, 3), ("mean", False, 3)])
def test_embedding_bag_at_o3_matches_pytorch_bit_for_bit(rng, mode, weighted, padding_idx):
    rows, dim = 30, 11
    weight = torch.from_numpy(rng.standard_normal((rows, dim)).astype(np.float32))
    bag = torch.nn.EmbeddingBag(rows, dim, mode=mode, _weight=weight, padding_idx=padding_idx)
    indices, offsets = _bags(rng)
    ins = (torch.from_numpy(indices), torch.from_numpy(offsets[:-1]))
    if weighted:
        ins += (torch.from_numpy(rng.random(len(indices)).astype(np.float32)),)
    op = compile_torch(bag, ins, opt_level=3)
    assert "dlc.set_var" in op.kernel.execute_source        # the pass ran
    assert torch.equal(op(*ins), bag(*ins))
    indices, offsets = _bags(rng, nbags=12)                 # another batch, other bag count
    ins = (torch.from_numpy(indices), torch.from_numpy(offsets[:-1]))
    if weighted:
        ins += (torch.from_numpy(rng.random(len(indices)).astype(np.float32)),)
    assert torch.equal(op(*ins), bag(*ins))


# A bag loop from a register lower bound %lo, step 2, with (FILL) or without a callback on layer
# 1's begin: the variable then starts at lo - 2 and the begin callback increments first, or starts
# at lo and a new end callback increments last.
_STRIDED = """
func.func @strided(%table: memref<?x?xf32>, %indices: memref<?xindex>, %offsets: memref<?xindex>,
                   %out: memref<?x?xf32>, %lo: index) -> memref<?x?xf32> {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c2 = arith.constant 2 : index
  %one = arith.constant 1.0 : f32
  %nbags = memref.dim %out, %c0 : memref<?x?xf32>
  %dim = memref.dim %table, %c1 : memref<?x?xf32>
  scf.for %b = %lo to %nbags step %c2 {
    FILL
    %b1 = arith.addi %b, %c1 : index
    %start = memref.load %offsets[%b] : memref<?xindex>
    %end = memref.load %offsets[%b1] : memref<?xindex>
    scf.for %j = %start to %end step %c1 {
      %row = memref.load %indices[%j] : memref<?xindex>
      scf.for %d = %c0 to %dim step %c1 {
        %v = memref.load %table[%row, %d] : memref<?x?xf32>
        %acc = memref.load %out[%b, %d] : memref<?x?xf32>
        %sum = arith.addf %acc, %v : f32
        memref.store %sum, %out[%b, %d] : memref<?x?xf32>
      }
    }
  }
  return %out : memref<?x?xf32>
}
"""
_FILL = """scf.for %d0 = %c0 to %dim step %c1 {
      memref.store %one, %out[%b, %d0] : memref<?x?xf32>
    }"""


def _strided_case(rng, fill):
    text = _STRIDED.replace("FILL", _FILL if fill else "")
    if fill:
        text = text.replace("@strided", "@strided_fill")
    table = rng.standard_normal((30, 9)).astype(np.float32)
    indices, offsets = _bags(rng, nbags=9)
    lo = int(rng.integers(0, 3))
    want = np.zeros((9, 9), np.float32)
    for b in range(lo, 9, 2):                # the kernel's order: one f32 rounding per add
        if fill:
            want[b] = 1.0
        for j in range(offsets[b], offsets[b + 1]):
            want[b] = want[b] + table[indices[j]]
    return text, [table, indices, offsets, np.zeros((9, 9), np.float32), lo], want


@pytest.mark.parametrize("fill", [False, True], ids=["segment-callback-first", "fill-callback-first"])
def test_register_lower_bound_and_step_two_on_golden(rng, fill):
    """At -O3 layer 1's begin has a callback once per bag (the segment's, segment-callbacks; with
    FILL, the fill loop's before it): the variable starts at lo - 2 and that callback increments
    first. (A new end callback, the placement when there is none: golden/passes/replace-to-val-ops
    embedding_bag_sum, the IR before segment-callbacks.)"""
    text, args, want = _strided_case(rng, fill)
    dlc = str(run_pipeline(text, until="dlc", opt_level=3))
    assert "dlc.increment_var 0 by 2" in dlc and "register_operand layer 1 iter %b" not in dlc
    assert "%var0_init = arith.subi %lo, %c2_1 : index" in dlc
    assert "dlc.register_callback layer 1 end" not in dlc
    got = run_kernel(compile_mlir(text, opt_level=3), args, "golden").results[0]
    np.testing.assert_array_equal(got, want)


def test_register_lower_bound_and_step_two_in_c(rng, tmp_path):
    """The C execute side keeps the variable too: replayed on the golden model's tokens, bit for
    bit against the Python side and the reference."""
    test_c_levels = pytest.importorskip("test_c_levels")
    if test_c_levels.CC is None:
        pytest.skip("no C compiler (cc) on this machine")
    cases = []
    for fill in (False, True):
        text, args, want = _strided_case(rng, fill)
        check = (lambda want: lambda a, results: np.testing.assert_array_equal(results[0], want))(want)
        cases.append((test_c_levels.Case(f"strided_fill{int(fill)}", text,
                                         (lambda args: lambda: [x.copy() if isinstance(x, np.ndarray)
                                                                else x for x in args])(args),
                                         check), 3))
    test_c_levels._replay(cases, tmp_path)


@pytest.mark.rtl
def test_embedding_bag_sum_at_o3_on_rtl(rng):
    rows, dim = 24, 8
    weight = torch.from_numpy(rng.standard_normal((rows, dim)).astype(np.float32))
    bag = torch.nn.EmbeddingBag(rows, dim, mode="sum", _weight=weight)
    indices, offsets = _bags(rng, rows=rows, nbags=5, max_len=4)
    ins = (torch.from_numpy(indices), torch.from_numpy(offsets[:-1]))
    op = compile_torch(bag, ins, opt_level=3)
    assert "dlc.set_var" in op.kernel.execute_source
    assert torch.equal(op(*ins, target="rtl"), bag(*ins))


def test_tokens_of_every_workload_with_and_without_the_pass():
    """Data and control tokens of each workload's ``"full"`` input at -O3 on the golden model,
    with and without replace-to-val-ops (docs/compiler.md table; printed with -s): where the pass
    applies, fewer data tokens and fewer tokens in all."""
    print(f"\n{'workload':14} {'data without':>13} {'data with':>10} {'control without':>16} "
          f"{'control with':>13} {'all tokens':>11}")
    for name, w in WORKLOADS.items():
        text = w.path.read_text()
        args = w.make("full", 0)
        kernel = compile_mlir(text, filename=w.example, opt_level=3)
        got = run_kernel(kernel, [a.copy() if isinstance(a, np.ndarray) else a for a in args],
                         "golden")
        w.check([a.copy() if isinstance(a, np.ndarray) else a for a in args], got.results)
        data, control = _tokens_without_the_pass(text, args)
        with_, without = (len(got.access.data_tokens), len(got.access.control_tokens)), (len(data), len(control))
        print(f"{name:14} {without[0]:>13} {with_[0]:>10} {without[1]:>16} {with_[1]:>13} "
              f"{100 * (sum(with_) / sum(without) - 1):>+10.1f}%")
        if "set_var" in kernel.execute_source:
            assert with_[0] < without[0] and sum(with_) < sum(without)
        else:
            assert with_ == without
