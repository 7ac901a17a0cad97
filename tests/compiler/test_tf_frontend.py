"""TensorFlow frontend (optional extra ``tf``): tf.function graphs -> the segment kernel, checked
against TensorFlow's own output on the golden model."""

from __future__ import annotations

import os

import numpy as np
import pytest

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
tf = pytest.importorskip("tensorflow", reason="TensorFlow is the optional extra 'tf' "
                         "(pip install -e .[tf]; `make setup` installs it)")

from sw.compiler import CompileError  # noqa: E402
from sw.compiler.frontends.tensorflow import compile_tf  # noqa: E402
from sw.runtime.drivers import run_kernel  # noqa: E402

RTOL = {np.float32: 1e-6, np.float64: 1e-14}


def run(pk, *args):
    return pk.unbind(run_kernel(pk.kernel, pk.bind(args), "golden").results)


def sparse_ids(rng, rows=20, cols=12, table_rows=50, density=0.3):
    idx = np.argwhere(rng.random((rows, cols)) < density)
    idx = idx[idx[:, 0] != rows - 1]                         # the last bag empty: fewer output rows
    return tf.sparse.SparseTensor(idx, tf.constant(rng.integers(0, table_rows, len(idx)), tf.int64),
                                  [rows, cols])


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("combiner", ["sum", "mean"])
@pytest.mark.parametrize("table", ["constant", "variable"])
def test_embedding_lookup_sparse(dtype, combiner, table):
    rng = np.random.default_rng(0)
    params = rng.standard_normal((50, 6)).astype(dtype)
    p = tf.constant(params) if table == "constant" else tf.Variable(params)

    @tf.function
    def f(sp):
        return tf.nn.embedding_lookup_sparse(p, sp, None, combiner=combiner)

    sp = sparse_ids(rng)
    pk = compile_tf(f, sp)
    assert pk.spec["op"] == {"sum": "SparseSegmentSum", "mean": "SparseSegmentMean"}[combiner]
    want = f(sp).numpy()
    got = run(pk, sp)
    assert got.shape == want.shape == (19, 6)
    np.testing.assert_allclose(got, want, rtol=RTOL[dtype], atol=RTOL[dtype])
    if table == "variable":                                     # read at each call, not traced
        p.assign(params * 2)
        np.testing.assert_allclose(run(pk, sp), f(sp).numpy(), rtol=RTOL[dtype], atol=RTOL[dtype])


@pytest.fixture
def fresh():
    """A generator on a fresh seed, printed (EMBER_SEED=<seed> reproduces)."""
    seed = int(os.environ.get("EMBER_SEED", np.random.SeedSequence().entropy % 2**32))
    print(f"seed {seed}")
    return np.random.default_rng(seed)


def sequential_segment_sum(rows, segment_ids, num_segments):
    """``out[d] += rows[i]`` for ``i`` in order, in the rows' dtype (one rounding per add): the
    order and rounding of the compiled segment kernel (``scf_for_segment``)."""
    out = np.zeros((num_segments,) + rows.shape[1:], rows.dtype)
    for row, d in zip(rows, segment_ids):
        if 0 <= d < num_segments:
            out[d] = out[d] + row
    return out


def summation_bound(rows, segment_ids, num_segments):
    """Largest difference between two float evaluations of a segment sum that each add a
    segment's ``n`` rows in some order: each is within ``gamma_(n-1) * sum |row|`` of the exact
    sum (recursive summation, Higham 2002 §4.2), so two are within twice that. TensorFlow's CPU
    segment kernels add in blocks and in parallel, in an order that is theirs, not ours."""
    u = np.finfo(rows.dtype).eps / 2
    mag = sequential_segment_sum(np.abs(rows).astype(np.float64), segment_ids, num_segments)
    n = np.bincount(np.asarray(segment_ids)[np.asarray(segment_ids) >= 0], minlength=num_segments)
    gamma = (n * u / (1 - n * u))[:num_segments].reshape((-1,) + (1,) * (rows.ndim - 1))
    return 2 * gamma * mag


def test_segments_bit_exact_against_the_sequential_sum_and_bounded_against_tensorflow(fresh):
    """The compiled sum is our sequential order bit for bit; TensorFlow's within the bound."""
    rng = fresh
    params = rng.standard_normal((50, 6)).astype(np.float32)
    f = tf.function(lambda sp: tf.nn.embedding_lookup_sparse(tf.constant(params), sp, None, combiner="sum"))
    sp = sparse_ids(rng, cols=20, density=0.9)
    got = run(compile_tf(f, sp), sp)
    bags, ids = sp.indices.numpy()[:, 0], sp.values.numpy()
    rows = int(bags.max()) + 1
    assert np.array_equal(got, sequential_segment_sum(params[ids], bags, rows))
    assert np.all(np.abs(got - f(sp).numpy()) <= summation_bound(params[ids], bags, rows))


