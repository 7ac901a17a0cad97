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


def test_short_segments_are_bit_exact():
    """Bags of at most 8 lookups: TensorFlow's blocked sum is the sequential sum."""
    rng = np.random.default_rng(1)
    params = rng.standard_normal((50, 6)).astype(np.float32)
    f = tf.function(lambda sp: tf.nn.embedding_lookup_sparse(tf.constant(params), sp, None, combiner="sum"))
    sp = sparse_ids(rng, cols=8, density=0.9)
    assert np.array_equal(run(compile_tf(f, sp), sp), f(sp).numpy())


@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.int32, np.int64])
def test_gather_unsorted_segment_sum_bit_exact(dtype):
    rng = np.random.default_rng(2)
    x = (rng.standard_normal((40, 5)) * 100).astype(dtype)
    src, dst = rng.integers(0, 40, 300), rng.integers(0, 30, 300)
    g = tf.function(lambda x, s, d: tf.math.unsorted_segment_sum(tf.gather(x, s), d, 32))
    pk = compile_tf(g, x, src, dst)
    got, want = run(pk, x, src, dst), g(x, src, dst).numpy()
    assert got.shape == (32, 5) and np.array_equal(got, want)


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
    f = tf.function(lambda sp: tf.nn.embedding_lookup_sparse(tf.constant(params), sp, None, combiner="sqrtn"))
    with pytest.raises(CompileError, match="unsupported TensorFlow operation 'SparseSegmentSqrtN'"):
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
