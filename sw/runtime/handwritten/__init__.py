"""Hand-written access programs: the performance reference for the compiler, and test fixtures.

This module holds the scalar (ISA v0) EmbeddingBag program that ``make sim --program handwritten``
and the tests use; :mod:`sw.runtime.handwritten.suite` holds the ISA v1 programs of every workload
of ``sw.workloads`` that the compiler's output is measured against (``scripts/bench_handwritten.py``).

``embedding_bag_program`` is the access side of ``torch.nn.functional.embedding_bag`` over CSR
offsets (``offsets`` has ``nbags + 1`` entries), written the way a DAE programmer would:

=====  ==========================  =========================================================
layer  traversal unit              streams
=====  ==========================  =========================================================
0      dense ``b in [0, nbags)``   s0 = offsets[b], s1 = b + 1, s2 = offsets[b + 1]
1      range ``j in [s0, s2)``     s3 = indices[j], s4 = s3 * dim   (``check_order``)
2      dense ``d in [0, dim)``     s5 = s4 + d, s6 = table[s5] (the embedding element)
=====  ==========================  =========================================================

Marshaling: layer-1 ``BEGIN`` pushes control ``BAG_BEGIN`` and operand ``b``; layer-2 ``ITER``
pushes operand ``s6`` (one token per element); layer-2 ``END`` pushes control ``ROW`` (the core pops
``dim`` operands and accumulates a row); layer-1 ``END`` pushes control ``BAG_END``.
"""

from __future__ import annotations

import numpy as np

from ..isa import Action, ActionKind, AluOp, Event, Layer, Program, Region, Source, Stream, StreamKind

__all__ = ["EmbeddingBagArgs", "embedding_bag_program", "embedding_bag_memory", "embedding_bag_kernel",
           "BAG_BEGIN", "ROW", "BAG_END"]

BAG_BEGIN, ROW, BAG_END = 0, 1, 2


class EmbeddingBagArgs:
    """Argument-register numbers of :func:`embedding_bag_program`."""
    OFFSETS, INDICES, TABLE, NBAGS, DIM, OFFSETS_BYTES, INDICES_BYTES, TABLE_BYTES = range(8)
    COUNT = 8


def embedding_bag_program(elem_size: int = 4) -> Program:
    """The program above for a table of ``elem_size``-byte elements (4: f32, 8: f64)."""
    A = EmbeddingBagArgs
    S, I, R = Source.stream, Source.index, Source.arg
    return Program(
        n_args=A.COUNT,
        layers=[Layer(Source.imm(0), R(A.NBAGS)),
                Layer(S(0), S(2), check_order=True),
                Layer(Source.imm(0), R(A.DIM))],
        regions=[Region(R(A.OFFSETS), R(A.OFFSETS_BYTES)),
                 Region(R(A.INDICES), R(A.INDICES_BYTES)),
                 Region(R(A.TABLE), R(A.TABLE_BYTES))],
        streams=[Stream(0, StreamKind.MEM, R(A.OFFSETS), I(0), size=8, stride=8, region=0),
                 Stream(0, StreamKind.ALU, I(0), Source.imm(1), op=AluOp.ADD),
                 Stream(0, StreamKind.MEM, R(A.OFFSETS), S(1), size=8, stride=8, region=0),
                 Stream(1, StreamKind.MEM, R(A.INDICES), I(1), size=8, stride=8, region=1),
                 Stream(1, StreamKind.ALU, S(3), R(A.DIM), op=AluOp.MUL),
                 Stream(2, StreamKind.ALU, S(4), I(2), op=AluOp.ADD),
                 Stream(2, StreamKind.MEM, R(A.TABLE), S(5), size=elem_size, stride=elem_size, region=2)],
        actions=[Action(1, Event.BEGIN, ActionKind.CONTROL, callback=BAG_BEGIN),
                 Action(1, Event.BEGIN, ActionKind.OPERAND, source=I(0)),
                 Action(2, Event.ITER, ActionKind.OPERAND, source=S(6)),
                 Action(2, Event.END, ActionKind.CONTROL, callback=ROW),
                 Action(1, Event.END, ActionKind.CONTROL, callback=BAG_END)],
    )