@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.int32, np.int64])
def test_gather_unsorted_segment_sum(dtype, fresh):
    """Integers are exact in any order, so equal to TensorFlow's; floats are our sequential order
    bit for bit and within the summation bound of TensorFlow's."""
    rng = fresh
    x = (rng.standard_normal((40, 5)) * 100).astype(dtype)
    src, dst = rng.integers(0, 40, 300), rng.integers(0, 30, 300)
    g = tf.function(lambda x, s, d: tf.math.unsorted_segment_sum(tf.gather(x, s), d, 32))
    pk = compile_tf(g, x, src, dst)
    got, want = run(pk, x, src, dst), g(x, src, dst).numpy()
    assert got.shape == (32, 5)
    if np.issubdtype(dtype, np.integer):
        assert np.array_equal(got, want)
    else:
        assert np.array_equal(got, sequential_segment_sum(x[src], dst, 32))
        assert np.all(np.abs(got - want) <= summation_bound(x[src], dst, 32))


@pytest.mark.parametrize("dtype", [np.float32, np.int64])
def test_gather_segment_sum(dtype):
    rng = np.random.default_rng(3)
    x = (rng.standard_normal((40, 5)) * 100).astype(dtype)
    src, seg = rng.integers(0, 40, 200), np.sort(rng.integers(0, 25, 200))
    g = tf.function(lambda x, s, d: tf.math.segment_sum(tf.gather(x, s), d))
    got, want = run(compile_tf(g, x, src, seg), x, src, seg), g(x, src, seg).numpy()
    if dtype == np.int64:
        assert np.array_equal(got, want)
    else:
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-4)


def test_same_scf_as_the_torch_frontend():
    import torch
    from sw.compiler.frontends.torch import compile_torch
    x, s, d = np.ones((4, 2), np.float32), np.array([0, 1]), np.array([1, 1])
    pk = compile_tf(tf.function(lambda x, s, d: tf.math.unsorted_segment_sum(tf.gather(x, s), d, 3)), x, s, d)
    tk = compile_torch(lambda x, s, d: torch.zeros(3, 2).scatter_reduce(0, d[:, None].expand(-1, 2), x[s], "sum",
                                                                        include_self=False),
                       (torch.from_numpy(x), torch.from_numpy(s), torch.from_numpy(d)))
    assert pk.scf == tk.scf


def test_unsupported_graphs_name_the_op():
    rng = np.random.default_rng(4)
    params = rng.standard_normal((50, 6)).astype(np.float32)
    sp = sparse_ids(rng)
    f = tf.function(lambda sp: tf.math.segment_prod(tf.gather(tf.constant(params), sp.values), sp.indices[:, 0]))
    with pytest.raises(CompileError, match="unsupported TensorFlow operation 'SegmentProd'"):
        compile_tf(f, sp)
    g = tf.function(lambda x: tf.nn.relu(x))
    with pytest.raises(CompileError, match="unsupported TensorFlow operation 'Relu'"):
        compile_tf(g, params)


def test_bad_ids_are_rejected():
    x = np.ones((4, 2), np.float32)
    pk = compile_tf(tf.function(lambda x, s, d: tf.math.unsorted_segment_sum(tf.gather(x, s), d, 3)),
                    x, np.array([0]), np.array([0]))
    with pytest.raises(ValueError, match=r"ids\[1\] = 4 is out of range for 4 rows"):
        pk.bind((x, np.array([0, 4]), np.array([0, 0])))
    with pytest.raises(ValueError, match=r"segment ids\[0\] = 3 is out of range for 3 segments"):
        pk.bind((x, np.array([0]), np.array([3])))


def test_ids_that_are_not_integers_are_rejected():
    """Float ids and segment ids were truncated (ids 1.7 read row 1); TensorFlow refuses them
    (checked here too)."""
    x = np.arange(8, dtype=np.float32).reshape(4, 2)
    f = tf.function(lambda x, s, d: tf.math.segment_sum(tf.gather(x, s), d))
    pk = compile_tf(f, x, np.array([0, 1]), np.array([0, 0]))
    for args, message in [((x, np.array([1.7, 2.0]), np.array([0, 0])),
                           "ids must be an integer tensor, not float64"),
                          ((x, np.array([1, 2]), np.array([0.0, 0.5])),
                           "segment ids must be an integer tensor, not float64")]:
        with pytest.raises((TypeError, ValueError, tf.errors.InvalidArgumentError)):
            f(*args)
        with pytest.raises(ValueError) as info:
            pk.bind(args)
        assert str(info.value) == message


def test_unsorted_segment_max_of_nan_and_signed_zeros_bit_for_bit(fresh):
    """TensorFlow's UnsortedSegmentMax keeps a row's value only when the contribution is below it:
    a NaN is replaced by a later number, of equal zeros the later wins. The kernel was
    arith.maximumf (every NaN propagated; and, since maximumf orders -0.0 < +0.0, +0.0 won)."""
    special = np.array([np.nan, 0.0, -0.0, np.inf, -np.inf, 1.0, -1.0], np.float32)
    x = special[fresh.integers(0, 7, (6, 8))]
    x[:3, 0] = [0.0, -0.0, np.nan]
    f = tf.function(lambda x, ids, seg: tf.math.unsorted_segment_max(tf.gather(x, ids), seg, 5))
    ids = np.concatenate([[0, 1, 1, 0, 2, 0], fresh.integers(0, 6, 60)])
    seg = np.concatenate([[0, 0, 1, 1, 2, 2], fresh.integers(0, 5, 60)])
    pk = compile_tf(f, x, ids, seg)
    np.testing.assert_array_equal(run(pk, x, ids, seg).view(np.int32), f(x, ids, seg).numpy().view(np.int32))


