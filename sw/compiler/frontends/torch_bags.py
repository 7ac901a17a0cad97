"""PyTorch frontend, several embedding bags in one module: DLRM's sparse part, the shape of
torchrec's ``EmbeddingBagCollection``.

The bags of a module are grouped by what one program can share — mode, dtype,
``per_sample_weights``, embedding dim and, for bfloat16, whether ``padding_idx`` is set (PyTorch
rounds those bags differently) — and each group is one
table-batched program (``scf_for_bag(..., multi_table=True)``: the group's tables concatenated,
a row base per bag, as FBGEMM's table-batched embedding; with ``per_sample_weights``, which
would make the row base a fifth memory region, the host adds it to the indices instead). ``include_last_offset``, ``max_norm``,
2-D inputs and the padding index itself may differ inside a group: they are bound on the host
(offsets made ``nbags + 1`` long, rows renormalised, and the lookups of ``padding_idx`` dropped —
they add nothing in any mode, and PyTorch counts only the others for ``mean`` and treats a bag of
padding only as empty).

The module may return the bags' outputs in any pytree (a tensor, tuple, list or dict) and
``torch.cat(..., dim=1)`` of them; one group gives a :class:`PlanKernel` (``kind ==
"multi_bag"``), several a :class:`BagGroups`, which :class:`sw.api.CompiledOp` runs program by
program.
"""

from __future__ import annotations

import operator
from dataclasses import dataclass, replace

import numpy as np
import torch

from ..errors import CompileError
from .torch_bind import PlanKernel, TorchKernel, _torch, _value
from .torch_graph import _MODES, _Graph, _bag_args, _check_weight
from .torch_scf import BagSpec, scf_for_bag

__all__ = ["BagGroups", "plan_bags"]


@dataclass
class _Bag:
    spec: BagSpec
    weight: tuple
    rows: int
    dim: int
    indices: tuple
    offsets: tuple | None
    per_sample_weights: tuple | None
    renorm: tuple | None
    node: object


def _find(g: _Graph, node) -> _Bag:
    args = _bag_args(g, node)
    mode = _MODES.get(int(args.get("mode", 0) or 0))
    w = g.example(args["weight"], "embedding weight")
    dtype = _check_weight(w)
    pad = args.get("padding_idx")
    if str(node.target) != "aten.embedding_bag.padding_idx" and pad == -1:
        pad = None
    elif pad is not None and pad < 0:
        pad += w.shape[0]
    psw = args.get("per_sample_weights")
    if psw is not None and mode != "sum":
        raise CompileError(f"per_sample_weights is only supported with mode='sum' (as in PyTorch), "
                           f"not mode={mode!r}")
    return _Bag(BagSpec(mode, dtype, psw is not None, bool(args.get("include_last_offset")), pad),
                g.source(args["weight"], "embedding weight"), w.shape[0], w.shape[1],
                g.source(args["indices"], "indices", allow_const=False),
                None if args["offsets"] is None else g.source(args["offsets"], "offsets", allow_const=False),
                None if psw is None else g.source(psw, "per_sample_weights", allow_const=False),
                g.renorm_of(args["weight"], args["indices"]), node)


def _padded(spec: BagSpec) -> bool:
    """Whether a ``padding_idx`` changes the bag's arithmetic: PyTorch then runs its kernel
    without FBGEMM, whose bfloat16 rounds ties to even and whose float32 ``per_sample_weights``
    multiply, then add (``scf_for_bag``'s ``padded``)."""
    return spec.padding_idx is not None and (
        spec.dtype == "bfloat16" or (spec.dtype == "float32" and spec.per_sample_weights))


def _key(b: _Bag) -> tuple:
    """Bags with the same key share a program (padding matters only where :func:`_padded`)."""
    return (b.spec.mode, b.spec.dtype, b.spec.per_sample_weights, b.dim, _padded(b.spec))


