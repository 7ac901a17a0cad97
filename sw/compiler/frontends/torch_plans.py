"""PyTorch frontend, graphs other than one embedding bag: gathers, segment reductions, sparse CSR x
dense, several embedding bags in one program.

Each ``_plan_*`` matches its graph in a :class:`~.torch_graph._Graph` and returns a
:class:`~.torch_bind.PlanKernel` holding the SCF text and the argument binding for a call.
"""

from __future__ import annotations

import numpy as np
import torch

from ..errors import CompileError
from .torch_bags import plan_bags
from .torch_quant import BYTE_OP, FOUR_BIT_OP, plan_byte_bag
from .torch_bind import PlanKernel, _index_array, _numpy, _renorm, _tensor, _torch, _value
from .torch_graph import _BAG_OPS, _describe, _Graph, _Wrap, _elem
from .torch_scf import _FLOAT, scf_for_csr_mm, scf_for_gather, scf_for_segment

def _plan_embedding(g: _Graph, node) -> PlanKernel:
    weight_node, idx_node = node.args[0], node.args[1]
    w_src = g.source(weight_node, "embedding weight")
    weight = g.example(weight_node, "embedding weight")
    if weight.dim() != 2:
        raise CompileError(f"the embedding weight must be 2-D, not {weight.dim()}-D")
    t = _elem(weight, "embedding weight", half=True)
    i_src = g.source(idx_node, "embedding indices", allow_const=False)
    nrows, dim, dtype = weight.shape[0], weight.shape[1], weight.dtype
    renorm = g.renorm_of(weight_node, idx_node)

    def bind(inputs):
        w = _value(w_src, inputs, "weight")
        if w.dtype != _numpy(torch.empty(0, dtype=dtype), "").dtype or w.shape[1:] != (dim,):
            raise ValueError(f"weight must be a ({nrows}, {dim}) {dtype} tensor, not {w.dtype} {w.shape}")
        idx = _value(i_src, inputs, "input")
        flat = _index_array(i_src, inputs, "input", w.shape[0])
        if renorm is not None:
            _renorm(_tensor(w_src, inputs), flat, *renorm)
            w = _value(w_src, inputs, "weight")
        return [np.ascontiguousarray(w), flat, np.zeros((flat.size, dim), w.dtype), idx.shape]

    def unbind_shape(results, shape):
        return _torch(np.asarray(results[0]).reshape(*shape, dim), dtype)

    pk = PlanKernel("embedding", {"dtype": str(dtype), "max_norm": renorm}, scf_for_gather(t), None, None)
    state = {}

    def bind_args(inputs):
        *args, shape = bind(inputs)
        state["shape"] = shape
        return args

    pk._bind = bind_args
    pk._unbind = lambda results: unbind_shape(results, state["shape"])
    return pk


def _size_source(g: _Graph, reducer):
    """Where the rows of ``reducer``'s output, a ``torch.zeros``/``new_zeros`` that torch.export
    wrote with a constant size, come from: ``(("input", position), dim)`` when they are an input's
    size (``torch.zeros(x.shape[0], d)``), found by exporting the function again with every
    input's sizes dynamic (``Dim.AUTO``), where such a size is an ``aten.sym_size`` node; None when
    they are a constant of the function (or that export fails: the traced constant stays).

    Raises CompileError when they are another expression of input sizes (``x.shape[0] + 1``)."""
    from torch.export import Dim
    from torch.export.graph_signature import InputKind
    specs = tuple({d: Dim.AUTO for d in range(v.dim())}
                  if isinstance(v, torch.Tensor) and v.layout == torch.strided else None
                  for v in g.examples)
    try:
        ep = torch.export.export(g.module, tuple(g.examples),
                                 dynamic_shapes=(specs,) if isinstance(g.module, _Wrap) else specs)
    except Exception:  # noqa: BLE001 - torch.export raises many kinds; keep the constant
        return None
    found = [n for n in ep.graph.nodes if n.op == "call_function" and n.target == reducer.target]
    base = found[0].args[0] if len(found) == 1 else None
    bt = str(getattr(base, "target", ""))
    if bt not in ("aten.zeros.default", "aten.new_zeros.default"):
        return None
    rows = (base.args[0] if bt == "aten.zeros.default" else base.args[1])[0]
    if isinstance(rows, int):
        return None
    if (str(getattr(rows, "target", "")) == "aten.sym_size.int"
            and getattr(rows.args[0], "op", None) == "placeholder"):
        user = [s.arg.name for s in ep.graph_signature.input_specs if s.kind == InputKind.USER_INPUT]
        if rows.args[0].name in user:
            return ("input", user.index(rows.args[0].name)), int(rows.args[1])
    raise CompileError(f"unsupported output rows {rows.meta.get('val', rows)}: an expression of "
                       f"the inputs' sizes (an input's size, torch.zeros_like(t) or a constant is)")


