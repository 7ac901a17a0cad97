"""PyTorch frontend, rowwise-quantised tables: ``torch.ops.quantized.embedding_bag_byte_prepack``
+ ``embedding_bag_byte_rowwise_offsets`` (FBGEMM's layout: each packed ``uint8`` row is the
``dim`` quantised values followed by a float32 scale and a float32 bias) and the 4-bit pair
``embedding_bag_4bit_prepack`` + ``embedding_bag_4bit_rowwise_offsets`` (``dim / 2`` bytes, two
values a byte, low nibble first, then a float16 scale and bias).

The access unit loads the packed rows themselves (``memref<?x?xi8>``, ``dim + 8`` bytes a row;
the loop reads the first ``dim``), the execute side dequantises and accumulates exactly as FBGEMM's
kernel (``EmbeddingSpMDM``, measured bit-exact against PyTorch 2.13): per lookup, with ``s, b``
the row's scale and bias (times the per-sample weight when given, in float32; the 4-bit op's
float16 weights widened first, as PyTorch does), ``acc = fma(s, float(q), acc + b)``. The scale
and bias of each lookup are gathered on the host into a float32 ``(n, 2)`` array (the rows'
trailing bytes), so a lookup moves ``dim`` (4-bit: ``dim / 2``) bytes of the table plus 8 through
the unit, against ``4 * dim`` for float32.
``mode=0`` (sum) only: PyTorch's CPU kernels ignore ``mode`` (an unused parameter) and return the
sum for ``mode=1`` (mean) and ``2`` (max) too, so there is no mean to match. Refusals name the
argument. The deprecated ``torch.ao.nn.quantized.EmbeddingBag`` module (not traceable) is compiled
as the same bag on its packed rows, rebuilt from ``module.weight()`` at each call
(:func:`compile_ao_embedding_bag`).
"""

from __future__ import annotations

import numpy as np
import torch

from ..errors import CompileError
from .integers import TORCH_INDEX_TYPES, require_integers
from .torch_bind import PlanKernel, TorchKernel, _tensor, _value
from .torch_graph import _Graph
from .torch_scf import BagSpec

__all__ = ["BYTE_OP", "FOUR_BIT_OP", "plan_byte_bag", "scf_for_byte_bag"]

BYTE_OP = "quantized.embedding_bag_byte_rowwise_offsets.default"
FOUR_BIT_OP = "quantized.embedding_bag_4bit_rowwise_offsets.default"


def scf_for_byte_bag(bits: int = 8) -> str:
    """The SCF of a sum over 8-bit (or, ``bits=4``, 4-bit: two values a byte, the low nibble
    first; the loop runs over the bytes, each updating two outputs) rowwise-quantised rows
    (module docstring)."""
    if bits == 4:
        return _SCF_4BIT
    return """func.func @embedding_bag_byte(%table: memref<?x?xi8>, %indices: memref<?xi64>, %offsets: memref<?xi64>, %scale_bias: memref<?x2xf32>, %out: memref<?x?xf32>) -> memref<?x?xf32> {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %nbags = memref.dim %out, %c0 : memref<?x?xf32>
  %dim = memref.dim %out, %c1 : memref<?x?xf32>
  scf.for %b = %c0 to %nbags step %c1 {
    %b1 = arith.addi %b, %c1 : index
    %start_i64 = memref.load %offsets[%b] : memref<?xi64>
    %start = arith.index_cast %start_i64 : i64 to index
    %end_i64 = memref.load %offsets[%b1] : memref<?xi64>
    %end = arith.index_cast %end_i64 : i64 to index
    scf.for %j = %start to %end step %c1 {
      %row_i64 = memref.load %indices[%j] : memref<?xi64>
      %row = arith.index_cast %row_i64 : i64 to index
      %s = memref.load %scale_bias[%j, %c0] : memref<?x2xf32>
      %bias = memref.load %scale_bias[%j, %c1] : memref<?x2xf32>
      scf.for %d = %c0 to %dim step %c1 {
        %q = memref.load %table[%row, %d] : memref<?x?xi8>
        %qf = arith.uitofp %q : i8 to f32
        %acc = memref.load %out[%b, %d] : memref<?x?xf32>
        %t = arith.addf %acc, %bias : f32
        %new = math.fma %s, %qf, %t : f32
        memref.store %new, %out[%b, %d] : memref<?x?xf32>
      }
    }
  }
  return %out : memref<?x?xf32>
}
"""


