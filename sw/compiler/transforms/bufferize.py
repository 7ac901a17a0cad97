"""bufferize: one embedding row as one buffered operand (Ember, arXiv 2504.09870, §6.2).

At ``-O0``/``-O1`` the innermost loop of an embedding gather pushes every element of a row with
its own callback firing: ``(b, d, v)`` and a control token per element (per vector at ``-O1``).
Bufferisation turns the value that loop's callback reads into a **buffer** — a compound operand
that holds the whole row — and runs the callback once per row, on the loop's ``end``. A loop
qualifies when its step is 1, its bounds are registers, it has exactly one callback, on
``iter``, and it is nested in another loop. Its *buffered* values are the loop-local streams the
callback reads.

* **One buffered value → collected buffer**: the loop becomes
  ``slcv.for ... vlen 1 config scalar -> !slcv.buffer<T>`` whose ``slcv.to_buffer`` terminator
  collects the value over the loop's traversal (pushed by the layer's ``iter`` firings;
  ``vectorize-access`` then makes them ``ceil(n/L)`` vectors), and the callback moves after the
  loop, on its ``end``: it takes the buffer first (``slcv.from_buffer``: its elements were pushed
  during the traversal, before the ``end`` firing), then the streams of outer layers it used, and
  runs its original body in an ``scf.for`` over the row on the core (element ``d - lb`` of the
  buffer is the old value).
* **Several buffered values → not bufferised** (the loop keeps its ``-O1`` form). One traversal
  pushes the values of one firing together (``h0 r0 t0 h1 r1 t1 ...``, per vector once
  vectorised), so several collected buffers would reach the queue interleaved while the callback
  pops each whole; ``convert-slc-to-dlc`` refuses ``slcv.to_buffer`` of several values for that
  reason. Giving each value its own loop is no ISA form (one TU per layer, layers in a chain),
  and a de-interleaving pop would be a new core-side operation; when every value is a row
  (TransE's h/r/t, the K/V gather), ``simplify-streams`` (``-O3``) loads each as its own block
  stream instead.

The core does the same arithmetic in the same order, so results are unchanged bit for bit.
"""

from __future__ import annotations

from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects import arith, func, memref, scf
from xdsl.dialects.builtin import ModuleOp
from xdsl.ir import Operation, SSAValue
from xdsl.passes import ModulePass

from ..dialects import slc, slcv
from ._util import (constant_int, core_row_loop, functions, innermost_loops, is_register,
                    new_callback, parent_loop)

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


def row_callback(loop: slc.ForOp, cb: slc.CallbackOp, event: str,
                 buffers: list[tuple[SSAValue, SSAValue]]) -> slc.CallbackOp:
    """A new (unplaced) callback on ``event`` that runs ``cb``'s body once per row.

    ``cb`` is the ``iter`` callback of ``loop`` (step 1, register bounds); ``buffers`` pairs each
    loop-local stream ``cb`` reads with the buffer that now holds its whole row (a collected
    ``slcv.for`` result or an ``slcv.buf_stream``). The new callback pops ``slcv.from_buffer`` of
    each buffer first, in ``buffers`` order, then the outer streams ``cb`` read, then runs ``cb``'s
    body in an ``scf.for`` over ``lb .. ub`` on the core, reading element ``d - lb`` of each row
    where ``cb`` read the stream. Shared with ``simplify-streams``."""
    local = {r for o in loop.body.block.ops for r in o.results}
    gets = [o for o in cb.body.block.ops if isinstance(o, slc.FromStreamOp)]
    new_cb, put = new_callback(event, cb)
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
    row_body = core_row_loop(put, loop.lb, loop.ub)
    idx = row_body.args[0]
    idx.name_hint = next((g.result.name_hint for g in gets if g.stream is loop.index), None) \
        or loop.index.name_hint
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


def _collect(loop: slc.ForOp, cb: slc.CallbackOp, value: SSAValue) -> None:
    """The one buffered ``value`` of ``loop``: collected over the loop (``slcv.to_buffer``),
    ``cb`` moved after it as an ``end`` callback over the row."""
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
    end = row_callback(loop, cb, "end", [(value, new.results[0])])
    pblock = loop.parent_block()
    assert pblock is not None
    pblock.insert_op_before(new, loop)
    pblock.insert_op_after(end, new)
    loop.detach()
    loop.erase(safe_erase=False)


def _bufferize_loop(loop: slc.ForOp, cb: slc.CallbackOp) -> bool:
    """Rewrite one qualifying loop (module docstring); False if it is left as it is."""
    local = {r for o in loop.body.block.ops for r in o.results}
    buffered: list[SSAValue] = []
    for g in cb.body.block.ops:
        if isinstance(g, slc.FromStreamOp) and g.stream in local and g.stream not in buffered:
            buffered.append(g.stream)
    if len(buffered) != 1:
        return False
    _collect(loop, cb, buffered[0])
    return True


def bufferize(fn: func.FuncOp) -> None:
    """Bufferise each innermost loop of ``fn`` that qualifies (module docstring), in place."""
    for loop in innermost_loops(fn):
        cb = _candidate(loop, fn)
        if cb is not None:
            _bufferize_loop(loop, cb)


@dataclass(frozen=True)
class Bufferize(ModulePass):
    """Turn innermost element loops into buffered row operands, one per loop (-O2; rules: module docstring)."""

    name = "bufferize"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        for fn in functions(op):
            bufferize(fn)