# ------------------------------------------------------------------------------------------------
# Issue 12: sqrtn, sp_weights, embedding_lookup, safe_embedding_lookup_sparse, segment_mean,
# unsorted_segment_max, num_segments as a tensor, negative segment ids. Random data draws a fresh
# seed each run and prints it (EMBER_SEED=<seed> reproduces).
# ------------------------------------------------------------------------------------------------

def weights_like(rng, sp, dtype):
    return tf.sparse.SparseTensor(sp.indices, tf.constant(rng.random(sp.values.shape[0]).astype(dtype) + 0.1),
                                  sp.dense_shape)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("combiner", ["sum", "mean", "sqrtn"])
@pytest.mark.parametrize("weighted", [False, True])
def test_embedding_lookup_sparse_every_combiner(fresh, dtype, combiner, weighted):
    """Within rtol 1e-6 (f32) / 1e-14 (f64): TensorFlow's segment kernels add a segment's rows in
    blocks and divide or multiply by a reciprocal depending on the path."""
    params = fresh.standard_normal((50, 6)).astype(dtype)
    p = tf.constant(params)
    sp = sparse_ids(fresh)
    if weighted:
        f = tf.function(lambda sp, w: tf.nn.embedding_lookup_sparse(p, sp, w, combiner=combiner))
        args = (sp, weights_like(fresh, sp, dtype))
    else:
        f = tf.function(lambda sp: tf.nn.embedding_lookup_sparse(p, sp, None, combiner=combiner))
        args = (sp,)
    pk = compile_tf(f, *args)
    assert pk.spec["weighted"] == weighted and pk.spec["reduce"] == combiner
    got, want = run(pk, *args), f(*args).numpy()
    assert got.shape == want.shape
    np.testing.assert_allclose(got, want, rtol=10 * RTOL[dtype], atol=10 * RTOL[dtype])


def test_embedding_lookup_is_a_gather(fresh):
    params = fresh.standard_normal((30, 4)).astype(np.float32)
    v = tf.Variable(params)
    f = tf.function(lambda ids: tf.nn.embedding_lookup(v, ids))
    ids = fresh.integers(0, 30, (3, 5))
    pk = compile_tf(f, ids)
    assert pk.kind == "gather"
    assert np.array_equal(run(pk, ids), f(ids).numpy())
    with pytest.raises(ValueError, match=r"ids\[0\] = 30 is out of range for 30 rows"):
        pk.bind((np.array([30]),))


@pytest.mark.parametrize("combiner", ["sum", "mean", "sqrtn"])
def test_safe_embedding_lookup_sparse_drops_negative_ids_and_fills_empty_rows(fresh, combiner):
    params = fresh.standard_normal((20, 3)).astype(np.float32)
    idx = np.array([[0, 0], [0, 1], [2, 0], [2, 1], [2, 2], [4, 0]])
    ids = np.array([1, -1, 3, 3, -5, 7])                      # row 4: only... id 7
    sp = tf.sparse.SparseTensor(idx, tf.constant(ids, tf.int64), [6, 3])      # rows 1, 3, 5 empty
    f = tf.function(lambda sp: tf.nn.safe_embedding_lookup_sparse(tf.constant(params), sp, None,
                                                                  combiner=combiner))
    pk = compile_tf(f, sp)
    got, want = run(pk, sp), f(sp).numpy()
    assert got.shape == want.shape == (6, 3)
    np.testing.assert_allclose(got, want, rtol=1e-6, atol=1e-6)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_gather_segment_mean(fresh, dtype):
    x = fresh.standard_normal((40, 5)).astype(dtype)
    src, seg = fresh.integers(0, 40, 100), np.sort(fresh.integers(0, 25, 100))
    g = tf.function(lambda x, s, d: tf.math.segment_mean(tf.gather(x, s), d))
    pk = compile_tf(g, x, src, seg)
    np.testing.assert_allclose(run(pk, x, src, seg), g(x, src, seg).numpy(), rtol=10 * RTOL[dtype],
                               atol=10 * RTOL[dtype])


