"""PyTorch frontend: ``nn.EmbeddingBag`` and functions calling ``F.embedding_bag`` -> SCF -> Kernel.

How the op is found:

* ``torch.export`` traces the module (a function is wrapped in a module) on the example inputs;
  the graph must hold exactly one ``aten.embedding_bag`` (whose first result is the output) and
  nothing else but ``getitem``. Its arguments give the mode, ``per_sample_weights``,
  ``include_last_offset`` and ``padding_idx``; the weight is a parameter, a constant or an input.
* For an ``nn.EmbeddingBag`` whose export graph is not that simple (e.g. a 2-D example input,
  which ``F.embedding_bag`` reshapes before the aten op), the frontend reads the module's
  attributes instead: its ``forward`` is exactly ``F.embedding_bag`` with them.

Supported: modes ``sum``, ``mean`` and ``max``; ``per_sample_weights`` (mode ``sum``, as in
PyTorch; float32 accumulates with ``math.fma`` like PyTorch's CPU kernel); ``include_last_offset``; ``padding_idx``; float32 and float64 weights; 1-D input with
offsets or 2-D input (fixed-length bags). Not supported (CompileError): ``max_norm``, other ops in
the traced function, other weight dtypes.

The generated SCF function is::

    @embedding_bag(%table: memref<?x?xT>, %indices: memref<?xi64>, %offsets: memref<?xi64>,
                   [%weights: memref<?xT>,] %out: memref<?x?xT>) -> memref<?x?xT>

with ``nbags + 1`` offsets; :meth:`TorchKernel.bind` converts PyTorch's inputs to these arguments.
"""

from __future__ import annotations

import operator
from dataclasses import dataclass
from typing import Callable

import numpy as np
import torch

from ...runtime.kernel import Kernel
from ..errors import CompileError

__all__ = ["BagSpec", "TorchKernel", "compile_torch", "scf_for_bag"]

_MODES = {0: "sum", 1: "mean", 2: "max"}
_DTYPES = {torch.float32: ("float32", "f32"), torch.float64: ("float64", "f64")}
_NEG_INF = {"f32": "0xFF800000", "f64": "0xFFF0000000000000"}


@dataclass(frozen=True)
class BagSpec:
    """What one embedding bag computes (everything but the data)."""
    mode: str = "sum"                   # sum | mean | max
    dtype: str = "float32"              # float32 | float64
    per_sample_weights: bool = False
    include_last_offset: bool = False
    padding_idx: int | None = None      # normalized to [0, num_embeddings)


