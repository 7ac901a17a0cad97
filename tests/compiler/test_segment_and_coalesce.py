"""segment-callbacks and coalesce-rows (-O3), end to end on the golden model (docs/compiler.md;
the IR-level rules and the cases they must leave alone are in ``filecheck/segment-callbacks.mlir``,
``filecheck/coalesce-rows.mlir`` and ``golden/passes/``).

* **segment-callbacks**: EmbeddingBag (sum, weighted), SpMM and SpMV at -O3 push exactly the
  hand-written programs' tokens (mean and max: the same control tokens) (``sw/runtime/handwritten/suite.py``: the segment length once per bag or row,
  no control token per lookup), and their results equal PyTorch's (``Workload.check``: bit for
  bit, or within the summation bound for the sparse kernels) on random inputs with empty bags/rows;
  the DLC reference interpreter pushes the golden model's tokens.
* **coalesce-rows**: the block-sparse gather fetches each key/value block as one block (control
  tokens: one per query block and DONE, as hand-written), also with a value table wider than the
  key table (whole rows fetched, the extra columns skipped on the core), for random block sizes.

Random data draws a fresh seed each run and prints it (``EMBER_SEED`` replays it).
"""

from __future__ import annotations


import numpy as np
import pytest

from sw.compiler import compile_mlir
from sw.compiler.backend.python import run_access
from sw.compiler.pipelines import _kernel_fn, run_pipeline
from sw.runtime.drivers import run_kernel
from sw.runtime.handwritten.suite import handwritten_kernel
from sw.runtime.isa import Limits
from sw.workloads import WORKLOADS



def _copy(args):
    return [a.copy() if isinstance(a, np.ndarray) else a for a in args]


def _run_o3(w, args):
    text = w.path.read_text()
    got = run_kernel(compile_mlir(text, filename=w.example, opt_level=3), _copy(args), "golden")
    w.check(_copy(args), got.results)
    data, control = run_access(_kernel_fn(run_pipeline(text, until="dlc", opt_level=3)), _copy(args))
    assert data == [t & (2**64 - 1) for t in got.access.data_tokens]
    assert control == got.access.control_tokens
    return got


@pytest.mark.parametrize("name", ["eb_sum", "eb_weighted", "spmm_cora", "spmv_csr", "eb_max"])
def test_o3_pushes_the_hand_written_tokens(seed, name):
    """eb_max too: its empty-bag test ``start == end`` becomes ``n == 0`` on the segment length,
    so the bag's bounds are not pushed (bag 0 is made empty; ``w.check`` compares its zeros
    with PyTorch)."""
    w = WORKLOADS[name]
    args = w.make("small", seed)
    if name == "eb_max":
        args[2][1] = args[2][0]          # bag 0 empty (its lookups join bag 1)
    dlc = str(run_pipeline(w.path.read_text(), until="dlc", opt_level=3))
    assert "dlc.register_callback layer 1 begin" in dlc and "register_callback layer 1 iter" not in dlc
    got = _run_o3(w, args)
    hand = run_kernel(handwritten_kernel(name), _copy(args), "golden", limits=Limits.from_file("tmu_rtl"))
    assert len(got.access.control_tokens) == len(hand.access.control_tokens)
    assert len(got.access.data_tokens) == len(hand.access.data_tokens)


@pytest.mark.parametrize("name", ["eb_mean", "eb_max"])
def test_o3_one_control_token_per_bag(seed, name):
    """mean's end callback (the division) and max's begin (the running maximum's start) and end
    (the empty bag's zero) callbacks are merged into the segment's: one control token per bag
    and DONE, as hand-written; their operands (the bag length, start/end) are pushed on layer
    1's begin with the segment length."""
    w = WORKLOADS[name]
    args = w.make("small", seed)
    dlc = str(run_pipeline(w.path.read_text(), until="dlc", opt_level=3))
    assert dlc.count("dlc.register_callback") == 1 and "layer 1 end" not in dlc
    got = _run_o3(w, args)
    nbags = len(args[2]) - 1
    assert len(got.access.control_tokens) == nbags + 1