def embedding_bag_memory(table: np.ndarray, indices: np.ndarray, offsets: np.ndarray) -> tuple[bytes, list[int]]:
    """Memory image and argument registers for :func:`embedding_bag_program`.

    ``table`` is (num_embeddings, dim) float32/float64, ``indices`` and ``offsets`` int64 with
    ``offsets`` of length nbags + 1. Tensors are 64-byte aligned from address 0.
    """
    from ..image import MemoryImage
    image = MemoryImage()
    po = image.add(0, "offsets", np.asarray(offsets, dtype=np.int64))
    pi = image.add(1, "indices", np.asarray(indices, dtype=np.int64))
    pt = image.add(2, "table", np.ascontiguousarray(table))
    args = [po.base, pi.base, pt.base, len(offsets) - 1, table.shape[1], po.nbytes, pi.nbytes, pt.nbytes]
    return image.data, args


_EXECUTE_SOURCE = '''
import numpy as np
from sw.runtime.kernel import {decode}

def execute(args, control, pop):
    table, indices, offsets, out = args
    dim = table.shape[1]
    acc = np.zeros(dim, dtype=np.{dtype})
    bag = count = 0
    for token in control:
        if token == {BAG_BEGIN}:
            bag, count = pop(), 0
            acc[:] = 0
        elif token == {ROW}:
            acc += np.array([{decode}(pop()) for _ in range(dim)], dtype=np.{dtype})
            count += 1
        elif token == {BAG_END}:
            out[bag] = {finish}
        elif token == 0xFFFF:
            break
    return (out,)
'''


def embedding_bag_kernel(dtype: str = "float32", mode: str = "sum"):
    """The hand-written program as a :class:`~sw.runtime.kernel.Kernel` with the signature of
    ``examples/embedding_bag_sum.mlir``: ``(table[N, D], indices[L] int64, offsets[B+1] int64,
    out[B, D]) -> out``. ``mode`` is ``sum`` or ``mean``.

    Raises
    ------
    ValueError
        For a dtype other than float32/float64 or a mode other than sum/mean.
    """
    from ..kernel import ArgKind, ArgSpec, Kernel, ParamKind, ParamSpec
    if dtype not in ("float32", "float64"):
        raise ValueError(f"dtype must be 'float32' or 'float64', not {dtype!r}")
    if mode not in ("sum", "mean"):
        raise ValueError(f"mode must be 'sum' or 'mean', not {mode!r}")
    A = EmbeddingBagArgs
    arg_map = [None] * A.COUNT
    arg_map[A.OFFSETS], arg_map[A.OFFSETS_BYTES] = ArgSpec(ArgKind.BASE, 2), ArgSpec(ArgKind.BYTES, 2)
    arg_map[A.INDICES], arg_map[A.INDICES_BYTES] = ArgSpec(ArgKind.BASE, 1), ArgSpec(ArgKind.BYTES, 1)
    arg_map[A.TABLE], arg_map[A.TABLE_BYTES] = ArgSpec(ArgKind.BASE, 0), ArgSpec(ArgKind.BYTES, 0)
    arg_map[A.NBAGS], arg_map[A.DIM] = ArgSpec(ArgKind.DIM, 3, 0), ArgSpec(ArgKind.DIM, 0, 1)
    finish = "acc / max(count, 1)" if mode == "mean" else "acc"
    source = _EXECUTE_SOURCE.format(decode="as_f32" if dtype == "float32" else "as_f64", dtype=dtype,
                                    BAG_BEGIN=BAG_BEGIN, ROW=ROW, BAG_END=BAG_END, finish=finish)
    return Kernel(
        name=f"embedding_bag_{mode}_handwritten",
        params=[ParamSpec("table", ParamKind.MEMREF, dtype, 2, True),
                ParamSpec("indices", ParamKind.MEMREF, "int64", 1, True),
                ParamSpec("offsets", ParamKind.MEMREF, "int64", 1, True),
                ParamSpec("out", ParamKind.MEMREF, dtype, 2, False)],
        program=embedding_bag_program(4 if dtype == "float32" else 8),
        arg_map=arg_map, execute_source=source, n_results=1, result_dtypes=[dtype],
        callbacks={BAG_BEGIN: ("bag_begin", 1), ROW: ("row", -1), BAG_END: ("bag_end", 0)})
