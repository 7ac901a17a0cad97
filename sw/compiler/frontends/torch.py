"""PyTorch frontend: embedding ops traced with ``torch.export`` -> SCF -> Kernel.

Graphs recognised (``compile_torch``; anything else is a CompileError naming the first
unsupported aten op):

=============================================  =============================  ==================
PyTorch                                         SCF (generator)                agreement
=============================================  =============================  ==================
one ``aten.embedding_bag`` (below)              ``scf_for_bag``                bit-exact
several embedding bags, returned as a tuple     ``scf_for_bag(multi_table)``:  bit-exact
or ``torch.cat(..., dim=1)`` (DLRM)             tables concatenated, one
                                                program, a row base per bag
``aten.embedding`` (``nn.Embedding``,           ``scf_for_gather``             bit-exact (a copy)
``F.embedding``), any index shape
``x.index_select(0, src)`` / ``x[src]`` then    ``scf_for_segment``: edges in  bit-exact (PyTorch's
``index_add(_)(0, dst, .)`` or                  order, sum/mean/amax/amin,     CPU kernels reduce
``scatter_reduce(0, dst[:, None].expand(..),``  ``include_self`` both ways     in edge order; f32,
``., reduce, include_self)``                                                   f64, i32, i64)
sparse CSR input ``@`` dense (``matmul``,       ``scf_for_csr_mm``: CSR order, bit-exact (PyTorch's
``torch.sparse.mm``)                            ``math.fma``                   CPU kernel uses an
                                                                               FMA per term)
=============================================  =============================  ==================

Bit-exactness is checked in ``tests/compiler/test_torch_frontend.py`` (float32, float64 and,
where PyTorch allows them, int32/int64 data); the float32 FMA is emulated in float64 on the
execute side, which differs from a true FMA only in rare double-rounding ties
(``docs/compiler.md``). The rest of this docstring is about the single-bag path.

How the op is found:

* ``torch.export`` traces the module (a function is wrapped in a module) on the example inputs;
  the graph must hold exactly one ``aten.embedding_bag`` (whose first result is the output) and
  nothing else but ``getitem``. Its arguments give the mode, ``per_sample_weights``,
  ``include_last_offset`` and ``padding_idx``; the weight is a parameter, a constant or an input.
* What ``F.embedding_bag``/``F.embedding`` put around the aten op is folded: a 2-D input
  (``reshape(input, [-1])`` and offsets ``arange(0, numel, bag length)``; the call binds the
  actual shape, so any batch size and bag length run) and ``max_norm`` (``detach`` +
  ``embedding_renorm_`` of the weight: at each call the looked-up rows are renormalised in place
  on the host with ``torch.embedding_renorm_`` itself, then the lookup runs on the access unit).
* For an ``nn.EmbeddingBag`` whose export graph is still not that simple, the frontend reads the
  module's attributes instead: its ``forward`` is exactly ``F.embedding_bag`` with them.

Supported: modes ``sum``, ``mean`` and ``max``; ``per_sample_weights`` (mode ``sum``, as in
PyTorch; float32 accumulates with ``math.fma`` like PyTorch's CPU kernel); ``include_last_offset``; ``padding_idx``; ``max_norm``/``norm_type``; float32 and float64
weights; 1-D input with offsets or 2-D input (fixed-length bags). Not supported (CompileError):
other ops in the traced function, other weight dtypes.

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

__all__ = ["BagSpec", "TorchKernel", "PlanKernel", "compile_torch", "scf_for_bag", "scf_for_gather",
           "scf_for_segment", "scf_for_csr_mm"]

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


def scf_for_bag(spec: BagSpec, *, multi_table: bool = False) -> str:
    """The MLIR SCF text of the embedding bag ``spec``.

    With ``multi_table`` (several bags of one module in one program, as FBGEMM's table-batched
    embedding): ``%table`` is the tables' rows concatenated, a ``%bag_base: memref<?xi64>``
    argument (after ``%offsets``) gives each bag the first row of its table, and the row of a
    lookup is ``indices[j] + bag_base[b]`` (an ALU stream); ``padding_idx`` must be None.
    """
    if multi_table and spec.padding_idx is not None:
        raise ValueError("multi_table bags cannot have a padding_idx")
    t = "f32" if spec.dtype == "float32" else "f64"
    mt = f"memref<?x?x{t}>"
    pad = spec.padding_idx is not None
    counted = pad and spec.mode in ("mean", "max")      # count the non-padding entries per bag
    params = [f"%table: {mt}", "%indices: memref<?xi64>", "%offsets: memref<?xi64>"]
    if multi_table:
        params.append("%bag_base: memref<?xi64>")
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
    if multi_table:
        L += ["    %base_i64 = memref.load %bag_base[%b] : memref<?xi64>",
              "    %base = arith.index_cast %base_i64 : i64 to index"]
    if spec.mode == "max":
        L += ["    scf.for %d0 = %c0 to %dim step %c1 {",
              f"      memref.store %ninf, %out[%b, %d0] : {mt}",
              "    }"]
    if counted:
        L.append("    memref.store %c0, %count[%c0] : memref<1xindex>")
    L += ["    scf.for %j = %start to %end step %c1 {",
          "      %row_i64 = memref.load %indices[%j] : memref<?xi64>"]
    if multi_table:
        L += ["      %idx = arith.index_cast %row_i64 : i64 to index",
              "      %row = arith.addi %idx, %base : index"]
    else:
        L.append("      %row = arith.index_cast %row_i64 : i64 to index")
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


def _check_weight(weight: torch.Tensor) -> str:
    if weight.dtype not in _DTYPES:
        raise CompileError(f"unsupported embedding weight dtype {weight.dtype} (float32 and float64 are)")
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


_BAG_OPS = ("aten.embedding_bag.padding_idx", "aten.embedding_bag.default",
            "aten._embedding_bag.default", "aten._embedding_bag_forward_only.default")


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
        raise CompileError("the traced function must return the embedding_bag's output only")

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
    spec = BagSpec(mode, dtype, roles["per_sample_weights"] >= 0, bool(args.get("include_last_offset")),
                   padding_idx)
    return _Found(spec, weight, roles, weight_value.shape[0], "torch.export",
                  g.renorm_of(weight_node, args["indices"]))


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
        self._weight = found.weight             # a _Live, read at each call, or None (an input)
        self._roles = found.roles
        self._num_embeddings = found.num_embeddings
        self.renorm = found.renorm               # (max_norm, norm_type) or None

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
        weight_tensor = (self._input(inputs, "weight") if self._weight is None
                         else self._weight.current())
        weight = _numpy(weight_tensor, "weight")
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
        if self.renorm is not None:
            _renorm(weight_tensor, indices, *self.renorm)
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


def _renorm(weight, indices: np.ndarray, max_norm: float, norm_type: float) -> None:
    """``max_norm``: renormalise the rows ``indices`` of ``weight`` in place, before the lookup,
    as ``F.embedding``/``F.embedding_bag`` do — by calling ``torch.embedding_renorm_`` itself on
    the host (each distinct row whose ``norm_type``-norm exceeds ``max_norm`` is scaled by
    ``max_norm / (norm + 1e-7)``); the lookup then runs on the access unit."""
    w = weight if isinstance(weight, torch.Tensor) else torch.from_numpy(weight)
    with torch.no_grad():
        torch.embedding_renorm_(w.detach(), torch.from_numpy(np.ascontiguousarray(indices, np.int64)),
                                max_norm, norm_type)


def _numpy(value, name: str) -> np.ndarray:
    if isinstance(value, torch.Tensor):
        return value.detach().cpu().numpy()
    if isinstance(value, np.ndarray):
        return value
    raise ValueError(f"{name} must be a tensor, not {type(value).__name__}")


def _compile(text: str, limits, opt_level: int) -> Kernel:
    import inspect

    from .. import compile_mlir
    if "opt_level" in inspect.signature(compile_mlir).parameters:
        return compile_mlir(text, filename="<torch>", limits=limits, opt_level=opt_level)
    if opt_level != 0:
        raise CompileError(f"opt_level {opt_level} is not available yet (the compiler has -O0 only)")
    return compile_mlir(text, filename="<torch>", limits=limits)


def compile_torch(module_or_fn: Callable, example_inputs: tuple, *, limits=None,
                  opt_level: int = 0) -> "TorchKernel | PlanKernel":
    """Compile a PyTorch module or function traced with ``torch.export`` on ``example_inputs``.

    Recognised graphs (see the module docstring): one ``embedding_bag`` (``nn.EmbeddingBag``,
    ``F.embedding_bag``) -> :class:`TorchKernel`; several embedding bags returned as a tuple or
    ``torch.cat(..., dim=1)`` (one program, tables batched), ``nn.Embedding``/``F.embedding``,
    ``index_select``/``x[src]`` followed by ``index_add(_)``/``scatter_reduce``, and sparse CSR
    (an input) ``@`` dense -> :class:`PlanKernel`. ``opt_level`` (0..3) goes to
    :func:`sw.compiler.compile_mlir`; ``limits`` is the TMU configuration.

    Raises
    ------
    CompileError
        Naming the unsupported operation, argument or combination.
    """
    module = module_or_fn if isinstance(module_or_fn, torch.nn.Module) else _Wrap(module_or_fn)
    inputs = tuple(example_inputs)
    try:
        ep = _export(module, inputs)
        plan = _plan(_Graph(ep, inputs, module))
        if plan is not None:
            plan.kernel = _compile(plan.scf, limits, opt_level)
            return plan
        found = _from_export(_Graph(ep, inputs, module))
    except CompileError:
        if not isinstance(module_or_fn, torch.nn.EmbeddingBag):
            raise
        found = _from_attributes(module_or_fn)
    if found.spec.per_sample_weights and found.spec.mode != "sum":
        raise CompileError(f"per_sample_weights is only supported with mode='sum' (as in PyTorch), "
                           f"not mode={found.spec.mode!r}")
    text = scf_for_bag(found.spec)
    return TorchKernel(_compile(text, limits, opt_level), found, text)


# ------------------------------------------------------------------------------------------------
# Beyond one bag: gathers, segment reductions, sparse CSR x dense, several bags in one program
# ------------------------------------------------------------------------------------------------

_ELEM = {torch.float32: "f32", torch.float64: "f64", torch.int32: "i32", torch.int64: "i64"}
_FLOAT = ("f32", "f64")
_LOWEST = {"f32": "0xFF800000", "f64": "0xFFF0000000000000", "i32": "-2147483648",
           "i64": "-9223372036854775808"}
_HIGHEST = {"f32": "0x7F800000", "f64": "0x7FF0000000000000", "i32": "2147483647",
            "i64": "9223372036854775807"}


def _elem(t: torch.Tensor, what: str) -> str:
    if t.dtype not in _ELEM:
        raise CompileError(f"unsupported {what} dtype {t.dtype} (float32, float64, int32 and int64 are)")
    return _ELEM[t.dtype]


def scf_for_gather(t: str) -> str:
    """``nn.Embedding`` / ``F.embedding`` / ``aten.embedding``: ``out[i, :] = table[indices[i], :]``
    (element type ``t`` in f32/f64/i32/i64; a copy, so bit-exact)."""
    mt = f"memref<?x?x{t}>"
    return f"""func.func @embedding(%table: {mt}, %indices: memref<?xi64>, %out: {mt}) -> {mt} {{
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %n = memref.dim %indices, %c0 : memref<?xi64>
  %dim = memref.dim %table, %c1 : {mt}
  scf.for %i = %c0 to %n step %c1 {{
    %row_i64 = memref.load %indices[%i] : memref<?xi64>
    %row = arith.index_cast %row_i64 : i64 to index
    scf.for %d = %c0 to %dim step %c1 {{
      %v = memref.load %table[%row, %d] : {mt}
      memref.store %v, %out[%i, %d] : {mt}
    }}
  }}
  return %out : {mt}
}}
"""


def scf_for_segment(t: str, reduce: str, include_self: bool) -> str:
    """Gather-then-scatter-reduce (GNN message passing, ``x.index_select(0, src)`` followed by
    ``out.index_add_(0, dst, ...)`` or ``out.scatter_reduce(0, dst[:, None].expand(...), ...,
    reduce, include_self)``): for each edge ``e`` in order, ``out[dst[e], :] (op)= x[src[e], :]``.

    ``reduce`` in ``sum``, ``mean``, ``amax``, ``amin``; ``out`` holds ``self`` on entry. ``mean``
    divides by the number of contributions (+1 with ``include_self``; a row without any keeps
    ``self``), floor division for integers, as ``torch.scatter_reduce``. ``amax``/``amin`` without
    ``include_self`` start a row from its first contribution.
    """
    mt = f"memref<?x?x{t}>"
    fl = t in _FLOAT
    counted = reduce == "mean" or (reduce in ("amax", "amin") and not include_self)
    op = {("sum", True): "arith.addf", ("sum", False): "arith.addi",
          ("mean", True): "arith.addf", ("mean", False): "arith.addi",
          ("amax", True): "arith.maximumf", ("amax", False): "arith.maxsi",
          ("amin", True): "arith.minimumf", ("amin", False): "arith.minsi"}[reduce, fl]
    L = [f"func.func @segment_{reduce}(%x: {mt}, %src: memref<?xi64>, %dst: memref<?xi64>, "
         f"%out: {mt}) -> {mt} {{",
         "  %c0 = arith.constant 0 : index",
         "  %c1 = arith.constant 1 : index",
         "  %ne = memref.dim %src, %c0 : memref<?xi64>",
         f"  %dim = memref.dim %x, %c1 : {mt}",
         f"  %nseg = memref.dim %out, %c0 : {mt}"]
    if counted:
        L.append("  %count = memref.alloc(%nseg) : memref<?xindex>")
    if reduce in ("amax", "amin") and not include_self:
        L.append(f"  %init = arith.constant {(_LOWEST if reduce == 'amax' else _HIGHEST)[t]} : {t}")
    L += ["  scf.for %e = %c0 to %ne step %c1 {",
          "    %s_i64 = memref.load %src[%e] : memref<?xi64>",
          "    %s = arith.index_cast %s_i64 : i64 to index",
          "    %t_i64 = memref.load %dst[%e] : memref<?xi64>",
          "    %t = arith.index_cast %t_i64 : i64 to index"]
    if counted:
        L += ["    %n0 = memref.load %count[%t] : memref<?xindex>"]
        if reduce in ("amax", "amin"):
            L += ["    %first = arith.cmpi eq, %n0, %c0 : index",
                  "    scf.if %first {",
                  "      scf.for %d0 = %c0 to %dim step %c1 {",
                  f"        memref.store %init, %out[%t, %d0] : {mt}",
                  "      }",
                  "    }"]
        L += ["    %n1 = arith.addi %n0, %c1 : index",
              "    memref.store %n1, %count[%t] : memref<?xindex>"]
    L += ["    scf.for %d = %c0 to %dim step %c1 {",
          f"      %v = memref.load %x[%s, %d] : {mt}",
          f"      %acc = memref.load %out[%t, %d] : {mt}",
          f"      %new = {op} %acc, %v : {t}",
          f"      memref.store %new, %out[%t, %d] : {mt}",
          "    }",
          "  }"]
    if reduce == "mean":
        L += ["  scf.for %r = %c0 to %nseg step %c1 {",
              "    %k = memref.load %count[%r] : memref<?xindex>"]
        L.append("    %k1 = arith.addi %k, %c1 : index" if include_self else
                 "    %k1 = arith.maxsi %k, %c1 : index")
        L.append("    %k_i64 = arith.index_cast %k1 : index to i64")
        if fl:
            L.append(f"    %kv = arith.sitofp %k_i64 : i64 to {t}")
        elif t == "i32":
            L.append("    %kv = arith.trunci %k_i64 : i64 to i32")
        kv = "%k_i64" if t == "i64" else "%kv"
        div = "arith.divf" if fl else "arith.floordivsi"
        L += ["    scf.for %d1 = %c0 to %dim step %c1 {",
              f"      %a = memref.load %out[%r, %d1] : {mt}",
              f"      %m = {div} %a, {kv} : {t}",
              f"      memref.store %m, %out[%r, %d1] : {mt}",
              "    }",
              "  }"]
    L += [f"  return %out : {mt}", "}"]
    return "\n".join(L) + "\n"


def scf_for_csr_mm(t: str) -> str:
    """Sparse CSR ``a`` (crow_indices, col_indices, values) times dense ``x``:
    ``out[i, :] = sum_j values[j] * x[col[j], :]`` over ``j`` in ``crow[i]:crow[i+1]``, in CSR order,
    one fused multiply-add per term — what PyTorch's CPU kernel for ``torch.sparse.mm`` / ``a @ x``
    with ``a.layout == torch.sparse_csr`` computes (bit-exact, checked for float32 and float64)."""
    mt = f"memref<?x?x{t}>"
    return f"""func.func @csr_mm(%crow: memref<?xi64>, %col: memref<?xi64>, %val: memref<?x{t}>, %x: {mt}, %out: {mt}) -> {mt} {{
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %n = memref.dim %out, %c0 : {mt}
  %dim = memref.dim %x, %c1 : {mt}
  scf.for %i = %c0 to %n step %c1 {{
    %i1 = arith.addi %i, %c1 : index
    %start_i64 = memref.load %crow[%i] : memref<?xi64>
    %start = arith.index_cast %start_i64 : i64 to index
    %end_i64 = memref.load %crow[%i1] : memref<?xi64>
    %end = arith.index_cast %end_i64 : i64 to index
    scf.for %j = %start to %end step %c1 {{
      %c_i64 = memref.load %col[%j] : memref<?xi64>
      %c = arith.index_cast %c_i64 : i64 to index
      %a = memref.load %val[%j] : memref<?x{t}>
      scf.for %d = %c0 to %dim step %c1 {{
        %v = memref.load %x[%c, %d] : {mt}
        %acc = memref.load %out[%i, %d] : {mt}
        %s = math.fma %a, %v, %acc : {t}
        memref.store %s, %out[%i, %d] : {mt}
      }}
    }}
  }}
  return %out : {mt}
}}
"""


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


def _unflatten(node):
    """The tensor ``node`` reshapes to 1-D (``reshape``/``view``/``flatten`` to ``[-1]``), else
    ``node``."""
    t = str(getattr(node, "target", ""))
    if t in ("aten.reshape.default", "aten.view.default") and list(node.args[1]) == [-1]:
        return node.args[0]
    if t == "aten.flatten.using_ints" and tuple(node.args[1:]) in ((), (0,), (0, -1)):
        return node.args[0]
    return node


def _tensor(src, inputs: tuple):
    """The tensor (or array) ``src`` refers to in a call with ``inputs``."""
    kind, v = src
    return inputs[v] if kind == "input" else v.current()


def _value(src, inputs: tuple, name: str) -> np.ndarray:
    return _numpy(_tensor(src, inputs), name)


def _index_array(src, inputs, name: str, bound: int) -> np.ndarray:
    a = _value(src, inputs, name)
    if a.dtype.kind not in "iu":
        raise ValueError(f"{name} must be an integer tensor, not {a.dtype}")
    a = a.astype(np.int64).reshape(-1)
    bad = np.flatnonzero((a < 0) | (a >= bound))
    if bad.size:
        k = int(bad[0])
        raise ValueError(f"{name}[{k}] = {int(a[k])} is out of range for {bound} rows")
    return a


class PlanKernel:
    """A compiled PyTorch graph other than a single embedding bag (see :func:`compile_torch`).

    Attributes: ``kernel`` (Kernel), ``kind`` (``"embedding"``, ``"segment"``, ``"csr_mm"``,
    ``"multi_bag"``), ``spec`` (a dict of what was recognised), ``traced_with``
    (``"torch.export"``), ``scf`` (the SCF text compiled). ``bind(*inputs)`` gives the SCF
    function's NumPy arguments, ``unbind(results)`` the module's output (a tensor or a tuple).
    """

    def __init__(self, kind: str, spec: dict, scf: str, bind: Callable, unbind: Callable):
        self.kind, self.spec, self.scf = kind, spec, scf
        self.traced_with = "torch.export"
        self._bind, self._unbind = bind, unbind
        self.kernel: Kernel | None = None

    def bind(self, *inputs) -> list:
        """NumPy arguments of the SCF function. Raises ValueError for inputs PyTorch rejects
        (an index out of range, a dtype that differs from the traced one), naming them."""
        return self._bind(inputs)

    def unbind(self, results):
        return self._unbind(results)


def _plan_embedding(g: _Graph, node) -> PlanKernel:
    weight_node, idx_node = node.args[0], node.args[1]
    w_src = g.source(weight_node, "embedding weight")
    weight = g.example(weight_node, "embedding weight")
    if weight.dim() != 2:
        raise CompileError(f"the embedding weight must be 2-D, not {weight.dim()}-D")
    t = _elem(weight, "embedding weight")
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
        return torch.from_numpy(np.asarray(results[0]).reshape(*shape, dim))

    pk = PlanKernel("embedding", {"dtype": str(dtype), "max_norm": renorm}, scf_for_gather(t), None, None)
    state = {}

    def bind_args(inputs):
        *args, shape = bind(inputs)
        state["shape"] = shape
        return args

    pk._bind = bind_args
    pk._unbind = lambda results: unbind_shape(results, state["shape"])
    return pk


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
        if base.meta["val"].dtype != xe.dtype:
            raise CompileError(f"the output dtype {base.meta['val'].dtype} differs from the gathered "
                               f"tensor's {xe.dtype}")
    else:
        b_src = g.source(base, f"{tgt} self")
        shape = list(g.example(base, f"{tgt} self").shape)
    if len(shape) != 2 or shape[1] != xe.shape[1]:
        raise CompileError(f"the output shape {tuple(shape)} does not match the gathered rows "
                           f"(?, {xe.shape[1]})")
    nseg = int(shape[0])

    def bind(inputs):
        xa = _value(x_src, inputs, "x")
        if xa.dtype != xe.numpy().dtype or xa.ndim != 2:
            raise ValueError(f"x must be a 2-D {xe.dtype} tensor, not {xa.dtype} {xa.shape}")
        s = _index_array(s_src, inputs, "src", xa.shape[0])
        d = _index_array(d_src, inputs, "dst", nseg)
        if s.size != d.size:
            raise ValueError(f"src and dst must have the same length, not {s.size} and {d.size}")
        out = (np.zeros((nseg, xa.shape[1]), xa.dtype) if b_src is None
               else np.array(_value(b_src, inputs, "self"), dtype=xa.dtype, copy=True))
        return [np.ascontiguousarray(xa), s, d, out]

    spec = {"reduce": reduce, "include_self": bool(include_self), "dtype": str(xe.dtype), "op": tgt}
    return PlanKernel("segment", spec, scf_for_segment(t, reduce, bool(include_self)), bind,
                      lambda results: torch.from_numpy(np.asarray(results[0])))


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
        if at.shape[1] != xa.shape[0]:
            raise ValueError(f"shapes {tuple(at.shape)} and {xa.shape} cannot be multiplied")
        crow = at.crow_indices().numpy().astype(np.int64)
        col = at.col_indices().numpy().astype(np.int64)
        val = np.ascontiguousarray(at.values().numpy(), dtype=xa.dtype)
        return [crow, col, val, np.ascontiguousarray(xa), np.zeros((at.shape[0], xa.shape[1]), xa.dtype)]

    return PlanKernel("csr_mm", {"dtype": str(xe.dtype), "op": str(node.target)}, scf_for_csr_mm(t),
                      bind, lambda results: torch.from_numpy(np.asarray(results[0])))


def _plan_multi_bag(g: _Graph, bags: list) -> PlanKernel:
    """Several embedding bags of one module in one program (FBGEMM-style table batching)."""
    from types import SimpleNamespace
    found = []
    for node in bags:
        sub = SimpleNamespace(target=node.target, args=node.args, kwargs=node.kwargs, name=node.name)
        args = _bag_args(g, node)
        mode = _MODES.get(int(args.get("mode", 0) or 0))
        pad = args.get("padding_idx")
        if pad is not None and not (str(node.target) != "aten.embedding_bag.padding_idx" and pad == -1):
            raise CompileError("unsupported padding_idx in a module with several embedding bags")
        w_src = g.source(args["weight"], "embedding weight")
        w = g.example(args["weight"], "embedding weight")
        dtype = _check_weight(w)
        psw = args.get("per_sample_weights")
        spec = BagSpec(mode, dtype, psw is not None, bool(args.get("include_last_offset")), None)
        found.append(dict(spec=spec, w=w_src, rows=w.shape[0], dim=w.shape[1], node=sub,
                          renorm=g.renorm_of(args["weight"], args["indices"]),
                          idx=g.source(args["indices"], "indices", allow_const=False),
                          off=g.source(args["offsets"], "offsets", allow_const=False)
                          if args["offsets"] is not None else None,
                          psw=g.source(psw, "per_sample_weights", allow_const=False) if psw is not None else None))
    first = found[0]
    for k, f in enumerate(found[1:], 1):
        for what in ("spec", "dim"):
            if f[what] != first[what]:
                raise CompileError(f"embedding bag {k} differs from bag 0 in its {what} "
                                   f"({f[what]} vs {first[what]}); one program needs the same mode, "
                                   "dtype, options and embedding dim")
    spec = first["spec"]
    if spec.per_sample_weights and spec.mode != "sum":
        raise CompileError("per_sample_weights is only supported with mode='sum' (as in PyTorch)")
    getitems = {}
    for n in g.ep.graph.nodes:
        if n.op == "call_function" and n.target is operator.getitem and n.args[1] == 0:
            getitems[n] = next(i for i, f in enumerate(found) if f["node"].name == n.args[0].name) \
                if any(f["node"].name == n.args[0].name for f in found) else None
    outs = g.outputs
    if len(outs) == 1 and str(getattr(outs[0], "target", "")) == "aten.cat.default":
        parts, cat_dim = outs[0].args[0], (outs[0].args[1] if len(outs[0].args) > 1 else 0)
        if cat_dim not in (1, -1):
            raise CompileError(f"unsupported torch.cat of embedding bags along dim {cat_dim} (dim 1 is)")
    else:
        parts, cat_dim = outs, None
    order = []
    for p in parts:
        if getitems.get(p) is None:
            raise CompileError(f"unsupported output {p}: the module must return the bags' outputs "
                               "(a tuple) or torch.cat of them along dim 1")
        order.append(getitems[p])
    singles = [TorchKernel.__new__(TorchKernel) for _ in found]
    for tk, f in zip(singles, found):        # reuse the single-bag argument checks
        tk.spec, tk._weight, tk._num_embeddings, tk.renorm = f["spec"], None, f["rows"], f["renorm"]
        tk._roles = {}

    def bind(inputs):
        tables, idxs, offs, psws, bases, nb = [], [], [], [], [], []
        row0 = used = 0
        for tk, f in zip(singles, found):
            w = _value(f["w"], inputs, "weight")
            one = [w, _value(f["idx"], inputs, "input")]
            tk._roles = {"weight": 0, "indices": 1}
            if f["off"] is not None:
                one.append(_value(f["off"], inputs, "offsets"))
                tk._roles["offsets"] = 2
            if f["psw"] is not None:
                tk._roles["per_sample_weights"] = len(one)
                one.append(_value(f["psw"], inputs, "per_sample_weights"))
            a = tk.bind(*one)
            tables.append(a[0]), idxs.append(a[1]), offs.append(a[2][:-1] + used)
            if spec.per_sample_weights:
                psws.append(a[3])
            bases.append(np.full(len(a[2]) - 1, row0, np.int64))
            nb.append(len(a[2]) - 1)
            row0 += a[0].shape[0]
            used += a[1].size
        offsets = np.concatenate(offs + [np.array([used], np.int64)]).astype(np.int64)
        args = [np.ascontiguousarray(np.concatenate(tables)), np.concatenate(idxs).astype(np.int64),
                offsets, np.concatenate(bases)]
        if spec.per_sample_weights:
            args.append(np.concatenate(psws))
        args.append(np.zeros((offsets.size - 1, first["dim"]), tables[0].dtype))
        state["nb"] = nb
        return args

    state: dict = {}

    def unbind(results):
        out = torch.from_numpy(np.asarray(results[0]))
        pieces = list(torch.split(out, state["nb"]))
        chosen = [pieces[i] for i in order]
        return torch.cat(chosen, dim=1) if cat_dim is not None else tuple(chosen)

    return PlanKernel("multi_bag", {"bag": spec, "tables": len(found)},
                      scf_for_bag(spec, multi_table=True), bind, unbind)


_SUPPORTED = ("embedding_bag, embedding, index_select/x[src] + index_add/scatter_reduce, "
              "sparse CSR @ dense")
_HELPERS = {"aten.zeros.default", "aten.zeros_like.default", "aten.new_zeros.default",
            "aten.unsqueeze.default", "aten.expand.default", "aten.expand_as.default"}


def _plan(g: _Graph) -> PlanKernel | None:
    """Recognise a graph other than exactly one embedding bag; None when it is one bag."""
    names = [str(n.target) for n in g.calls]
    bags = [n for n in g.calls if str(n.target) in _BAG_OPS]
    if bags and all(str(n.target) in _BAG_OPS or str(n.target) == "aten.cat.default" for n in g.calls):
        return None if len(bags) == 1 and "aten.cat.default" not in names else _plan_multi_bag(g, bags)
    if names == ["aten.embedding.default"]:
        if len(g.outputs) != 1 or g.outputs[0] is not g.calls[0]:
            raise CompileError("the traced function must return the embedding's output only")
        return _plan_embedding(g, g.calls[0])
    reducers = [n for n in g.calls if str(n.target) in ("aten.index_add.default", "aten.index_add_.default",
                                                         "aten.scatter_reduce.two")]
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
            raise CompileError("the traced function must return the product only")
        return _plan_csr_mm(g, mms[0])
    known = _BAG_OPS + tuple(_HELPERS) + ("aten.embedding.default", "aten.index_select.default",
                                          "aten.index.Tensor", "aten.index_add.default",
                                          "aten.index_add_.default", "aten.scatter_reduce.two",
                                          "aten._sparse_mm.default", "aten.matmul.default", "aten.cat.default")
    bad = [n for n in names if n not in known]
    if bad:
        raise CompileError(f"unsupported PyTorch operation {bad[0]} (supported: {_SUPPORTED})")
    raise CompileError(f"unsupported combination of PyTorch operations {', '.join(names) or '(none)'} "
                       f"(supported: {_SUPPORTED}; several embedding bags, not several other ops)")
