"""bufferize: one embedding row as one buffered operand (Ember, arXiv 2504.09870, §6.2).

At ``-O0``/``-O1`` the innermost loop of an embedding gather pushes every element of a row with
its own callback firing: ``(b, d, v)`` and a control token per element (per vector at ``-O1``).
Bufferisation turns the values that loop's callback reads into **buffers** — compound operands
that each hold a whole row — and runs the callback once per row. A loop qualifies when its step
is 1, its bounds are registers, it has exactly one callback, on ``iter``, and it is nested in
another loop. Its *buffered* values are the loop-local streams the callback reads.

* **Rows → block streams** (every buffered value is a row: an ``slc.mem_stream m[i0, .., d]``
  whose last index is the loop index and whose other indices do not depend on the loop). Each
  row becomes its own ``slcv.buf_stream m[i0, .., lb] len (ub - lb)`` (ISA v1 ``BLOCK`` stream)
  in the enclosing layer and the loop disappears: one block operand per row per iteration of the
  enclosing loop, each row contiguous in the data queue. The callback fires on the enclosing
  loop's ``iter``; it takes the rows (``slcv.from_buffer``, first), then the streams of outer
  layers it used, and runs its original body in an ``scf.for`` over the row on the core (element
  ``d - lb`` of each row is the old value). Callbacks beside the removed loop (``begin``/``end``,
  which fired on its layer) fire on the enclosing loop's ``iter`` too, in program order.
* **One other value → collected buffer**: the loop stays, becomes
  ``slcv.for ... -> !slcv.buffer<T>`` whose ``slcv.to_buffer`` terminator collects the value
  over the loop's traversal (pushed by the layer's ``iter`` firings, ``vectorize-access`` then
  makes them vectors), and the callback moves after it, on the loop's ``end``.
* **Several values, not all rows**: not bufferised. One traversal pushes the values of one
  firing together (``v0 w0 v1 w1 ...``), so collected buffers would reach the queue interleaved
  while the callback reads each whole; ``convert-slc-to-dlc`` refuses ``slcv.to_buffer`` of
  several values for that reason.

The core does the same arithmetic in the same order, so results are unchanged bit for bit.
"""

from __future__ import annotations

from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects import arith, func, memref, scf
from xdsl.dialects.builtin import IndexType, IntegerAttr, ModuleOp, StringAttr
from xdsl.ir import Block, Operation, Region, SSAValue
from xdsl.passes import ModulePass

from ..dialects import slc, slcv
from ._util import constant_int, functions, innermost_loops, is_loop, is_register, parent_loop

__all__ = ["Bufferize", "bufferize"]


def _candidate(loop: Operation, fn: func.FuncOp) -> slc.CallbackOp | None:
    if not isinstance(loop, slc.ForOp) or loop.step.value.data != 1:
        return None
    if not (is_register(loop.lb, fn) and is_register(loop.ub, fn)) or parent_loop(loop) is None:
        return None
    cbs = [o for o in loop.body.block.ops if isinstance(o, slc.CallbackOp)]
    if len(cbs) != 1 or cbs[0].event.data != "iter":
        return None
    return cbs[0]


def _is_row(value: SSAValue, loop: slc.ForOp, local: set[SSAValue]) -> bool:
    """``value`` is ``m[i0, .., d]`` with ``d`` the loop index and ``i0, ..`` loop-invariant."""
    op = value.owner
    return (isinstance(op, slc.MemStreamOp) and len(op.indices) > 0
            and op.indices[-1] is loop.index and not any(i in local for i in op.indices[:-1]))


def _length(fn: func.FuncOp, loop: slc.ForOp) -> SSAValue:
    """A register with the row length ``ub - lb`` (``ub`` itself when ``lb`` is 0)."""
    if constant_int(loop.lb) == 0:
        return loop.ub
    sub = arith.SubiOp(loop.ub, loop.lb)
    sub.result.name_hint = "len"
    block = fn.body.block
    block.insert_op_before(sub, next(o for o in block.ops if is_loop(o)))
    return sub.result