def _group(bags: list[_Bag]) -> PlanKernel:
    """One table-batched program for ``bags`` (same :func:`_key`); ``unbind`` gives the list of
    the bags' outputs."""
    first = bags[0]
    spec = replace(first.spec, include_last_offset=False, padding_idx=None)
    padded = _padded(first.spec)
    # With per_sample_weights a row-base argument would be a fifth region (the RTL's unit has 4):
    # then the host adds each table's first row to its indices instead.
    rebase = spec.per_sample_weights
    shells = []
    for b in bags:                            # the single-bag argument checks, per bag
        tk = TorchKernel.__new__(TorchKernel)
        tk.spec, tk._weight, tk._num_embeddings, tk.renorm = b.spec, None, b.rows, b.renorm
        tk._reduction = None
        tk._roles = {}
        shells.append(tk)
    state: dict = {}

    def bind(inputs):
        tables, idxs, offs, psws, bases, nb = [], [], [], [], [], []
        row0 = used = 0
        for tk, b in zip(shells, bags):
            one = [_value(b.weight, inputs, "weight"), _value(b.indices, inputs, "input")]
            tk._roles = {"weight": 0, "indices": 1}
            if b.offsets is not None:
                tk._roles["offsets"] = len(one)
                one.append(_value(b.offsets, inputs, "offsets"))
            if b.per_sample_weights is not None:
                tk._roles["per_sample_weights"] = len(one)
                one.append(_value(b.per_sample_weights, inputs, "per_sample_weights"))
            a = tk.bind(*one)
            table, indices, offsets = a[0], a[1], a[2]
            psw = a[3] if spec.per_sample_weights else None
            if b.spec.padding_idx is not None:      # padding lookups add nothing: drop them
                keep = indices != b.spec.padding_idx
                offsets = np.concatenate([[0], np.cumsum(keep)])[offsets].astype(np.int64)
                indices = indices[keep]
                psw = None if psw is None else psw[keep]
            tables.append(table), idxs.append(indices + row0 if rebase else indices)
            offs.append(offsets[:-1] + used)
            if psw is not None:
                psws.append(psw)
            bases.append(np.full(offsets.size - 1, row0, np.int64))
            nb.append(offsets.size - 1)
            row0 += table.shape[0]
            used += indices.size
        offsets = np.concatenate(offs + [np.array([used], np.int64)]).astype(np.int64)
        args = [np.ascontiguousarray(np.concatenate(tables)), np.concatenate(idxs).astype(np.int64),
                offsets] + ([] if rebase else [np.concatenate(bases)])
        if spec.per_sample_weights:
            args.append(np.concatenate(psws))
        args.append(np.zeros((offsets.size - 1, first.dim), tables[0].dtype))
        state["nb"] = nb
        return args

    def unbind(results):
        out = _torch(np.asarray(results[0]), getattr(torch, spec.dtype))
        return list(torch.split(out, state["nb"]))

    return PlanKernel("multi_bag", {"bag": spec, "tables": len(bags)},
                      scf_for_bag(spec, multi_table=not rebase, padded=padded), bind, unbind)


class BagGroups:
    """Embedding bags of one module compiled into several programs (one per group of bags that
    share mode, dtype, ``per_sample_weights``, embedding dim and padding).

    Attributes: ``parts`` (a :class:`PlanKernel` per program, each with its ``kernel``),
    ``kind`` (``"bag_groups"``), ``spec``, ``traced_with``. ``bind(*inputs)`` gives a list of
    argument lists (one per part), ``unbind(results)`` takes the list of the parts' results and
    returns the module's output (its pytree: tensor, tuple, list or dict).
    """

    kind = "bag_groups"
    kernel = None

    def __init__(self, parts: list[PlanKernel], spec: dict, assemble):
        self.parts, self.spec, self._assemble = parts, spec, assemble
        self.traced_with = "torch.export"
        self.scf = "\n".join(p.scf for p in parts)

    def bind(self, *inputs) -> list[list]:
        return [p.bind(*inputs) for p in self.parts]

    def unbind(self, results: list):
        return self._assemble([p.unbind(r) for p, r in zip(self.parts, results)])


def plan_bags(g: _Graph, nodes: list) -> "PlanKernel | BagGroups":
    """The plan of a module made of embedding bags (and ``torch.cat`` of their outputs)."""
    from torch.utils._pytree import tree_unflatten

    bags = [_find(g, n) for n in nodes]
    groups: dict[tuple, list[int]] = {}
    for k, b in enumerate(bags):
        groups.setdefault(_key(b), []).append(k)
    which = {b.node: k for k, b in enumerate(bags)}

    def bag_of(out) -> int:
        if (getattr(out, "target", None) is operator.getitem and out.args[1] == 0
                and out.args[0] in which):
            return which[out.args[0]]
        raise CompileError(f"unsupported output {out}: the module must return the bags' outputs "
                           "(a tensor, tuple, list or dict of them) or torch.cat of them along dim 1")

    flat = []                               # per output: a bag, or ("cat", [bags])
    for out in g.outputs:
        if str(getattr(out, "target", "")) == "aten.cat.default":
            dim = out.args[1] if len(out.args) > 1 else out.kwargs.get("dim", 0)
            if dim not in (1, -1):
                raise CompileError(f"unsupported torch.cat of embedding bags along dim={dim} (dim 1 is)")
            flat.append(("cat", [bag_of(p) for p in out.args[0]]))
        else:
            flat.append(bag_of(out))
    out_spec = g.ep.call_spec.out_spec

    order = [k for members in groups.values() for k in members]
    parts = [_group([bags[k] for k in members]) for members in groups.values()]

    def assemble(per_part: list[list]) -> object:
        per_bag = dict(zip(order, (t for part in per_part for t in part)))
        values = [torch.cat([per_bag[k] for k in f[1]], dim=1) if isinstance(f, tuple) else per_bag[f]
                  for f in flat]
        return tree_unflatten(values, out_spec)

    spec = {"tables": len(bags), "groups": [[bags[k].spec for k in m] for m in groups.values()]}
    if len(parts) == 1:
        part = parts[0]
        one = part._unbind
        part._unbind = lambda results: assemble([one(results)])
        return part
    return BagGroups(parts, spec, assemble)