def _plan_segment(g: _Graph, reducer) -> PlanKernel:
    tgt = str(reducer.target)
    if tgt.startswith("aten.index_add"):
        base, dim, dst, msgs = reducer.args[:4]
        alpha = reducer.kwargs.get("alpha", reducer.args[4] if len(reducer.args) > 4 else 1)
        if alpha != 1:
            raise CompileError(f"unsupported index_add alpha={alpha} (alpha=1 is)")
        reduce, include_self = "sum", True
    else:
        base, dim, index2d, msgs, reduce = reducer.args[:5]
        include_self = reducer.kwargs.get("include_self", reducer.args[5] if len(reducer.args) > 5 else True)
        if reduce not in ("sum", "mean", "amax", "amin"):
            raise CompileError(f"unsupported scatter_reduce reduce={reduce!r} (sum, mean, amax, amin are)")
        node = index2d
        while str(getattr(node, "target", "")) in ("aten.expand.default", "aten.expand_as.default"):
            node = node.args[0]
        if str(getattr(node, "target", "")) != "aten.unsqueeze.default" or node.args[1] not in (1, -1):
            raise CompileError("unsupported scatter_reduce index: it must be dst[:, None] expanded "
                               "to the messages' shape (a segment id per row)")
        dst = node.args[0]
    if dim != 0:
        raise CompileError(f"unsupported {tgt} along dim {dim} (dim 0, rows, is)")
    mt = str(getattr(msgs, "target", ""))
    if mt == "aten.index_select.default":
        x, sdim, src = msgs.args[:3]
        if sdim != 0:
            raise CompileError(f"unsupported index_select along dim {sdim} (dim 0 is)")
    elif mt == "aten.index.Tensor" and len(msgs.args[1]) == 1:
        x, src = msgs.args[0], msgs.args[1][0]
    else:
        raise CompileError(f"unsupported {tgt} source {getattr(msgs, 'target', msgs)}: it must be "
                           "x.index_select(0, src) or x[src]")
    x_src = g.source(x, "gathered tensor")
    xe = g.example(x, "gathered tensor")
    if xe.dim() != 2:
        raise CompileError(f"the gathered tensor must be 2-D, not {xe.dim()}-D")
    t = _elem(xe, "gathered tensor")
    s_src = g.source(src, "index_select index", allow_const=False)
    d_src = g.source(dst, f"{tgt} index", allow_const=False)
    bt = str(getattr(base, "target", ""))
    if bt in ("aten.zeros.default", "aten.zeros_like.default", "aten.new_zeros.default"):
        shape = (list(base.args[0]) if bt == "aten.zeros.default" else
                 list(base.args[1]) if bt == "aten.new_zeros.default" else
                 list(base.args[0].meta["val"].shape))
        b_src = None
        like = base.args[0] if bt == "aten.zeros_like.default" else None
        # the output's rows at each call: zeros_like(t) of an input t has t's; torch.export writes
        # the other forms' sizes as the traced constants, torch.zeros(x.shape[0], d) among them
        rows_of = ((g.source(like, "zeros_like operand"), 0) if getattr(like, "op", None) == "placeholder"
                   else None if like is not None else _size_source(g, reducer))
        if base.meta["val"].dtype != xe.dtype:
            raise CompileError(f"the output dtype {base.meta['val'].dtype} differs from the gathered "
                               f"tensor's {xe.dtype}")
    else:
        rows_of = None
        b_src = g.source(base, f"{tgt} self")
        shape = list(g.example(base, f"{tgt} self").shape)
    if len(shape) != 2 or shape[1] != xe.shape[1]:
        raise CompileError(f"the output shape {tuple(shape)} does not match the gathered rows "
                           f"(?, {xe.shape[1]})")
    nseg = int(shape[0])
    in_place = b_src is not None and tgt.split(".")[1].endswith("_")     # aten.index_add_.default
    state: dict = {}

    def bind(inputs):
        xa = _value(x_src, inputs, "x")
        if xa.dtype != xe.numpy().dtype or xa.ndim != 2:
            raise ValueError(f"x must be a 2-D {xe.dtype} tensor, not {xa.dtype} {xa.shape}")
        s = _index_array(s_src, inputs, "src", xa.shape[0])
        if b_src is not None:           # an input reduced into: its own rows at each call
            out = _value(b_src, inputs, "self")
            if out.dtype != xa.dtype or out.ndim != 2 or out.shape[1] != xa.shape[1]:
                raise ValueError(f"self must be a 2-D {xe.dtype} tensor of {xa.shape[1]} columns "
                                 f"(x's), not {out.dtype} {out.shape}")
            out, rows = np.array(out, copy=True), out.shape[0]
            if in_place:                # index_add_/scatter_reduce_: PyTorch writes into self
                state["self"] = _tensor(b_src, inputs)
        else:
            rows = nseg if rows_of is None else int(_tensor(rows_of[0], inputs).shape[rows_of[1]])
            out = np.zeros((rows, xa.shape[1]), xa.dtype)
        d = _index_array(d_src, inputs, "dst", rows)
        if s.size != d.size:
            raise ValueError(f"src and dst must have the same length, not {s.size} and {d.size}")
        return [np.ascontiguousarray(xa), s, d, out]

    def unbind(results):
        out = torch.from_numpy(np.asarray(results[0]))
        if not in_place:
            return out
        with torch.no_grad():           # the input (or buffer) itself, updated, as PyTorch returns it
            return state["self"].copy_(out)

    spec = {"reduce": reduce, "include_self": bool(include_self), "dtype": str(xe.dtype), "op": tgt}
    scf = scf_for_segment(t, reduce, bool(include_self), zero_self=b_src is None)
    return PlanKernel("segment", spec, scf, bind, unbind)


