"""Randomised differential tests of the TensorFlow frontend against TensorFlow itself.

Each run draws a fresh seed (printed; ``EMBER_SEED`` replays it, ``tb/seeds.py``) and from it
functions across what a user may write with the supported ops (``sw/compiler/frontends/
tensorflow.py``): ``tf.nn.embedding_lookup_sparse`` (sum, mean, sqrtn; with and without
``sp_weights``, of the table's or another float dtype), ``tf.nn.safe_embedding_lookup_sparse``
(sparse ids of rank 1-4 of random dense shapes and sparsity — empty rows, all-empty inputs,
dimensions of 0 —, indices in row-major, reversed or random order, repeated now and then, ids
< 0 among them; with and without ``sparse_weights`` — zero, negative and NaN ones, which mean and
sqrtn drop and a sum keeps —, ``default_id`` None, 0, another row or out of range; called again
on ids of other dense shapes and ranks), ``tf.sparse.segment_sum/mean/sqrt_n``,
``tf.nn.embedding_lookup`` and ``tf.gather``
with ids of several shapes, ``tf.math.segment_sum/segment_mean`` of a gather and
``tf.math.unsorted_segment_sum/max`` of a gather (negative segment ids; ``num_segments`` a
constant, an input, ``tf.shape(x)[0]`` or a static ``x.shape[0]``). The table is a constant, a
``tf.Variable`` (assigned new values between calls: the op must read them) or an input; dtypes
float32, float64, and int32/int64, float16, bfloat16 where the frontend takes them. Each function
is traced on one input and called on inputs of other sizes (table rows, ids, segments, bags; zero
ids among them) on the golden model, and compared with TensorFlow's eager result with the
tolerance the frontend's docstring states for the op: bit for bit for gathers,
``UnsortedSegmentSum``/``Max`` and integer sums; ``rtol`` 1e-6 (f32) / 1e-14 (f64) for the sparse
and sorted segment sums and means, ten times that with weights or sqrtn (relative to the magnitude
of the summands: a sum that cancels is not relatively accurate in either order); float16 and
bfloat16 within one ulp of the type, except the dense ``segment_sum/segment_mean`` of 16-bit
tables, which TensorFlow reduces in the 16-bit type (bit for bit: means and rows narrower than 8
columns; wider sums, added in another order by TensorFlow, within the summation bound). Some calls
carry an input TensorFlow refuses (an id out of range, segment ids out of order or out of range;
for the safe lookup an index beyond ``dense_shape``, which TensorFlow refuses only when the row
it reads it as is outside the rows, or weights not one per id): ``bind`` must raise a
``ValueError`` (for the safe lookup one of the frontend's messages). A NaN of TensorFlow's (a
sum's NaN weight) must be a NaN, and only there. A documented limitation is constrained, not
compared: a static ``x.shape[0]`` as ``num_segments`` keeps the traced size (TensorFlow
retraces), so a call with another ``x`` must be that ``ValueError``.
"""

from __future__ import annotations

import os
import random

import numpy as np
import pytest

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
tf = pytest.importorskip("tensorflow", reason="TensorFlow is the optional extra 'tf' "
                         "(pip install -e .[tf]; `make setup` installs it)")

from sw.compiler.frontends.tensorflow import compile_tf  # noqa: E402
from sw.runtime.drivers import run_kernel  # noqa: E402
from tb.seeds import fresh_seed, seed_range  # noqa: E402

BF16 = tf.bfloat16.as_numpy_dtype
F16 = np.float16
RTOL = {np.dtype(np.float32): 1e-6, np.dtype(np.float64): 1e-14}
_INTS = (np.int32, np.int64)


def _run(pk, args):
    return pk.unbind(run_kernel(pk.kernel, pk.bind(tuple(args)), "golden").results)


def _tf_result(fn, args):
    """TensorFlow's eager result, or the exception with which it refuses the input."""
    try:
        return fn(*args).numpy(), None
    except (tf.errors.InvalidArgumentError, ValueError, TypeError) as e:
        return None, e


def _values(rng: np.random.Generator, dtype, rows: int, dim: int) -> np.ndarray:
    if dtype in _INTS:
        return rng.integers(-1000, 1000, (rows, dim)).astype(dtype)
    return (rng.standard_normal((rows, dim)) * 4).astype(dtype)