_SCF_4BIT = """func.func @embedding_bag_4bit(%table: memref<?x?xi8>, %indices: memref<?xi64>, %offsets: memref<?xi64>, %scale_bias: memref<?x2xf32>, %out: memref<?x?xf32>) -> memref<?x?xf32> {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c2 = arith.constant 2 : index
  %four = arith.constant 4 : i32
  %nibble = arith.constant 15 : i32
  %nbags = memref.dim %out, %c0 : memref<?x?xf32>
  %dim = memref.dim %out, %c1 : memref<?x?xf32>
  %nbytes = arith.shrui %dim, %c1 : index
  scf.for %b = %c0 to %nbags step %c1 {
    %b1 = arith.addi %b, %c1 : index
    %start_i64 = memref.load %offsets[%b] : memref<?xi64>
    %start = arith.index_cast %start_i64 : i64 to index
    %end_i64 = memref.load %offsets[%b1] : memref<?xi64>
    %end = arith.index_cast %end_i64 : i64 to index
    scf.for %j = %start to %end step %c1 {
      %row_i64 = memref.load %indices[%j] : memref<?xi64>
      %row = arith.index_cast %row_i64 : i64 to index
      %s = memref.load %scale_bias[%j, %c0] : memref<?x2xf32>
      %bias = memref.load %scale_bias[%j, %c1] : memref<?x2xf32>
      scf.for %k = %c0 to %nbytes step %c1 {
        %byte = memref.load %table[%row, %k] : memref<?x?xi8>
        %byte32 = arith.extui %byte : i8 to i32
        %lo = arith.andi %byte32, %nibble : i32
        %moved = arith.shrui %byte32, %four : i32
        %hi = arith.andi %moved, %nibble : i32
        %d0 = arith.muli %k, %c2 : index
        %d1 = arith.addi %d0, %c1 : index
        %lof = arith.uitofp %lo : i32 to f32
        %acc0 = memref.load %out[%b, %d0] : memref<?x?xf32>
        %t0 = arith.addf %acc0, %bias : f32
        %new0 = math.fma %s, %lof, %t0 : f32
        memref.store %new0, %out[%b, %d0] : memref<?x?xf32>
        %hif = arith.uitofp %hi : i32 to f32
        %acc1 = memref.load %out[%b, %d1] : memref<?x?xf32>
        %t1 = arith.addf %acc1, %bias : f32
        %new1 = math.fma %s, %hif, %t1 : f32
        memref.store %new1, %out[%b, %d1] : memref<?x?xf32>
      }
    }
  }
  return %out : memref<?x?xf32>
}
"""