def _plan_csr_mm(g: _Graph, node) -> PlanKernel:
    a, x = node.args[:2]
    a_src = g.source(a, "sparse matrix", allow_const=False)
    ae = g.example(a, "sparse matrix")
    if ae.layout != torch.sparse_csr:
        raise CompileError(f"unsupported {node.target} with a {ae.layout} left operand "
                           "(a torch.sparse_csr tensor is)")
    x_src = g.source(x, "dense operand")
    xe = g.example(x, "dense operand")
    if xe.dim() != 2:
        raise CompileError(f"the dense operand must be 2-D, not {xe.dim()}-D")
    t = _elem(xe, "dense operand")
    if t not in _FLOAT or ae.dtype != xe.dtype:
        raise CompileError(f"unsupported sparse x dense dtypes {ae.dtype} x {xe.dtype} (float32 "
                           "or float64, the same for both)")

    def bind(inputs):
        at = inputs[a_src[1]]
        if not isinstance(at, torch.Tensor) or at.layout != torch.sparse_csr:
            raise ValueError("the sparse matrix must be a torch.sparse_csr tensor")
        xa = _value(x_src, inputs, "x")
        if xa.ndim != 2 or xa.dtype != xe.numpy().dtype:
            raise ValueError(f"x must be a 2-D {xe.dtype} tensor (as traced), not "
                             f"{xa.ndim}-D {xa.dtype}")
        if at.dtype != xe.dtype:            # PyTorch: "expected scalar type ... but found ..."
            raise ValueError(f"the sparse matrix must have x's dtype {xe.dtype}, not {at.dtype}")
        if at.shape[1] != xa.shape[0]:
            raise ValueError(f"shapes {tuple(at.shape)} and {xa.shape} cannot be multiplied")
        crow = at.crow_indices().numpy().astype(np.int64)
        col = at.col_indices().numpy().astype(np.int64)
        val = np.ascontiguousarray(at.values().numpy(), dtype=xa.dtype)
        return [crow, col, val, np.ascontiguousarray(xa), np.zeros((at.shape[0], xa.shape[1]), xa.dtype)]

    return PlanKernel("csr_mm", {"dtype": str(xe.dtype), "op": str(node.target)}, scf_for_csr_mm(t),
                      bind, lambda results: torch.from_numpy(np.asarray(results[0])))