def scf_for_bag(spec: BagSpec) -> str:
    """The MLIR SCF text of the embedding bag ``spec``."""
    t = "f32" if spec.dtype == "float32" else "f64"
    mt = f"memref<?x?x{t}>"
    pad = spec.padding_idx is not None
    counted = pad and spec.mode in ("mean", "max")      # count the non-padding entries per bag
    params = [f"%table: {mt}", "%indices: memref<?xi64>", "%offsets: memref<?xi64>"]
    if spec.per_sample_weights:
        params.append(f"%weights: memref<?x{t}>")
    params.append(f"%out: {mt}")
    L = [f"func.func @embedding_bag({', '.join(params)}) -> {mt} {{",
         "  %c0 = arith.constant 0 : index",
         "  %c1 = arith.constant 1 : index",
         f"  %nbags = memref.dim %out, %c0 : {mt}",
         f"  %dim = memref.dim %table, %c1 : {mt}"]
    if spec.mode == "max":
        L.append(f"  %zero = arith.constant 0.0 : {t}")
        L.append(f"  %ninf = arith.constant {_NEG_INF[t]} : {t}")
    if pad:
        L.append(f"  %pad = arith.constant {spec.padding_idx} : index")
    if counted:
        L.append("  %count = memref.alloc() : memref<1xindex>")
    L += ["  scf.for %b = %c0 to %nbags step %c1 {",
          "    %b1 = arith.addi %b, %c1 : index",
          "    %start_i64 = memref.load %offsets[%b] : memref<?xi64>",
          "    %start = arith.index_cast %start_i64 : i64 to index",
          "    %end_i64 = memref.load %offsets[%b1] : memref<?xi64>",
          "    %end = arith.index_cast %end_i64 : i64 to index"]
    if spec.mode == "max":
        L += ["    scf.for %d0 = %c0 to %dim step %c1 {",
              f"      memref.store %ninf, %out[%b, %d0] : {mt}",
              "    }"]
    if counted:
        L.append("    memref.store %c0, %count[%c0] : memref<1xindex>")
    L += ["    scf.for %j = %start to %end step %c1 {",
          "      %row_i64 = memref.load %indices[%j] : memref<?xi64>",
          "      %row = arith.index_cast %row_i64 : i64 to index"]
    if spec.per_sample_weights:
        L.append(f"      %w = memref.load %weights[%j] : memref<?x{t}>")
    if counted:
        L += ["      %counts = arith.cmpi ne, %row, %pad : index",
              "      scf.if %counts {",
              "        %n0 = memref.load %count[%c0] : memref<1xindex>",
              "        %n1 = arith.addi %n0, %c1 : index",
              "        memref.store %n1, %count[%c0] : memref<1xindex>",
              "      }"]
    L += ["      scf.for %d = %c0 to %dim step %c1 {",
          f"        %v = memref.load %table[%row, %d] : {mt}"]
    if spec.mode == "max":
        update = f"%new = arith.maximumf %acc, %v : {t}"
    elif spec.per_sample_weights and t == "f32":   # PyTorch's CPU float32 kernel uses an FMA
        update = f"%new = math.fma %w, %v, %acc : {t}"
    elif spec.per_sample_weights:                  # ... its float64 kernel multiplies, then adds
        L.append(f"        %wv = arith.mulf %w, %v : {t}")
        update = f"%new = arith.addf %acc, %wv : {t}"
    else:
        update = f"%new = arith.addf %acc, %v : {t}"
    inner = [f"%acc = memref.load %out[%b, %d] : {mt}", update,
             f"memref.store %new, %out[%b, %d] : {mt}"]
    if pad:
        L += ["        %keep = arith.cmpi ne, %row, %pad : index",
              "        scf.if %keep {"] + [f"          {s}" for s in inner] + ["        }"]
    else:
        L += [f"        {s}" for s in inner]
    L += ["      }", "    }"]
    if spec.mode == "mean":
        if counted:
            L.append("    %n = memref.load %count[%c0] : memref<1xindex>")
        else:
            L.append("    %n = arith.subi %end, %start : index")
        L += ["    %n1 = arith.maxsi %n, %c1 : index",
              "    %n_i64 = arith.index_cast %n1 : index to i64",
              f"    %nf = arith.sitofp %n_i64 : i64 to {t}",
              "    scf.for %d1 = %c0 to %dim step %c1 {",
              f"      %s = memref.load %out[%b, %d1] : {mt}",
              f"      %m = arith.divf %s, %nf : {t}",
              f"      memref.store %m, %out[%b, %d1] : {mt}",
              "    }"]
    elif spec.mode == "max":
        if counted:
            L += ["    %n = memref.load %count[%c0] : memref<1xindex>",
                  "    %empty = arith.cmpi eq, %n, %c0 : index"]
        else:
            L.append("    %empty = arith.cmpi eq, %start, %end : index")
        L += ["    scf.if %empty {",
              "      scf.for %d1 = %c0 to %dim step %c1 {",
              f"        memref.store %zero, %out[%b, %d1] : {mt}",
              "      }",
              "    }"]
    L += ["  }", f"  return %out : {mt}", "}"]
    return "\n".join(L) + "\n"


# ------------------------------------------------------------------------------------------------
# Finding the op
# ------------------------------------------------------------------------------------------------

