"""count-segment-index (-O3), end to end on the golden model (docs/compiler.md; the IR-level
rules and the cases it must leave alone are in ``filecheck/count-segment-index.mlir`` and
``golden/passes/count-segment-index/``).

* The block-sparse gather's output block ``j·bs`` is computed on the core from a counted ``j``:
  -O3 pushes exactly the hand-written program's data and control tokens
  (``sw/runtime/handwritten/suite.py``), and its results equal PyTorch's ``index_select`` and
  the -O0 program's bit for bit, on random block masks with empty query blocks and
  ``block_ptr[0] != 0`` (the core starts ``j`` at the loaded ``block_ptr[lb]``, not at 0), also
  when the traversal starts at a query block ``q_lo != 0`` given at run time (a slice of a larger
  mask) or is empty (``q_lo`` past the end of ``block_ptr``: the core must not load it).
* Decreasing ``block_ptr`` still faults ``RANGE_ORDER`` (without the host's order check, which
  refuses it first).
* Left alone: the bounds of the key-block loop from two arrays (``starts[q]`` to ``ends[q]``,
  ranges that overlap and leave gaps): ``j`` stays pushed and the results stay right.

Random data draws a fresh seed each run and prints it (``EMBER_SEED`` replays it).
"""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest
import torch

from sw.compiler import compile_mlir
from sw.compiler.backend.python import run_access
from sw.compiler.pipelines import _kernel_fn, run_pipeline
from sw.runtime.drivers import run_kernel
from sw.runtime.golden import AccessFault
from sw.runtime.handwritten.suite import handwritten_kernel
from sw.runtime.isa import Limits
from sw.workloads import WORKLOADS

W = WORKLOADS["spattn_gather"]
TEXT = W.path.read_text()
SIGNATURE_END = "%v_out: memref<?x?xf32>) -> "
#: the traversal from a query block given at run time: ``scf.for %q = %q_lo to %nq``
SLICE = TEXT.replace(SIGNATURE_END, "%v_out: memref<?x?xf32>, %q_lo: index) -> ") \
            .replace("scf.for %q = %c0 to %nq", "scf.for %q = %q_lo to %nq")
#: the key blocks of q from two arrays: ``scf.for %j = %block_ptr[%q] to %block_end[%q]``
TWO_ARRAYS = TEXT.replace(SIGNATURE_END, "%v_out: memref<?x?xf32>, %block_end: memref<?xi64>) -> ") \
                 .replace("memref.load %block_ptr[%q1]", "memref.load %block_end[%q]")
#: one array of (start, end) pairs, ``scf.for %j = %block_ptr[2q] to %block_ptr[2q + 1]``: the
#: bounds come from one read-only array (so the unit checks their order) but are not contiguous
PAIRS = TEXT.replace(SIGNATURE_END, "%v_out: memref<?x?xf32>, %nq: index) -> ") \
            .replace("%nq = arith.subi %nptr, %c1 : index", "%c2 = arith.constant 2 : index") \
            .replace("%q1 = arith.addi %q, %c1 : index",
                     "%qs = arith.muli %q, %c2 : index\n    %q1 = arith.addi %qs, %c1 : index") \
            .replace("memref.load %block_ptr[%q] ", "memref.load %block_ptr[%qs] ")



def _copy(args):
    return [a.copy() if isinstance(a, np.ndarray) else a for a in args]


def _mask(rng, first: int):
    """A random block mask in CSR form whose ``ptr`` starts at ``first``; query block 0 empty,
    the last one with two key blocks or more. Returns (args of the kernel, nq)."""
    nq, nk, bs, dim = int(rng.integers(2, 6)), int(rng.integers(2, 6)), int(rng.integers(1, 5)), \
        int(rng.integers(1, 9))
    counts = rng.integers(0, nk + 1, nq)
    counts[0] = 0
    counts[-1] = max(counts[-1], 2)                                 # at least two key blocks
    ptr = (first + np.concatenate([[0], np.cumsum(counts)])).astype(np.int64)
    head = rng.integers(0, nk, first)                               # before ptr[0]: never read
    idx = np.concatenate([head] + [rng.choice(nk, c, replace=False) for c in counts]).astype(np.int64)
    key = rng.standard_normal((nk * bs, dim)).astype(np.float32)
    value = rng.standard_normal((nk * bs, dim)).astype(np.float32)
    out = np.zeros((len(idx) * bs, dim), np.float32)
    return [ptr, idx, key, value, np.int64(bs), out, out.copy()], nq


