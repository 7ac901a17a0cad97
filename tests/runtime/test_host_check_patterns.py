"""Host checks of index patterns beyond ``a[i + c]`` (sw/compiler/backend/host_checks.py):

* ``csr_of_csr.mlir``'s ``sptr[s + 1]`` in the loop ``s`` from ``gptr[g]`` to ``gptr[g + 1]``
  (kind ``last``: for every ``g`` whose range is not empty, ``sptr`` needs ``gptr[g + 1] + 1``
  entries);
* ``spmm_csr.mlir``'s loop to the count loaded from ``nrows[0]`` (the host reads it from the
  argument: ``rowptr`` needs ``nrows[0] + 1`` entries);
* ``transe_score.mlir``'s ``triples[3 * t + k]`` (``triples`` needs ``3 n`` entries; the loaded
  ids index ``entity`` / ``relation``);
* ``block_sparse_gather.mlir``'s ``key[blk * bs + r]`` (kind ``block``: a block id ``blk`` loaded
  from ``block_idx`` reads rows ``blk * bs`` to ``blk * bs + bs - 1`` of ``key`` and ``value``, so
  every id must be in ``[0, len(key) // bs)`` when ``bs > 0``);
* ``hashed_gather.mlir``'s ``remap[h(ids[i])]`` and ``table[(remap[h] << logd) + d]`` (kind
  ``computed``: the host evaluates the index for every iteration, the hash mod 2**64 as the i64
  operations compute it, the index arithmetic exactly; a shift by 64 or more is refused).

Before, each too-short argument ran into the access unit and stopped with fault ADDR_RANGE (an
``AccessFault``); now a ``ValueError`` names the argument, its length and what it needs before the
unit starts. Valid inputs, including the edge cases where the rules must not refuse (empty ranges,
zero counts), still pass and the runs match the references. ``block_sparse_gather.mlir``'s loop to
``dim(block_ptr) - 1`` reads ``block_ptr[q]`` and ``block_ptr[q + 1]`` only, which are always in
range: no check, and a shorter ``block_ptr`` (fewer query blocks) still runs.
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


def _check(workload: str, kernel, args):
    """``args`` run on the golden model and match the workload's reference."""
    w = BENCH_WORKLOADS[workload]
    got = run_kernel(kernel, args, "golden").results
    for g, e in zip(got, w.reference(args)):
        np.testing.assert_allclose(g, e, rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize("opt_level", [0, 3])
def test_csr_of_csr_sptr_one_short_is_refused_before_the_unit_runs(opt_level):
    kernel = _kernel("csr_of_csr.mlir", opt_level)
    args = BENCH_WORKLOADS["csr_of_csr"].make("small", 5)
    _check("csr_of_csr", kernel, args)
    table, gptr, sptr, items, out = args
    short = sptr[:-1].copy()
    # the last group that has sessions reads sptr[gptr[g + 1]] = sptr[len(sptr) - 1]
    g = int(np.flatnonzero(gptr[:-1] < gptr[1:])[-1])
    with pytest.raises(ValueError) as info:
        run_kernel(kernel, [table, gptr, short, items, out.copy()], "golden")
    assert str(info.value) == (
        f"arg2 (sptr) has {len(short)} entries along axis 0, fewer than the {len(sptr)} that the "
        f"loop at csr_of_csr.mlir:14:5 reads (it runs from arg1 (gptr)[{g}] = {gptr[g]} to "
        f"arg1 (gptr)[{g + 1}] = {gptr[g + 1]}, and reads entry i + 1)")


def test_csr_of_csr_empty_ranges_need_nothing():
    """Groups without sessions read no sptr: gptr may then equal len(sptr) (the bound rule's
    limit) without a refusal, and gptr entries past ngroups + 1 are not looked at."""
    kernel = _kernel("csr_of_csr.mlir")
    table = np.ones((3, 2), np.float32)
    none = np.zeros(0, np.int64)
    kernel.check_arguments([table, np.array([0, 0], np.int64), none, none, np.zeros((1, 2), np.float32)])
    kernel.check_arguments([table, np.array([0, 0, 0], np.int64), np.array([0], np.int64), none,
                            np.zeros((2, 2), np.float32)])
    # two sessions in group 0, group 1 empty at the end: sptr needs 3 entries
    sptr = np.array([0, 1, 2], np.int64)
    args = [table, np.array([0, 2, 2], np.int64), sptr, np.array([2, 0], np.int64),
            np.zeros((2, 2), np.float32)]
    kernel.check_arguments(args)
    _check("csr_of_csr", kernel, args)
    # an entry past the groups' (ngroups + 1 = 2) is not a bound of any loop that runs
    kernel.check_arguments([table, np.array([0, 2, 1, 3], np.int64), sptr, np.array([2, 0], np.int64),
                            np.zeros((1, 2), np.float32)])


@pytest.mark.parametrize("opt_level", [0, 3])
def test_spmm_rowptr_shorter_than_the_loaded_row_count_is_refused(opt_level):
    kernel = _kernel("spmm_csr.mlir", opt_level)
    args = BENCH_WORKLOADS["spmm_cora"].make("small", 2)
    _check("spmm_cora", kernel, args)
    rowptr, col, val, x, nrows, out = args
    n = int(nrows[0])
    with pytest.raises(ValueError) as info:
        run_kernel(kernel, [rowptr[:n].copy(), col, val, x, nrows, out.copy()], "golden")
    assert str(info.value) == (
        f"arg0 (rowptr) has {n} entries along axis 0, fewer than the {n + 1} that the loop at "
        f"spmm_csr.mlir:9:3 reads (it runs over {n}, the value of arg4 (nrows)[0], and reads "
        f"entry i + 1)")
    # a count larger than the rows given
    with pytest.raises(ValueError, match=r"arg0 \(rowptr\) has .* fewer than the .* the value of "
                                         r"arg4 \(nrows\)\[0\]"):
        run_kernel(kernel, [rowptr, col, val, x, np.array([n + 1], np.int64), out.copy()], "golden")


def test_spmm_fewer_rows_than_given_or_none_need_nothing_more():
    kernel = _kernel("spmm_csr.mlir")
    rowptr, col, val, x, nrows, out = BENCH_WORKLOADS["spmm_cora"].make("small", 3)
    n = int(nrows[0])
    kernel.check_arguments([rowptr[:n].copy(), col, val, x, np.array([n - 1], np.int64), out])
    none = np.zeros(0, np.int64)
    kernel.check_arguments([none, none, np.zeros(0, np.float32), x, np.array([0], np.int64), out])
    args = [rowptr[:3].copy(), col, val, x, np.array([2], np.int64), np.zeros((2, x.shape[1]), np.float32)]
    got = run_kernel(kernel, args, "golden").results[0]
    expected = np.zeros_like(got)
    for i in range(2):
        for j in range(rowptr[i], rowptr[i + 1]):
            expected[i] += val[j] * x[col[j]]
    np.testing.assert_allclose(got, expected, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("opt_level", [0, 3])
def test_transe_triples_shorter_than_3n_or_bad_ids_are_refused(opt_level):
    kernel = _kernel("transe_score.mlir", opt_level)
    args = BENCH_WORKLOADS["kg_transe"].make("small", 4)
    _check("kg_transe", kernel, args)
    triples, entity, relation, out = args
    n = len(out)
    with pytest.raises(ValueError) as info:
        run_kernel(kernel, [triples[:-1].copy(), entity, relation, out.copy()], "golden")
    assert str(info.value) == (
        f"arg0 (triples) has {3 * n - 1} entries along axis 0, fewer than the {3 * n} that the "
        f"loop at transe_score.mlir:14:3 reads (it runs over {n}, the size of arg3 (out) along "
        f"axis 0, and reads entry 3 * i + 2)")
    bad = triples.copy()
    bad[3 * (n - 1) + 1] = len(relation)             # a relation id: valid as an entity id
    assert len(relation) < len(entity)
    with pytest.raises(ValueError) as info:
        run_kernel(kernel, [bad, entity, relation, out.copy()], "golden")
    assert str(info.value) == (
        f"arg0 (triples)[{3 * (n - 1) + 1}] = {len(relation)} is outside [0, {len(relation)}): it "
        f"indexes axis 0 of arg2 (relation), which has {len(relation)} entries (the load at "
        f"transe_score.mlir:20:5, read as entry 3 * i + 1 of arg0 (triples) for i < {n}, the size "
        f"of arg3 (out) along axis 0)")


def test_transe_entries_past_3n_are_not_ids():
    """Only the 3n entries the loop reads are ids; no triples for no scores."""
    kernel = _kernel("transe_score.mlir")
    triples, entity, relation, out = BENCH_WORKLOADS["kg_transe"].make("small", 6)
    longer = np.concatenate([triples, [-1, 10 ** 9]]).astype(np.int64)
    kernel.check_arguments([longer, entity, relation, out])
    got = run_kernel(kernel, [longer, entity, relation, out.copy()], "golden").results[0]
    np.testing.assert_allclose(got, BENCH_WORKLOADS["kg_transe"].reference([triples, entity, relation, out])[0],
                               rtol=1e-4, atol=1e-5)
    kernel.check_arguments([np.zeros(0, np.int64), entity, relation, np.zeros(0, np.float32)])


def test_block_sparse_gather_dim_minus_one_loop_needs_no_check():
    kernel = _kernel("block_sparse_gather.mlir")
    assert [(c.kind, c.source, c.target) for c in kernel.host_checks if 0 in (c.source, c.target)] == \
        [("bound", 0, 1), ("order", 0, 0)]                  # no extent check of block_ptr
    args = BENCH_WORKLOADS["spattn_gather"].make("small", 1)
    _check("spattn_gather", kernel, args)
    ptr = args[0]
    fewer = [ptr[:-1].copy(), *args[1:]]          # one query block fewer: k_out's first rows
    got = run_kernel(kernel, fewer, "golden").results
    rows = int(ptr[-2]) * int(args[4])
    np.testing.assert_array_equal(got[0][:rows], BENCH_WORKLOADS["spattn_gather"].reference(args)[0][:rows])
    kernel.check_arguments([np.zeros(0, np.int64), *args[1:]])


@pytest.mark.parametrize("opt_level", [0, 3])
def test_block_sparse_gather_block_id_past_the_table_is_refused_before_the_unit_runs(opt_level):
    """A block id whose rows blk * bs .. blk * bs + bs - 1 leave key (or value) is a ValueError
    naming block_idx, the position and the id; it used to reach the unit (fault ADDR_RANGE)."""
    kernel = _kernel("block_sparse_gather.mlir", opt_level)
    args = BENCH_WORKLOADS["spattn_gather"].make("small", 1)
    _check("spattn_gather", kernel, args)
    ptr, idx, key, value, bs, k_out, v_out = args
    bs = int(bs)
    blocks = len(key) // bs
    assert len(key) == blocks * bs and int(idx.max()) == blocks - 1     # the last block is read
    bad = idx.copy()
    bad[3] = blocks                                   # rows len(key) .. len(key) + bs - 1
    with pytest.raises(ValueError) as info:
        run_kernel(kernel, [ptr, bad, key, value, np.int64(bs), k_out.copy(), v_out.copy()], "golden")
    assert str(info.value) == (
        f"arg1 (block_idx)[3] = {blocks} is outside [0, {blocks}): it selects entries "
        f"{blocks * bs} to {blocks * bs + bs - 1} along axis 0 of arg2 (key), which has {len(key)} "
        f"entries (the load at block_sparse_gather.mlir:19:7, read as block entries {blocks} * b + i "
        f"for i < b = {bs}, the value of arg4 (bs))")
    bad[3] = -1
    with pytest.raises(ValueError, match=r"^arg1 \(block_idx\)\[3\] = -1 is outside \[0, 6\): it "
                                         r"selects entries -4 to -1 along axis 0 of arg2 \(key\)"):
        run_kernel(kernel, [ptr, bad, key, value, bs, k_out.copy(), v_out.copy()], "golden")
    # value one row short: its last block is partial, so the largest id is refused for value
    with pytest.raises(ValueError, match=rf"^arg1 \(block_idx\)\[\d+\] = {blocks - 1} is outside "
                                         rf"\[0, {blocks - 1}\): it selects entries .* of arg3 \(value\), "
                                         rf"which has {len(key) - 1} entries"):
        run_kernel(kernel, [ptr, idx, key, value[:-1].copy(), bs, k_out.copy(), v_out.copy()], "golden")
    # a larger block size: fewer blocks fit in the same key
    with pytest.raises(ValueError, match=r"is outside \[0, 4\): it selects entries 20 to 24 along "
                                         r"axis 0 of arg2 \(key\), which has 24 entries .* b = 5, the "
                                         r"value of arg4 \(bs\)\)$"):
        kernel.check_arguments([ptr, idx, key, value, 5, k_out, v_out])


def test_block_sparse_gather_valid_block_ids_pass():
    """Every shipped input (small and full, several seeds) passes; a block size of 0 reads no
    row, so no id is refused; a huge id's byte offset is reported as overflowing."""
    kernel = _kernel("block_sparse_gather.mlir")
    for size in ("small", "full"):
        for seed in range(4):
            kernel.check_arguments(BENCH_WORKLOADS["spattn_gather"].make(size, seed))
    ptr, idx, key, value, bs, k_out, v_out = BENCH_WORKLOADS["spattn_gather"].make("small", 2)
    far = np.full_like(idx, 1 << 40)
    kernel.check_arguments([ptr, far, key, value, np.int64(0), k_out, v_out])
    far[0] = 1 << 61
    with pytest.raises(ValueError, match=r"; its byte offset 9223372036854775808 \* 32 does not "
                                         r"fit in 64 bits$"):
        kernel.check_arguments([ptr, far, key, value, bs, k_out, v_out])


@pytest.mark.parametrize("opt_level", [0, 3])
def test_block_sparse_gather_negative_block_size_is_refused(opt_level):
    """A block size below 0 is refused at every level, naming bs. -O0's loop over a block's rows
    would not run (the outputs stayed as passed), while -O3 loads a block's rows as one block of
    bs * dim elements and refused it with a message about max_block naming no argument (found by
    tests/runtime/test_host_check_fuzz.py); 0 still reads nothing."""
    kernel = _kernel("block_sparse_gather.mlir", opt_level)
    ptr, idx, key, value, bs, k_out, v_out = BENCH_WORKLOADS["spattn_gather"].make("small", 3)
    with pytest.raises(ValueError) as info:
        run_kernel(kernel, [ptr, idx, key, value, np.int64(-1), k_out.copy(), v_out.copy()], "golden")
    assert str(info.value) == (
        "the block size b = -1 (the value of arg4 (bs)) is negative: the load at "
        "block_sparse_gather.mlir:19:7 reads the entries v * b + i for i < b along axis 0 of arg2 "
        "(key), v an element of arg1 (block_idx)")
    got = run_kernel(kernel, [ptr, idx, key, value, np.int64(0), k_out.copy(), v_out.copy()], "golden")
    np.testing.assert_array_equal(got.results[0], k_out)


def _hashed(opt_level: int = 0):
    from sw.chained_workloads import _hash
    return _kernel("hashed_gather.mlir", opt_level), BENCH_WORKLOADS["hashed_gather"].make("small", 4), _hash


HASH_INDEX = "(arg2 (ids)[i] * -7046029254386353131) >>u (64 - arg3 (logb))"


@pytest.mark.parametrize("opt_level", [0, 3])
def test_hashed_gather_bucket_past_remap_is_refused_before_the_unit_runs(opt_level):
    """``remap[h(ids[i])]``, ``h`` the multiplicative hash of ``ids[i]`` by ``logb`` bits (kind
    ``computed``: the host hashes every id): a ``logb`` larger than ``remap`` allows was the
    unit's ADDR_RANGE fault, blaming no argument (found by tests/runtime/test_host_check_fuzz.py)."""
    kernel, args, h = _hashed(opt_level)
    table, remap, ids, logb, logd, out = args
    _check("hashed_gather", kernel, args)
    wider = h(ids, logb + 2)
    i = int(np.flatnonzero(wider >= len(remap))[0])
    with pytest.raises(ValueError) as info:
        run_kernel(kernel, [table, remap, ids, logb + 2, logd, out.copy()], "golden")
    assert str(info.value) == (
        f"arg2 (ids)[{i}] = {ids[i]} selects entry {wider[i]} along axis 0 of arg1 (remap), which "
        f"has {len(remap)} entries (the load at hashed_gather.mlir:19:5, at the index {HASH_INDEX}; "
        f"i = {i}, arg3 (logb) = {logb + 2})")
    # fewer buckets than remap has: every bucket is in range
    _check("hashed_gather", kernel, [table, remap, ids, logb - 1, logd, out.copy()])
    # a shift by 64 or more, or below 0, is undefined (MLIR: poison)
    for bad, shift in ((0, 64), (65, -1)):
        with pytest.raises(ValueError) as info:
            run_kernel(kernel, [table, remap, ids, bad, logd, out.copy()], "golden")
        assert str(info.value) == (f"the shift amount 64 - arg3 (logb) of the arith.shrui at "
                                   f"hashed_gather.mlir:17:5 is {shift}, outside [0, 64) (arg3 (logb) = {bad})")


@pytest.mark.parametrize("opt_level", [0, 3])
def test_hashed_gather_row_past_the_table_is_refused_before_the_unit_runs(opt_level):
    """``table[(remap[h] << logd) + d]`` for ``d < dim(out, 1)``: each row the lookups select
    must lie inside the flat table (it was the unit's ADDR_RANGE fault, or ADDR_OVERFLOW for a
    large ``logd``, naming no argument but the table). Exact: a remap entry no id hashes to is
    not looked at."""
    kernel, args, h = _hashed(opt_level)
    table, remap, ids, logb, logd, out = args
    rows, dim = len(table) >> logd, out.shape[1]
    buckets = h(ids, logb)
    unused = sorted(set(range(len(remap))) - set(buckets.tolist()))
    assert unused
    spare = remap.copy()
    spare[unused[0]] = rows                       # past the table, but no id hashes to it
    _check("hashed_gather", kernel, [table, spare, ids, logb, logd, out.copy()])
    bad = remap.copy()
    bad[buckets[3]] = rows
    i = int(np.flatnonzero(bad[buckets] == rows)[0])
    index = f"(arg1 (remap)[{HASH_INDEX}] << arg4 (logd)) + d"
    with pytest.raises(ValueError) as info:
        run_kernel(kernel, [table, bad, ids, logb, logd, out.copy()], "golden")
    assert str(info.value) == (
        f"arg1 (remap)[{buckets[i]}] = {rows} selects entries {rows * dim} to {rows * dim + dim - 1} "
        f"along axis 0 of arg0 (table), which has {len(table)} entries (the load at "
        f"hashed_gather.mlir:23:7, at the index {index} for d < {dim}, the size of arg5 (out) along "
        f"axis 1; i = {i}, arg2 (ids)[{i}] = {ids[i]}, arg3 (logb) = {logb}, arg4 (logd) = {logd})")
    # rows twice as wide: the upper half of the remap entries leave the table
    with pytest.raises(ValueError, match=r"selects entries \d+ to \d+ along axis 0 of arg0 \(table\), "
                                         r"which has 400 entries .* arg4 \(logd\) = 4\)$"):
        run_kernel(kernel, [table, remap, ids, logb, logd + 1, out.copy()], "golden")
    with pytest.raises(ValueError, match=r"^the shift amount arg4 \(logd\) of the arith.shli at "
                                         r"hashed_gather.mlir:20:5 is 64, outside \[0, 64\) "
                                         r"\(arg4 \(logd\) = 64\)$"):
        run_kernel(kernel, [table, remap, ids, logb, 64, out.copy()], "golden")


@pytest.mark.parametrize("opt_level", [0, 3])
def test_spmm_out_rows_fewer_than_nrows_are_refused_before_the_unit_runs(opt_level):
    """``out[i, d]`` sits in the loop over row ``i``'s nonzeros, inside the loop to ``nrows[0]``:
    ``out`` needs ``nrows[0]`` rows, as a loop to ``dim(X, j)`` asks wherever its index is used.
    The check was made only for accesses in the loop's own body, so an ``out`` one row short ran
    the unit and stopped in the execute side ('indexed outside an argument', after the run; found
    by tests/runtime/test_host_check_fuzz.py)."""
    kernel = _kernel("spmm_csr.mlir", opt_level)
    rowptr, col, val, x, nrows, out = BENCH_WORKLOADS["spmm_cora"].make("small", 2)
    n = int(nrows[0])
    message = (f"arg5 (out) has {n - 1} entries along axis 0, fewer than the loop at spmm_csr.mlir:9:3 "
               f"that indexes it runs over ({n}, the value of arg4 (nrows)[0])")
    short = out[:-1].copy()
    with pytest.raises(ValueError) as info:
        kernel.check_arguments([rowptr, col, val, x, nrows, short])
    assert str(info.value) == message
    with pytest.raises(ValueError) as info:
        run_kernel(kernel, [rowptr, col, val, x, nrows, short], "golden")
    assert str(info.value) == message
    nnz = int(rowptr[n - 1])                        # the first n - 1 rows
    _check("spmm_cora", kernel, [rowptr[:-1].copy(), col[:nnz].copy(), val[:nnz].copy(), x,
                                 np.array([n - 1], np.int64), short])


@pytest.mark.parametrize("opt_level", [0, 3])
def test_block_sparse_gather_output_rows_short_are_refused_before_the_unit_runs(opt_level):
    """``k_out[j * bs + r]`` for ``j`` in the ranges ``block_ptr[q]`` .. ``block_ptr[q + 1]``
    (kind ``computed`` over the loops' iterations, the bounds of ``j`` evaluated per ``q``): an
    output one row short ran the unit and stopped in the execute side, after the run, naming no
    argument (found by tests/runtime/test_host_check_fuzz.py). Longer outputs run."""
    kernel = _kernel("block_sparse_gather.mlir", opt_level)
    ptr, idx, key, value, bs, k_out, v_out = BENCH_WORKLOADS["spattn_gather"].make("small", 1)
    bs, n = int(bs), len(idx)
    q = int(np.flatnonzero(ptr[:-1] <= n - 1)[-1])                 # the query block of block n - 1
    for k, at, short in ((5, "29:11", [k_out[:-1].copy(), v_out.copy()]),
                         (6, "30:11", [k_out.copy(), v_out[:-1].copy()])):
        with pytest.raises(ValueError) as info:
            run_kernel(kernel, [ptr, idx, key, value, np.int64(bs), *short], "golden")
        assert str(info.value) == (
            f"the index selects entry {n * bs - 1} along axis 0 of arg{k} ({['k_out', 'v_out'][k - 5]}), "
            f"which has {n * bs - 1} entries (the store at block_sparse_gather.mlir:{at}, at the index "
            f"(j * arg4 (bs)) + r; q = {q}, j = {n - 1}, r = {bs - 1}, arg4 (bs) = {bs})")
    longer = np.zeros((n * bs + 3, key.shape[1]), np.float32)
    got = run_kernel(kernel, [ptr, idx, key, value, np.int64(bs), longer, longer.copy()], "golden").results
    np.testing.assert_array_equal(got[0][:n * bs], BENCH_WORKLOADS["spattn_gather"].reference(
        [ptr, idx, key, value, bs])[0])
