"""coalesce-rows: a dense loop over consecutive rows, each a block load, becomes one block load.

After ``simplify-streams`` the block-sparse gather reads each of the ``bs`` rows of a key block
as its own ``BLOCK`` stream, one layer iteration (and one callback firing, with the output row
number) per row, although the rows ``blk·bs + r``, ``r = 0 .. bs-1``, are consecutive in memory.
A hand-written program fetches the ``bs`` rows as one ``BLOCK`` of ``bs × dim`` elements
(``sw/runtime/handwritten/suite.py``). This pass does the same on the SLCV (Ember, arXiv
2504.09870, §6.3, stream simplification). For an innermost ``slc.for %r = 0 to %n step 1``
(``%n`` a register) nested in another loop whose body holds only

* block streams ``slcv.buf_stream %m[%X + %r, 0] len %L`` of 2-D memrefs (``%X`` invariant in
  the loop, or the row index ``%r`` alone),
* ALU streams whose operands are ``%r`` or invariant in the loop (the output row ``%obase + %r``),
* one ``iter`` callback that reads the rows (``slcv.from_buffer``, used only by ``memref.load``),
  the ALU streams, ``%r`` and streams of outer loops,

each block stream becomes ``slcv.buf_stream %m[%X, 0] len (%n · R)`` in the enclosing loop, with
``R`` the row size of ``%m`` (``memref.dim %m, 1``): the ``n`` whole rows, contiguous in
row-major order. The callback moves to the enclosing loop's ``iter`` and runs its former body in
``scf.for %r = 0 to %n`` on the core, reading element ``d`` of row ``r`` at ``r·R + d`` and
recomputing the ALU streams it used (``arith`` ops on the same operands). When ``%L = R`` (the key
rows: ``%dim`` is ``memref.dim %key, 1``) the block holds exactly the elements the rows held; when
``%L < R`` (a value table wider than the key table) it also holds the ``R - L`` columns after each
row, which the core skips — never outside the rows the loop read (``L <= R`` is checked on the
host, ``backend/host_checks.py``, "extent"). The core does the same arithmetic in the same order,
so results are unchanged bit for bit; the data queue loses the per-row operands (the output row
number) and the control queue one token per row.

Left alone: a loop with a lower bound other than 0, a step other than 1, any other stream (a
gather through an index per row), a column start other than 0, a buffer read other than by
``memref.load``, more or other callbacks. It runs at ``-O3`` right after ``simplify-streams``.
"""

from __future__ import annotations

from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects import arith, func, memref, scf
from xdsl.dialects.builtin import IndexType, IntegerAttr, MemRefType, ModuleOp
from xdsl.ir import Operation, SSAValue
from xdsl.passes import ModulePass

from ..dialects import slc, slcv
from ._util import (constant_int, core_row_loop, functions, innermost_loops, is_loop,
                    is_register, new_callback, parent_loop)

__all__ = ["CoalesceRows", "coalesce_rows"]

#: ALU streams the core recomputes, by the ``arith`` op of the same 64-bit integer arithmetic.
_CORE_OPS = {"add": arith.AddiOp, "sub": arith.SubiOp, "mul": arith.MuliOp}


def _row_base(buf: slcv.BufStreamOp, loop: slc.ForOp, local: set[SSAValue]) -> SSAValue | None:
    """``X`` if ``buf`` reads ``m[X + r, 0]`` (``X`` invariant; the column constant ``0`` when the
    row is ``r`` itself), else None."""
    mtype = buf.memref.type
    if not isinstance(mtype, MemRefType) or len(mtype.get_shape()) != 2 or len(buf.indices) != 2:
        return None
    row, col = buf.indices
    if constant_int(col) != 0 or buf.length in local:
        return None
    if row is loop.index:
        return col
    op = row.owner
    if isinstance(op, slc.AluStreamOp) and op.op.data == "add":
        if op.rhs is loop.index and op.lhs not in local:
            return op.lhs
        if op.lhs is loop.index and op.rhs not in local:
            return op.rhs
    return None


def _function_value(fn: func.FuncOp, op: Operation) -> SSAValue:
    """Insert ``op`` at function level before the first loop; its result."""
    block = fn.body.block
    block.insert_op_before(op, next(o for o in block.ops if is_loop(o)))
    return op.results[0]


def _row_size(fn: func.FuncOp, m: SSAValue) -> SSAValue:
    """A register with the row size (axis 1) of the 2-D memref ``m``."""
    size = m.type.get_shape()[1]
    if size >= 0:
        c = arith.ConstantOp(IntegerAttr(size, IndexType()))
    else:
        one = _function_value(fn, arith.ConstantOp(IntegerAttr(1, IndexType())))
        c = memref.DimOp(m, one)
    c.results[0].name_hint = f"{m.name_hint or 'm'}_row"
    return _function_value(fn, c)