def _reference(args, ranges):
    """PyTorch: for every key-block position j in ``ranges`` (pairs [s, e)), rows j·bs .. j·bs +
    bs - 1 of the outputs are rows idx[j]·bs .. of key/value (``torch.index_select``); the
    other rows stay zero."""
    _, idx, key, value, bs, k_out, v_out = args[:7]
    bs = int(bs)
    k_ref, v_ref = torch.zeros(k_out.shape), torch.zeros(v_out.shape)
    for s, e in ranges:
        for j in range(int(s), int(e)):
            src = torch.arange(int(idx[j]) * bs, (int(idx[j]) + 1) * bs)
            dst = torch.arange(j * bs, (j + 1) * bs)
            k_ref[dst] = torch.index_select(torch.from_numpy(key), 0, src)
            v_ref[dst] = torch.index_select(torch.from_numpy(value), 0, src)
    return k_ref.numpy(), v_ref.numpy()


def _run(text, args, level=3, limits=None):
    kernel = compile_mlir(text, filename=W.example, opt_level=level, limits=limits)
    return run_kernel(kernel, _copy(args), "golden")


def _check(got, want):
    for g, r in zip(got.results, want, strict=True):
        np.testing.assert_array_equal(g, r)


@pytest.mark.parametrize("first", [0, 3])
def test_o3_pushes_the_hand_written_tokens(seed, first):
    rng = np.random.default_rng(seed)
    args, nq = _mask(rng, first=first + int(rng.integers(0, 3)) if first else 0)
    dlc = str(run_pipeline(TEXT, until="dlc", opt_level=3))
    assert "dlc.get_var" in dlc and "%obase" not in dlc.split("dlc.compute_loop")[0]
    got = _run(TEXT, args)
    _check(got, _reference(args, [(args[0][0], args[0][-1])]))
    _check(got, _run(TEXT, args, level=0).results)
    hand = run_kernel(handwritten_kernel("spattn_gather"), _copy(args), "golden",
                      limits=Limits.from_file("tmu_rtl"))
    assert len(got.access.data_tokens) == len(hand.access.data_tokens)
    assert got.access.control_tokens == hand.access.control_tokens == [0] * nq + [0xFFFF]
    # the DLC reference interpreter pushes the golden model's tokens
    data, control = run_access(_kernel_fn(run_pipeline(TEXT, until="dlc", opt_level=3)), _copy(args))
    assert data == [t & (2**64 - 1) for t in got.access.data_tokens]
    assert control == got.access.control_tokens


@pytest.mark.parametrize("where", ["inside", "at_end", "past_end"])
def test_a_traversal_from_a_run_time_query_block(seed, where):
    """``q_lo`` a register: ``j`` starts at ``block_ptr[q_lo]``; at ``q_lo = nq`` layer 0 is empty
    and the core's load of ``block_ptr[nq]`` is in range, past the end it must be skipped."""
    rng = np.random.default_rng(seed)
    args, nq = _mask(rng, first=int(rng.integers(0, 3)))
    q_lo = {"inside": int(rng.integers(1, nq)), "at_end": nq, "past_end": nq + 5}[where]
    args.append(np.int64(q_lo))
    assert "dlc.get_var" in str(run_pipeline(SLICE, until="dlc", opt_level=3))
    got = _run(SLICE, args)
    ptr = args[0]
    _check(got, _reference(args, [(ptr[q_lo], ptr[-1])] if q_lo <= nq else []))
    _check(got, _run(SLICE, args, level=0).results)


def test_decreasing_block_pointers_still_fault(seed):
    rng = np.random.default_rng(seed)
    args, nq = _mask(rng, first=2)
    ptr = args[0]
    q = int(rng.integers(1, nq + 1))
    ptr[q] = ptr[q - 1] - 1                                         # segment q - 1 decreases
    with pytest.raises(ValueError, match=rf"^arg0 \(block_ptr\)\[{q}\] = .* is less than"):
        _run(TEXT, args)                                            # the host's order check
    kernel = compile_mlir(TEXT, filename=W.example, opt_level=3)
    kernel.host_checks = [c for c in kernel.host_checks if c.kind != "order"]
    with pytest.raises(AccessFault, match="RANGE_ORDER"):
        run_kernel(kernel, _copy(args), "golden")


def test_bounds_from_two_arrays_are_left_alone(seed):
    """``starts[q]`` to ``ends[q]``: not contiguous (overlaps, gaps), so ``j`` must stay an
    operand; counting it on the core would write blocks to the wrong rows."""
    rng = np.random.default_rng(seed)
    args, nq = _mask(rng, first=0)
    nnz = len(args[1])
    starts = rng.integers(0, nnz, nq).astype(np.int64)
    ends = np.minimum(starts + rng.integers(0, 3, nq), nnz).astype(np.int64)
    starts[0] = min(1, nnz - 1)                                     # not 0: a gap at the start
    ends[0] = max(ends[0], starts[0])
    args[0] = np.concatenate([starts, [0]]).astype(np.int64)        # block_ptr: the starts
    args.append(ends)
    dlc = str(run_pipeline(TWO_ARRAYS, until="dlc", opt_level=3))
    assert "dlc.get_var" not in dlc and "register_operand layer 1 iter %obase" in dlc
    five_regions = dataclasses.replace(Limits.from_file("tmu_rtl"), regions=5)
    got = _run(TWO_ARRAYS, args, limits=five_regions)
    _check(got, _reference(args, list(zip(starts, ends))))
    _check(got, _run(TWO_ARRAYS, args, level=0, limits=five_regions).results)


