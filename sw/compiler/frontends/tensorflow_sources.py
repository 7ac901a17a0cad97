"""TensorFlow frontend, where a traced graph's tensors come from: the function's inputs,
constants, captured variables, a SparseTensor's row ids, and input sizes (``tf.shape(x)[d]``),
including the sizes TensorFlow folded into constants from the example's static shapes.
"""

from __future__ import annotations

from ..errors import CompileError

_PASS = ("Identity",)


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
        if op.type == "Cast" and t.dtype.is_integer and op.inputs[0].dtype.is_integer:
            return self.of(op.inputs[0], what)          # segment ids cast int64 -> int32
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
        if op.type == "StridedSlice" and _through(op.inputs[0]).op.type == "Shape":
            shaped = _through(_through(op.inputs[0]).op.inputs[0])
            begin, end, strides = (self.tf.make_ndarray(_through(i).op.get_attr("value"))
                                   if _through(i).op.type == "Const" else None for i in op.inputs[1:4])
            if (shaped.name in self.inputs and begin is not None and end is not None
                    and strides is not None and len(begin) == 1 and int(end[0]) == int(begin[0]) + 1
                    and list(strides) == [1] and op.get_attr("shrink_axis_mask") == 1
                    and int(begin[0]) >= 0):
                return "shape_of", (self.inputs[shaped.name], int(begin[0]))     # tf.shape(x)[d]
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


def _relaxed(tf, arg, dims=None):
    """A ``tf.TensorSpec`` of ``arg`` (a dense tensor or array) with ``dims`` (all: None) unknown."""
    shape = list(arg.shape)
    for d in range(len(shape)) if dims is None else dims:
        shape[d] = None
    return tf.TensorSpec(shape, tf.as_dtype(arg.dtype))


def _dense(arg) -> bool:
    return hasattr(arg, "shape") and hasattr(arg, "dtype") and not hasattr(arg, "dense_shape")


def _num_segments(tf, fn, example_args: tuple, op_type: str, rows: tuple, n_user: int):
    """``(rows, static)``: where ``op_type``'s ``num_segments`` comes from at each call, and the
    ``(argument, flat input position, dim, size)``s whose traced sizes it was folded from. TensorFlow folds a static
    shape into the graph: ``x.shape[0]`` and ``tf.shape(x)[0]`` of the example both become
    constants. So ``fn`` is traced again with every dense input's sizes unknown
    (``tf.TensorSpec`` with ``None``): ``tf.shape(x)[d]`` there is read at each call
    (``("shape_of", (k, d))``), the same constant is a constant of the function; otherwise each
    dimension is relaxed in turn and those whose trace fails or loses the constant are returned
    in ``static`` (a call must keep their sizes). Raises the original CompileError for a
    ``num_segments`` that is none of these."""
    def traced(specs):
        try:
            cf = fn.get_concrete_function(*specs)
        except Exception:  # noqa: BLE001 - the relaxed trace may fail in user code
            return None, None
        ops = [o for o in cf.graph.get_operations() if o.type == op_type]
        return (cf, ops[0].inputs[2]) if len(ops) == 1 else (None, None)

    cf, n = traced([_relaxed(tf, a) if _dense(a) else a for a in example_args])
    if n is not None:
        try:
            found = _Sources(tf, cf, n_user).of(n, "num_segments")
        except CompileError:
            found = None
        if found is not None and found[0] == "shape_of":
            return found, []
        if found is not None and found[0] == "const" and rows[0] == "const" and int(found[1]) == rows[1]:
            return rows, []
    if rows[0] != "const":
        raise rows[1]
    static, flat_pos = [], 0
    for k, arg in enumerate(example_args):
        pos, flat_pos = flat_pos, flat_pos + len(tf.nest.flatten(arg, expand_composites=True))
        for d in range(len(arg.shape)) if _dense(arg) else ():
            cf, n = traced([_relaxed(tf, a, [d]) if j == k else a for j, a in enumerate(example_args)])
            n = None if n is None else _through(n)
            if not (n is not None and n.op.type == "Const"
                    and int(tf.make_ndarray(n.op.get_attr("value"))) == rows[1]):
                static.append((k, pos, d, int(arg.shape[d])))
    return rows, static
