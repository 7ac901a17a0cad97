"""simplify-streams: memory streams with sequential indices become block loads of whole rows
(Ember, arXiv 2504.09870, §6.3, "simplification of memory streams"; ``-O3``).

A *row* of an innermost loop ``d = lb .. ub`` (step 1, bounds that are registers, nested in
another loop) is a memory stream ``m[i0, .., d]`` whose last index is the loop index and whose
other indices do not depend on the loop: over one traversal it reads ``ub - lb`` consecutive
elements. ``slcv.buf_stream m[i0, .., lb] len (ub - lb)`` in the enclosing layer loads the same
elements as one block operand (ISA v1 ``BLOCK`` stream, docs/isa.md §7), contiguous in the data
queue; the element loop, its layer and its per-element (per-vector) firings disappear. Two
forms are rewritten:

A row may also be ``m[i0, .., X + d]``, ``X`` loop-invariant (an ``add`` stream of the loop index
and a register or an outer stream, either order): a flattened table read at ``row · dim + d``
or ``(row << s) + d`` (``examples/hashed_gather.mlir``) reads the same consecutive elements, and
its block starts at ``X + lb``. Only the addresses of an input that faults can tell the two
forms apart: the elements' ``X + d`` wrapping past 64 bits faults ``ADDR_OVERFLOW`` at the
element, the block's span check where its address leaves the region or the signed range.

* **A collected row** — an ``slcv.for`` (scalar, from ``bufferize``, or vector, after
  ``vectorize-access``) without callbacks whose ``slcv.to_buffer`` terminator collects rows only:
  each collected value becomes a ``slcv.buf_stream`` replacing the loop's buffer result, so the
  ``end`` callback that pops it is unchanged.
* **Rows read by a callback** — an ``slc.for`` with one ``iter`` callback (the loops
  ``bufferize`` leaves alone because it reads several values: TransE's h/r/t rows, the K/V rows
  of the block-sparse gather) whose loop-local values read by the callback are all rows: one
  ``slcv.buf_stream`` per row, and the callback, now on the enclosing loop's ``iter``, pops the
  rows first (``slcv.from_buffer``), then the outer streams it used, and runs its original body
  in an ``scf.for`` over the row on the core (``bufferize.row_callback``). Each row is its own
  operand, pushed whole, so several rows cannot interleave.

In both forms the callbacks beside the removed loop (its layer's ``begin``/``end``) fire on the
enclosing loop's ``iter``, in program order; an enclosing ``broadcast`` loop left without a
vector loop inside goes back to its scalar form. A loop with any other value (a gather through an
index per element, ``m[k[d]]``), a step other than 1, stream bounds, or a vector loop
with a callback is left as it is. The core does the same arithmetic in the same order, so
results are unchanged bit for bit.

In the pipeline it runs after ``bufferize`` and before ``vectorize-access`` (docs/compiler.md,
"Optimisation levels"): the rows leave their loop before it would be vectorised.
"""

from __future__ import annotations

from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects import arith, func
from xdsl.dialects.builtin import IntegerAttr, ModuleOp, StringAttr, i64
from xdsl.ir import Operation, SSAValue
from xdsl.passes import ModulePass

from ..dialects import slc, slcv
from ._util import (constant_int, functions, innermost_loops, is_loop, is_register, loops,
                    parent_loop, replace_op)
from .bufferize import row_callback

__all__ = ["SimplifyStreams", "simplify_streams"]


def _local(loop: Operation) -> set[SSAValue]:
    block = loop.regions[0].block
    return {r for o in block.ops for r in o.results} | set(block.args)


def _row_offset(index: SSAValue, loop: Operation, local: set[SSAValue]) -> SSAValue | None:
    """``X`` if the last index is ``X + d`` (an ``add`` stream of the loop index ``d`` and a
    loop-invariant ``X``, either order), else None."""
    op = index.owner
    if not (isinstance(op, slc.AluStreamOp | slcv.AluStreamOp) and op.op.data == "add"):
        return None
    if op.rhs is loop.index and op.lhs not in local:
        return op.lhs
    if op.lhs is loop.index and op.rhs not in local:
        return op.rhs
    return None


def _is_row(value: SSAValue, loop: Operation, local: set[SSAValue]) -> bool:
    """``value`` is ``m[i0, .., d]`` or ``m[i0, .., X + d]`` with ``d`` the loop index and ``X``,
    ``i0, ..`` loop-invariant."""
    op = value.owner
    if not (isinstance(op, slc.MemStreamOp | slcv.MemStreamOp) and len(op.indices) > 0):
        return False
    last = op.indices[-1]
    return ((last is loop.index or _row_offset(last, loop, local) is not None)
            and not any(i in local for i in op.indices[:-1]))


def _qualifies(loop: Operation, fn: func.FuncOp) -> bool:
    return (loop.step.value.data == 1 and is_register(loop.lb, fn) and is_register(loop.ub, fn)
            and parent_loop(loop) is not None)


def _length(fn: func.FuncOp, loop: Operation) -> SSAValue:
    """A register with the row length ``ub - lb`` (``ub`` itself when ``lb`` is 0)."""
    if constant_int(loop.lb) == 0:
        return loop.ub
    sub = arith.SubiOp(loop.ub, loop.lb)
    sub.result.name_hint = "len"
    block = fn.body.block
    block.insert_op_before(sub, next(o for o in block.ops if is_loop(o)))
    return sub.result


