"""Hand-written ISA v1 access programs for every workload of ``sw.workloads``, with their execute sides.

The performance reference for the compiler (issue 11, "compiled ÷ hand-written"): each program
is written for ``configs/tmu_rtl.json`` (8 lanes, BLOCK rows of up to 1024 elements, operand
packing, 4 run-ahead engines) the way a DAE programmer would, and each kernel takes exactly the
arguments of the workload's MLIR kernel (``Workload.make``), so the same inputs, references and
drivers (``sw.runtime.drivers.run_kernel``) serve both. Programs are in the assembly text of
``docs/isa.md`` §§6, 7.10; what differs from the compiler's ``-O3``:

* **One callback per output row**, not per lookup: layer 0 (over bags / rows / query blocks)
  pushes control ``SEGMENT`` and the segment's length ``offsets[b+1] - offsets[b]`` (one ALU
  stream); the core then pops that many rows. The compiler pushes the bag or row number and one
  control token with every lookup.
* **TransE** reads ``triples[3t + k]`` as ``(base + 8k) + t * 24`` (stride 24, invariant base):
  three affine streams the run-ahead engines serve, instead of ALU-computed indices that wait
  a full memory latency each (docs/performance.md, "Compiler optimisation levels", item 2).
* **SpMV** joins each nonzero's value and ``x[col]`` into one token (the compiler pushes the row
  number too). A ``LOCKSTEP`` layer of 8 lanes over the nonzeros (values and columns as vector
  loads, ``x[col]`` a gather) was tried and is slower on today's RTL, which runs lanes one by one
  and pays a marshaling step per vector (1,157 against 971 cycles on the small input).
* **Block-sparse gather** fetches a whole ``bs x dim`` K (and V) block as one BLOCK row (the rows
  of a key block are contiguous), instead of ``bs`` row fetches.
* **Weighted EmbeddingBag / SpMM** push the row, then the f32 weight (or value) in a token of its
  own: ``dim / 2 + 1`` tokens per lookup. Joining the weight in front of the row saves a token
  only for odd ``dim`` and is slower on today's RTL, which packs a row that does not start at a
  token boundary element by element (70,350 against 59,323 cycles for eb_weighted, full input).

Arithmetic is the compiled kernel's, in the same order (so the results equal the workload's
references bit for bit where ``Workload.exact``/``sequential`` do): EmbeddingBag sums rows in
index order from 0 in float32, ``mean`` divides once, ``max`` is ``np.maximum`` from the first
row (0 for an empty bag), ``weighted`` accumulates with one float32 fused multiply-add; SpMM
multiplies then adds; SpMV accumulates with one fused multiply-add per nonzero in CSR order;
TransE sums squares of ``(h + r) - t`` in feature order, then ``sqrt``.
"""

from __future__ import annotations

import numpy as np

from ..isa import Program
from ..kernel import ArgKind, ArgSpec, Kernel, ParamKind, ParamSpec, fma32

__all__ = ["SEGMENT", "TRIPLE", "HANDWRITTEN", "handwritten_kernel"]

SEGMENT, TRIPLE = 0, 1   # control tokens (callbacks)
DONE = 0xFFFF


def _base(p): return ArgSpec(ArgKind.BASE, p)
def _bytes(p): return ArgSpec(ArgKind.BYTES, p)
def _dim(p, axis): return ArgSpec(ArgKind.DIM, p, axis)
def _expr(e): return ArgSpec(ArgKind.EXPR, expr=e)


def _mem(name, dtype, rank, in_image=True):
    return ParamSpec(name, ParamKind.MEMREF, dtype, rank, in_image)


# ------------------------------------------------------------------------------------------------
# Execute-side helpers
# ------------------------------------------------------------------------------------------------

def _f32(pop, ntokens: int) -> np.ndarray:
    """``ntokens`` data tokens as the float32 elements packed in them (2 per token)."""
    return np.array([pop() for _ in range(ntokens)], dtype=np.uint64).view(np.float32)


def _segments(control, pop):
    """Yield (segment number, length) for each SEGMENT control token until DONE."""
    seg = 0
    for tok in control:
        if tok == DONE:
            return
        if tok != SEGMENT:
            raise RuntimeError(f"control token {tok} names no callback")
        n = int(np.int64(np.uint64(pop())))
        yield seg, n
        seg += 1
    raise RuntimeError("the control queue ended without DONE")


