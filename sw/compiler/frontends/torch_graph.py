"""PyTorch frontend, graph matching: trace with ``torch.export`` and find what the graph computes.

:class:`_Graph` resolves a traced program's inputs (user inputs by position; parameters, buffers
and constants as :class:`_Live` references read again at each call) and folds what
``F.embedding``/``F.embedding_bag`` put around the aten op (``max_norm``, a 2-D input);
:func:`_from_export` / :func:`_from_attributes` recognise one embedding bag.
"""

from __future__ import annotations

import operator
from dataclasses import dataclass
from typing import Callable

import torch

from ..errors import CompileError
from .torch_scf import BagSpec

_MODES = {0: "sum", 1: "mean", 2: "max"}

_DTYPES = {torch.float32: ("float32", "f32"), torch.float64: ("float64", "f64"),
           torch.float16: ("float16", "f16"), torch.bfloat16: ("bfloat16", "bf16")}

_ELEM = {torch.float32: "f32", torch.float64: "f64", torch.int32: "i32", torch.int64: "i64"}
_HALF_ELEM = {torch.float16: "f16", torch.bfloat16: "bf16"}

_POST_OPS = {"aten.relu.default": "relu", "aten.mul.Tensor": "mul", "aten.mul.Scalar": "mul",
             "aten.div.Tensor": "div", "aten.div.Scalar": "div", "aten.add.Tensor": "add",
             "aten.add.Scalar": "add", "aten.sub.Tensor": "sub", "aten.sub.Scalar": "sub",
             "aten.rsub.Scalar": "rsub", "aten.neg.default": "neg"}     # rsub: number - x


#: a conversion of the bag's result (``.to(dtype)``, ``.half()``, ``.double()``), the last op
_CASTS = ("aten.to.dtype", "aten._to_copy.default")
#: what torch.export puts before ``aten.to.dtype`` (a check, no value)
_ASSERT_METADATA = "aten._assert_tensor_metadata.default"


def _cast_target(node) -> str | None:
    """The dtype name a ``to``/``_to_copy`` node converts to, if it only converts the dtype."""
    if str(node.target) == "aten.to.dtype":
        dtype, rest = (node.args[1] if len(node.args) > 1 else node.kwargs.get("dtype")), node.args[2:]
        if any(rest) or any(v for k, v in node.kwargs.items() if k != "dtype"):
            return None
    else:
        dtype = node.kwargs.get("dtype")
        if len(node.args) != 1 or any(k not in ("dtype", "layout", "device") for k in node.kwargs) \
                or str(node.kwargs.get("device", "cpu")) != "cpu":
            return None
    return str(dtype).removeprefix("torch.") if isinstance(dtype, torch.dtype) else None


class _Synthetic:
    """A graph node made by folding (``emb(x).sum(1)`` -> an embedding_bag node)."""

    def __init__(self, target, args: tuple, name: str):
        self.target, self.args, self.kwargs, self.name, self.op = target, args, {}, name, "call_function"


_BAG_OPS = ("aten.embedding_bag.padding_idx", "aten.embedding_bag.default",
            "aten._embedding_bag.default", "aten._embedding_bag_forward_only.default")


def _elem(t: torch.Tensor, what: str, *, half: bool = False) -> str:
    """The MLIR element type of ``t``'s dtype; float16/bfloat16 only with ``half``."""
    if half and t.dtype in _HALF_ELEM:
        return _HALF_ELEM[t.dtype]
    if t.dtype not in _ELEM:
        more = ", float16, bfloat16" if half else ""
        raise CompileError(f"unsupported {what} dtype {t.dtype} (float32, float64{more}, int32 and "
                           "int64 are)")
    return _ELEM[t.dtype]


