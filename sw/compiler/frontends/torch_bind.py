"""PyTorch frontend, run-time argument binding: PyTorch inputs -> the SCF function's NumPy arguments.

:class:`TorchKernel` (one embedding bag) and :class:`PlanKernel` (every other recognised graph)
convert a call's inputs into the kernel's arguments, rejecting with a ``ValueError`` naming the
argument and value what PyTorch rejects, and the kernel's results back into PyTorch's output.
"""

from __future__ import annotations

from typing import Callable

import numpy as np
import torch

from ...runtime.kernel import Kernel
from .integers import TORCH_INDEX_TYPES, require_integers
from .torch_graph import _Found

def _require_index_types(indices: np.dtype, offsets: np.dtype) -> None:
    """PyTorch's embedding bag promotes a 1-D input and its offsets to a common type, which must
    be int32 or int64 (int16 with int64 offsets runs; int16 with int16 does not)."""
    common = np.promote_types(indices, offsets)
    if str(common) not in TORCH_INDEX_TYPES:
        raise ValueError(f"input ({indices}) and offsets ({offsets}) must promote to int32 or "
                         f"int64, not {common} (PyTorch's embedding bag refuses them)")


def check_traced_numbers(numbers: dict, inputs: tuple) -> None:
    """Refuse a call whose Python-number inputs differ from the example's: torch.export makes a
    number given as an example input a constant of the graph (``torch.zeros(n, d)``, ``y * s``),
    so the op would compute with the traced one. ``numbers``: input position -> traced number.

    Raises ValueError naming the input, its value and the traced one."""
    for k, traced in numbers.items():
        if k >= len(inputs):
            continue
        value = inputs[k]
        same = (isinstance(value, (bool, int, float))
                and isinstance(value, bool) == isinstance(traced, bool)
                and (value == traced or value != value and traced != traced))     # NaN is NaN
        if not same:
            raise ValueError(f"input {k} is {value!r}, but the op was traced with {traced!r}: "
                             f"torch.export makes a Python number a constant of the graph; compile "
                             f"again with {value!r}, or pass it as a tensor")


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

    def __init__(self, kernel: Kernel, found: _Found, scf: str,
                 compile_variant: Callable[[str], Kernel] | None = None):
        self.kernel = kernel
        self.spec = found.spec
        self.traced_with = found.how
        self.scf = scf
        self._weight = found.weight             # a _Live, read at each call, or None (an input)
        self._roles = found.roles
        self._num_embeddings = found.num_embeddings
        self.renorm = found.renorm               # (max_norm, norm_type) or None
        self._reduction = found.reduction        # F.embedding(x, w).sum(1)/.mean(1) folded, or None
        self._no_rows = False                    # the latest bind's x had 0 columns
        self._compile_variant = compile_variant   # SCF text -> Kernel, as `kernel` was compiled
        self._variant: Kernel | None = None

    def kernel_for(self, *inputs) -> Kernel:
        """The kernel a call with ``inputs`` runs. PyTorch's CPU embedding bag takes FBGEMM only
        when the weight's rows and the ``per_sample_weights`` are unit-stride
        (``weight.stride(1) == 1``, ``per_sample_weights.stride(0) == 1``, after the 2-D input's
        ``reshape(-1)``) and there is no ``padding_idx``; otherwise its own kernel, whose float32
        ``per_sample_weights`` multiply, then add (FBGEMM: an FMA), and whose bfloat16 rounds
        ties to even (FBGEMM: away from zero). For such a call this is the bag compiled that way
        (``scf_for_bag(spec, padded=True)``, compiled at the first such call, then kept), else
        ``kernel``."""
        spec = self.spec
        if (self._compile_variant is None or spec.padding_idx is not None or self._reduction
                or not (spec.dtype == "bfloat16" or (spec.dtype == "float32" and spec.per_sample_weights))):
            return self.kernel
        weight = self._input(inputs, "weight") if self._weight is None else self._weight.current()
        psw = self._input(inputs, "per_sample_weights")
        if isinstance(psw, torch.Tensor) and psw.dim() == 2:
            psw = psw.reshape(-1)                   # as F.embedding_bag does with a 2-D input
        strided = ((isinstance(weight, torch.Tensor) and weight.dim() == 2 and weight.stride(1) != 1)
                   or (isinstance(psw, torch.Tensor) and psw.dim() == 1 and psw.stride(0) != 1))
        if not strided:
            return self.kernel
        if self._variant is None:
            from .torch_scf import scf_for_bag
            self.variant_scf = scf_for_bag(spec, padded=True)
            self._variant = self._compile_variant(self.variant_scf)
        return self._variant

    def _input(self, inputs: tuple, role: str):
        pos = self._roles.get(role, -1)
        return inputs[pos] if 0 <= pos < len(inputs) else None

    def bind(self, *inputs) -> list:
        """The SCF function's positional arguments (NumPy) for a call with PyTorch's ``inputs``.

        Raises
        ------
        ValueError
            For inputs PyTorch rejects: an index out of range, offsets[0] != 0, decreasing
            offsets, offsets past the end of the input, mismatched per_sample_weights; and, with
            include_last_offset, offsets[-1] other than the input's length (PyTorch's modes give
            inconsistent results for the ids after it).
        """
        check_traced_numbers(getattr(self, "traced_numbers", {}), inputs)
        spec = self.spec
        weight_tensor = (self._input(inputs, "weight") if self._weight is None
                         else self._weight.current())
        weight = _numpy(weight_tensor, "weight")
        dtype = _np_dtype(spec.dtype)
        if weight.dtype != dtype:
            raise ValueError(f"weight must have dtype {dtype}, not {weight.dtype}")
        indices = _numpy(self._input(inputs, "indices"), "input")
        offsets_in = self._input(inputs, "offsets")
        psw_in = self._input(inputs, "per_sample_weights")
        require_integers(indices, "input")
        psw = None if psw_in is None else _numpy(psw_in, "per_sample_weights")
        if psw is not None and psw.shape != indices.shape:
            raise ValueError(f"per_sample_weights must have the shape of input {indices.shape}, "
                             f"not {psw.shape}")
        if indices.ndim == 2:
            if offsets_in is not None:
                raise ValueError("offsets must be None when input is 2-D")
            n, length = indices.shape
            require_integers(indices, "input", only=TORCH_INDEX_TYPES)
            if length == 0 and not self._reduction:
                # PyTorch's bag builds its offsets as arange(0, numel, length): "step must be
                # nonzero" (F.embedding(x, w).sum(1)/.mean(1) of 0 columns is defined: below)
                raise ValueError(f"input of shape {tuple(indices.shape)}: PyTorch's embedding bag "
                                 f"rejects a 2-D input with 0 columns (give a 1-D input with "
                                 f"offsets for empty bags)")
            self._no_rows = length == 0
            offsets = np.arange(0, n * length + 1, max(length, 1), dtype=np.int64)[:n + 1]
            if length == 0:
                offsets = np.zeros(n + 1, dtype=np.int64)
            indices = indices.reshape(-1)
            psw = None if psw is None else psw.reshape(-1)
        elif indices.ndim == 1:
            if offsets_in is None:
                raise ValueError("offsets must be given when input is 1-D")
            offsets = _numpy(offsets_in, "offsets")
            require_integers(offsets, "offsets")        # astype would truncate 1.7 to 1
            _require_index_types(indices.dtype, offsets.dtype)
            if offsets.ndim != 1:
                raise ValueError(f"offsets must be 1-D, not {offsets.ndim}-D (shape "
                                 f"{tuple(offsets.shape)})")
            offsets = offsets.astype(np.int64)
            if offsets.size and offsets[0] != 0:
                raise ValueError(f"offsets[0] must be 0, not {int(offsets[0])}")
            if offsets.size and offsets[-1] > indices.size:
                raise ValueError(f"offsets[-1] must be at most the input's length {indices.size}, "
                                 f"not {int(offsets[-1])}")
            if not spec.include_last_offset:
                offsets = np.concatenate([offsets, [indices.size]]).astype(np.int64)
            elif offsets.size == 0:
                raise ValueError("offsets must not be empty with include_last_offset=True")
            elif offsets[-1] != indices.size:
                # PyTorch (2.x, CPU) runs such a call, but its modes disagree on the ids past
                # offsets[-1]: sum leaves them out, max takes them, mean divides by their count
                raise ValueError(f"offsets[-1] must be the input's length {indices.size} with "
                                 f"include_last_offset=True, not {int(offsets[-1])} (PyTorch's "
                                 f"modes disagree on the ids after it)")
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
            if psw.dtype != dtype:
                raise ValueError(f"per_sample_weights must have the weight's dtype {spec.dtype}, not "
                                 f"{_dtype_name(psw_in)}")
            psw = np.ascontiguousarray(psw)
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
        if spec.cast:                       # the converted output (BagSpec.cast)
            args.append(np.zeros(out.shape, dtype=_np_dtype(spec.cast)))
        return args

    def unbind(self, results) -> torch.Tensor:
        """The PyTorch result (the output of the bag, converted to ``spec.cast`` if set) from the
        kernel's results. ``F.embedding(x, w).mean(1)`` of an ``x`` with 0 columns is NaN (0 / 0,
        and NaN through the fused ops), where the bag's empty mean is 0."""
        out = _torch(np.asarray(results[0]), getattr(torch, self.spec.cast or self.spec.dtype))
        if self._reduction == "aten.mean.dim" and self._no_rows:
            out.fill_(float("nan"))
        return out