@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.int32, np.int64])
def test_unsorted_segment_max_with_num_segments_a_tensor_and_negative_ids(fresh, dtype):
    """Exact (a maximum); empty segments hold the type's lowest value and negative segment ids are
    dropped, as TensorFlow does; num_segments is read at each call."""
    x = (fresh.standard_normal((40, 5)) * 100).astype(dtype)
    src, dst = fresh.integers(0, 40, 200), fresh.integers(-3, 25, 200)
    g = tf.function(lambda x, s, d, n: tf.math.unsorted_segment_max(tf.gather(x, s), d, n))
    pk = compile_tf(g, x, src, dst, np.int32(30))
    got, want = run(pk, x, src, dst, np.int32(30)), g(x, src, dst, np.int32(30)).numpy()
    assert got.shape == (30, 5) and np.array_equal(got, want)
    assert np.array_equal(run(pk, x, src, dst, np.int32(27)), g(x, src, dst, np.int32(27)).numpy())


def test_unsorted_segment_sum_drops_negative_segment_ids(fresh):
    x = fresh.standard_normal((10, 3)).astype(np.float32)
    s, d = fresh.integers(0, 10, 50), fresh.integers(-4, 6, 50)
    g = tf.function(lambda x, s, d: tf.math.unsorted_segment_sum(tf.gather(x, s), d, 6))
    pk = compile_tf(g, x, s, d)
    assert np.array_equal(run(pk, x, s, d), g(x, s, d).numpy())


@pytest.mark.parametrize("combiner", ["sum", "mean"])
def test_float16_tables(fresh, combiner):
    """TensorFlow's float16 segment sums accumulate in float32 and round once (the mean divides
    before rounding): bit for bit in 100 of 100 measured sums and 96 of 100 means (the others
    multiply by a reciprocal), so the bound is one float16 ulp."""
    params = (fresh.standard_normal((50, 8)) * 8).astype(np.float16)
    p = tf.constant(params)
    sp = sparse_ids(fresh)
    f = tf.function(lambda sp: tf.nn.embedding_lookup_sparse(p, sp, None, combiner=combiner))
    pk = compile_tf(f, sp)
    got, want = run(pk, sp), f(sp).numpy()
    assert got.dtype == np.float16 and got.shape == want.shape
    ulp = np.spacing(np.abs(want).astype(np.float16)).astype(np.float32)
    assert np.all(np.abs(got.astype(np.float32) - want.astype(np.float32)) <= ulp)
    ids = fresh.integers(0, 50, (2, 3))
    g = tf.function(lambda i: tf.nn.embedding_lookup(p, i))
    assert np.array_equal(run(compile_tf(g, ids), ids), g(ids).numpy())


@pytest.mark.parametrize("combiner", ["sum", "mean"])
def test_bfloat16_tables(fresh, combiner):
    """bfloat16 as float16: TensorFlow accumulates in float32 and rounds once, to nearest even
    (measured 2026-11-24, TF 2.21, 200 random segment sums: 200 bit for bit against that, 31
    against ties away from zero, 49 against bfloat16 additions; means 194 of 200, the others one
    ulp off), so the bound is one bfloat16 ulp; sums whose float32 value is exact in any order
    (a table of small multiples of 1/4) and gathers bit for bit, on any processor."""
    bf16 = tf.bfloat16.as_numpy_dtype
    params = (fresh.standard_normal((50, 8)) * 8).astype(bf16)
    p = tf.constant(params)
    sp = sparse_ids(fresh)
    f = tf.function(lambda sp: tf.nn.embedding_lookup_sparse(p, sp, None, combiner=combiner))
    pk = compile_tf(f, sp)
    got, want = run(pk, sp), f(sp).numpy()
    assert got.dtype == want.dtype == bf16 and got.shape == want.shape
    ulp = (np.abs(want.astype(np.float32)) * 2.0 ** -7).astype(np.float32)   # >= one bf16 ulp
    assert np.all(np.abs(got.astype(np.float32) - want.astype(np.float32)) <= ulp)
    # Bit for bit where the float32 sum is exact in any order (so on every processor, whatever
    # order TF's kernel adds in): a table of small multiples of 1/4 (<= 8 significant bits).
    exact = tf.constant((fresh.integers(-256, 256, (50, 8)) / 4).astype(bf16))
    fe = tf.function(lambda sp: tf.nn.embedding_lookup_sparse(exact, sp, None,
                                                              combiner=combiner))
    got_e, want_e = run(compile_tf(fe, sp), sp), fe(sp).numpy()
    if combiner == "sum":
        assert np.array_equal(got_e.view(np.uint16), want_e.view(np.uint16))
    else:
        assert np.all(np.abs(got_e.astype(np.float32) - want_e.astype(np.float32))
                      <= (np.abs(want_e.astype(np.float32)) * 2.0 ** -7))
    ids = fresh.integers(0, 50, (2, 3))
    g = tf.function(lambda i: tf.nn.embedding_lookup(p, i))
    assert np.array_equal(run(compile_tf(g, ids), ids).view(np.uint16), g(ids).numpy().view(np.uint16))