class _Live:
    """A parameter, buffer or constant tensor of the traced module, read again at each call
    (issue 8 item 3: ``module.weight = Parameter(...)`` and ``weight.data = ...`` after
    compiling are seen, like in-place updates).

    A parameter or buffer is looked up by its name on the module (``get_parameter`` /
    ``get_buffer``); a constant by its attribute path when it has one, else (a tensor a function
    captured, ``lifted_tensor_N``) it is the captured tensor object itself.
    """

    def __init__(self, module: torch.nn.Module, kind: str, target: str, tensor: torch.Tensor):
        self.module, self.kind, self.target, self._tensor = module, kind, target, tensor

    def current(self) -> torch.Tensor:
        if self.kind == "parameter":
            return self.module.get_parameter(self.target)
        if self.kind == "buffer":
            return self.module.get_buffer(self.target)
        obj = self.module
        for part in self.target.split("."):
            obj = getattr(obj, part, None)
        return obj if isinstance(obj, torch.Tensor) else self._tensor


def _live(module: torch.nn.Module, ep, spec) -> _Live:
    """The :class:`_Live` of a non-user input ``spec`` of the exported program ``ep``."""
    from torch.export.graph_signature import InputKind
    kind = {InputKind.PARAMETER: "parameter", InputKind.BUFFER: "buffer"}.get(spec.kind, "constant")
    value = ep.constants[spec.target] if spec.target in ep.constants else ep.state_dict[spec.target]
    return _Live(module, kind, spec.target, value)


@dataclass
class _Found:
    spec: BagSpec
    weight: _Live | None              # None when the weight is an input
    roles: dict[str, int]             # "indices"/"offsets"/"per_sample_weights"/"weight" -> input position
    num_embeddings: int
    how: str                          # "torch.export" or "attributes"
    renorm: tuple[float, float] | None = None   # (max_norm, norm_type)
    reduction: str | None = None      # F.embedding(x, w).sum(1)/.mean(1) folded: _Graph.reduction


def _check_weight(weight: torch.Tensor) -> str:
    if weight.dtype not in _DTYPES:
        raise CompileError(f"unsupported embedding weight dtype {weight.dtype} (float32, float64, "
                           "float16 and bfloat16 are)")
    if weight.dim() != 2:
        raise CompileError(f"the embedding weight must be 2-D, not {weight.dim()}-D")
    return _DTYPES[weight.dtype][0]


def _from_attributes(bag: torch.nn.EmbeddingBag) -> _Found:
    weight = bag.weight.detach()
    dtype = _check_weight(weight)
    spec = BagSpec(bag.mode, dtype, False, bool(bag.include_last_offset), bag.padding_idx)
    roles = {"indices": 0, "offsets": 1, "per_sample_weights": 2}
    renorm = None if bag.max_norm is None else (float(bag.max_norm), float(bag.norm_type))
    return _Found(spec, _Live(bag, "parameter", "weight", bag.weight), roles, weight.shape[0],
                  "attributes", renorm)


class _Wrap(torch.nn.Module):
    def __init__(self, fn: Callable):
        super().__init__()
        self.fn = fn

    def forward(self, *args):
        return self.fn(*args)


def _export(module: torch.nn.Module, example_inputs: tuple):
    try:
        return torch.export.export(module, tuple(example_inputs))
    except Exception as e:  # noqa: BLE001 - torch.export raises many kinds
        raise CompileError(f"torch.export could not trace the module: {type(e).__name__}: "
                           f"{str(e).splitlines()[0] if str(e) else ''}") from None


