"""TensorFlow frontend: embedding ops traced from a ``tf.function`` -> the torch frontend's SCF -> Kernel.

``compile_tf(fn, *example_args)`` traces ``fn`` (a ``tf.function`` or a Python function, which is
wrapped in one) into a concrete function and reads its graph (``ConcreteFunction.graph``).
Recognised graphs, lowered to the same SCF as the PyTorch frontend's gather-scatter kernel
(``sw.compiler.frontends.torch.scf_for_segment``: for each lookup ``k`` in order,
``out[segment[k], :] += table[ids[k], :]``):

====================================================  =========================================
TensorFlow                                             lookups
====================================================  =========================================
``tf.nn.embedding_lookup_sparse(params, sp_ids, None,  ``ids`` = ``sp_ids.values``, ``segment`` =
combiner="sum" | "mean")`` (``Unique`` -> ``GatherV2``  ``sp_ids.indices[:, 0]``; the ``Unique`` is
-> ``SparseSegmentSum``/``Mean``)                       bypassed (a gather of the gathered unique
                                                        rows is the gather of the original ids)
``tf.sparse.segment_sum/mean(data, ids, segment)``     as written
``tf.math.segment_sum(tf.gather(x, ids), segment)``     output rows ``max(segment) + 1``
``tf.math.unsorted_segment_sum(tf.gather(x, ids),      output rows ``num_segments`` (a constant)
segment, num_segments)``
====================================================  =========================================

The table (``params``/``x``) is a constant, a captured ``tf.Variable`` or an input; the ids and
segment ids are inputs (or ``sp.indices[:, 0]`` of a ``SparseTensor`` input). Data types: float32,
float64 (and int32/int64 for the segment sums). The kernel reduces each segment in lookup order
and divides the mean by the count. Agreement with TensorFlow's CPU kernels (checked in
``tests/compiler/test_tf_frontend.py``): ``UnsortedSegmentSum`` and every integer sum are
bit-exact (TensorFlow adds in lookup order too); ``SparseSegmentSum``/``Mean`` and ``SegmentSum``
add a segment's rows in blocks of up to 8 (measured: equal to the sequential sum for segments of
up to 9 rows, not beyond) and the mean multiplies or divides depending on the path, so for those
the tolerance is ``rtol = 1e-6`` (float32) / ``1e-14`` (float64). ``combiner="sqrtn"``, ``sp_weights`` and every other op
are a :class:`~sw.compiler.CompileError` naming the op.

TensorFlow is optional (``pip install -e .[tf]``); importing this module does not import it.
"""

from __future__ import annotations

from typing import Callable

import numpy as np

from ..errors import CompileError
from .torch import PlanKernel, _compile, scf_for_segment

__all__ = ["compile_tf"]

_T = {"float32": "f32", "float64": "f64", "int32": "i32", "int64": "i64"}
_PASS = ("Identity",)


def _tf():
    try:
        import tensorflow as tf
    except ImportError as e:  # pragma: no cover - depends on the installation
        raise CompileError("the TensorFlow frontend needs tensorflow (pip install -e .[tf])") from e
    return tf


def _through(t):
    while t.op.type in _PASS:
        t = t.op.inputs[0]
    return t


class _Sources:
    """Where the graph's tensors come from: input positions, constants, captured variables."""

    def __init__(self, tf, cf, n_user: int):
        self.tf, self.cf = tf, cf
        self.inputs = {t.name: k for k, t in enumerate(cf.inputs[:n_user])}
        self.captured = {}
        variables = {id(v.handle): v for v in cf.variables}
        for external, internal in cf.graph.captures:
            v = variables.get(id(external))
            self.captured[internal.name] = v if v is not None else external.numpy()

    def of(self, t, what: str):
        """``("input", k)``, ``("const", array or tf.Variable)``, or ``("row_of", k)`` for
        ``sp.indices[:, 0]`` of a SparseTensor input."""
        t = _through(t)
        op = t.op
        if op.type == "Placeholder" and t.name in self.inputs:
            return "input", self.inputs[t.name]
        if op.type == "Const":
            return "const", self.tf.make_ndarray(op.get_attr("value"))
        if op.type == "ReadVariableOp" or (op.type == "Placeholder" and t.dtype.name == "resource"):
            h = _through(op.inputs[0]) if op.type == "ReadVariableOp" else t
            if h.name in self.captured:
                return "const", self.captured[h.name]       # a tf.Variable: read at each call
        if op.type == "Placeholder" and t.name in self.captured:
            return "const", self.captured[t.name]
        if op.type == "StridedSlice":
            src = _through(op.inputs[0])
            begin, end, strides = (self.tf.make_ndarray(_through(i).op.get_attr("value"))
                                   if _through(i).op.type == "Const" else None for i in op.inputs[1:4])
            if (src.name in self.inputs and begin is not None and list(begin) == [0, 0]
                    and list(end) == [0, 1] and list(strides) == [1, 1]
                    and op.get_attr("shrink_axis_mask") == 2):
                return "row_of", self.inputs[src.name]
        raise CompileError(f"unsupported {what}: it is computed by '{op.type}' ({op.name}); it must "
                           "be an input, a constant or a variable")