class _Table:
    """The op's table: ``constant`` (captured), ``variable`` (a captured ``tf.Variable``, assigned
    new values before most calls) or ``input`` (the function's first argument, of new rows at
    each call)."""

    def __init__(self, kind: str, rng: np.random.Generator, dtype, rows: int, dim: int):
        self.kind, self.rng, self.dtype, self.dim = kind, rng, dtype, dim
        self.value = _values(rng, dtype, rows, dim)
        self.const = tf.constant(self.value) if kind == "constant" else None
        self.var = tf.Variable(self.value) if kind == "variable" else None

    @property
    def rows(self) -> int:
        return self.value.shape[0]

    def get(self, args):
        """(the table inside the function, the other arguments)."""
        if self.kind == "input":
            return args[0], args[1:]
        return (self.const if self.kind == "constant" else self.var), args

    def next_call(self, rows: int) -> list:
        """The table's arguments of the next call (new values; ``rows`` of them for an input)."""
        if self.kind == "input":
            self.value = _values(self.rng, self.dtype, rows, self.dim)
            return [tf.constant(self.value)]
        if self.kind == "variable" and self.rng.random() < 0.7:
            self.value = _values(self.rng, self.dtype, self.rows, self.dim)
            self.var.assign(self.value)
        return []


def _magnitude(x, ids, seg, w, nseg: int, combiner: str) -> np.ndarray:
    """Per output element, the sum of the summands' magnitudes ``|w| |x[id]|`` over the segment,
    scaled as the result (÷ count, ÷ Σw, ÷ √Σw²): what a relative tolerance of a sum is
    relative to."""
    x = np.abs(np.asarray(x, np.float64))
    w = np.ones(len(ids)) if w is None else np.asarray(w, np.float64)
    keep = (seg >= 0) & (ids >= 0)
    ids, seg, w = ids[keep], seg[keep], w[keep]
    mag = np.zeros((nseg, x.shape[1]))
    np.add.at(mag, seg, np.abs(w)[:, None] * x[ids])
    den = np.zeros(nseg)
    np.add.at(den, seg, {"sum": np.zeros_like(w), "mean": w, "sqrtn": w * w}[combiner])
    if combiner == "sqrtn":
        den = np.sqrt(den)
    if combiner != "sum":
        mag = mag / np.where(den == 0, 1, np.abs(den))[:, None]
    return mag


def _compare(got, want, what, *, exact: bool, rtol: float = 0.0, mag=None, bound=None):
    got = np.asarray(got)
    assert got.shape == want.shape and got.dtype == want.dtype, (what, got.shape, got.dtype,
                                                                  want.shape, want.dtype)
    if exact or got.dtype in _INTS:
        assert (np.array_equal(got.view(np.uint16), want.view(np.uint16)) if got.dtype == BF16
                else np.array_equal(got, want)), what
        return
    g, w = got.astype(np.float64), want.astype(np.float64)
    nan = np.isnan(w)                       # (a NaN weight of a sum): NaN where TensorFlow's is
    assert np.array_equal(np.isnan(g), nan), (what, "NaN", np.argwhere(np.isnan(g) != nan)[:3].tolist())
    g, w = np.where(nan, 0, g), np.where(nan, 0, w)
    if bound is not None:
        bad = np.abs(g - w) > bound
    elif got.dtype in (F16, BF16):          # one ulp of the type (bf16: 8 significant bits)
        ulp = (np.abs(w) * 2.0 ** -7 if got.dtype == BF16
               else np.spacing(np.abs(w).astype(F16)).astype(np.float64))
        bad = np.abs(g - w) > ulp
    else:
        bad = np.abs(g - w) > rtol * np.abs(w) + rtol * np.where(nan, 0, mag)
    assert not bad.any(), (what, np.argwhere(bad)[:3].tolist(), g[bad][:3], w[bad][:3])


def _check_call(pk, fn, args, what, *, refusal=None, expected=None, **tolerance):
    """``pk`` on ``args`` equals TensorFlow's ``fn`` (``expected``: its ``_tf_result``, if known)
    within ``tolerance``, or, where TensorFlow refuses them, ``bind`` raises a ValueError (whose
    message matches ``refusal``, if given)."""
    want, refused = _tf_result(fn, args) if expected is None else expected
    if refused is not None:
        with pytest.raises(ValueError, match=refusal):
            pk.bind(tuple(args))
        return None
    try:
        got = _run(pk, args)
    except ValueError as e:                 # where TensorFlow takes the input: named with the case
        raise AssertionError(f"{what}: TensorFlow takes the input, the compiled op raised {e!r}") from e
    _compare(got, want, what, **tolerance)
    return want