def plan_byte_bag(g: _Graph, node) -> PlanKernel:
    """The plan of one ``embedding_bag_byte_rowwise_offsets`` (or ``..._4bit_...``) whose output is
    returned."""
    bits = 4 if str(node.target) == FOUR_BIT_OP else 8
    op_name = str(node.target).removeprefix("quantized.").removesuffix(".default")
    names = ("weight", "indices", "offsets", "scale_grad_by_freq", "mode", "pruned_weights",
             "per_sample_weights", "compressed_indices_mapping", "include_last_offset")
    args = dict(zip(names, [None, None, None, False, 0, False, None, None, False]))
    args.update(zip(names, node.args))
    args.update(node.kwargs)
    if len(g.outputs) != 1 or g.outputs[0] is not node:
        raise CompileError(f"the traced function must return the {op_name} output only")
    if int(args["mode"]) != 0:
        raise CompileError(f"unsupported {op_name} mode={args['mode']}: only mode=0 (sum) is; "
                           "PyTorch's CPU kernel ignores mode (an unused parameter in "
                           "aten/src/ATen/native/quantized/cpu/qembeddingbag.h) and returns the "
                           "sum for every mode, so there is no mean or max to match")
    if args["pruned_weights"] or args["compressed_indices_mapping"] is not None:
        raise CompileError(f"unsupported {op_name} pruned_weights=True / compressed_indices_mapping "
                           "(pruned tables)")
    w_src = g.source(args["weight"], "packed weight")
    packed = g.example(args["weight"], "packed weight")
    tail = 8 if bits == 8 else 4              # f32 scale + bias, or f16 scale + bias
    if packed.dtype != torch.uint8 or packed.dim() != 2 or packed.shape[1] < tail:
        raise CompileError(f"the packed weight must be a 2-D uint8 tensor of packed rows, not "
                           f"{packed.dtype} {tuple(packed.shape)}")
    i_src = g.source(args["indices"], "indices", allow_const=False)
    o_src = None if args["offsets"] is None else g.source(args["offsets"], "offsets", allow_const=False)
    p_src = (None if args["per_sample_weights"] is None
             else g.source(args["per_sample_weights"], "per_sample_weights", allow_const=False))
    ilo = bool(args["include_last_offset"])
    shell = TorchKernel.__new__(TorchKernel)            # the single-bag argument checks
    shell.spec, shell._weight, shell.renorm = BagSpec("sum", "float32", False, ilo, None), None, None
    shell._num_embeddings = packed.shape[0]

    def bind(inputs):
        for src, name in [(w_src, "the packed weight"), (i_src, "indices"), (o_src, "offsets"),
                          (p_src, "per_sample_weights")]:
            if src is not None:
                _require_contiguous(_tensor(src, inputs), name)
        table = _value(w_src, inputs, "packed weight")
        if table.dtype != np.uint8 or table.ndim != 2 or table.shape[1] < tail:
            raise ValueError(f"the packed weight must be a 2-D uint8 array, not {table.dtype} {table.shape}")
        nbytes = table.shape[1] - tail
        dim = nbytes if bits == 8 else 2 * nbytes
        # PyTorch checks the indices and the offsets each ("Expect 32 or 64 bit indices"); it does
        # not promote them together as nn.EmbeddingBag does (the shell's check)
        one = [np.zeros((table.shape[0], 0), np.float32),
               require_integers(_value(i_src, inputs, "indices"), "indices", only=TORCH_INDEX_TYPES)]
        shell._roles = {"weight": 0, "indices": 1}
        if o_src is not None:
            shell._roles["offsets"] = 2
            one.append(require_integers(_value(o_src, inputs, "offsets"), "offsets", only=TORCH_INDEX_TYPES))
        _require_rows(one[1], table.shape[0])
        _, indices, offsets, _ = shell.bind(*one)
        raw = np.ascontiguousarray(table[indices, nbytes:])
        scale_bias = (raw.view(np.float32) if bits == 8 else raw.view(np.float16).astype(np.float32)).reshape(-1, 2)
        if p_src is not None:
            w = _value(p_src, inputs, "per_sample_weights")
            if bits == 4 and w.dtype == np.float16:
                w = w.astype(np.float32)    # the 4-bit op takes float16 weights: PyTorch widens them
            if w.dtype != np.float32 or w.shape != (indices.size,):
                kinds = "float32" if bits == 8 else "float32 (or float16)"
                raise ValueError(f"per_sample_weights must be a {kinds} tensor of {indices.size} "
                                 f"values, not {w.dtype} {w.shape}")
            scale_bias = (scale_bias * w[:, None]).astype(np.float32)     # FBGEMM: s * w, b * w
        return [table.view(np.int8), indices, offsets, np.ascontiguousarray(scale_bias),
                np.zeros((offsets.size - 1, dim), np.float32)]

    return PlanKernel("byte_bag" if bits == 8 else "4bit_bag",
                      {"per_sample_weights": p_src is not None, "include_last_offset": ilo, "bits": bits},
                      scf_for_byte_bag(bits), bind, lambda results: torch.from_numpy(np.asarray(results[0])))