@pytest.mark.rtl
@pytest.mark.slow
def test_bfloat16_table_on_rtl(fresh):
    bf16 = tf.bfloat16.as_numpy_dtype
    p = tf.constant((fresh.standard_normal((50, 8)) * 8).astype(bf16))
    sp = sparse_ids(fresh)
    f = tf.function(lambda sp: tf.nn.embedding_lookup_sparse(p, sp, None, combiner="sum"))
    pk = compile_tf(f, sp, opt_level=3)
    golden = pk.unbind(run_kernel(pk.kernel, pk.bind((sp,)), "golden").results)
    rtl = pk.unbind(run_kernel(pk.kernel, pk.bind((sp,)), "rtl").results)
    assert np.array_equal(rtl.view(np.uint16), golden.view(np.uint16))
    ulp = (np.abs(f(sp).numpy().astype(np.float32)) * 2.0 ** -7).astype(np.float32)
    assert np.all(np.abs(rtl.astype(np.float32) - f(sp).numpy().astype(np.float32)) <= ulp)


_NUM_SEGMENTS = {"tf.shape(x)[0]": lambda x: tf.shape(x)[0], "10": lambda x: 10,
                 "x.shape[0]": lambda x: x.shape[0]}


@pytest.mark.parametrize("reduce", ["sum", "max"])
@pytest.mark.parametrize("num_segments", list(_NUM_SEGMENTS))
def test_num_segments_from_a_shape_at_each_call(num_segments, reduce):
    """TensorFlow folds the example's static shapes into the graph: ``tf.shape(x)[0]`` and
    ``x.shape[0]`` both became the constant 10, so with another x the op returned 10 rows where
    TensorFlow (retracing) returns x's (``tf.shape(x)[0]`` was refused before the fold). Now
    ``tf.shape(x)[d]`` is read at each call, a constant of the function stays, and a static
    ``x.shape[0]`` refuses an x of another size with a ValueError naming the argument."""
    op = tf.math.unsorted_segment_sum if reduce == "sum" else tf.math.unsorted_segment_max

    def fn(x, i, s):
        return op(tf.gather(x, i), s, _NUM_SEGMENTS[num_segments](x))

    rng = np.random.default_rng(3)

    def graph(n, e):
        return (tf.constant(rng.standard_normal((n, 4)).astype(np.float32)),
                tf.constant(rng.integers(0, n, e)), tf.constant(rng.integers(0, min(n, 10), e)))

    pk = compile_tf(fn, *graph(10, 30))
    for n, e in ((10, 30), (6, 12), (14, 40)):
        args = graph(n, e)
        if num_segments == "x.shape[0]" and n != 10:
            with pytest.raises(ValueError, match=r"argument 0 has shape \(\d+, 4\), but num_segments "
                                                 r"10 is its dimension 0's size 10 at tracing"):
                pk.bind(args)
            continue
        got, want = run(pk, *args), fn(*args).numpy()
        assert got.shape == want.shape and np.array_equal(got, want)


@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
@pytest.mark.parametrize("reduce", ["segment_sum", "segment_mean"])
def test_dense_segment_sum_and_mean_of_16_bit_tables_reduce_in_16_bits(dtype, reduce):
    """TensorFlow's dense SegmentSum/SegmentMean on float16/bfloat16 round every addition to the
    type (measured, TF 2.21: 150 of 150 means and every sum of rows narrower than 8 columns equal
    a sequential 16-bit accumulation; its sparse kernels accumulate in float32). The frontend
    used the sparse kernels' f32 accumulator for them too: results several ulps off (found by
    test_tf_fuzz.py). Bit for bit here: rows of 3 columns, segments of up to 30 rows."""
    dt = tf.as_dtype(dtype).as_numpy_dtype
    rng = np.random.default_rng(11)
    x = (rng.standard_normal((40, 3)) * 4).astype(dt)
    ids, seg = rng.integers(0, 40, 60), np.sort(rng.integers(0, 4, 60))
    g = tf.function(lambda x, i, s: getattr(tf.math, reduce)(tf.gather(x, i), s))
    pk = compile_tf(g, x, ids, seg)
    for i, s in ((ids, seg), (ids[:25], np.sort(rng.integers(0, 7, 25)))):
        got, want = run(pk, x, i, s), g(x, i, s).numpy()
        assert got.dtype == want.dtype and got.shape == want.shape
        assert np.array_equal(got.view(np.uint16), want.view(np.uint16))