@dataclass
class _Found:
    spec: BagSpec
    weight: torch.Tensor | None       # None when the weight is an input
    roles: dict[str, int]             # "indices"/"offsets"/"per_sample_weights"/"weight" -> input position
    num_embeddings: int
    how: str                          # "torch.export" or "attributes"


def _check_weight(weight: torch.Tensor) -> str:
    if weight.dtype not in _DTYPES:
        raise CompileError(f"unsupported embedding weight dtype {weight.dtype} (float32 and float64 are)")
    if weight.dim() != 2:
        raise CompileError(f"the embedding weight must be 2-D, not {weight.dim()}-D")
    return _DTYPES[weight.dtype][0]


def _from_attributes(bag: torch.nn.EmbeddingBag) -> _Found:
    if bag.max_norm is not None:
        raise CompileError("unsupported nn.EmbeddingBag(max_norm=...): it renormalizes the weight "
                           "in place")
    weight = bag.weight.detach()
    dtype = _check_weight(weight)
    spec = BagSpec(bag.mode, dtype, False, bool(bag.include_last_offset), bag.padding_idx)
    roles = {"indices": 0, "offsets": 1, "per_sample_weights": 2}
    return _Found(spec, weight, roles, weight.shape[0], "attributes")


_BAG_OPS = ("aten.embedding_bag.padding_idx", "aten.embedding_bag.default",
            "aten._embedding_bag.default", "aten._embedding_bag_forward_only.default")


class _Wrap(torch.nn.Module):
    def __init__(self, fn: Callable):
        super().__init__()
        self.fn = fn

    def forward(self, *args):
        return self.fn(*args)


def _from_export(module: torch.nn.Module, example_inputs: tuple) -> _Found:
    from torch.export.graph_signature import InputKind

    try:
        ep = torch.export.export(module, tuple(example_inputs))
    except Exception as e:  # noqa: BLE001 - torch.export raises many kinds
        raise CompileError(f"torch.export could not trace the module: {type(e).__name__}: "
                           f"{str(e).splitlines()[0] if str(e) else ''}") from None
    inputs = {spec.arg.name: spec for spec in ep.graph_signature.input_specs}
    user = [spec.arg.name for spec in ep.graph_signature.input_specs if spec.kind == InputKind.USER_INPUT]
    calls = [n for n in ep.graph.nodes if n.op == "call_function"]
    bags = [n for n in calls if str(n.target) in _BAG_OPS]
    others = [n for n in calls if n.target is not operator.getitem and n not in bags]
    if others:
        raise CompileError(f"unsupported PyTorch operation {others[0].target} (the frontend compiles "
                           "one embedding_bag per function)")
    if len(bags) != 1:
        raise CompileError(f"expected one embedding_bag in the traced function, found {len(bags)}")
    node = bags[0]
    schema = node.target._schema
    args = {a.name: a.default_value if a.has_default_value() else None for a in schema.arguments}
    args.update(zip((a.name for a in schema.arguments), node.args))
    args.update(node.kwargs)
    outputs = [n for n in ep.graph.nodes if n.op == "output"][0].args[0]
    if len(outputs) != 1 or outputs[0].target is not operator.getitem or outputs[0].args != (node, 0):
        raise CompileError("the traced function must return the embedding_bag's output only")

    def position(name: str, what: str) -> int:
        arg = args[name]
        if arg is None:
            return -1
        if getattr(arg, "op", None) != "placeholder" or arg.name not in user:
            raise CompileError(f"unsupported {what}: it must be an input of the function, not "
                               f"computed in it ({arg})")
        return user.index(arg.name)

    weight_node = args["weight"]
    spec_in = inputs.get(getattr(weight_node, "name", ""))
    weight: torch.Tensor | None = None
    roles: dict[str, int] = {}
    if spec_in is None:
        raise CompileError("the embedding weight must be a parameter, a constant or an input")
    if spec_in.kind == InputKind.USER_INPUT:
        roles["weight"] = user.index(weight_node.name)
        weight_value = example_inputs[roles["weight"]]
    elif spec_in.kind == InputKind.CONSTANT_TENSOR:
        weight = weight_value = ep.constants[spec_in.target]
    else:
        weight = weight_value = ep.state_dict[spec_in.target]
    dtype = _check_weight(weight_value)
    roles["indices"] = position("indices", "indices")
    roles["offsets"] = position("offsets", "offsets")
    roles["per_sample_weights"] = position("per_sample_weights", "per_sample_weights")
    mode = _MODES.get(int(args.get("mode", 0) or 0))
    if mode is None:
        raise CompileError(f"unsupported embedding_bag mode {args.get('mode')}")
    padding_idx = args.get("padding_idx")
    if str(node.target) != "aten.embedding_bag.padding_idx" and padding_idx == -1:
        padding_idx = None                      # the older overloads spell "none" as -1
    elif padding_idx is not None and padding_idx < 0:
        padding_idx += weight_value.shape[0]
    spec = BagSpec(mode, dtype, roles["per_sample_weights"] >= 0, bool(args.get("include_last_offset")),
                   padding_idx)
    if weight is not None:
        weight = weight.detach()
    return _Found(spec, weight, roles, weight_value.shape[0], "torch.export")