def _require_rows(ids: np.ndarray, rows: int) -> None:
    """``ValueError`` naming the op's ``indices`` argument (the shell's check names
    ``nn.EmbeddingBag``'s ``input``) and the first id outside ``[0, rows)``."""
    if ids.ndim not in (1, 2):
        raise ValueError(f"indices must be 1-D or 2-D, not {ids.ndim}-D")
    bad = np.argwhere((ids < 0) | (ids >= rows))
    if bad.size:
        at = ", ".join(str(int(i)) for i in bad[0])
        raise ValueError(f"indices[{at}] = {int(ids[tuple(bad[0])])} is out of range for a packed "
                         f"table of {rows} rows")


def _require_contiguous(value, name: str) -> None:
    """``ValueError`` naming ``name`` unless ``value`` (a tensor or a NumPy array; anything else is
    refused later) is contiguous: PyTorch's quantized bags refuse a strided packed weight, indices
    or offsets ("Expect weight, indices, and offsets to be contiguous"), and read
    ``per_sample_weights`` through its data pointer, ignoring its strides (a strided tensor's
    result is that of the first values of its storage; none to match)."""
    if isinstance(value, torch.Tensor):
        contiguous, strides = value.is_contiguous(), tuple(value.stride())
    elif isinstance(value, np.ndarray):
        contiguous, strides = value.flags.c_contiguous, tuple(s // value.itemsize for s in value.strides)
    else:
        return
    if not contiguous:
        why = ("PyTorch's quantized embedding bag reads its storage ignoring the strides: other "
               "weights than its values" if name == "per_sample_weights"
               else "PyTorch's quantized embedding bag refuses it")
        raise ValueError(f"{name} must be contiguous, not of shape {tuple(value.shape)} and strides "
                         f"{strides} ({why}): pass .contiguous()")


# ------------------------------------------------------------------------------------------------
# the deprecated torch.ao.nn.quantized.EmbeddingBag module
# ------------------------------------------------------------------------------------------------

def is_ao_embedding_bag(module) -> bool:
    """``module`` is a ``torch.ao.nn.quantized.EmbeddingBag`` (which ``torch.export`` cannot
    trace: its weight is a TorchScript class, ``EmbeddingPackedParamsBase``)."""
    ao = getattr(getattr(getattr(torch, "ao", None), "nn", None), "quantized", None)
    cls = getattr(ao, "EmbeddingBag", None)
    return cls is not None and isinstance(module, cls)


def packed_rows(module) -> torch.Tensor:
    """The FBGEMM-layout rows of a ``torch.ao.nn.quantized.EmbeddingBag``'s weight, as
    ``embedding_bag_byte_prepack`` / ``embedding_bag_4bit_prepack`` lay them out, rebuilt from
    ``module.weight()`` (the per-row quantised tensor, ``per_channel_affine_float_qparams``):
    the quantised bytes (4-bit: two values a byte, as ``int_repr`` holds them), then the scale and
    the bias ``-zero_point * scale`` — float32 for ``quint8``, float16 (of the float32 product)
    for ``quint4x2``. Measured against the module's own output (PyTorch's
    ``PackedEmbeddingBagWeight::prepack``), bit for bit (``test_torch_quant_frontend.py``)."""
    w = module.weight()
    rows = w.shape[0]
    q = w.int_repr().reshape(rows, -1).numpy()
    scale = w.q_per_channel_scales().to(torch.float32).numpy()
    bias = (-w.q_per_channel_zero_points().to(torch.float32).numpy() * scale).astype(np.float32)
    tail_type = np.float32 if module.dtype == torch.quint8 else np.float16
    tail = np.stack([scale.astype(tail_type), bias.astype(tail_type)], axis=1)
    return torch.from_numpy(np.concatenate([q, tail.view(np.uint8).reshape(rows, -1)], axis=1))


class _AoPacked(torch.nn.Module):
    """The op a ``torch.ao.nn.quantized.EmbeddingBag`` runs, on its weight's packed rows (a buffer
    that :func:`compile_ao_embedding_bag` refreshes from the module at each call)."""

    def __init__(self, module, bits: int):
        super().__init__()
        object.__setattr__(self, "source", module)   # not a submodule: export must not trace it
        self.bits = bits
        self.register_buffer("packed", packed_rows(module))
        self.ilo = bool(module.include_last_offset)

    def refresh(self) -> None:
        fresh = packed_rows(self.source)
        if fresh.shape != self.packed.shape:
            raise ValueError(f"the module's weight changed shape from {tuple(self.packed.shape)} packed "
                             f"bytes to {tuple(fresh.shape)}: compile it again")
        self.packed.copy_(fresh)

    def forward(self, indices, offsets=None, per_sample_weights=None):
        op = Q.embedding_bag_byte_rowwise_offsets if self.bits == 8 else Q.embedding_bag_4bit_rowwise_offsets
        return op(self.packed, indices, offsets, False, 0, False, per_sample_weights, None, self.ilo)


Q = torch.ops.quantized


def compile_ao_embedding_bag(module, example_inputs: tuple, compile_fn) -> PlanKernel:
    """A ``torch.ao.nn.quantized.EmbeddingBag`` (deprecated; ``torch.export`` does not trace it):
    its forward is ``embedding_bag_byte`` / ``embedding_bag_4bit`` on its packed weight with mode
    0, so it is compiled as the rowwise-quantised bag above on :func:`packed_rows`, read from
    ``module.weight()`` at every call (``set_weight`` between calls is seen). ``compile_fn(m,
    inputs)`` compiles the stand-in module. Refused (CompileError naming the attribute):
    ``mode`` other than ``"sum"`` (the module's forward passes mode 0 whatever ``mode`` says, so
    PyTorch returns the sum), ``pruned_weights``, a dtype other than ``quint8``/``quint4x2``,
    ``quint4x2`` with ``include_last_offset`` (torch.export of the 4-bit op fails with it)."""
    name = "torch.ao.nn.quantized.EmbeddingBag"
    if module.mode != "sum":
        raise CompileError(f"unsupported {name} mode={module.mode!r}: its forward passes mode 0 to "
                           "embedding_bag_byte/embedding_bag_4bit whatever mode says, so PyTorch "
                           "returns the sum; there is no mean or max to match")
    if getattr(module, "pruned_weights", False):
        raise CompileError(f"unsupported {name} pruned_weights=True (pruned tables)")
    if module.dtype not in (torch.quint8, torch.quint4x2):
        raise CompileError(f"unsupported {name} dtype={module.dtype} (torch.quint8, torch.quint4x2 are)")
    if module.dtype == torch.quint4x2 and module.include_last_offset:
        raise CompileError(f"unsupported {name} dtype=torch.quint4x2 with include_last_offset=True: "
                           "torch.export of embedding_bag_4bit_rowwise_offsets with "
                           "include_last_offset fails in PyTorch 2.13 ('the last offset value should "
                           "be the size of the indices tensor'); the 8-bit module supports it")
    if len(example_inputs) > 3:
        raise CompileError(f"unsupported {name} call with compressed_indices_mapping (pruned tables)")
    stand_in = _AoPacked(module, 8 if module.dtype == torch.quint8 else 4)
    plan = compile_fn(stand_in, tuple(example_inputs))
    bind = plan._bind

    def refreshed(inputs):
        stand_in.refresh()
        return bind(inputs)

    plan._bind = refreshed
    plan.traced_with = f"{name} (packed weight rebuilt from module.weight() at each call)"
    plan.module = stand_in
    return plan