@pytest.mark.parametrize("combiner", ["sum", "mean", "sqrtn"])
def test_sp_weights_of_another_dtype_than_the_table(combiner):
    """embedding_lookup_sparse casts sp_weights to the table's dtype (a Cast in the graph), which
    was a CompileError ('sp_weights ... computed by Cast') although bind converts them; found by
    test_tf_fuzz.py. Traced and called with float64 and float16 weights of a float32 table."""
    rng = np.random.default_rng(12)
    p = tf.constant(rng.standard_normal((30, 4)).astype(np.float32))
    f = tf.function(lambda sp, w: tf.nn.embedding_lookup_sparse(p, sp, w, combiner=combiner))
    sp = sparse_ids(rng, table_rows=30)
    for wdt in (np.float64, np.float16):
        w = weights_like(rng, sp, wdt)
        got, want = run(compile_tf(f, sp, w), sp, w), f(sp, w).numpy()
        assert got.dtype == want.dtype == np.float32 and got.shape == want.shape
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("reduce", ["sum", "max"])
def test_an_out_of_range_id_of_a_negative_segment_id_is_refused(reduce):
    """TensorFlow gathers every row before unsorted_segment_sum/max drops the negative segment
    ids, so an out-of-range id there is its error; bind dropped those lookups first and returned
    a result (found by test_tf_fuzz.py)."""
    op = tf.math.unsorted_segment_sum if reduce == "sum" else tf.math.unsorted_segment_max
    f = tf.function(lambda x, i, s: op(tf.gather(x, i), s, 3))
    x = np.arange(10, dtype=np.float32).reshape(5, 2)
    pk = compile_tf(f, x, np.array([0, 1]), np.array([0, 1]))
    i, s = np.array([0, 7]), np.array([0, -1])
    with pytest.raises(tf.errors.InvalidArgumentError):
        f(x, i, s)
    with pytest.raises(ValueError, match=r"ids\[1\] = 7 is out of range for 5 rows"):
        pk.bind((x, i, s))


_GROWING = {
    "embedding_lookup_sparse": lambda t, sp, w: tf.nn.embedding_lookup_sparse(t, sp, None, combiner="sum"),
    "weighted sqrtn": lambda t, sp, w: tf.nn.embedding_lookup_sparse(t, sp, w, combiner="sqrtn"),
    "safe_embedding_lookup_sparse": lambda t, sp, w: tf.nn.safe_embedding_lookup_sparse(t, sp, None,
                                                                                       combiner="mean"),
    "embedding_lookup": lambda t, sp, w: tf.nn.embedding_lookup(t, sp.values),
    "segment_sum": lambda t, sp, w: tf.math.segment_sum(tf.gather(t, sp.values), sp.indices[:, 0]),
    "unsorted_segment_max": lambda t, sp, w: tf.math.unsorted_segment_max(
        tf.gather(t, sp.values), sp.indices[:, 0], 8),
}


@pytest.mark.parametrize("passed", ["captured", "argument"])
@pytest.mark.parametrize("op", list(_GROWING))
def test_a_variable_of_unknown_rows_is_read_with_its_rows_at_each_call(op, passed):
    """A ``tf.Variable`` declared ``shape=[None, d]`` (captured by the function or passed to it)
    and assigned more, then fewer rows than at compile time: each call reads the table as it is
    then, and its ids are checked against its rows then (ids of the new rows gathered; an id
    valid at tracing and out of range now is the ValueError of any out-of-range id, where
    TensorFlow raises). Against TensorFlow's result with the new table; the sparse reductions
    within their rtol, the others bit for bit."""
    rng = np.random.default_rng(21)
    v = tf.Variable(rng.standard_normal((10, 3)).astype(np.float32), shape=tf.TensorShape([None, 3]))
    if passed == "captured":
        f, table = tf.function(lambda sp, w: _GROWING[op](v, sp, w)), ()
    else:
        f, table = tf.function(_GROWING[op]), (v,)

    def args(table_rows):
        sp = sparse_ids(rng, rows=8, cols=5, table_rows=table_rows, density=0.5)
        return table + (sp, weights_like(rng, sp, np.float32))

    pk = compile_tf(f, *args(10))
    for rows in (10, 40, 4):
        v.assign(rng.standard_normal((rows, 3)).astype(np.float32))
        a = args(rows)
        assert rows <= 10 or a[-2].values.numpy().max() >= 10      # ids of the new rows
        got, want = run(pk, *a), f(*a).numpy()
        assert got.shape == want.shape
        if op in ("embedding_lookup", "unsorted_segment_max"):
            assert np.array_equal(got, want)
        else:
            np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)
    a = args(10)                                     # valid for the traced 10 rows, not for 4
    ids = a[-2].values.numpy()
    bad = int(np.flatnonzero(ids >= 4)[0])
    with pytest.raises(tf.errors.InvalidArgumentError):
        f(*a)
    with pytest.raises(ValueError, match=rf"ids\[{bad}\] = {ids[bad]} is out of range for 4 rows"):
        pk.bind(a)


def sparse_ids_of_shape(rng, shape, table_rows, density=0.4):
    """Ids of any rank, some negative (dropped by safe_embedding_lookup_sparse), the last row
    (of the leading dimensions) empty."""
    idx = np.argwhere(rng.random(shape) < density).reshape(-1, len(shape))
    if len(shape) > 1:
        idx = idx[np.any(idx[:, :-1] != np.array(shape[:-1]) - 1, axis=1)]
    return tf.sparse.SparseTensor(idx, tf.constant(rng.integers(-2, table_rows, len(idx)), tf.int64), shape)


_SAFE_VARIANTS = {"plain": (False, None), "sparse_weights": (True, None), "default_id": (False, 3),
                  "both": (True, 3)}