def _execute_eb(mode: str):
    def execute(args, control, pop):
        table, out = args[0], args[-1]
        dim = table.shape[1]
        group = -(-dim // 2) + (mode == "weighted")        # tokens per lookup: row[, weight]
        with np.errstate(all="ignore"):
            for bag, n in _segments(control, pop):
                acc = np.zeros(dim, np.float32)
                for j in range(n):
                    e = _f32(pop, group)
                    if mode == "weighted":
                        acc = fma32(e[-2], e[:dim], acc)
                    elif mode == "max":
                        acc = e[:dim].copy() if j == 0 else np.maximum(acc, e[:dim])
                    else:
                        acc = acc + e[:dim]
                out[bag] = acc / np.float32(max(n, 1)) if mode == "mean" else acc
        return (out,)
    return execute


def _execute_spmm(args, control, pop):
    x, out = args[3], args[5]
    dim = x.shape[1]
    group = -(-dim // 2) + 1                                # the row, then the value
    with np.errstate(all="ignore"):
        for row, n in _segments(control, pop):
            acc = np.zeros(dim, np.float32)
            for _ in range(n):
                e = _f32(pop, group)
                acc = acc + e[-2] * e[:dim]                 # float32: multiply, then add
            out[row] = acc
    return (out,)


def _execute_spmv(args, control, pop):
    out = args[4]
    with np.errstate(all="ignore"):
        for row, n in _segments(control, pop):
            acc = np.float32(0)
            for _ in range(n):
                val, x = _f32(pop, 1)
                acc = fma32(val, x, acc)
            out[row] = acc
    return (out,)


def _execute_transe(args, control, pop):
    entity, out = args[1], args[3]
    dim = entity.shape[1]
    ntok = -(-dim // 2)
    t = 0
    with np.errstate(all="ignore"):
        for tok in control:
            if tok == DONE:
                return (out,)
            if tok != TRIPLE:
                raise RuntimeError(f"control token {tok} names no callback")
            h, r, tl = (_f32(pop, ntok)[:dim] for _ in range(3))
            diff = (h + r) - tl
            acc = np.float32(0)
            for d in range(dim):
                acc = np.float32(acc + diff[d] * diff[d])
            out[t] = np.sqrt(acc)
            t += 1
    raise RuntimeError("the control queue ended without DONE")


def _execute_spattn(args, control, pop):
    key, bs, k_out, v_out = args[2], int(args[4]), args[5], args[6]
    n_el = bs * key.shape[1]
    ntok = -(-n_el // 2)
    j = 0
    for _, n in _segments(control, pop):
        for _ in range(n):
            k_out[j * bs:(j + 1) * bs] = _f32(pop, ntok)[:n_el].reshape(bs, -1)
            v_out[j * bs:(j + 1) * bs] = _f32(pop, ntok)[:n_el].reshape(bs, -1)
            j += 1
    return (k_out, v_out)


# ------------------------------------------------------------------------------------------------
# Programs
# ------------------------------------------------------------------------------------------------

def _segment_prologue(n_args: int, count: str, offsets: str) -> str:
    """Layer 0 over segments: s0 = b + 1, s1 = offsets[b], s2 = offsets[b + 1], s3 = s2 - s1;
    pushes control SEGMENT and the length s3. Region 0 is the offsets array."""
    return f"""\
.version 1
.args {n_args}
layer 0  lb=#0 ub={count} step=#1
stream 0 layer=0 alu  add a=i0 b=#1
stream 1 layer=0 mem  region=0 a={offsets} b=i0 stride=8 size=8
stream 2 layer=0 mem  region=0 a={offsets} b=s0 stride=8 size=8
stream 3 layer=0 alu  sub a=s2 b=s1
action layer=0 iter control {SEGMENT}
action layer=0 iter operand s3
"""


# EmbeddingBag: (table, indices, offsets[, weights], out); a0 nbags, a1/a2 offsets, a3/a4 indices,
# a5 dim, a6/a7 table, a8/a9 weights.
def _eb_program(weighted: bool) -> str:
    """The weight ``per_sample_weights[j]`` is loaded before ``row * dim`` (stream 5): a run-ahead
    engine serves it and its pop rides in the chained row uop (``docs/rtl.md`` §2.2), one uop
    per lookup, where a weight stream after the row costs a uop of its own."""
    text = _segment_prologue(10 if weighted else 8, "a0", "a1") + """\
layer 1  lb=s1 ub=s2 step=#1 check_order
region 0 base=a1 size=a2
region 1 base=a3 size=a4
region 2 base=a6 size=a7
stream 4 layer=1 mem  region=1 a=a3 b=i1 stride=8 size=8
"""
    row = 5
    if weighted:
        text += """\
region 3 base=a8 size=a9
stream 5 layer=1 mem  region=3 a=a8 b=i1 stride=4 size=4
"""
        row = 6
    text += f"""\
stream {row} layer=1 alu  mul a=s4 b=a5
stream {row + 1} layer=1 mem  region=2 a=a6 b=s{row} size=4 block n=a5
action layer=1 iter operand s{row + 1} esize=4
"""
    if weighted:
        text += "action layer=1 iter operand s5 esize=4\n"
    return text


def _eb_kernel(mode: str) -> Kernel:
    weighted = mode == "weighted"
    params = [_mem("table", "float32", 2), _mem("indices", "int64", 1), _mem("offsets", "int64", 1)]
    if weighted:
        params.append(_mem("per_sample_weights", "float32", 1))
    params.append(_mem("out", "float32", 2, False))
    arg_map = [_dim(len(params) - 1, 0), _base(2), _bytes(2), _base(1), _bytes(1), _dim(0, 1),
               _base(0), _bytes(0)] + ([_base(3), _bytes(3)] if weighted else [])
    return _kernel(f"eb_{mode}", params, _eb_program(weighted), arg_map, f"_execute_eb({mode!r})",
                   {SEGMENT: ("bag", -1)})


# SpMM: (rowptr, col, val, x, nrows, out); a0 rows, a1/a2 rowptr, a3/a4 col, a5/a6 val,
# a7 dim, a8/a9 x.
_SPMM = _segment_prologue(10, "a0", "a1") + """\
layer 1  lb=s1 ub=s2 step=#1 check_order
region 0 base=a1 size=a2
region 1 base=a3 size=a4
region 2 base=a5 size=a6
region 3 base=a8 size=a9
stream 4 layer=1 mem  region=1 a=a3 b=i1 stride=8 size=8
stream 5 layer=1 mem  region=2 a=a5 b=i1 stride=4 size=4
stream 6 layer=1 alu  mul a=s4 b=a7
stream 7 layer=1 mem  region=3 a=a8 b=s6 size=4 block n=a7
action layer=1 iter operand s7 esize=4
action layer=1 iter operand s5 esize=4
"""

# SpMV: (rowptr, col, val, x, out); a0 rows, a1/a2 rowptr, a3/a4 col, a5/a6 val, a7/a8 x.
_SPMV = _segment_prologue(9, "a0", "a1") + """\
layer 1  lb=s1 ub=s2 step=#1 check_order
region 0 base=a1 size=a2
region 1 base=a3 size=a4
region 2 base=a5 size=a6
region 3 base=a7 size=a8
stream 4 layer=1 mem  region=1 a=a3 b=i1 stride=8 size=8
stream 5 layer=1 mem  region=2 a=a5 b=i1 stride=4 size=4
stream 6 layer=1 mem  region=3 a=a7 b=s4 stride=4 size=4
action layer=1 iter operand s5 esize=4 join
action layer=1 iter operand s6 esize=4
"""

# TransE: (triples (3n,), entity, relation, out); a0 n, a1/a2 triples, a3 dim, a4/a5 entity,
# a6/a7 relation.
_TRANSE = f"""\
.version 1
.args 8
layer 0  lb=#0 ub=a0 step=#1
region 0 base=a1 size=a2
region 1 base=a4 size=a5
region 2 base=a6 size=a7
stream 0 layer=0 alu  add a=a1 b=#8
stream 1 layer=0 alu  add a=a1 b=#16
stream 2 layer=0 mem  region=0 a=a1 b=i0 stride=24 size=8
stream 3 layer=0 mem  region=0 a=s0 b=i0 stride=24 size=8
stream 4 layer=0 mem  region=0 a=s1 b=i0 stride=24 size=8
stream 5 layer=0 alu  mul a=s2 b=a3
stream 6 layer=0 mem  region=1 a=a4 b=s5 size=4 block n=a3
stream 7 layer=0 alu  mul a=s3 b=a3
stream 8 layer=0 mem  region=2 a=a6 b=s7 size=4 block n=a3
stream 9 layer=0 alu  mul a=s4 b=a3
stream 10 layer=0 mem  region=1 a=a4 b=s9 size=4 block n=a3
action layer=0 iter control {TRIPLE}
action layer=0 iter operand s6 esize=4
action layer=0 iter operand s8 esize=4
action layer=0 iter operand s10 esize=4
"""

# Block-sparse K/V gather: (block_ptr, block_idx, key, value, bs, k_out, v_out); a0 query blocks,
# a1/a2 block_ptr, a3/a4 block_idx, a5 elements per block (bs * dim), a6/a7 key, a8/a9 value.
_SPATTN = _segment_prologue(10, "a0", "a1") + """\
layer 1  lb=s1 ub=s2 step=#1 check_order
region 0 base=a1 size=a2
region 1 base=a3 size=a4
region 2 base=a6 size=a7
region 3 base=a8 size=a9
stream 4 layer=1 mem  region=1 a=a3 b=i1 stride=8 size=8
stream 5 layer=1 alu  mul a=s4 b=a5
stream 6 layer=1 mem  region=2 a=a6 b=s5 size=4 block n=a5
stream 7 layer=1 mem  region=3 a=a8 b=s5 size=4 block n=a5
action layer=1 iter operand s6 esize=4
action layer=1 iter operand s7 esize=4
"""


def _kernel(name, params, asm, arg_map, execute, callbacks, n_results=1) -> Kernel:
    return Kernel(name=f"{name}_handwritten", params=params, program=Program.from_asm(asm),
                  arg_map=arg_map, n_results=n_results, result_dtypes=["float32"] * n_results,
                  execute_source=f"from sw.runtime.handwritten.suite import {execute.split('(')[0]}\n"
                                 f"execute = {execute}\n",
                  callbacks=callbacks)


def _spmm_kernel() -> Kernel:
    params = [_mem("rowptr", "int64", 1), _mem("col", "int64", 1), _mem("val", "float32", 1),
              _mem("x", "float32", 2), _mem("nrows", "int64", 1, False), _mem("out", "float32", 2, False)]
    arg_map = [_expr("args[4][0]"), _base(0), _bytes(0), _base(1), _bytes(1), _base(2), _bytes(2),
               _dim(3, 1), _base(3), _bytes(3)]
    return _kernel("spmm_csr", params, _SPMM, arg_map, "_execute_spmm", {SEGMENT: ("row", -1)})


def _spmv_kernel() -> Kernel:
    params = [_mem("rowptr", "int64", 1), _mem("col", "int64", 1), _mem("val", "float32", 1),
              _mem("x", "float32", 1), _mem("out", "float32", 1, False)]
    arg_map = [_dim(4, 0), _base(0), _bytes(0), _base(1), _bytes(1), _base(2), _bytes(2),
               _base(3), _bytes(3)]
    return _kernel("spmv_csr", params, _SPMV, arg_map, "_execute_spmv", {SEGMENT: ("row", -1)})


def _transe_kernel() -> Kernel:
    params = [_mem("triples", "int64", 1), _mem("entity", "float32", 2), _mem("relation", "float32", 2),
              _mem("out", "float32", 1, False)]
    arg_map = [_dim(3, 0), _base(0), _bytes(0), _dim(1, 1), _base(1), _bytes(1), _base(2), _bytes(2)]
    return _kernel("transe_score", params, _TRANSE, arg_map, "_execute_transe", {TRIPLE: ("triple", -1)})


def _spattn_kernel() -> Kernel:
    params = [_mem("block_ptr", "int64", 1), _mem("block_idx", "int64", 1), _mem("key", "float32", 2),
              _mem("value", "float32", 2), ParamSpec("bs", ParamKind.INDEX, "int64"),
              _mem("k_out", "float32", 2, False), _mem("v_out", "float32", 2, False)]
    arg_map = [_expr("args[0].shape[0] - 1"), _base(0), _bytes(0), _base(1), _bytes(1),
               _expr("args[4] * args[2].shape[1]"), _base(2), _bytes(2), _base(3), _bytes(3)]
    return _kernel("block_sparse_gather", params, _SPATTN, arg_map, "_execute_spattn",
                   {SEGMENT: ("query_block", -1)}, n_results=2)


#: Workload name (``sw.workloads.WORKLOADS``) -> builder of its hand-written kernel.
HANDWRITTEN = {
    "eb_sum": lambda: _eb_kernel("sum"),
    "eb_mean": lambda: _eb_kernel("mean"),
    "eb_max": lambda: _eb_kernel("max"),
    "eb_weighted": lambda: _eb_kernel("weighted"),
    "spmm_cora": _spmm_kernel,
    "spmv_csr": _spmv_kernel,
    "kg_transe": _transe_kernel,
    "spattn_gather": _spattn_kernel,
}


def handwritten_kernel(workload: str) -> Kernel:
    """The hand-written kernel of ``workload`` (a name of ``sw.workloads.WORKLOADS``), taking the
    workload's arguments (``Workload.make``) and returning its results.

    Raises
    ------
    ValueError
        ``workload`` has no hand-written kernel (naming it and the ones that exist).
    """
    if workload not in HANDWRITTEN:
        raise ValueError(f"workload must be one of {', '.join(HANDWRITTEN)}, not {workload!r}")
    return HANDWRITTEN[workload]()