def _row_start(offset: SSAValue, loop: Operation, fn: func.FuncOp) -> SSAValue:
    """The first element ``X + lb`` of a row ``m[.., X + d]``: ``X`` when ``lb`` is 0, else an
    ``add`` in the enclosing layer (an ALU stream) or at function level (both registers)."""
    if constant_int(loop.lb) == 0:
        return offset
    if is_register(offset, fn):
        add = arith.AddiOp(offset, loop.lb)
        block = fn.body.block
        block.insert_op_before(add, next(o for o in block.ops if is_loop(o)))
        return add.result
    parent = loop.parent_block()
    assert parent is not None
    add = slc.AluStreamOp("add", offset, loop.lb, offset.type)
    add.result.name_hint = "start"
    parent.insert_op_before(add, loop)
    return add.result


def _block_loads(loop: Operation, rows: list[SSAValue], names: list[str | None],
                 fn: func.FuncOp) -> list[SSAValue]:
    """One ``slcv.buf_stream`` per row, inserted before ``loop`` in the enclosing layer."""
    parent = loop.parent_block()
    assert parent is not None
    length = _length(fn, loop)
    local = _local(loop)
    out = []
    for v, name in zip(rows, names, strict=True):
        ld = v.owner
        assert isinstance(ld, slc.MemStreamOp | slcv.MemStreamOp)
        start = loop.lb
        offset = _row_offset(ld.indices[-1], loop, local)
        if offset is not None:
            start = _row_start(offset, loop, fn)
        buf = slcv.BufStreamOp(ld.memref, [*ld.indices[:-1], start], length)
        buf.location = ld.location
        buf.result.name_hint = name
        parent.insert_op_before(buf, loop)
        out.append(buf.result)
    return out


def _remove_loop(loop: Operation) -> None:
    """Erase ``loop``; the callbacks beside it (its layer's begin/end) fire on the enclosing
    loop's iterations, which now are the innermost layer."""
    parent = loop.parent_block()
    assert parent is not None
    loop.detach()
    loop.erase(safe_erase=False)
    for op in parent.ops:
        if isinstance(op, slc.CallbackOp) and op.event.data in ("begin", "end"):
            op.event = StringAttr("iter")


def _simplify_collected(loop: slcv.ForOp, fn: func.FuncOp) -> bool:
    term = loop.body.block.last_op
    if not isinstance(term, slcv.ToBufferOp) or not _qualifies(loop, fn):
        return False
    if any(isinstance(o, slc.CallbackOp) for o in loop.body.block.ops):
        return False
    local = _local(loop)
    if not all(_is_row(v, loop, local) for v in term.values):
        return False
    bufs = _block_loads(loop, list(term.values), [r.name_hint for r in loop.results], fn)
    for r, buf in zip(loop.results, bufs, strict=True):
        r.replace_all_uses_with(buf)
    _remove_loop(loop)
    return True


def _simplify_callback_rows(loop: slc.ForOp, fn: func.FuncOp) -> bool:
    if not _qualifies(loop, fn):
        return False
    cbs = [o for o in loop.body.block.ops if isinstance(o, slc.CallbackOp)]
    if len(cbs) != 1 or cbs[0].event.data != "iter":
        return False
    cb = cbs[0]
    local = _local(loop)
    rows: list[SSAValue] = []
    for g in cb.body.block.ops:
        if isinstance(g, slc.FromStreamOp) and g.stream in local and g.stream not in rows \
                and g.stream is not loop.index:
            rows.append(g.stream)
    if not rows or not all(_is_row(v, loop, local) for v in rows):
        return False
    bufs = _block_loads(loop, rows, [f"{v.name_hint or 'v'}_buf" for v in rows], fn)
    new_cb = row_callback(loop, cb, "iter", list(zip(rows, bufs)))
    parent = loop.parent_block()
    assert parent is not None
    parent.insert_op_before(new_cb, loop)
    _remove_loop(loop)
    return True


def _reset_configs(fn: func.FuncOp) -> None:
    """``broadcast`` loops with no vector loop left inside go back to the scalar form they had
    before ``vectorize-access`` (an ``slc.for``; ``slcv.for ... config scalar`` if it collects
    buffers)."""
    for loop in list(loops(fn)):
        if not (isinstance(loop, slcv.ForOp) and loop.config.data == "broadcast") or any(
                isinstance(o, slcv.ForOp) and o.config.data == "vector" for o in loop.walk()):
            continue
        if loop.results:
            loop.config = StringAttr("scalar")
            loop.vlen = IntegerAttr(1, i64)
            continue
        body = loop.detach_region(loop.body)
        term = body.block.last_op
        assert isinstance(term, slcv.YieldOp)
        term.detach()
        term.erase()
        body.block.add_op(slc.YieldOp())
        new = slc.ForOp(loop.lb, loop.ub, loop.step.value.data, body, loop.check_order is not None)
        new.location = loop.location
        replace_op(loop, new)


def simplify_streams(fn: func.FuncOp) -> None:
    """Replace the rows of each qualifying innermost loop of ``fn`` by block loads (module
    docstring), in place."""
    for loop in innermost_loops(fn):
        if isinstance(loop, slcv.ForOp):
            _simplify_collected(loop, fn)
        elif isinstance(loop, slc.ForOp):
            _simplify_callback_rows(loop, fn)
    _reset_configs(fn)


@dataclass(frozen=True)
class SimplifyStreams(ModulePass):
    """Turn the rows (sequential memory streams) of an innermost loop into block loads of the
    enclosing layer (-O3; rules: module docstring)."""

    name = "simplify-streams"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        for fn in functions(op):
            simplify_streams(fn)