# ------------------------------------------------------------------------------------------------
# embedding_lookup_sparse, tf.sparse.segment_sum/mean/sqrt_n
# ------------------------------------------------------------------------------------------------

def _sparse_ids(rng: random.Random, nprng, bags: int, table_rows: int, id_dtype, *, bad: bool):
    lengths = [rng.choice([0, 0, 1, 2, 3, 9, 12]) for _ in range(bags)]
    idx = np.array([[b, c] for b, n in enumerate(lengths) for c in range(n)], np.int64).reshape(-1, 2)
    ids = nprng.integers(0, table_rows, len(idx))
    if bad and len(ids):
        ids[rng.randrange(len(ids))] = rng.choice([table_rows, table_rows + 5, -1])
    return tf.sparse.SparseTensor(idx, tf.constant(ids, id_dtype), [bags, max(lengths + [1])])


def _sparse_weights(nprng, sp, dtype, combiner):
    n = int(sp.values.shape[0])
    w = nprng.random(n) + 0.1
    if combiner != "mean":                       # (mean: positive, so Σw is not a cancellation)
        w = w * nprng.choice([-1, 1], n)
    w[nprng.random(n) < 0.15] = 0.0              # whole bags of zero weights: DivNoNan's 0
    return tf.sparse.SparseTensor(sp.indices, tf.constant(w.astype(dtype)), sp.dense_shape)


def test_random_sparse_lookups_equal_tensorflow():
    base = fresh_seed("tf_sparse_fuzz")
    for seed in seed_range(base, 68):
        rng, nprng = random.Random(seed), np.random.default_rng(seed)
        op = rng.choice(["embedding_lookup_sparse", "embedding_lookup_sparse", "sparse.segment"])
        combiner = rng.choice(["sum", "mean", "sqrtn"])
        weighted = op == "embedding_lookup_sparse" and rng.random() < 0.4
        dtypes = [np.float32, np.float64]
        if not weighted and combiner != "sqrtn":
            dtypes += [F16, BF16]
        if op == "sparse.segment" and combiner == "sum":
            dtypes += list(_INTS)               # SparseSegmentSum takes integer tables
        dtype = rng.choice(dtypes)
        w_dtype = rng.choice([np.float32, np.float64, F16]) if weighted else None
        table = _Table(rng.choice(["constant", "variable", "input"]), nprng, dtype, rng.choice([1, 7, 40]),
                       rng.choice([1, 3, 8, 17]))
        id_dtype = rng.choice([tf.int32, tf.int64])
        what = (f"seed {seed}: {op} {combiner} weighted={weighted}({w_dtype}) {np.dtype(dtype)} "
                f"table={table.kind} ids={id_dtype.name}")

        if op == "sparse.segment":
            reduce = {"sum": tf.sparse.segment_sum, "mean": tf.sparse.segment_mean,
                      "sqrtn": tf.sparse.segment_sqrt_n}[combiner]

            def fn(*args):
                x, (ids, seg) = table.get(args)
                return reduce(x, ids, seg)

            def inputs(rows, bad=False):
                k = rng.choice([0, 1, 5, 30])
                ids = nprng.integers(0, rows, k)
                seg = np.sort(nprng.integers(0, rng.choice([1, 4, 12]), k))
                if bad and k > 1:
                    if rng.random() < 0.5:
                        ids[rng.randrange(k)] = rows
                    else:
                        seg[:2] = seg[1] + 1, seg[0]
                id_np = id_dtype.as_numpy_dtype
                seg_np = rng.choice([np.int32, np.int64])
                return [tf.constant(ids.astype(id_np)), tf.constant(seg.astype(seg_np))]

            def lookups(args):
                return args[-2].numpy().astype(np.int64), args[-1].numpy().astype(np.int64), None
        else:
            def fn(*args):
                x, rest = table.get(args)
                return tf.nn.embedding_lookup_sparse(x, rest[0], rest[1] if weighted else None,
                                                     combiner=combiner)

            def inputs(rows, bad=False):
                sp = _sparse_ids(rng, nprng, rng.choice([1, 3, 8, 20]), rows, id_dtype, bad=bad)
                return [sp] + ([_sparse_weights(nprng, sp, w_dtype, combiner)] if weighted else [])

            def lookups(args):
                sp = args[-2] if weighted else args[-1]
                w = args[-1].values.numpy().astype(dtype).astype(np.float64) if weighted else None
                return sp.values.numpy().astype(np.int64), sp.indices.numpy()[:, 0], w

        rows0 = table.rows
        example = table.next_call(rows0) + inputs(rows0)
        pk = compile_tf(tf.function(fn), *example, opt_level=rng.choice([0, 3]))
        calls = [(rows0, False), (rng.choice([1, 5, 60]), False), (rng.choice([3, 40]), rng.random() < 0.5),
                 (rows0, False)]
        for rows, bad in calls:
            if table.kind != "input":
                rows = table.rows
            args = table.next_call(rows) + inputs(rows, bad)
            ids, seg, w = lookups(args)
            nseg = int(fn(*args).shape[0]) if _tf_result(fn, args)[1] is None else 0
            rtol = RTOL.get(np.dtype(dtype), 0.0) * (10 if weighted or combiner == "sqrtn" else 1)
            mag = _magnitude(table.value, ids, seg, w, nseg, combiner) if nseg and dtype not in _INTS else 0
            _check_call(pk, fn, args, f"{what} call rows={rows} bad={bad}", exact=False, rtol=rtol, mag=mag)