@pytest.mark.parametrize("variant", list(_SAFE_VARIANTS))
@pytest.mark.parametrize("combiner", ["sum", "mean", "sqrtn"])
@pytest.mark.parametrize("shape", [(7,), (5, 4), (3, 4, 5), (2, 3, 2, 4)], ids=lambda s: f"rank{len(s)}")
def test_safe_embedding_lookup_sparse_of_any_rank_weights_and_default_id(shape, combiner, variant):
    """TensorFlow reshapes sparse_ids [d_0, ..., d_n] to [d_0 * ... * d_{n-1}, d_n] and returns
    [d_0, ..., d_{n-1}, e]; ids of rank other than 2 gave a silent [d_0, e] of other values (the
    rows were sp.indices[:, 0]; rank 1: [d_0, e] where TensorFlow returns [e]). With
    sparse_weights or default_id the op was refused. Now all on the host as TensorFlow does
    (reshape, prune ids < 0 and, for mean/sqrtn, weights <= 0, fill empty rows with default_id
    at weight 1 or zero them); called again on ids of another dense shape of the same rank.
    Within the tolerances of embedding_lookup_sparse."""
    weighted, default_id = _SAFE_VARIANTS[variant]
    rng = np.random.default_rng(31)
    p = tf.constant(rng.standard_normal((20, 3)).astype(np.float32))

    def lookup(sp, w=None):
        return tf.nn.safe_embedding_lookup_sparse(p, sp, w, combiner=combiner, default_id=default_id)

    def args(shape):
        sp = sparse_ids_of_shape(rng, shape, 20)
        if not weighted:
            return (sp,)
        w = rng.standard_normal(sp.values.shape[0]).astype(np.float32)    # some <= 0: dropped
        return sp, tf.sparse.SparseTensor(sp.indices, tf.constant(w), sp.dense_shape)    # unless sum

    f = tf.function(lookup) if weighted else tf.function(lambda sp: lookup(sp))
    pk = compile_tf(f, *args(shape))
    tol = 10 * RTOL[np.float32] if weighted or combiner == "sqrtn" else RTOL[np.float32]
    for s in (shape, tuple(d + 1 for d in shape)):
        a = args(s)
        got, want = run(pk, *a), f(*a).numpy()
        assert got.shape == want.shape == s[:-1] + (3,)
        np.testing.assert_allclose(got, want, rtol=tol, atol=tol)


def test_safe_embedding_lookup_sparse_refuses_where_tensorflow_does_and_orders_as_it():
    """The host side of safe_embedding_lookup_sparse as TensorFlow's: a default_id out of range
    is an error only when a row is empty (an empty row looks up default_id or 0, also for a
    table of no rows), an out-of-range id whose weight mean/sqrtn drop is no error (sum keeps
    it), NaN weights dropped by mean, sparse_weights' indices not read, indices in any order
    (SparseFillEmptyRows orders them by row), rank-3 ids of a float16 table (the 16-bit bag)."""
    p = np.arange(15, dtype=np.float32).reshape(5, 3)

    def check(f, *args, error=None):
        if error is None:
            got, want = run(compile_tf(f, *args), *args), f(*args).numpy()
            assert got.dtype == want.dtype and got.shape == want.shape
            np.testing.assert_allclose(got.astype(np.float32), want.astype(np.float32), rtol=1e-6)
            return
        with pytest.raises(tf.errors.InvalidArgumentError):
            f(*args)
        pk = compile_tf(f, *args)
        with pytest.raises(ValueError, match=error):
            pk.bind(args)

    def sparse(indices, values, shape, dtype=tf.int64):
        return tf.sparse.SparseTensor(indices, tf.constant(values, dtype), shape)

    def safe(table=p, combiner="mean", default_id=None):
        return tf.function(lambda sp, w=None: tf.nn.safe_embedding_lookup_sparse(
            tf.constant(table), sp, w, combiner=combiner, default_id=default_id))

    one_empty, none_empty = sparse([[0, 0]], [1], [2, 2]), sparse([[0, 0], [1, 0]], [1, 2], [2, 2])
    check(safe(default_id=7), one_empty, error=r"default_id 7 is out of range for 5 rows: row \[1\]")
    check(safe(default_id=-1), one_empty, error=r"default_id -1 is out of range for 5 rows")
    check(safe(default_id=7), none_empty)
    check(safe(table=np.zeros((0, 3), np.float32)), sparse(np.zeros((0, 2), np.int64), [], [2, 2]),
          error=r"default_id None is out of range for 0 rows: row \[0\] of sparse_ids is empty and "
                r"TensorFlow looks up 0 there before it zeroes the row")
    ids = sparse([[0, 0], [0, 1]], [1, 9], [1, 2])
    w = sparse([[0, 0], [0, 1]], [1.0, -1.0], [1, 2], tf.float32)      # mean/sqrtn drop id 9
    check(safe(), ids, w)
    check(safe(combiner="sqrtn"), ids, w)
    check(safe(combiner="sum"), ids, w, error=r"ids\[1\] = 9 is out of range for 5 rows")
    nan = sparse([[0, 0], [0, 1]], [np.nan, 2.0], [1, 2], tf.float32)
    check(safe(), sparse([[0, 0], [0, 1]], [1, 2], [1, 2]), nan)
    elsewhere = sparse([[5, 5], [7, 1]], [2.0, 3.0], [9, 9], tf.float32)     # only the values are read
    check(safe(combiner="sum"), sparse([[0, 0], [0, 1]], [1, 2], [1, 2]), elsewhere)
    check(safe(combiner="sum"), sparse([[0, 0], [0, 1]], [1, 2], [1, 2]),
          sparse([[0, 0]], [2.0], [1, 2], tf.float32),
          error=r"sparse_weights has 1 values and sparse_ids 2")
    check(safe(combiner="sum"), sparse([[2, 0, 1], [0, 1, 0], [2, 0, 0], [0, 0, 1]], [1, 2, 3, 4], [3, 2, 2]))
    check(safe(), sparse([[0, 5, 0]], [1], [2, 2, 2]),
          error=r"sparse_ids.indices\[0\] = \[0, 5, 0\] is out of range for dense_shape \[2, 2, 2\]")
    half = (np.arange(60).reshape(20, 3) / 4).astype(np.float16)                # sums exact in any order
    rng = np.random.default_rng(5)
    check(safe(table=half, combiner="sum"), sparse_ids_of_shape(rng, (3, 2, 4), 20))


