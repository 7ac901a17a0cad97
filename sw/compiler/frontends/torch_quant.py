"""PyTorch frontend, rowwise-quantised 8-bit tables: ``torch.ops.quantized.embedding_bag_byte_prepack``
+ ``embedding_bag_byte_rowwise_offsets`` (FBGEMM's layout: each packed ``uint8`` row is the
``dim`` quantised values followed by a float32 scale and a float32 bias).

The access unit loads the packed rows themselves (``memref<?x?xi8>``, ``dim + 8`` bytes a row;
the loop reads the first ``dim``), the execute side dequantises and accumulates exactly as FBGEMM's
kernel (``EmbeddingSpMDM``, measured bit-exact against PyTorch 2.13): per lookup, with ``s, b``
the row's scale and bias (times the per-sample weight when given, in float32),
``acc = fma(s, float(q), acc + b)``. The scale and bias of each lookup are gathered on the host
into a float32 ``(n, 2)`` array (the rows' trailing 8 bytes), so a lookup moves ``dim`` bytes of
the table plus 8 through the unit, against ``4 * dim`` for float32. ``mode=0`` (sum) only: PyTorch
2.13's kernel returns the sum for ``mode=1`` too, and ``max`` is not implemented; the 4-bit pair
is not supported. Refusals name the argument.
"""

from __future__ import annotations

import numpy as np
import torch

from ..errors import CompileError
from .torch_bind import PlanKernel, TorchKernel, _value
from .torch_graph import _Graph
from .torch_scf import BagSpec

__all__ = ["BYTE_OP", "plan_byte_bag", "scf_for_byte_bag"]

BYTE_OP = "quantized.embedding_bag_byte_rowwise_offsets.default"


def scf_for_byte_bag() -> str:
    """The SCF of a sum over 8-bit rowwise-quantised rows (module docstring)."""
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


def plan_byte_bag(g: _Graph, node) -> PlanKernel:
    """The plan of one ``embedding_bag_byte_rowwise_offsets`` whose output is returned."""
    names = ("weight", "indices", "offsets", "scale_grad_by_freq", "mode", "pruned_weights",
             "per_sample_weights", "compressed_indices_mapping", "include_last_offset")
    args = dict(zip(names, [None, None, None, False, 0, False, None, None, False]))
    args.update(zip(names, node.args))
    args.update(node.kwargs)
    if len(g.outputs) != 1 or g.outputs[0] is not node:
        raise CompileError("the traced function must return the embedding_bag_byte_rowwise_offsets "
                           "output only")
    if int(args["mode"]) != 0:
        raise CompileError(f"unsupported embedding_bag_byte_rowwise_offsets mode={args['mode']} (0, sum, "
                           "is; PyTorch 2.13's kernel returns the sum for mode=1 too)")
    if args["pruned_weights"] or args["compressed_indices_mapping"] is not None:
        raise CompileError("unsupported embedding_bag_byte_rowwise_offsets pruned_weights=True / "
                           "compressed_indices_mapping (pruned tables)")
    w_src = g.source(args["weight"], "packed weight")
    packed = g.example(args["weight"], "packed weight")
    if packed.dtype != torch.uint8 or packed.dim() != 2 or packed.shape[1] < 8:
        raise CompileError(f"the packed weight must be a 2-D uint8 tensor of rows (dim + 8 bytes), "
                           f"not {packed.dtype} {tuple(packed.shape)}")
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
        if table.dtype != np.uint8 or table.ndim != 2 or table.shape[1] < 8:
            raise ValueError(f"the packed weight must be a 2-D uint8 array, not {table.dtype} {table.shape}")
        dim = table.shape[1] - 8
        one = [np.zeros((table.shape[0], 0), np.float32), _value(i_src, inputs, "indices")]
        shell._roles = {"weight": 0, "indices": 1}
        if o_src is not None:
            shell._roles["offsets"] = 2
            one.append(_value(o_src, inputs, "offsets"))
        _, indices, offsets, _ = shell.bind(*one)
        scale_bias = np.ascontiguousarray(table[indices, dim:]).view(np.float32).reshape(-1, 2)
        if p_src is not None:
            w = _value(p_src, inputs, "per_sample_weights")
            if w.dtype != np.float32 or w.shape != (indices.size,):
                raise ValueError(f"per_sample_weights must be a float32 tensor of {indices.size} "
                                 f"values, not {w.dtype} {w.shape}")
            scale_bias = (scale_bias * w[:, None]).astype(np.float32)     # FBGEMM: s * w, b * w
        return [table.view(np.int8), indices, offsets, np.ascontiguousarray(scale_bias),
                np.zeros((offsets.size - 1, dim), np.float32)]

    return PlanKernel("byte_bag", {"per_sample_weights": p_src is not None, "include_last_offset": ilo},
                      scf_for_byte_bag(), bind, lambda results: torch.from_numpy(np.asarray(results[0])))