# ------------------------------------------------------------------------------------------------
# safe_embedding_lookup_sparse
# ------------------------------------------------------------------------------------------------

# the frontend's ValueErrors for what TensorFlow refuses: an id, an index (its row) or default_id
# out of range, weights not one per id, values in a dense shape of no elements
_SAFE_REFUSAL = r"is out of range|sparse_weights has \d+ values and sparse_ids|has no elements"


def _dense_shape(rng: random.Random, rank: int) -> list:
    """A random dense_shape of ``rank``: small dimensions, now and then a zero one."""
    shape = [rng.choice([1, 2, 3, 5]) for _ in range(rank - 1)] + [rng.choice([1, 2, 4, 9, 17])]
    if rng.random() < 0.06:
        shape[rng.randrange(rank)] = 0
    return shape


def _safe_ids(rng: random.Random, nprng, shape, table_rows: int, id_dtype, bad: str | None):
    """Sparse ids of ``shape``: a random density (all empty to full), now and then a row emptied
    or an index repeated, the indices in row-major, reversed or random order (TensorFlow takes any:
    SparseFillEmptyRows orders them by row), some ids negative (dropped). ``bad``: ``"id"`` puts
    an id beyond the table, ``"index"`` a coordinate beyond (or below) ``shape`` — which
    TensorFlow refuses only when the row it reads the index as falls outside the rows, and a
    value in a shape of no elements (rank 2 aside) — or, without values, one value at an index of
    0s and dimensions."""
    rank = len(shape)
    idx = np.argwhere(nprng.random(shape) < rng.choice([0.0, 0.15, 0.5, 1.0])).reshape(-1, rank)
    if rank > 1 and len(idx) and rng.random() < 0.3:         # one row (of the leading dims) empty
        idx = idx[np.any(idx[:, :-1] != idx[rng.randrange(len(idx)), :-1], axis=1)]
    if len(idx) and rng.random() < 0.1:
        idx = np.concatenate([idx, idx[nprng.integers(0, len(idx), 2)]])
    order = rng.choice(["row-major", "row-major", "reversed", "random"])
    if order == "row-major":
        idx = idx[np.lexsort(idx.T[::-1])] if len(idx) else idx
    elif order == "reversed":
        idx = idx[::-1]
    else:
        idx = idx[nprng.permutation(len(idx))]
    ids = nprng.integers(rng.choice([0, -3]), table_rows, len(idx))
    if bad == "id" and len(ids):
        ids[rng.randrange(len(ids))] = rng.choice([table_rows, table_rows + 5])
    if bad == "index" and len(idx):
        k, d = rng.randrange(len(idx)), rng.randrange(rank)
        idx[k, d] = rng.choice([shape[d], shape[d] + 2, -1])
    elif bad == "index":                    # one value where there is none (of a dimension of 0)
        idx = np.array([[rng.choice([0, d]) for d in shape]])
        ids = np.array([rng.randrange(-1, table_rows)])
    return tf.sparse.SparseTensor(np.ascontiguousarray(idx, np.int64), tf.constant(ids, id_dtype), shape)