def test_safe_embedding_lookup_sparse_reads_indices_as_tensorflow():
    """TensorFlow does not check sparse_ids' indices against dense_shape: SparseReshape to
    ``[d_0 * ... * d_{n-1}, d_n]`` reads an index as its row-major offset divided by ``d_n``
    (truncated; of rank 2, the same shape, it is the identity: the column is not read), ids < 0
    and mean/sqrtn's weights <= 0 are dropped, and only then does SparseFillEmptyRows refuse a
    row outside the rows; SparseReshape itself refuses values in a shape of no elements (rank 2
    aside). Each accepted case here was a ValueError ('is out of range for dense_shape')."""
    p = np.arange(15, dtype=np.float32).reshape(5, 3)

    def safe(combiner="sum"):
        return tf.function(lambda sp, w=None: tf.nn.safe_embedding_lookup_sparse(
            tf.constant(p), sp, w, combiner=combiner))

    def sparse(indices, values, shape, dtype=tf.int64):
        return tf.sparse.SparseTensor(np.array(indices, np.int64).reshape(-1, len(shape)),
                                      tf.constant(values, dtype), shape)

    accepted = [
        (safe(), sparse([[1, 5]], [1], [2, 2])),                      # rank 2: the column not read
        (safe(), sparse([[0, -1], [1, 0]], [1, 2], [2, 2])),
        (safe(), sparse([[0, 0, 5]], [1], [2, 2, 2])),                # offset 5: row 2, i.e. [1, 0]
        (safe(), sparse([[0, 1, -1], [1, 1, 0]], [1, 2], [2, 2, 2])),   # offset 1: row 0 (truncated)
        (safe(), sparse([[0, 0, 1, 3]], [4], [1, 2, 2, 2])),          # offset 5: row 2, i.e. [0, 1, 0]
        (safe(), sparse([[0], [11]], [1, -1], [9])),                  # the id < 0 drops the index
        (safe(), sparse([[0, 0]], [-2], [0, 3])),
        (safe("mean"), sparse([[0, 0], [7, 0]], [1, 2], [2, 2]),      # as does a weight <= 0
         sparse([[0, 0], [7, 0]], [1.0, -1.0], [2, 2], tf.float32)),
        (safe("sqrtn"), sparse([[0, 0, 0], [0, 0, 9]], [1, 2], [2, 2, 2]),
         sparse([[0, 0, 0], [0, 0, 0]], [1.0, np.nan], [2, 2, 2], tf.float32)),
    ]
    for f, *args in accepted:
        want = f(*args).numpy()
        got = run(compile_tf(f, *args), *args)
        assert got.shape == want.shape
        np.testing.assert_array_equal(got, want)
    refused = [
        (sparse([[1, 1, 5]], [1], [2, 2, 2]), r"indices\[0\] = \[1, 1, 5\] is out of range for dense_shape "
                                              r"\[2, 2, 2\]: TensorFlow reads it as row 5 of 4"),
        (sparse([[11]], [1], [9]), r"indices\[0\] = \[11\] is out of range .*row 1 of 1"),
        (sparse([[0, 0, -3]], [1], [2, 2, 2]), r"row -1 of 4"),
        (sparse([[2, 0]], [1], [2, 2]), r"indices\[0\] = \[2, 0\] is out of range for dense_shape \[2, 2\]"),
        (sparse([[0, 0, 0]], [-1], [2, 2, 0]), r"sparse_ids has 1 values but dense_shape \[2, 2, 0\] has "
                                               r"no elements"),
    ]
    for sp, error in refused:
        with pytest.raises(tf.errors.InvalidArgumentError):
            safe()(sp)
        pk = compile_tf(safe(), sp)
        with pytest.raises(ValueError, match=error):
            pk.bind((sp,))
