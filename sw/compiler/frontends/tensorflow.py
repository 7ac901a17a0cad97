"""TensorFlow frontend: embedding ops traced from a ``tf.function`` -> the torch frontend's SCF -> Kernel.

``compile_tf(fn, *example_args)`` traces ``fn`` (a ``tf.function`` or a Python function, which is
wrapped in one) into a concrete function and reads its graph (``ConcreteFunction.graph``).
Recognised graphs (for each lookup ``k`` in order, ``out[segment[k], :] (op)= w[k] * table[ids[k], :]``):

=========================================================  ==============================================
TensorFlow                                                  compiled as
=========================================================  ==============================================
``tf.nn.embedding_lookup_sparse(params, sp_ids, None,       ``scf_for_segment`` (sum, mean) /
combiner="sum" | "mean" | "sqrtn")``                        :func:`scf_for_weighted_segment` (sqrtn); the
                                                            ``Unique`` + double gather is bypassed
the same with ``sp_weights`` (``Mul`` -> ``SegmentSum``,   :func:`scf_for_weighted_segment`: ``w * row``,
``DivNoNan`` by the sum of weights or sqrt of squares)      per-segment denominator, 0 where it is 0
``tf.nn.safe_embedding_lookup_sparse``, ``sparse_ids`` of   the above; TensorFlow's host side in ``bind``
any rank, with ``sparse_weights``, ``default_id``           (``tensorflow_safe``): ids reshaped to rows,
                                                            ids < 0 (mean/sqrtn: weights <= 0) dropped,
                                                            empty rows ``default_id`` or 0, the result
                                                            reshaped to ``[d_0, ..., d_{n-1}, e]``
``tf.nn.embedding_lookup(params, ids)``, ``tf.gather``      ``scf_for_gather`` (a copy), ids of any shape
``tf.sparse.segment_sum/mean/sqrt_n(data, ids, segment)``   as written
``tf.math.segment_sum/segment_mean(tf.gather(x, ids), s)``  output rows ``max(segment) + 1``
``tf.math.unsorted_segment_sum/max(tf.gather(x, ids), s,    output rows ``num_segments`` (a constant, an
num_segments)``                                             input or ``tf.shape(x)[d]``, read at each
                                                            call; a static ``x.shape[d]`` keeps x's
                                                            size: ``tensorflow_sources``); negative
                                                            segment ids dropped; max: empty rows hold
                                                            the type's lowest value, as TensorFlow
=========================================================  ==============================================

The table (``params``/``x``) is a constant, a captured ``tf.Variable`` (read at each call, with
its rows then: one declared ``shape=[None, d]`` may be assigned more or fewer) or an input; the
ids and segment ids are inputs (or ``sp.indices[:, 0]`` of a ``SparseTensor`` input).
Data types: float32, float64 (and int32/int64 for sums, max and gathers); float16 and bfloat16
tables for the unweighted sparse/sorted segment sum and mean and gathers, computed as TensorFlow
does (measured: the sparse kernels accumulate in f32 and round once — bfloat16 to nearest even —,
the mean divided in f32 first; the sorted segment ids become bag offsets and the kernel is the
PyTorch frontend's 16-bit bag; within one ulp of the type. The dense ``SegmentSum``/``Mean``
round every addition to the 16-bit type and divide by the count in it, as the kernel here does:
means and sums of rows narrower than 8 columns bit for bit, wider sums, which TensorFlow adds in
another order, within the summation bound of 16-bit additions). Agreement with TensorFlow's CPU
kernels (checked in ``tests/compiler/test_tf_frontend.py`` and, on random inputs and sizes,
``tests/compiler/test_tf_fuzz.py``): ``UnsortedSegmentSum``/``Max``, gathers and every
integer sum are bit-exact (TensorFlow adds in lookup order too); ``SparseSegmentSum``/``Mean``/
``SqrtN`` and ``SegmentSum``/``Mean`` add a segment's rows in blocks of up to 8 (measured: equal
to the sequential sum for segments of up to 9 rows, not beyond) and divide or multiply by a
reciprocal depending on the path, so for those the tolerance is ``rtol = 1e-6`` (float32) /
``1e-14`` (float64), ten times that with weights or sqrtn. Every other op is a
:class:`~sw.compiler.CompileError` naming it.

TensorFlow is optional (``pip install -e .[tf]``); importing this module does not import it.
"""

from __future__ import annotations

from typing import Callable

import numpy as np

from ..errors import CompileError
from .integers import require_integers
from .tensorflow_safe import safe_lookup, safe_lookups
from .tensorflow_scf import scf_for_weighted_segment
from .tensorflow_sources import _num_segments, _Sources, _through
from .torch import BagSpec, PlanKernel, _compile, scf_for_bag, scf_for_gather, scf_for_segment