def _coalesce(loop: slc.ForOp, fn: func.FuncOp) -> bool:
    if not (loop.step.value.data == 1 and constant_int(loop.lb) == 0 and is_register(loop.ub, fn)
            and parent_loop(loop) is not None):
        return False
    body = [o for o in loop.body.block.ops if not isinstance(o, slc.YieldOp)]
    local = {r for o in body for r in o.results} | {loop.index}
    bufs = [o for o in body if isinstance(o, slcv.BufStreamOp)]
    alus = [o for o in body if isinstance(o, slc.AluStreamOp)]
    cbs = [o for o in body if isinstance(o, slc.CallbackOp)]
    if len(bufs) + len(alus) + len(cbs) != len(body) or not bufs or len(cbs) != 1 \
            or cbs[0].event.data != "iter":
        return False
    cb = cbs[0]
    bases = {b: _row_base(b, loop, local) for b in bufs}
    if any(x is None for x in bases.values()):
        return False
    for a in alus:
        if a.op.data not in _CORE_OPS or any(v in local and v is not loop.index for v in a.operands):
            if not all(u.operation in bufs for u in a.result.uses):
                return False          # an ALU stream the core would have to recompute, and cannot
    gets = [o for o in cb.body.block.ops if isinstance(o, slc.FromStreamOp | slcv.FromBufferOp)]
    for g in gets:
        if isinstance(g, slcv.FromBufferOp):
            if g.buffer.owner not in bufs or not all(
                    isinstance(u.operation, memref.LoadOp) and u.index == 0
                    and len(u.operation.indices) == 1 for u in g.result.uses):
                return False
        elif g.stream in local and g.stream is not loop.index and (
                g.stream.owner not in alus or g.stream.owner.op.data not in _CORE_OPS
                or any(v in local and v is not loop.index for v in g.stream.owner.operands)):
            return False
    if any(o for o in cb.walk() if o is not cb and o not in gets and any(
            v in local for v in o.operands)):
        return False                  # a stream of the loop used other than through from_*

    parent = loop.parent_block()
    assert parent is not None
    # the blocks: n whole rows from row X
    blocks: dict[Operation, tuple[SSAValue, SSAValue]] = {}
    for b in bufs:
        row = _row_size(fn, b.memref)
        length = arith.MuliOp(loop.ub, row)
        length.result.name_hint = f"{b.memref.name_hint or 'm'}_block_len"
        _function_value(fn, length)
        new = slcv.BufStreamOp(b.memref, [bases[b], b.indices[1]], length.result)
        new.location = b.location
        new.result.name_hint = f"{b.memref.name_hint or 'm'}_block"
        parent.insert_op_before(new, loop)
        blocks[b] = (new.result, row)

    # the callback: the blocks and the outer streams, then the old body per row on the core
    new_cb, put = new_callback("iter", cb)
    whole: dict[SSAValue, tuple[SSAValue, SSAValue]] = {}     # old row memref -> (block, R)
    for g in gets:
        if isinstance(g, slcv.FromBufferOp):
            fb = put(slcv.FromBufferOp(blocks[g.buffer.owner][0]))
            fb.results[0].name_hint = f"{g.result.name_hint or 'v'}s"
            whole[g.result] = (fb.results[0], blocks[g.buffer.owner][1])
    outer: dict[SSAValue, SSAValue] = {}

    def outer_value(v: SSAValue) -> SSAValue:
        if v in local or is_register(v, fn):
            return v
        if v not in outer:
            n = put(slc.FromStreamOp(v))
            n.results[0].name_hint = v.name_hint
            outer[v] = n.results[0]
        return outer[v]

    for g in gets:
        if isinstance(g, slc.FromStreamOp):
            if g.stream not in local:
                outer_value(g.stream)
            elif g.stream is not loop.index:
                for v in g.stream.owner.operands:
                    if v is not loop.index:
                        outer_value(v)
    row_body = core_row_loop(put, loop.lb, loop.ub)
    r = row_body.args[0]
    r.name_hint = loop.index.name_hint or "r"
    mapper: dict[SSAValue, SSAValue] = {}
    offsets: dict[SSAValue, SSAValue] = {}
    for g in gets:
        if isinstance(g, slcv.FromBufferOp):
            block_mem, row = whole[g.result]
            if row not in offsets:
                off = arith.MuliOp(r, row)
                off.result.name_hint = "row_start"
                row_body.add_op(off)
                offsets[row] = off.result
            mapper[g.result] = block_mem
        elif g.stream is loop.index:
            mapper[g.result] = r
        elif g.stream in local:
            a = g.stream.owner
            lhs, rhs = (r if v is loop.index else outer_value(v) for v in (a.lhs, a.rhs))
            new = _CORE_OPS[a.op.data](lhs, rhs)
            new.result.name_hint = g.result.name_hint
            row_body.add_op(new)
            mapper[g.result] = new.result
        else:
            mapper[g.result] = outer[g.stream]
    for op in cb.body.block.ops:
        if op in gets or isinstance(op, slc.YieldOp):
            continue
        row_body.add_op(op.clone(value_mapper=mapper))
    # element d of row r of a block is at r·R + d
    for op in list(row_body.walk()):
        if isinstance(op, memref.LoadOp) and op.memref in {m for m, _ in whole.values()}:
            row = next(rw for m, rw in whole.values() if m is op.memref)
            at = arith.AddiOp(offsets[row], op.indices[0])
            at.result.name_hint = "at"
            op.parent_block().insert_op_before(at, op)
            op.operands = [op.memref, at.result]
    row_body.add_op(scf.YieldOp())
    parent.insert_op_before(new_cb, loop)
    loop.detach()
    loop.erase(safe_erase=False)
    return True


def coalesce_rows(fn: func.FuncOp) -> int:
    """Coalesce the row loops of ``fn`` (module docstring) in place; how many were."""
    return sum(_coalesce(loop, fn) for loop in innermost_loops(fn) if isinstance(loop, slc.ForOp))


@dataclass(frozen=True)
class CoalesceRows(ModulePass):
    """A dense loop over consecutive rows, each a block load, -> one block load (-O3)."""

    name = "coalesce-rows"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        for fn in functions(op):
            coalesce_rows(fn)