def test_pairs_of_bounds_in_one_array_are_left_alone(seed):
    """``block_ptr[2q]`` to ``block_ptr[2q + 1]``: one array, ordered bounds (``check_order``),
    but the ranges of consecutive ``q`` overlap or leave gaps: ``j`` stays an operand."""
    rng = np.random.default_rng(seed)
    args, nq = _mask(rng, first=0)
    nnz = len(args[1])
    starts = rng.integers(0, nnz, nq)
    starts[0] = min(1, nnz - 1)                                     # a gap at the start
    ends = np.minimum(starts + rng.integers(0, 3, nq), nnz)
    args[0] = np.stack([starts, ends], axis=1).reshape(-1).astype(np.int64)
    args.append(np.int64(nq))
    dlc = str(run_pipeline(PAIRS, until="dlc", opt_level=3))
    assert "check_order" in dlc and "dlc.get_var" not in dlc
    assert "register_operand layer 1 iter %obase" in dlc
    got = _run(PAIRS, args)
    _check(got, _reference(args, list(zip(starts, ends))))
    _check(got, _run(PAIRS, args, level=0).results)


#: GNN edge messages in CSR form, not reduced: ``out[j, :] = val[j] * x[col[j], :]`` for the
#: nonzeros ``j`` of every row; the core stores at ``j`` itself.
EDGE_MESSAGES = """\
func.func @edge_messages(%rowptr: memref<?xindex>, %col: memref<?xindex>, %val: memref<?xf32>, %x: memref<?x?xf32>, %out: memref<?x?xf32>) -> memref<?x?xf32> {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %nptr = memref.dim %rowptr, %c0 : memref<?xindex>
  %n = arith.subi %nptr, %c1 : index
  %dim = memref.dim %x, %c1 : memref<?x?xf32>
  scf.for %i = %c0 to %n step %c1 {
    %i1 = arith.addi %i, %c1 : index
    %start = memref.load %rowptr[%i] : memref<?xindex>
    %end = memref.load %rowptr[%i1] : memref<?xindex>
    scf.for %j = %start to %end step %c1 {
      %c = memref.load %col[%j] : memref<?xindex>
      %a = memref.load %val[%j] : memref<?xf32>
      scf.for %d = %c0 to %dim step %c1 {
        %v = memref.load %x[%c, %d] : memref<?x?xf32>
        %p = arith.mulf %a, %v : f32
        memref.store %p, %out[%j, %d] : memref<?x?xf32>
      }
    }
  }
  return %out : memref<?x?xf32>
}
"""


def test_the_nonzero_position_itself_is_counted_too(seed):
    """A CSR kernel that stores at the nonzero ``j`` (not an ALU expression of it): ``j`` is
    counted on the core, one data token less per nonzero than without the pass; results equal
    PyTorch's ``x[col] * val[:, None]`` bit for bit (one f32 multiply each), with empty rows and
    ``rowptr[0] != 0``."""
    from sw.compiler import pipelines as P
    from sw.compiler.transforms.count_segment_index import CountSegmentIndex
    rng = np.random.default_rng(seed)
    nrows, ncols, dim, first = int(rng.integers(2, 7)), int(rng.integers(1, 6)), int(rng.integers(1, 9)), \
        int(rng.integers(1, 4))
    counts = rng.integers(0, 4, nrows)
    counts[0] = 0
    rowptr = (first + np.concatenate([[0], np.cumsum(counts)])).astype(np.int64)
    nnz = int(rowptr[-1])
    col = rng.integers(0, ncols, nnz).astype(np.int64)
    val = rng.standard_normal(nnz).astype(np.float32)
    x = rng.standard_normal((ncols, dim)).astype(np.float32)
    args = [rowptr, col, val, x, np.zeros((nnz, dim), np.float32)]
    got = run_kernel(compile_mlir(EDGE_MESSAGES, opt_level=3), _copy(args), "golden")
    want = torch.zeros(nnz, dim)
    live = torch.arange(first, nnz)
    want[live] = torch.from_numpy(x)[torch.from_numpy(col)[live]] * torch.from_numpy(val)[live, None]
    np.testing.assert_array_equal(got.results[0], want.numpy())
    with_pass = P._kernel_fn(run_pipeline(EDGE_MESSAGES, until="dlc", opt_level=3))
    assert "dlc.get_var" in str(with_pass)
    slcv = P._slcv(P._slc(P.check_supported(P.parse_mlir(EDGE_MESSAGES))), 3, 8)
    without = P._apply(tuple(p for p in P.dlc_passes(3) if not isinstance(p, CountSegmentIndex)), slcv)
    data, _ = run_access(P._kernel_fn(without), _copy(args))
    assert len(got.access.data_tokens) == len(data) - (nnz - first)