def _row_callback(loop: slc.ForOp, cb: slc.CallbackOp, event: str,
                  buffers: list[tuple[SSAValue, SSAValue]]) -> slc.CallbackOp:
    """The callback that runs ``cb``'s body once per row: ``slcv.from_buffer`` of each buffer
    (``buffers``: (old stream, buffer value)), then the outer streams ``cb`` read, then an
    ``scf.for`` over the loop's range on the core."""
    local = {r for o in loop.body.block.ops for r in o.results}
    gets = [o for o in cb.body.block.ops if isinstance(o, slc.FromStreamOp)]
    new_cb = slc.CallbackOp(event)
    new_cb.location = cb.location
    eblock = new_cb.body.block
    eterm = eblock.last_op

    def put(op: Operation) -> Operation:
        eblock.insert_op_before(op, eterm)
        return op

    rows = {}
    for v, buf in buffers:
        fb = put(slcv.FromBufferOp(buf))
        fb.results[0].name_hint = f"{v.name_hint or 'v'}_row"
        rows[v] = fb.results[0]
    outer: dict[SSAValue, SSAValue] = {}
    for g in gets:
        if g.stream not in local and g.stream is not loop.index and g.stream not in outer:
            n = put(slc.FromStreamOp(g.stream))
            n.results[0].name_hint = g.result.name_hint
            outer[g.stream] = n.results[0]
    c1 = put(arith.ConstantOp(IntegerAttr(1, IndexType())))
    c1.results[0].name_hint = "c1"
    row_body = Block(arg_types=[IndexType()])
    idx = row_body.args[0]
    idx.name_hint = next((g.result.name_hint for g in gets if g.stream is loop.index), None) \
        or loop.index.name_hint
    put(scf.ForOp(loop.lb, loop.ub, c1.results[0], [], Region(row_body)))
    if constant_int(loop.lb) == 0:
        k = idx
    else:
        sub = arith.SubiOp(idx, loop.lb)
        sub.result.name_hint = "k"
        row_body.add_op(sub)
        k = sub.result
    mapper: dict[SSAValue, SSAValue] = {}
    for g in gets:
        if g.stream is loop.index:
            mapper[g.result] = idx
        elif g.stream in rows:
            ld = memref.LoadOp.get(rows[g.stream], [k])
            ld.res.name_hint = g.result.name_hint
            row_body.add_op(ld)
            mapper[g.result] = ld.res
        else:
            mapper[g.result] = outer[g.stream]
    for op in cb.body.block.ops:
        if isinstance(op, slc.FromStreamOp | slc.YieldOp):
            continue
        row_body.add_op(op.clone(value_mapper=mapper))
    row_body.add_op(scf.YieldOp())
    return new_cb


def _block_rows(loop: slc.ForOp, cb: slc.CallbackOp, rows: list[SSAValue], fn: func.FuncOp) -> None:
    """Every buffered value is a row: one ``slcv.buf_stream`` each, the loop removed."""
    pblock = loop.parent_block()
    assert pblock is not None
    length = _length(fn, loop)
    buffers = []
    for v in rows:
        ld = v.owner
        assert isinstance(ld, slc.MemStreamOp)
        buf = slcv.BufStreamOp(ld.memref, [*ld.indices[:-1], loop.lb], length)
        buf.location = ld.location
        buf.result.name_hint = f"{v.name_hint or 'v'}_buf"
        pblock.insert_op_before(buf, loop)
        buffers.append((v, buf.result))
    # callbacks beside the loop fired on its layer (begin/end); that layer is gone, so they
    # fire on the enclosing loop's iterations, in program order around the row callback
    for op in pblock.ops:
        if isinstance(op, slc.CallbackOp) and op.event.data in ("begin", "end"):
            op.event = StringAttr("iter")
    pblock.insert_op_before(_row_callback(loop, cb, "iter", buffers), loop)
    loop.detach()
    loop.erase(safe_erase=False)


def _collect(loop: slc.ForOp, cb: slc.CallbackOp, value: SSAValue) -> None:
    """One buffered value that is not a row: collect it over the loop (``slcv.to_buffer``)."""
    new = slcv.ForOp(loop.lb, loop.ub, 1, 1, "scalar", None, loop.check_order is not None,
                     [slcv.BufferType(value.type.element_type)])
    new.location = loop.location
    new.index.name_hint = loop.index.name_hint
    mapping: dict[SSAValue, SSAValue] = {loop.index: new.index}
    nblock = new.body.block
    nterm = nblock.last_op
    for op in loop.body.block.ops:
        if isinstance(op, slc.CallbackOp | slc.YieldOp):
            continue
        c = op.clone(value_mapper=mapping)
        for a, b in zip(op.results, c.results):
            b.name_hint = a.name_hint
            mapping[a] = b
        nblock.insert_op_before(c, nterm)
    nterm.detach()
    nterm.erase()
    nblock.add_op(slcv.ToBufferOp([mapping[value]]))
    new.results[0].name_hint = f"{value.name_hint or 'v'}_buf"
    end = _row_callback(loop, cb, "end", [(value, new.results[0])])
    pblock = loop.parent_block()
    assert pblock is not None
    pblock.insert_op_before(new, loop)
    pblock.insert_op_after(end, new)
    loop.detach()
    loop.erase(safe_erase=False)


def _bufferize_loop(loop: slc.ForOp, cb: slc.CallbackOp, fn: func.FuncOp) -> bool:
    """Rewrite one qualifying loop (module docstring); False if it is left as it is."""
    body = loop.body.block
    local = {r for o in body.ops for r in o.results}
    buffered: list[SSAValue] = []
    for g in cb.body.block.ops:
        if isinstance(g, slc.FromStreamOp) and g.stream in local and g.stream not in buffered:
            buffered.append(g.stream)
    if buffered and all(_is_row(v, loop, local) for v in buffered):
        _block_rows(loop, cb, buffered, fn)
    elif len(buffered) == 1:
        _collect(loop, cb, buffered[0])
    else:
        return False
    return True


def bufferize(fn: func.FuncOp) -> None:
    """Bufferise each innermost loop of ``fn`` that qualifies (module docstring), in place."""
    for loop in innermost_loops(fn):
        cb = _candidate(loop, fn)
        if cb is not None:
            _bufferize_loop(loop, cb, fn)


@dataclass(frozen=True)
class Bufferize(ModulePass):
    """``bufferize``: innermost element loops -> buffered row operands (module docstring)."""

    name = "bufferize"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        for fn in functions(op):
            bufferize(fn)
