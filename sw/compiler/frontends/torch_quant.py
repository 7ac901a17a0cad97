"""PyTorch frontend, rowwise-quantised tables: ``torch.ops.quantized.embedding_bag_byte_prepack``
+ ``embedding_bag_byte_rowwise_offsets`` (FBGEMM's layout: each packed ``uint8`` row is the
``dim`` quantised values followed by a float32 scale and a float32 bias) and the 4-bit pair
``embedding_bag_4bit_prepack`` + ``embedding_bag_4bit_rowwise_offsets`` (``dim / 2`` bytes, two
values a byte, low nibble first, then a float16 scale and bias).

The access unit loads the packed rows themselves (``memref<?x?xi8>``, ``dim + 8`` bytes a row;
the loop reads the first ``dim``), the execute side dequantises and accumulates exactly as FBGEMM's
kernel (``EmbeddingSpMDM``, measured bit-exact against PyTorch 2.13): per lookup, with ``s, b``
the row's scale and bias (times the per-sample weight when given, in float32),
``acc = fma(s, float(q), acc + b)``. The scale and bias of each lookup are gathered on the host
into a float32 ``(n, 2)`` array (the rows' trailing bytes), so a lookup moves ``dim`` (4-bit:
``dim / 2``) bytes of the table plus 8 through the unit, against ``4 * dim`` for float32.
``mode=0`` (sum) only: PyTorch's CPU kernels ignore ``mode`` (an unused parameter) and return the
sum for ``mode=1`` (mean) and ``2`` (max) too, so there is no mean to match. Refusals name the
argument.
"""

from __future__ import annotations

import numpy as np
import torch

from ..errors import CompileError
from .torch_bind import PlanKernel, TorchKernel, _value
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
        table = np.ascontiguousarray(_value(w_src, inputs, "packed weight"))
        if table.dtype != np.uint8 or table.ndim != 2 or table.shape[1] < tail:
            raise ValueError(f"the packed weight must be a 2-D uint8 array, not {table.dtype} {table.shape}")
        nbytes = table.shape[1] - tail
        dim = nbytes if bits == 8 else 2 * nbytes
        one = [np.zeros((table.shape[0], 0), np.float32), _value(i_src, inputs, "indices")]
        shell._roles = {"weight": 0, "indices": 1}
        if o_src is not None:
            shell._roles["offsets"] = 2
            one.append(_value(o_src, inputs, "offsets"))
        _, indices, offsets, _ = shell.bind(*one)
        raw = np.ascontiguousarray(table[indices, nbytes:])
        scale_bias = (raw.view(np.float32) if bits == 8 else raw.view(np.float16).astype(np.float32)).reshape(-1, 2)
        if p_src is not None:
            w = _value(p_src, inputs, "per_sample_weights")
            if w.dtype != np.float32 or w.shape != (indices.size,):
                raise ValueError(f"per_sample_weights must be a float32 tensor of {indices.size} "
                                 f"values, not {w.dtype} {w.shape}")
            scale_bias = (scale_bias * w[:, None]).astype(np.float32)     # FBGEMM: s * w, b * w
        return [table.view(np.int8), indices, offsets, np.ascontiguousarray(scale_bias),
                np.zeros((offsets.size - 1, dim), np.float32)]

    return PlanKernel("byte_bag" if bits == 8 else "4bit_bag",
                      {"per_sample_weights": p_src is not None, "include_last_offset": ilo, "bits": bits},
                      scf_for_byte_bag(bits), bind, lambda results: torch.from_numpy(np.asarray(results[0])))