def _renorm(weight, indices: np.ndarray, max_norm: float, norm_type: float) -> None:
    """``max_norm``: renormalise the rows ``indices`` of ``weight`` in place, before the lookup,
    as ``F.embedding``/``F.embedding_bag`` do — by calling ``torch.embedding_renorm_`` itself on
    the host (each distinct row whose ``norm_type``-norm exceeds ``max_norm`` is scaled by
    ``max_norm / (norm + 1e-7)``); the lookup then runs on the access unit."""
    w = weight if isinstance(weight, torch.Tensor) else torch.from_numpy(weight)
    with torch.no_grad():
        torch.embedding_renorm_(w.detach(), torch.from_numpy(np.ascontiguousarray(indices, np.int64)),
                                max_norm, norm_type)


def _np_dtype(name: str) -> np.dtype:
    """The NumPy dtype of a kernel argument of torch dtype ``name`` (bfloat16: uint16 bits)."""
    return np.dtype(np.uint16) if name == "bfloat16" else np.dtype(name)


def _dtype_name(value) -> str:
    return str(value.dtype).removeprefix("torch.")


def _torch(array: np.ndarray, dtype: torch.dtype) -> torch.Tensor:
    """A kernel result as a tensor of ``dtype`` (a bfloat16 result is its uint16 bit patterns)."""
    if dtype == torch.bfloat16:
        return torch.from_numpy(np.ascontiguousarray(array).view(np.int16)).view(torch.bfloat16)
    return torch.from_numpy(array)