# ------------------------------------------------------------------------------------------------
# The compiled op
# ------------------------------------------------------------------------------------------------

class TorchKernel:
    """A compiled embedding bag: the Kernel plus PyTorch <-> kernel argument conversion.

    Attributes
    ----------
    kernel : Kernel
    spec : BagSpec
    traced_with : str
        ``"torch.export"`` or ``"attributes"`` (nn.EmbeddingBag read directly).
    scf : str
        The SCF text the kernel was compiled from.
    """

    def __init__(self, kernel: Kernel, found: _Found, scf: str):
        self.kernel = kernel
        self.spec = found.spec
        self.traced_with = found.how
        self.scf = scf
        self._weight = None if found.weight is None else found.weight.cpu().numpy()
        self._roles = found.roles
        self._num_embeddings = found.num_embeddings

    def _input(self, inputs: tuple, role: str):
        pos = self._roles.get(role, -1)
        return inputs[pos] if 0 <= pos < len(inputs) else None

    def bind(self, *inputs) -> list:
        """The SCF function's positional arguments (NumPy) for a call with PyTorch's ``inputs``.

        Raises
        ------
        ValueError
            For inputs PyTorch rejects: an index out of range, offsets[0] != 0, decreasing
            offsets, offsets past the end of the input, mismatched per_sample_weights.
        """
        spec = self.spec
        weight = self._weight
        if weight is None:
            weight = _numpy(self._input(inputs, "weight"), "weight")
        dtype = np.dtype(spec.dtype)
        if weight.dtype != dtype:
            raise ValueError(f"weight must have dtype {dtype}, not {weight.dtype}")
        indices = _numpy(self._input(inputs, "indices"), "input")
        offsets_in = self._input(inputs, "offsets")
        psw_in = self._input(inputs, "per_sample_weights")
        if indices.dtype.kind not in "iu":
            raise ValueError(f"input must be an integer tensor, not {indices.dtype}")
        psw = None if psw_in is None else _numpy(psw_in, "per_sample_weights")
        if psw is not None and psw.shape != indices.shape:
            raise ValueError(f"per_sample_weights must have the shape of input {indices.shape}, "
                             f"not {psw.shape}")
        if indices.ndim == 2:
            if offsets_in is not None:
                raise ValueError("offsets must be None when input is 2-D")
            n, length = indices.shape
            offsets = np.arange(0, n * length + 1, max(length, 1), dtype=np.int64)[:n + 1]
            if length == 0:
                offsets = np.zeros(n + 1, dtype=np.int64)
            indices = indices.reshape(-1)
            psw = None if psw is None else psw.reshape(-1)
        elif indices.ndim == 1:
            if offsets_in is None:
                raise ValueError("offsets must be given when input is 1-D")
            offsets = _numpy(offsets_in, "offsets").astype(np.int64).reshape(-1)
            if offsets.size and offsets[0] != 0:
                raise ValueError(f"offsets[0] must be 0, not {int(offsets[0])}")
            if offsets.size and offsets[-1] > indices.size:
                raise ValueError(f"offsets[-1] must be at most the input's length {indices.size}, "
                                 f"not {int(offsets[-1])}")
            if not spec.include_last_offset:
                offsets = np.concatenate([offsets, [indices.size]]).astype(np.int64)
            elif offsets.size == 0:
                raise ValueError("offsets must not be empty with include_last_offset=True")
        else:
            raise ValueError(f"input must be 1-D or 2-D, not {indices.ndim}-D")
        bad = np.flatnonzero(np.diff(offsets) < 0)
        if bad.size:
            k = int(bad[0])
            raise ValueError(f"offsets must be non-decreasing, but offsets[{k + 1}] = "
                             f"{int(offsets[k + 1])} < offsets[{k}] = {int(offsets[k])}")
        indices = indices.astype(np.int64)
        out_of_range = np.flatnonzero((indices < 0) | (indices >= weight.shape[0]))
        if out_of_range.size:
            k = int(out_of_range[0])
            raise ValueError(f"input[{k}] = {int(indices[k])} is out of range for an embedding "
                             f"table of {weight.shape[0]} rows")
        if psw is not None:
            if spec.mode != "sum":
                raise ValueError("per_sample_weights is only supported with mode='sum'")
            psw = np.ascontiguousarray(psw, dtype=dtype)
        nbags = offsets.size - 1
        out = np.zeros((nbags, weight.shape[1]), dtype=dtype)
        args = [np.ascontiguousarray(weight), np.ascontiguousarray(indices), offsets]
        if spec.per_sample_weights:
            if psw is None:
                raise ValueError("per_sample_weights must be given (the op was compiled with them)")
            args.append(psw)
        elif psw is not None:
            raise ValueError("per_sample_weights given, but the op was compiled without them")
        args.append(out)
        return args

    def unbind(self, results) -> torch.Tensor:
        """The PyTorch result (the output of the bag) from the kernel's results."""
        return torch.from_numpy(np.asarray(results[0]))