def _safe_weights(rng: random.Random, nprng, sp, dtype, combiner: str, bad: bool):
    """Weights of ``sp`` (of the table's dtype, as TensorFlow asks): negative, zero and NaN ones
    among them (mean and sqrtn drop those that are not > 0; a sum keeps them). TensorFlow pairs
    them with the ids by position: now and then their indices are others. ``bad``: one fewer or
    one more than the ids."""
    n = int(sp.values.shape[0])
    w = nprng.standard_normal(n) * 2
    w[nprng.random(n) < 0.15] = 0.0
    if rng.random() < 0.3:
        w[nprng.random(n) < 0.15] = np.nan
    if bad:
        w = w[:-1] if n and rng.random() < 0.5 else np.append(w, 1.0)
    idx = sp.indices.numpy()
    if len(w) != n or rng.random() < 0.15:
        idx = np.zeros((len(w), idx.shape[1]), np.int64)
    return tf.sparse.SparseTensor(idx, tf.constant(w.astype(dtype)), sp.dense_shape)


def _safe_magnitude(x, sp, w, combiner: str, default_id) -> np.ndarray:
    """The magnitudes of the summands of TensorFlow's result (what ``_magnitude`` is for the other
    lookups): TensorFlow's own lookup of ``|x|`` in float64 with ``|w|`` (mean and sqrtn: ``w``,
    which they prune to the positive ones)."""
    x = tf.constant(np.abs(np.asarray(x, np.float64)))
    if w is not None:
        v = w.values.numpy().astype(np.float64)
        w = tf.sparse.SparseTensor(w.indices, tf.constant(np.abs(v) if combiner == "sum" else v),
                                   w.dense_shape)
    return tf.nn.safe_embedding_lookup_sparse(x, sp, w, combiner=combiner, default_id=default_id).numpy()


def test_random_safe_lookups_equal_tensorflow():
    """``tf.nn.safe_embedding_lookup_sparse`` of sparse ids of rank 1-4 (random dense shapes and
    sparsity, all-empty ones among them, indices in any order), with and without
    ``sparse_weights`` and ``default_id``, each combiner, float32/float64 (float16/bfloat16
    unweighted sum and mean); each compiled op called on ids of other dense shapes (now and then
    another rank) and tables of other rows, some calls carrying an input TensorFlow refuses."""
    base = fresh_seed("tf_safe_fuzz")
    for seed in seed_range(base, 24):
        rng, nprng = random.Random(seed), np.random.default_rng(seed)
        combiner = rng.choice(["sum", "mean", "sqrtn"])
        weighted = rng.random() < 0.5
        dtypes = [np.float32, np.float64]
        if not weighted and combiner != "sqrtn":
            dtypes += [F16, BF16]
        dtype = rng.choice(dtypes)
        table = _Table(rng.choice(["constant", "variable", "input"]), nprng, dtype, rng.choice([1, 7, 40]),
                       rng.choice([1, 3, 8]))
        default_id = rng.choice([None, None, 0, rng.randrange(table.rows)])
        if rng.random() < 0.15:                 # refused where a row is empty
            default_id = rng.choice([table.rows, -1])
        id_dtype = rng.choice([tf.int32, tf.int64])
        rank = rng.choice([1, 2, 3, 4])
        what = (f"seed {seed}: safe_embedding_lookup_sparse {combiner} weighted={weighted} "
                f"default_id={default_id} {np.dtype(dtype)} table={table.kind} ids={id_dtype.name} "
                f"rank {rank}")

        def fn(*args):
            x, rest = table.get(args)
            return tf.nn.safe_embedding_lookup_sparse(x, rest[0], rest[1] if weighted else None,
                                                      combiner=combiner, default_id=default_id)

        def inputs(rows, shape, bad=None):
            sp = _safe_ids(rng, nprng, shape, rows, id_dtype, bad)
            return [sp] + ([_safe_weights(rng, nprng, sp, dtype, combiner, bad == "weights")]
                           if weighted else [])

        rows0, shape0 = table.rows, _dense_shape(rng, rank)
        example = table.next_call(rows0) + inputs(rows0, shape0)
        pk = compile_tf(tf.function(fn), *example, opt_level=rng.choice([0, 3]))
        bads = ["id", "index"] + (["weights"] if weighted else [])
        calls = [(rows0, shape0, None)]
        for _ in range(5):          # other dense shapes (1 in 5 of another rank), some inputs refused
            calls.append((rng.choice([1, 3, 9, 60]),
                          _dense_shape(rng, rank if rng.random() < 0.8 else rng.randrange(1, 5)),
                          rng.choice(bads) if rng.random() < 0.4 else None))
        calls.append((rows0, shape0, None))
        rtol = RTOL.get(np.dtype(dtype), 0.0) * (10 if weighted or combiner == "sqrtn" else 1)
        for rows, shape, bad in calls:
            if table.kind != "input":
                rows = table.rows
            args = table.next_call(rows) + inputs(rows, shape, bad)
            call = f"{what} call rows={rows} dense_shape={shape} bad={bad}"
            expected = _tf_result(fn, args)
            mag = 0
            if dtype in (np.float32, np.float64) and expected[1] is None:
                mag = _safe_magnitude(table.value, args[-2 if weighted else -1],
                                      args[-1] if weighted else None, combiner, default_id)
            _check_call(pk, fn, args, call, refusal=_SAFE_REFUSAL, expected=expected, exact=False,
                        rtol=rtol, mag=mag)


