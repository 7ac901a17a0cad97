"""TensorFlow frontend, ``tf.nn.safe_embedding_lookup_sparse``: where its graph reads the sparse
ids, weights and ``default_id``, and the host side of the op (what TensorFlow does around its
``embedding_lookup_sparse``, done by ``bind`` before the segment kernel).

TensorFlow (``embedding_ops.safe_embedding_lookup_sparse``, 2.21) reshapes ``sparse_ids`` of
shape ``[d_0, ..., d_n]`` to ``[d_0 * ... * d_{n-1}, d_n]`` (a lookup's row is the row-major
index of its first ``n`` coordinates; the indices are not checked against ``dense_shape``: one
out of it is read as TensorFlow reads it, :func:`_rows`), pairs ``sparse_weights``' values with
the ids by position (their indices are not read), drops ids ``< 0`` and, for ``mean``/``sqrtn``,
weights that are not ``> 0``, fills each empty row with one lookup of ``default_id or 0`` at
weight 1 (``SparseFillEmptyRows``, which refuses a kept lookup's row outside the rows and orders
the lookups by row, a row's in their given order), zeroes
the filled rows when ``default_id`` is None, and reshapes the ``[rows, e]`` result to
``[d_0, ..., d_{n-1}, e]``.
"""

from __future__ import annotations

import numpy as np

from ..errors import CompileError
from .tensorflow_sources import _through

__all__ = ["safe_lookup", "safe_lookups"]


def _filled(t):
    """The ``SparseFillEmptyRows`` whose values ``t`` is (None if it is not such values)."""
    t = _through(t)
    return t.op if t.op.type == "SparseFillEmptyRows" and t.value_index == 1 else None


def safe_lookup(src, out, sparse_lookup, supported: str):
    """The ``_Lookup`` of ``safe_embedding_lookup_sparse`` ending at ``out`` (its final Reshape):
    ``sparse_lookup`` (the frontend's ``_sparse_lookup``) recognises the inner
    ``embedding_lookup_sparse``; its ids and weights are replaced by the function's inputs, which
    ``bind`` prepares with :func:`safe_lookups` (``look.safe = (indices position, default_id)``)."""
    res = _through(out.op.inputs[0])
    zero_empty = res.op.type == "Select"                    # default_id None: filled rows zeroed
    if zero_empty:
        res = _through(res.op.inputs[2])
    inner = sparse_lookup(src, res)
    if inner is not None:
        src.of(inner.table, "embedding table")      # e.g. max_norm's clipping: named by the error
    fill = None if inner is None else _filled(inner.ids)
    if fill is None:
        raise CompileError(f"unsupported TensorFlow operation 'Reshape' ({out.op.name}) of "
                           f"'{res.op.type}'; supported: {supported}")
    t, reshaped = _through(fill.inputs[0]), False
    while t.op.type in ("GatherV2", "SparseReshape"):
        reshaped |= t.op.type == "SparseReshape"
        t = _through(t.op.inputs[0])
    k = src.inputs.get(t.name)
    if k is None or not reshaped:
        raise CompileError("unsupported safe_embedding_lookup_sparse: the ids must be a SparseTensor "
                           "input")
    default = src.of(fill.inputs[3], "default_id")
    if default[0] != "const":
        raise CompileError("unsupported safe_embedding_lookup_sparse: default_id must be a constant")
    if inner.weights is not None:
        wfill = _filled(inner.weights)
        t = None if wfill is None else _through(wfill.inputs[1])
        while t is not None and t.op.type == "GatherV2":      # the pruning of ids and weights
            t = _through(t.op.inputs[0])
        pos = None if t is None else src.inputs.get(t.name)
        if pos is None:
            raise CompileError("unsupported safe_embedding_lookup_sparse: sparse_weights must be a "
                               "SparseTensor input")
        inner.weights = ("input", pos)
    inner.ids, inner.seg, inner.rows = ("input", k + 1), ("safe", k), ("safe", k)
    inner.safe = (k, None if zero_empty else int(np.asarray(default[1])))
    inner.op = "safe_" + inner.op
    return inner