class _Graph:
    """A torch.export graph with its inputs resolved (user inputs by position, parameters and
    constants by value)."""

    def __init__(self, ep, example_inputs: tuple, module: torch.nn.Module):
        from torch.export.graph_signature import InputKind
        self.ep, self.examples, self.module = ep, example_inputs, module
        self.specs = {s.arg.name: s for s in ep.graph_signature.input_specs}
        self.user = [s.arg.name for s in ep.graph_signature.input_specs
                     if s.kind == InputKind.USER_INPUT]
        self.calls = [n for n in ep.graph.nodes if n.op == "call_function"
                      and n.target is not operator.getitem]
        self.outputs = list([n for n in ep.graph.nodes if n.op == "output"][0].args[0])
        self._kind = InputKind
        self.renorm: dict = {}      # weight node -> (indices node, max_norm, norm_type)
        self.fixed: dict = {}       # embedding_bag node -> (2-D input, None, 2-D weights or None)
        self.post: tuple = ()       # element-wise ops after a single bag: ((op, number), ...)
        self.cast: str | None = None  # the dtype the result is converted to last (``.to(dtype)``)
        self.reduction: str | None = None    # "aten.sum.dim_IntList" when emb(x).sum(1) was folded
        self._fold()

    def _fold(self) -> None:
        """Fold what ``F.embedding``/``F.embedding_bag`` put around the aten op: ``max_norm``
        (``detach`` + ``embedding_renorm_`` of the weight) and a 2-D input (``reshape(input, [-1])``
        with offsets ``arange(0, numel, bag length)``, and the per_sample_weights reshaped)."""
        drop = set()
        for n in self.calls:
            if str(n.target) != "aten.embedding_renorm_.default":
                continue
            det, idx, max_norm, norm_type = n.args[:4]
            if str(getattr(det, "target", "")) != "aten.detach.default" or len(det.users) != 1:
                raise CompileError("unsupported max_norm: embedding_renorm_ of a tensor that is not "
                                   "the embedding weight")
            self.renorm[det.args[0]] = (_unflatten(idx), float(max_norm), float(norm_type))
            drop |= {n, det}
        for n in self.calls:
            if str(n.target) not in _BAG_OPS or len(n.args) < 3:
                continue
            idx, off = n.args[1], n.args[2]
            src = _unflatten(idx)
            if src is idx or str(getattr(off, "target", "")) != "aten.arange.start_step":
                continue
            shape = tuple(src.meta["val"].shape)
            start, end, step = (list(off.args) + [1])[:3]
            if len(shape) != 2 or (start, end, step) != (0, shape[0] * shape[1], shape[1]):
                continue
            psw = n.args[6] if len(n.args) > 6 else n.kwargs.get("per_sample_weights")
            self.fixed[n] = (src, None, None if psw is None else _unflatten(psw))
            drop |= {idx, off} | ({psw} if psw is not None and psw is not _unflatten(psw) else set())
        self.calls = [n for n in self.calls if n not in drop]
        self._fold_reduction()
        self._fold_post()

    def _fold_reduction(self) -> None:
        """``F.embedding(x, w).sum(1)`` / ``.mean(1)`` of a 2-D ``x`` is ``F.embedding_bag(x, w,
        mode="sum"/"mean")`` (fixed-length bags): replaced by a synthetic embedding_bag node."""
        names = [str(n.target) for n in self.calls]
        if names not in (["aten.embedding.default", "aten.sum.dim_IntList"],
                         ["aten.embedding.default", "aten.mean.dim"]) or len(self.outputs) != 1:
            return
        emb, red = self.calls
        x = emb.args[1]
        dims = list(red.args[1]) if len(red.args) > 1 else []
        keepdim = red.args[2] if len(red.args) > 2 else red.kwargs.get("keepdim", False)
        if (red.args[0] is not emb or self.outputs[0] is not red or dims not in ([1], [-2])
                or keepdim or red.kwargs.get("dtype") is not None
                or getattr(x, "op", None) != "placeholder" or len(x.meta["val"].shape) != 2):
            return
        mode = 0 if names[1] == "aten.sum.dim_IntList" else 1
        bag = _Synthetic(torch.ops.aten.embedding_bag.padding_idx,
                         (emb.args[0], x, None, False, mode, False, None, False, None), f"{red.name}_bag")
        out = _Synthetic(operator.getitem, (bag, 0), red.name)
        self.fixed[bag] = (x, None, None)
        self.reduction = names[1]
        self.calls, self.outputs = [bag], [out]

    def _fold_post(self) -> None:
        """Element-wise ops after a single embedding bag (``relu``, ``*``, ``/``, ``+``, ``-`` by
        a Python number, a number ``-`` the bag, ``-bag``), run on the core at the end of each
        bag: recorded in ``self.post``."""
        bags = [n for n in self.calls if str(n.target) in _BAG_OPS]
        if len(bags) != 1 or len(self.outputs) != 1:
            return
        chain, node, cast = [], self.outputs[0], None
        if str(getattr(node, "target", "")) in _CASTS:
            cast = _cast_target(node)
            if cast is None:
                return
            node = node.args[0]
        while str(getattr(node, "target", "")) in _POST_OPS:
            op = _POST_OPS[str(node.target)]
            rest = node.args[1:]
            if op not in ("relu", "neg"):
                if (len(rest) != 1 or isinstance(rest[0], bool) or not isinstance(rest[0], (int, float))
                        or node.kwargs.get("alpha", 1) != 1 or node.kwargs.get("rounding_mode")):
                    return
                chain.append((op, float(rest[0])))
            else:
                chain.append((op, 0.0))
            node = node.args[0]
        if (not chain and cast is None) or node.target is not operator.getitem \
                or node.args != (bags[0], 0):
            return
        self.post, self.cast = tuple(reversed(chain)), cast
        kept = {id(c) for c in self.calls
                if str(getattr(c, "target", "")) not in (*_POST_OPS, *_CASTS, _ASSERT_METADATA)}
        self.calls = [c for c in self.calls if id(c) in kept]
        self.outputs = [node]

    def renorm_of(self, weight_node, indices_node) -> tuple[float, float] | None:
        """``(max_norm, norm_type)`` when the function renormalises ``weight_node`` at
        ``indices_node`` (``max_norm=``), else None."""
        r = self.renorm.get(weight_node)
        if r is None:
            return None
        if _unflatten(r[0]) is not _unflatten(indices_node):
            raise CompileError("unsupported max_norm: the rows renormalised are not the rows looked up")
        return r[1], r[2]

    def source(self, node, what: str, *, allow_const: bool = True):
        """``("input", position)`` or ``("const", _Live)`` (a parameter, buffer or constant,
        read at each call).

        Raises
        ------
        CompileError
            ``node`` is computed in the function (naming ``what`` and the op).
        """
        spec = self.specs.get(getattr(node, "name", None))
        if spec is None or getattr(node, "op", None) != "placeholder":
            raise CompileError(f"unsupported {what}: it must be an input of the function"
                               f"{', a parameter or a constant' if allow_const else ''}, not "
                               f"computed in it ({getattr(node, 'target', node)})")
        if spec.kind == self._kind.USER_INPUT:
            return "input", self.user.index(node.name)
        if not allow_const:
            raise CompileError(f"unsupported {what}: it must be an input of the function")
        return "const", _live(self.module, self.ep, spec)

    def example(self, node, what: str) -> torch.Tensor:
        kind, v = self.source(node, what)
        return self.examples[v] if kind == "input" else v.current().detach()