__all__ = ["compile_tf"]

_T = {"float32": "f32", "float64": "f64", "int32": "i32", "int64": "i64", "float16": "f16",
      "bfloat16": "bf16"}
def _tf():
    try:
        import tensorflow as tf
    except ImportError as e:  # pragma: no cover - depends on the installation
        raise CompileError("the TensorFlow frontend needs tensorflow (pip install -e .[tf])") from e
    return tf


_LOOKUP_OPS = {"SparseSegmentSum": "sum", "SparseSegmentMean": "mean", "SparseSegmentSqrtN": "sqrtn"}
_DENSE_OPS = {"SegmentSum": "sum", "SegmentMean": "mean", "UnsortedSegmentSum": "sum",
              "UnsortedSegmentMax": "max"}
_LOWEST = {"float32": np.finfo(np.float32).min, "float64": np.finfo(np.float64).min,
           "int32": np.iinfo(np.int32).min, "int64": np.iinfo(np.int64).min}
_SUPPORTED = ("embedding_lookup_sparse (sum, mean, sqrtn; sp_weights), safe_embedding_lookup_sparse "
              "(sparse_weights, default_id, ids of any rank), "
              "embedding_lookup, sparse.segment_sum/mean/sqrt_n, gather + segment_sum/segment_mean/"
              "unsorted_segment_sum/unsorted_segment_max")


class _Lookup:
    """What the graph computes: ``out[seg[k]] (op)= w[k] * table[ids[k]]`` for every lookup ``k``."""

    def __init__(self, table, ids, seg, combiner, *, weights=None, rows=("max+1",), op="",
                 sorted_segments=False, drop_negative_segments=False,
                 gather=False):
        self.table, self.ids, self.seg, self.weights, self.combiner = table, ids, seg, weights, combiner
        self.rows, self.op, self.sorted_segments = rows, op, sorted_segments
        self.drop_negative_segments = drop_negative_segments
        self.gather = gather
        self.safe = None        # safe_embedding_lookup_sparse: (indices position, default_id)


def _unique_bypass(src, data, ids):
    """``gather(gather(params, unique.y), unique.idx)`` is ``params[ids]``: the table and the ids."""
    data = _through(data)
    if (data.op.type in ("GatherV2", "ResourceGather") and _through(ids).op.type == "Unique"
            and _through(data.op.inputs[1]).op is _through(ids).op):
        return _through(data.op.inputs[0]), _through(ids).op.inputs[0]
    return data, ids


def _sparse_lookup(src, out) -> _Lookup | None:
    """The embedding_lookup_sparse family ending at ``out`` (None if it is not one)."""
    op = out.op
    if op.type in _LOOKUP_OPS:
        if len(op.inputs) > 3:
            raise CompileError(f"unsupported '{op.type}' with num_segments")
        table, ids = _unique_bypass(src, op.inputs[0], op.inputs[1])
        if table.op.type in ("GatherV2", "ResourceGather"):
            raise CompileError(f"unsupported '{op.type}' of a gather; use tf.nn.embedding_lookup_sparse "
                               "or pass the table itself")
        return _Lookup(table, ids, op.inputs[2], _LOOKUP_OPS[op.type], op=op.type, sorted_segments=True)
    combiner, num = "sum", out
    if op.type == "DivNoNan":
        num, den = _through(op.inputs[0]), _through(op.inputs[1])
        combiner = "sqrtn" if den.op.type == "Sqrt" else "mean"
    if num.op.type != "SegmentSum" or _through(num.op.inputs[0]).op.type != "Mul":
        return None
    mul = _through(num.op.inputs[0]).op
    rows, w = _through(mul.inputs[0]), _through(mul.inputs[1])
    if w.op.type == "Reshape":
        w = _through(w.op.inputs[0])
    if w.op.type == "Cast" and (w.op.inputs[0].dtype.is_floating or w.op.inputs[0].dtype.is_integer):
        w = _through(w.op.inputs[0])    # sp_weights of another dtype: bind casts them to the table's
    if rows.op.type not in ("GatherV2", "ResourceGather"):
        return None
    table, ids = _unique_bypass(src, rows.op.inputs[0], rows.op.inputs[1])
    return _Lookup(table, ids, num.op.inputs[1], combiner, weights=w, op=f"{op.type}(weighted)",
                   sorted_segments=True)