def _spattn_args(rng, extra_value_columns=0, min_bs=1):
    nq, nk, bs, dim = int(rng.integers(2, 5)), int(rng.integers(1, 6)), int(rng.integers(min_bs, 5)), \
        int(rng.integers(1, 9))
    counts = rng.integers(0, nk + 1, nq)
    counts[0] = 0                                                   # an empty query block
    counts[-1] = max(counts[-1], 1)                                 # and a nonempty one
    ptr = np.concatenate([[0], np.cumsum(counts)]).astype(np.int64)
    idx = np.concatenate([rng.choice(nk, c, replace=False) for c in counts]).astype(np.int64)
    key = rng.standard_normal((nk * bs, dim)).astype(np.float32)
    value = rng.standard_normal((nk * bs, dim + extra_value_columns)).astype(np.float32)
    out = np.zeros((len(idx) * bs, dim), np.float32)
    return [ptr, idx, key, value, np.int64(bs), out, out.copy()], nq


def test_block_sparse_gather_fetches_whole_blocks(seed):
    w = WORKLOADS["spattn_gather"]
    rng = np.random.default_rng(seed)
    args, nq = _spattn_args(rng)
    slcv = str(run_pipeline(w.path.read_text(), until="slcv", opt_level=3))
    assert "slcv.buf_stream %key[%base, %c0] len %key_block_len" in slcv
    assert "slc.for %r" not in slcv
    got = _run_o3(w, args)
    assert len(got.access.control_tokens) == nq + 1                  # one per query block + DONE
    hand = run_kernel(handwritten_kernel("spattn_gather"), _copy(args), "golden",
                      limits=Limits.from_file("tmu_rtl"))
    assert len(got.access.control_tokens) == len(hand.access.control_tokens)
    # the output block number j·bs is counted on the core (count-segment-index): the same tokens
    assert len(got.access.data_tokens) == len(hand.access.data_tokens)


def test_block_sparse_gather_with_a_wider_value_table(seed):
    """value has more columns than key: the loop reads the first dim(key) of each value row; the
    block holds bs whole value rows and the core skips the rest (results equal the reference)."""
    w = WORKLOADS["spattn_gather"]
    rng = np.random.default_rng(seed)
    args, _ = _spattn_args(rng, extra_value_columns=int(rng.integers(1, 4)), min_bs=2)
    assert args[3].shape[1] > args[2].shape[1]
    text = w.path.read_text()
    got = run_kernel(compile_mlir(text, filename=w.example, opt_level=3), _copy(args), "golden")
    ptr, idx, key, value, bs = args[:5]
    rows = (idx[:, None] * int(bs) + np.arange(int(bs))[None, :]).reshape(-1)
    np.testing.assert_array_equal(got.results[0], key[rows])
    np.testing.assert_array_equal(got.results[1], value[rows][:, :key.shape[1]])
    base = run_kernel(compile_mlir(text, filename=w.example, opt_level=0), _copy(args), "golden")
    for a, b in zip(got.results, base.results):
        np.testing.assert_array_equal(a, b)


def test_an_empty_test_other_than_equality_keeps_the_bounds(seed):
    """``end <= start`` is not ``n == 0`` for every input (offsets that decrease): the rewrite of
    max's empty-bag test is left alone, the bag's bounds stay pushed, results unchanged."""
    w = WORKLOADS["eb_max"]
    text = w.path.read_text()
    assert "arith.cmpi eq, %start, %end" in text
    text = text.replace("arith.cmpi eq, %start, %end", "arith.cmpi sle, %end, %start")
    args = w.make("small", seed)
    kernel = compile_mlir(text, filename=w.example, opt_level=3)
    got = run_kernel(kernel, _copy(args), "golden")
    w.check(_copy(args), got.results)
    same = run_kernel(compile_mlir(w.path.read_text(), filename=w.example, opt_level=3),
                      _copy(args), "golden")
    nbags = len(args[2]) - 1
    assert len(got.access.data_tokens) == len(same.access.data_tokens) + 2 * nbags, seed