def _numpy(value, name: str) -> np.ndarray:
    """``value`` (a tensor or an array) as NumPy; a bfloat16 tensor as its uint16 bit patterns,
    how a ``bf16`` memref is passed (``docs/compiler.md``, "Supported input")."""
    if isinstance(value, torch.Tensor):
        value = value.detach().cpu()
        if value.dtype == torch.bfloat16:
            return value.view(torch.int16).numpy().view(np.uint16)
        return value.numpy()
    if isinstance(value, np.ndarray):
        return value
    raise ValueError(f"{name} must be a tensor, not {type(value).__name__}")


def _tensor(src, inputs: tuple):
    """The tensor (or array) ``src`` refers to in a call with ``inputs``."""
    kind, v = src
    return inputs[v] if kind == "input" else v.current()


def _value(src, inputs: tuple, name: str) -> np.ndarray:
    return _numpy(_tensor(src, inputs), name)


def _index_array(src, inputs, name: str, bound: int) -> np.ndarray:
    a = require_integers(_value(src, inputs, name), name, only=TORCH_INDEX_TYPES).astype(np.int64).reshape(-1)
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
        (an index out of range, a dtype that differs from the traced one, a Python number other
        than the traced one: :func:`check_traced_numbers`), naming them."""
        check_traced_numbers(getattr(self, "traced_numbers", {}), inputs)
        return self._bind(inputs)

    def unbind(self, results):
        return self._unbind(results)