def _find(tf, src, out) -> _Lookup:
    op = out.op
    if op.type == "Reshape" and any(o.type == "SparseFillEmptyRows" for o in out.graph.get_operations()):
        return safe_lookup(src, out, _sparse_lookup, _SUPPORTED)                 # safe_...
    if op.type == "GatherV2" or op.type == "ResourceGather":                       # embedding_lookup
        return _Lookup(_through(op.inputs[0]), op.inputs[1], None, "gather", op=op.type, gather=True)
    found = _sparse_lookup(src, out)
    if found is not None:
        return found
    if op.type not in _DENSE_OPS:
        raise CompileError(f"unsupported TensorFlow operation '{op.type}' ({op.name}); supported: "
                           + _SUPPORTED)
    data = _through(op.inputs[0])
    if data.op.type not in ("GatherV2", "ResourceGather"):
        raise CompileError(f"unsupported '{op.type}' of '{data.op.type}' ({data.op.name}); it must "
                           "reduce tf.gather(x, ids)")
    look = _Lookup(_through(data.op.inputs[0]), data.op.inputs[1], op.inputs[1], _DENSE_OPS[op.type],
                   op=op.type, sorted_segments=not op.type.startswith("Unsorted"),
                   drop_negative_segments=op.type.startswith("Unsorted"))
    if op.type.startswith("Unsorted"):
        try:
            n = src.of(op.inputs[2], "num_segments")
        except CompileError as e:           # tf.shape(x)[d] of a static shape is folded: a
            n = ("unknown", e)              # StridedSlice of a Const (_num_segments looks again)
        look.rows = ("const", int(n[1])) if n[0] == "const" else n
    return look


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
    look = _find(tf, src, outs[0])
    for op in cf.graph.get_operations():
        if op.type == "GatherV2":
            axis = src.of(op.inputs[2], "gather axis")
            if axis[0] != "const" or int(axis[1]) != 0:
                raise CompileError(f"unsupported tf.gather along axis {axis[1]} (axis 0 is)")
    static = []                    # num_segments folded from these (input, dim)s' traced sizes
    if look.rows[0] in ("const", "unknown"):
        look.rows, static = _num_segments(tf, fn, example_args, look.op, look.rows, len(flat))
    table = src.of(look.table, "embedding table")
    id_src = look.ids if isinstance(look.ids, tuple) else src.of(look.ids, "ids")
    seg_src = None if look.gather else (look.seg if isinstance(look.seg, tuple)
                                        else src.of(look.seg, "segment ids"))
    w_src = None if look.weights is None else (look.weights if isinstance(look.weights, tuple)
                                               else src.of(look.weights, "sp_weights"))
    dtype = str(outs[0].dtype.name)
    floats = ("float32", "float64")
    half = dtype in ("float16", "bfloat16")
    bf16 = dtype == "bfloat16"
    if half and (look.weights is not None or look.combiner not in ("sum", "mean", "gather")
                 or not (look.sorted_segments or look.gather)):
        raise CompileError(f"unsupported {dtype} table in '{look.op}' ({dtype}: embedding_lookup_sparse "
                           "sum/mean without weights, sparse/segment sum/mean, gathers)")
    if half:
        floats = ("float32", "float64", dtype)
    if dtype not in _T or (look.combiner in ("mean", "sqrtn") and dtype not in floats) \
            or (look.weights is not None and dtype not in floats):
        raise CompileError(f"unsupported table dtype {dtype} in '{look.op}' (float32, float64"
                           f"{', int32, int64' if look.combiner in ('sum', 'max', 'gather') else ''} are)")
    t = _T[dtype]
    if look.gather:
        scf = scf_for_gather(t)
    elif half and look.op in ("SegmentSum", "SegmentMean"):
        # TensorFlow's dense SegmentSum/Mean reduce in the 16-bit type (every add rounded; the
        # mean divides by the count in that type), unlike its sparse kernels: so does the kernel
        scf = scf_for_weighted_segment(t, look.combiner, False)
        half = False        # bound as the other segment kernels (bind: no bag offsets)
    elif half:              # TensorFlow: f32 accumulation, one rounding (mean: divided first);
        # bfloat16 rounds ties to even (Eigen's conversion), which scf_for_bag's padded=True selects
        scf = scf_for_bag(BagSpec(look.combiner, dtype), padded=bf16, divide_in_f32=True)
    elif look.weights is not None or look.combiner == "sqrtn":
        scf = scf_for_weighted_segment(t, look.combiner, look.weights is not None)
    elif look.combiner == "max":
        scf = scf_for_segment(t, "amax", True, framework="tensorflow")
    else:
        scf = scf_for_segment(t, look.combiner, False)

    def flat_args(args):
        return [x.numpy() if hasattr(x, "numpy") else np.asarray(x)
                for x in tf.nest.flatten(list(args), expand_composites=True)]

    def value(s, a):
        kind, v = s
        if kind == "const":
            return v.numpy() if hasattr(v, "numpy") else np.asarray(v)
        if kind == "input":
            return np.asarray(a[v])
        return np.asarray(a[v])[:, 0]

    state: dict = {}

    def bind(args):
        a = flat_args(args)
        x = value(table, a)
        if x.dtype.name != dtype or x.ndim != 2:
            raise ValueError(f"the table must be a 2-D {dtype} array, not {x.dtype} {x.shape}")
        if bf16:            # bf16 memrefs are uint16 bit patterns (docs/compiler.md, "Types")
            state["bf16"] = x.dtype
            x = np.ascontiguousarray(x).view(np.uint16)
        ids = require_integers(value(id_src, a), "ids")
        state["shape"] = ids.shape
        i = ids.astype(np.int64).reshape(-1)
        if look.gather:
            bad = np.flatnonzero((i < 0) | (i >= x.shape[0]))
            if bad.size:
                raise ValueError(f"ids[{bad[0]}] = {i[bad[0]]} is out of range for {x.shape[0]} rows")
            return [np.ascontiguousarray(x), i, np.zeros((i.size, x.shape[1]), x.dtype)]
        # sp_weights of another dtype are converted to the table's, as embedding_lookup_sparse does
        w = None if w_src is None else value(w_src, a).astype(x.dtype).reshape(-1)
        if look.safe is not None:      # reshaped to rows, pruned, empty rows filled: on the host
            k, default_id = look.safe
            i, s, w, n_safe, state["safe_shape"] = safe_lookups(a[k], i, a[k + 2], w, look.combiner,
                                                                default_id, x.shape[0])
        else:
            s = require_integers(value(seg_src, a), "segment ids").astype(np.int64).reshape(-1)
            if i.size != s.size:
                raise ValueError(f"ids and segment ids must have the same length, not {i.size} and "
                                 f"{s.size}")
            # every id is checked, also those of a dropped (negative) segment id: TensorFlow
            # gathers all rows before the unsorted segment op drops any
            bad = np.flatnonzero((i >= x.shape[0]) | (i < 0))
            if bad.size:
                raise ValueError(f"ids[{bad[0]}] = {i[bad[0]]} is out of range for {x.shape[0]} rows")
            if look.drop_negative_segments:                  # unsorted segment ops drop them
                keep = s >= 0
                i, s, w = i[keep], s[keep], (None if w is None else w[keep])
        if look.sorted_segments and s.size and (np.any(np.diff(s) < 0) or s[0] < 0):
            k = int(np.flatnonzero(np.diff(s) < 0)[0] + 1) if np.any(np.diff(s) < 0) else 0
            raise ValueError(f"segment ids must be sorted and non-negative: segment ids[{k}] = {s[k]}")
        kind = look.rows[0]
        for k, pos, d, size in static:
            got = np.shape(a[pos])
            if len(got) <= d or got[d] != size:
                raise ValueError(
                    f"argument {k} has shape {got}, but num_segments {look.rows[1]} is its dimension "
                    f"{d}'s size {size} at tracing (a static shape TensorFlow folds into the graph "
                    f"and retraces for): write tf.shape(x)[{d}], or compile for this shape")
        if kind == "const":
            n = look.rows[1]
        elif kind == "shape_of":
            k, d = look.rows[1]
            n = int(np.shape(a[k])[d])
        elif kind == "input":
            n = int(np.asarray(a[look.rows[1]]))
        elif kind == "safe":
            n = n_safe
        else:
            n = int(s.max()) + 1 if s.size else 0
        if n < 0:
            raise ValueError(f"num_segments must be non-negative, not {n}")
        bad = np.flatnonzero((s < 0) | (s >= n))
        if bad.size:
            raise ValueError(f"segment ids[{bad[0]}] = {s[bad[0]]} is out of range for {n} segments")
        if half:            # sorted segments -> bag offsets
            offsets = np.searchsorted(s, np.arange(n + 1), side="left").astype(np.int64)
            return [np.ascontiguousarray(x), i, offsets, np.zeros((n, x.shape[1]), x.dtype)]
        out = (np.full((n, x.shape[1]), _LOWEST[dtype], x.dtype) if look.combiner == "max"
               else np.zeros((n, x.shape[1]), x.dtype))
        return [np.ascontiguousarray(x), i, s] + ([] if w is None else [w]) + [out]

    def unbind(results):
        r = np.asarray(results[0])
        if bf16:
            r = r.view(state["bf16"])
        if look.safe is not None:       # [d_0, ..., d_{n-1}, e], as TensorFlow reshapes it back
            return r.reshape(*state["safe_shape"], r.shape[1])
        return r.reshape(*state["shape"], r.shape[1]) if look.gather else r

    spec = {"op": look.op, "reduce": look.combiner, "dtype": dtype, "weighted": look.weights is not None}
    plan = PlanKernel("gather" if look.gather else "segment", spec, scf, bind, unbind)
    plan.traced_with = "tf.function"
    plan.kernel = _compile(plan.scf, limits, opt_level)
    return plan