def _describe(outputs: list) -> str:
    """The traced function's outputs for a message: ``2 outputs (getitem, relu)``."""
    names = ", ".join(str(getattr(o, "target", o)).removeprefix("aten.") for o in outputs)
    return f"{len(outputs)} output{'s' if len(outputs) != 1 else ''} ({names})"


def _unflatten(node):
    """The tensor ``node`` reshapes to 1-D (``reshape``/``view``/``flatten`` to ``[-1]``), else
    ``node``."""
    t = str(getattr(node, "target", ""))
    if t in ("aten.reshape.default", "aten.view.default") and list(node.args[1]) == [-1]:
        return node.args[0]
    if t == "aten.flatten.using_ints" and tuple(node.args[1:]) in ((), (0,), (0, -1)):
        return node.args[0]
    return node


def _bag_args(g: "_Graph", node) -> dict:
    """The arguments of an ``aten.embedding_bag`` node by schema name, with a 2-D input folded
    (``indices`` the 2-D input, ``offsets`` None, ``per_sample_weights`` the 2-D weights)."""
    schema = node.target._schema
    args = {a.name: a.default_value if a.has_default_value() else None for a in schema.arguments}
    args.update(zip((a.name for a in schema.arguments), node.args))
    args.update(node.kwargs)
    if node in g.fixed:
        args["indices"], args["offsets"], args["per_sample_weights"] = g.fixed[node]
    return args