_SUPPORTED = ("embedding_bag (then relu, negation, * / + - by a number, a number -), embedding (then "
              ".sum(1)/.mean(1)), "
              "index_select/x[src] + index_add/scatter_reduce, sparse CSR @ dense")

_HELPERS = {"aten.zeros.default", "aten.zeros_like.default", "aten.new_zeros.default",
            "aten.unsqueeze.default", "aten.expand.default", "aten.expand_as.default"}


#: the segment reductions, in place (a trailing ``_``: PyTorch writes into ``self``) or not
_REDUCERS = ("aten.index_add.default", "aten.index_add_.default", "aten.scatter_reduce.two",
             "aten.scatter_reduce_.two")


def _plan(g: _Graph) -> PlanKernel | None:
    """Recognise a graph other than exactly one embedding bag; None when it is one bag."""
    names = [str(n.target) for n in g.calls]
    bags = [n for n in g.calls if str(n.target) in _BAG_OPS]
    if bags and all(str(n.target) in _BAG_OPS or str(n.target) == "aten.cat.default" for n in g.calls):
        if len(bags) == 1 and "aten.cat.default" not in names and g.ep.call_spec.out_spec.is_leaf():
            return None
        return plan_bags(g, bags)
    if names in ([BYTE_OP], [FOUR_BIT_OP]):
        return plan_byte_bag(g, g.calls[0])
    if names == ["aten.embedding.default"]:
        if len(g.outputs) != 1 or g.outputs[0] is not g.calls[0]:
            raise CompileError(f"the traced function must return the embedding's output only, not "
                               f"{_describe(g.outputs)}")
        return _plan_embedding(g, g.calls[0])
    reducers = [n for n in g.calls if str(n.target) in _REDUCERS]
    if len(reducers) == 1:
        allowed = _HELPERS | {"aten.index_select.default", "aten.index.Tensor", str(reducers[0].target)}
        other = [n for n in g.calls if str(n.target) not in allowed]
        if not other:
            if len(g.outputs) != 1 or g.outputs[0] is not reducers[0]:
                raise CompileError(f"the traced function must return the {reducers[0].target} result only")
            return _plan_segment(g, reducers[0])
    mms = [n for n in g.calls if str(n.target) in ("aten._sparse_mm.default", "aten.matmul.default",
                                                    "aten.mm.default")]
    if names and len(mms) == len(names) == 1:
        if len(g.outputs) != 1 or g.outputs[0] is not mms[0]:
            raise CompileError(f"the traced function must return the product only, not "
                               f"{_describe(g.outputs)}")
        return _plan_csr_mm(g, mms[0])
    known = _BAG_OPS + tuple(_HELPERS) + ("aten.embedding.default", "aten.index_select.default",
                                          "aten.index.Tensor", *_REDUCERS,
                                          "aten._sparse_mm.default", "aten.matmul.default", "aten.cat.default")
    bad = [n for n in names if n not in known]
    if bad:
        raise CompileError(f"unsupported PyTorch operation {bad[0]} (supported: {_SUPPORTED})")
    raise CompileError(f"unsupported combination of PyTorch operations {', '.join(names) or '(none)'} "
                       f"(supported: {_SUPPORTED}; several embedding bags, not several other ops)")