def _rows(indices, dense_shape, values: int):
    """The row of each index as TensorFlow's ``SparseReshape`` to ``[d_0 * ... * d_{n-1}, d_n]``
    makes it, unchecked: of rank 2 (the same shape: the identity) the first coordinate, the
    column not read; otherwise the row-major offset ``sum(i_j * stride_j)`` divided by ``d_n``,
    truncated toward zero as C++ does (a coordinate beyond its dimension lands in another row;
    only a row outside the rows is refused, by ``SparseFillEmptyRows``). Raises ValueError where
    SparseReshape does: values in a shape of no elements (rank 2 aside)."""
    if dense_shape.size == 2:
        return indices[:, 0].copy()
    if values and np.prod(dense_shape) == 0:
        raise ValueError(f"sparse_ids has {values} values but dense_shape {dense_shape.tolist()} has no "
                         "elements (TensorFlow's SparseReshape refuses them)")
    if not values:
        return np.zeros(0, np.int64)
    strides = np.concatenate([np.cumprod(dense_shape[:0:-1])[::-1], [1]]).astype(np.int64)
    offset = indices @ strides
    last = int(dense_shape[-1])
    return np.sign(offset) * (np.abs(offset) // last)


def safe_lookups(indices, ids, dense_shape, weights, combiner: str, default_id, table_rows: int):
    """``(ids, rows, weights, n, shape)``: the lookups of ``safe_embedding_lookup_sparse`` as
    TensorFlow makes them (module docstring) — ordered by their row of the ``n`` rows, empty
    rows filled with ``default_id`` (none when it is None: the kernel leaves a row without
    lookups 0) — and ``shape``, the leading dimensions of the result. ``ids`` are the integer
    values of ``sparse_ids``, ``weights`` those of ``sparse_weights`` (or None) in the table's
    dtype. Raises ValueError where TensorFlow raises: values in a ``dense_shape`` of no elements
    (rank 2 aside), weights not one per id, a kept lookup whose row (:func:`_rows`) is outside the
    rows, a kept id out of range, and an empty row whose ``default_id or 0`` (which TensorFlow
    gathers even when it zeroes the row) is out of range."""
    dense_shape = np.asarray(dense_shape).astype(np.int64).reshape(-1)
    indices = np.asarray(indices)
    if dense_shape.size < 1 or indices.shape != (ids.size, dense_shape.size):
        raise ValueError(f"sparse_ids has indices of shape {indices.shape}, {ids.size} values and "
                         f"dense_shape {dense_shape.tolist()}: the indices must be [values, rank]")
    if weights is not None and weights.size != ids.size:
        raise ValueError(f"sparse_weights has {weights.size} values and sparse_ids {ids.size}: "
                         "safe_embedding_lookup_sparse pairs them by position")
    indices = indices.astype(np.int64)
    shape = tuple(int(d) for d in dense_shape[:-1])
    n = int(np.prod(shape, dtype=np.int64))
    rows = _rows(indices, dense_shape, ids.size)
    keep = ids >= 0
    if weights is not None and combiner != "sum":
        keep &= weights > 0                 # TensorFlow drops weights <= 0 (and NaN) for mean, sqrtn
    kept = np.flatnonzero(keep)
    bad = kept[(rows[kept] < 0) | (rows[kept] >= n)]      # SparseFillEmptyRows: the kept rows only
    if bad.size:
        k = bad[0]
        raise ValueError(f"sparse_ids.indices[{k}] = {indices[k].tolist()} is out of range for dense_shape "
                         f"{dense_shape.tolist()}" + ("" if dense_shape.size == 2 else
                                                      f": TensorFlow reads it as row {rows[k]} of {n}"))
    bad = kept[ids[kept] >= table_rows]
    if bad.size:
        raise ValueError(f"ids[{bad[0]}] = {ids[bad[0]]} is out of range for {table_rows} rows")
    ids, rows = ids[kept], rows[kept]
    weights = None if weights is None else weights[kept]
    empty = np.ones(n, bool)
    empty[rows] = False
    if empty.any():
        fill = 0 if default_id is None else default_id
        if not 0 <= fill < table_rows:
            row = [int(r) for r in np.unravel_index(int(np.flatnonzero(empty)[0]), shape)] if shape else []
            raise ValueError(f"default_id {default_id} is out of range for {table_rows} rows: row "
                             f"{row} of sparse_ids is empty and TensorFlow looks up "
                             f"{fill} there" + (" before it zeroes the row" if default_id is None else ""))
        if default_id is not None:
            filled = np.flatnonzero(empty)
            rows = np.concatenate([rows, filled])
            ids = np.concatenate([ids, np.full(filled.size, default_id, np.int64)])
            if weights is not None:
                weights = np.concatenate([weights, np.ones(filled.size, weights.dtype)])
    order = np.argsort(rows, kind="stable")        # SparseFillEmptyRows: by row, stable
    return ids[order], rows[order], None if weights is None else weights[order], n, shape