def _numpy(value, name: str) -> np.ndarray:
    if isinstance(value, torch.Tensor):
        return value.detach().cpu().numpy()
    if isinstance(value, np.ndarray):
        return value
    raise ValueError(f"{name} must be a tensor, not {type(value).__name__}")


def compile_torch(module_or_fn: Callable, example_inputs: tuple, *, limits=None) -> TorchKernel:
    """Compile an ``nn.EmbeddingBag`` or a function calling ``F.embedding_bag``.

    Raises
    ------
    CompileError
        Naming what is not supported.
    """
    from .. import compile_mlir

    module = module_or_fn if isinstance(module_or_fn, torch.nn.Module) else _Wrap(module_or_fn)
    try:
        found = _from_export(module, tuple(example_inputs))
    except CompileError:
        if not isinstance(module_or_fn, torch.nn.EmbeddingBag):
            raise
        found = _from_attributes(module_or_fn)
    if isinstance(module_or_fn, torch.nn.EmbeddingBag) and module_or_fn.max_norm is not None:
        raise CompileError("unsupported nn.EmbeddingBag(max_norm=...): it renormalizes the weight "
                           "in place")
    if found.spec.per_sample_weights and found.spec.mode != "sum":
        raise CompileError("per_sample_weights is only supported with mode='sum' (as in PyTorch)")
    text = scf_for_bag(found.spec)
    kernel = compile_mlir(text, filename="<torch>", limits=limits)
    return TorchKernel(kernel, found, text)