def compile_tf(fn: Callable, *example_args, limits=None, opt_level: int = 0) -> PlanKernel:
    """Compile ``fn`` traced on ``example_args`` (tensors, NumPy arrays, ``tf.SparseTensor``).

    Returns a :class:`~sw.compiler.frontends.torch.PlanKernel` whose ``bind(*args)`` takes the
    same arguments as ``fn`` and ``unbind(results)`` returns a NumPy array (TensorFlow's output).

    Raises
    ------
    CompileError
        An op outside the supported graphs (named), or tensorflow missing.
    """
    tf = _tf()
    if not hasattr(fn, "get_concrete_function"):
        fn = tf.function(fn)
    cf = fn.get_concrete_function(*example_args)
    flat = tf.nest.flatten(list(example_args), expand_composites=True)
    src = _Sources(tf, cf, len(flat))
    outs = [_through(t) for t in cf.outputs]
    if len(outs) != 1:
        raise CompileError(f"the function must return one tensor, not {len(outs)}")
    red = outs[0].op
    kinds = {"SparseSegmentSum": "sum", "SparseSegmentMean": "mean", "SegmentSum": "sum",
             "UnsortedSegmentSum": "sum"}
    if red.type not in kinds:
        raise CompileError(f"unsupported TensorFlow operation '{red.type}' ({red.name}); supported: "
                           "embedding_lookup_sparse (sum, mean), sparse.segment_sum/mean, gather + "
                           "segment_sum/unsorted_segment_sum")
    reduce = kinds[red.type]
    data = _through(red.inputs[0])
    if red.type.startswith("Sparse"):
        ids, seg = red.inputs[1], red.inputs[2]
        if len(red.inputs) > 3:
            raise CompileError(f"unsupported '{red.type}' with num_segments")
        if data.op.type in ("GatherV2", "ResourceGather") \
                and _through(data.op.inputs[1]).op.type == "Unique" \
                and _through(ids).op.type == "Unique" \
                and _through(ids).op is _through(data.op.inputs[1]).op:
            ids = _through(ids).op.inputs[0]          # gather(gather(params, unique), idx) = params[ids]
            data = _through(data.op.inputs[0])
    else:
        if data.op.type not in ("GatherV2", "ResourceGather"):
            raise CompileError(f"unsupported '{red.type}' of '{data.op.type}' ({data.op.name}); it must "
                               "reduce tf.gather(x, ids)")
        ids, seg = data.op.inputs[1], red.inputs[1]
        data = _through(data.op.inputs[0])
    if data.op.type in ("GatherV2", "ResourceGather"):     # sparse.segment_sum(tf.gather(...))
        raise CompileError(f"unsupported '{red.type}' of a gather; use tf.nn.embedding_lookup_sparse "
                           "or pass the table itself")
    for op in cf.graph.get_operations():
        if op.type == "GatherV2":
            axis = src.of(op.inputs[2], "gather axis")
            if axis[0] != "const" or int(axis[1]) != 0:
                raise CompileError(f"unsupported tf.gather along axis {axis[1]} (axis 0 is)")
    table = src.of(data, "embedding table")
    id_src, seg_src = src.of(ids, "ids"), src.of(seg, "segment ids")
    num_segments = None
    if red.type == "UnsortedSegmentSum":
        n = src.of(red.inputs[2], "num_segments")
        if n[0] != "const":
            raise CompileError("unsupported num_segments: it must be a constant")
        num_segments = int(n[1])
    dtype = str(red.outputs[0].dtype.name)
    if dtype not in _T or (reduce == "mean" and dtype not in ("float32", "float64")):
        raise CompileError(f"unsupported table dtype {dtype} (float32, float64{', int32, int64' if reduce == 'sum' else ''} are)")
    t = _T[dtype]

    def value(s, args, name):
        kind, v = s
        if kind == "const":
            return v.numpy() if hasattr(v, "numpy") else np.asarray(v)
        a = flat_args(args)
        if kind == "input":
            return np.asarray(a[v])
        return np.asarray(a[v])[:, 0]

    def flat_args(args):
        return [x.numpy() if hasattr(x, "numpy") else np.asarray(x)
                for x in tf.nest.flatten(list(args), expand_composites=True)]

    def bind(args):
        x = value(table, args, "table")
        if x.dtype != np.dtype(dtype) or x.ndim != 2:
            raise ValueError(f"the table must be a 2-D {dtype} array, not {x.dtype} {x.shape}")
        i = value(id_src, args, "ids").astype(np.int64).reshape(-1)
        s = value(seg_src, args, "segment ids").astype(np.int64).reshape(-1)
        if i.size != s.size:
            raise ValueError(f"ids and segment ids must have the same length, not {i.size} and {s.size}")
        bad = np.flatnonzero((i < 0) | (i >= x.shape[0]))
        if bad.size:
            raise ValueError(f"ids[{bad[0]}] = {i[bad[0]]} is out of range for {x.shape[0]} rows")
        if red.type != "UnsortedSegmentSum" and s.size and (np.any(np.diff(s) < 0) or s[0] < 0):
            raise ValueError("segment ids must be sorted and non-negative")
        n = num_segments if num_segments is not None else (int(s.max()) + 1 if s.size else 0)
        bad = np.flatnonzero((s < 0) | (s >= n))
        if bad.size:
            raise ValueError(f"segment ids[{bad[0]}] = {s[bad[0]]} is out of range for {n} segments")
        return [np.ascontiguousarray(x), i, s, np.zeros((n, x.shape[1]), x.dtype)]

    spec = {"op": red.type, "reduce": reduce, "dtype": dtype}
    plan = PlanKernel("segment", spec, scf_for_segment(t, reduce, False), bind,
                      lambda results: np.asarray(results[0]))
    plan.traced_with = "tf.function"
    plan.kernel = _compile(plan.scf, limits, opt_level)
    return plan