# ------------------------------------------------------------------------------------------------
# embedding_lookup, gather
# ------------------------------------------------------------------------------------------------

def test_random_gathers_equal_tensorflow_bit_for_bit():
    base = fresh_seed("tf_gather_fuzz")
    for seed in seed_range(base, 150):
        rng, nprng = random.Random(seed), np.random.default_rng(seed)
        gather = rng.choice(["tf.nn.embedding_lookup", "tf.gather"])
        dtype = rng.choice([np.float32, np.float64, np.int32, np.int64, F16, BF16])
        table = _Table(rng.choice(["constant", "variable", "input"]), nprng, dtype, rng.choice([1, 6, 50]),
                       rng.choice([1, 4, 9]))
        rank = rng.choice([0, 1, 1, 2, 3])
        id_dtype = rng.choice([np.int32, np.int64])
        what = (f"seed {seed}: {gather} {np.dtype(dtype)} table={table.kind} ids rank {rank} "
                f"{np.dtype(id_dtype)}")

        def fn(*args):
            x, (ids,) = table.get(args)
            return tf.nn.embedding_lookup(x, ids) if gather == "tf.nn.embedding_lookup" else tf.gather(x, ids)

        def ids_of(rows, bad=False):
            shape = tuple(rng.choice([0, 1, 2, 5]) for _ in range(rank))
            ids = nprng.integers(0, rows, shape)
            if bad and ids.size:
                ids.reshape(-1)[rng.randrange(ids.size)] = rng.choice([rows, -1])
            return [tf.constant(ids.astype(id_dtype))]

        rows0 = table.rows
        example = table.next_call(rows0) + ids_of(rows0)
        pk = compile_tf(tf.function(fn), *example, opt_level=rng.choice([0, 3]))
        for rows, bad in ((rows0, False), (rng.choice([2, 70]), False), (rng.choice([3, 9]), True),
                          (rows0, False)):
            if table.kind != "input":
                rows = table.rows
            args = table.next_call(rows) + ids_of(rows, bad)
            _check_call(pk, fn, args, f"{what} call rows={rows} bad={bad}", exact=True)


# ------------------------------------------------------------------------------------------------
# segment_sum/segment_mean and unsorted_segment_sum/max of a gather
# ------------------------------------------------------------------------------------------------

_NUM_SEGMENTS = ["constant", "input", "tf.shape(x)[0]", "x.shape[0]"]