#: (bag dtype, cast target) converted on the execute side, each one rounding as PyTorch's CPU
#: conversion (float to half / bfloat16: to nearest even; float64 to float32: to nearest even)
_FUSED_CASTS = (("float32", "float16"), ("float32", "bfloat16"), ("float32", "float64"),
                ("float64", "float32"))


def _from_export(g: "_Graph") -> _Found:
    bags = [n for n in g.calls if str(n.target) in _BAG_OPS]
    others = [n for n in g.calls if n not in bags]
    if others:
        raise CompileError(f"unsupported PyTorch operation {others[0].target} (the frontend compiles "
                           "one embedding_bag per function)")
    if len(bags) != 1:
        raise CompileError(f"expected one embedding_bag in the traced function, found {len(bags)}")
    node = bags[0]
    args = _bag_args(g, node)
    outputs = g.outputs
    if len(outputs) != 1 or outputs[0].target is not operator.getitem or outputs[0].args != (node, 0):
        raise CompileError(f"the traced function must return the embedding_bag's output only, not "
                           f"{_describe(g.outputs)}")

    def position(name: str, what: str) -> int:
        arg = args[name]
        if arg is None:
            return -1
        if getattr(arg, "op", None) != "placeholder" or arg.name not in g.user:
            raise CompileError(f"unsupported {what}: it must be an input of the function, not "
                               f"computed in it ({getattr(arg, 'target', arg)})")
        return g.user.index(arg.name)

    weight_node = args["weight"]
    weight: _Live | None = None
    roles: dict[str, int] = {}
    kind, v = g.source(weight_node, "embedding weight")
    if kind == "input":
        roles["weight"] = v
        weight_value = g.examples[v]
    else:
        weight = v
        weight_value = weight.current()
    dtype = _check_weight(weight_value)
    roles["indices"] = position("indices", "indices")
    roles["offsets"] = position("offsets", "offsets")
    roles["per_sample_weights"] = position("per_sample_weights", "per_sample_weights")
    mode = _MODES.get(int(args.get("mode", 0) or 0))
    if mode is None:
        raise CompileError(f"unsupported embedding_bag mode={args.get('mode')!r} (0 sum, 1 mean, 2 max are)")
    padding_idx = args.get("padding_idx")
    if str(node.target) != "aten.embedding_bag.padding_idx" and padding_idx == -1:
        padding_idx = None                      # the older overloads spell "none" as -1
    elif padding_idx is not None and padding_idx < 0:
        padding_idx += weight_value.shape[0]
    if (g.post or g.cast) and dtype not in ("float32", "float64"):
        what = g.post[0][0] if g.post else f"cast to {g.cast}"
        raise CompileError(f"unsupported {what} after a {dtype} embedding_bag (fused element-wise "
                           "ops and casts: float32 and float64)")
    cast = None if g.cast == dtype else g.cast
    if cast is not None and (dtype, cast) not in _FUSED_CASTS:
        raise CompileError(f"unsupported cast of a {dtype} embedding_bag to {cast} (fused: "
                           f"{', '.join(f'{a} to {b}' for a, b in _FUSED_CASTS)}; PyTorch converts "
                           "float64 to 16 bits through float32, two roundings)")
    spec = BagSpec(mode, dtype, roles["per_sample_weights"] >= 0, bool(args.get("include_last_offset")),
                   padding_idx, g.post, cast)
    return _Found(spec, weight, roles, weight_value.shape[0], "torch.export",
                  g.renorm_of(weight_node, args["indices"]), g.reduction)