def test_random_segment_reductions_of_a_gather_equal_tensorflow():
    base = fresh_seed("tf_segment_fuzz")
    for seed in seed_range(base, 120):
        rng, nprng = random.Random(seed), np.random.default_rng(seed)
        op = rng.choice(["segment_sum", "segment_mean", "unsorted_segment_sum", "unsorted_segment_max"])
        unsorted = op.startswith("unsorted")
        dtypes = [np.float32, np.float64]
        if op != "segment_mean":
            dtypes += list(_INTS)
        if not unsorted:
            dtypes += [F16, BF16]
        dtype = rng.choice(dtypes)
        table = _Table(rng.choice(["constant", "variable", "input"]), nprng, dtype, rng.choice([2, 10, 40]),
                       rng.choice([1, 3, 8]))
        n_form = rng.choice(_NUM_SEGMENTS) if unsorted else None
        if n_form in ("tf.shape(x)[0]", "x.shape[0]") and table.kind != "input":
            n_form = rng.choice(["constant", "input"])
        const_n = rng.choice([1, 6, 15])
        seg_dtype, id_dtype = rng.choice(_INTS), rng.choice(_INTS)
        reduce = getattr(tf.math, op)
        what = (f"seed {seed}: {op} {np.dtype(dtype)} table={table.kind} num_segments={n_form} "
                f"ids {np.dtype(id_dtype)} segments {np.dtype(seg_dtype)}")

        def fn(*args):
            x, rest = table.get(args)
            rows = tf.gather(x, rest[0])
            if not unsorted:
                return reduce(rows, rest[1])
            n = {"constant": lambda: const_n, "input": lambda: rest[2],
                 "tf.shape(x)[0]": lambda: tf.shape(x)[0], "x.shape[0]": lambda: x.shape[0]}[n_form]()
            return reduce(rows, rest[1], n)

        def inputs(rows, bad=False):
            k = rng.choice([0, 1, 7, 40])
            ids = nprng.integers(0, rows, k)
            if unsorted:
                n = {"constant": const_n, "input": rng.choice([1, 4, 20]), "tf.shape(x)[0]": rows,
                     "x.shape[0]": rows}[n_form]
                seg = nprng.integers(-2, n, k)
            else:
                n = rng.choice([1, 5, 16])
                seg = np.sort(nprng.integers(0, n, k))
            if bad and k > 1:
                pick = rng.random()
                if pick < 0.4:
                    ids[rng.randrange(k)] = rows
                elif unsorted:
                    seg[rng.randrange(k)] = n
                else:
                    seg[:2] = seg[1] + 1, seg[0]
            extra = [tf.constant(np.int32(n))] if n_form == "input" else []
            return [tf.constant(ids.astype(id_dtype)), tf.constant(seg.astype(seg_dtype))] + extra

        rows0 = table.rows
        example = table.next_call(rows0) + inputs(rows0)
        pk = compile_tf(tf.function(fn), *example, opt_level=rng.choice([0, 3]))
        for rows, bad in ((rows0, False), (rng.choice([3, 25]), False),
                          (rng.choice([5, 60]), rng.random() < 0.5), (rows0, False)):
            if table.kind != "input":
                rows = table.rows
            args = table.next_call(rows) + inputs(rows, bad)
            call = f"{what} call rows={rows} bad={bad}"
            if n_form == "x.shape[0]" and rows != rows0:
                # Documented: TensorFlow folds a static x.shape[0] into the graph and retraces for
                # another x; the compiled op keeps the traced size and refuses another x's.
                with pytest.raises(ValueError, match="static shape" if not bad else None):
                    pk.bind(tuple(args))
                continue
            ids, seg = args[-2 - (n_form == "input")].numpy(), args[-1 - (n_form == "input")].numpy()
            want, refused = _tf_result(fn, args)
            nseg = 0 if refused is not None else want.shape[0]
            mag = (_magnitude(table.value, ids.astype(np.int64), seg.astype(np.int64), None, nseg,
                              "mean" if op == "segment_mean" else "sum")
                   if nseg and dtype not in _INTS else 0)
            # TensorFlow's dense SegmentSum/Mean on 16-bit tables round every addition to the type;
            # means, and sums of rows narrower than 8 columns, in order (bit for bit); wider sums
            # in another order: within twice gamma_(n-1) (u = 2^-11 / 2^-8) of the magnitudes
            exact16 = dtype in (F16, BF16) and (op == "segment_mean" or table.dim < 8)
            bound = None
            if dtype in (F16, BF16) and not exact16 and nseg:
                u = 2.0 ** (-11 if dtype == F16 else -8)
                n = np.bincount(seg.astype(np.int64), minlength=nseg)[:nseg, None]
                bound = 2 * (n * u / (1 - n * u)) * mag
            _check_call(pk, fn, args, call, exact=unsorted or exact16, rtol=RTOL.get(np.dtype(dtype), 0.0),
                        mag=mag, bound=bound)
