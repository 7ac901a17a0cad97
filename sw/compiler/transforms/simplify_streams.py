"""simplify-streams: a memory stream with sequential indices collected into a buffer becomes one
block load (Ember, arXiv 2504.09870, §6.3, "simplification of memory streams").

After ``bufferize`` (and ``vectorize-access``) the innermost loop of an embedding gather only
loads ``m[i0, .., d]`` for ``d`` in ``lb .. ub`` and collects the values into a buffer. That is a
row: ``slcv.buf_stream m[i0, .., lb] len (ub - lb)`` in the enclosing layer loads it in one block
(ISA v1 block stream), and the innermost dense layer disappears. The loop is replaced when:

* its step is 1, its bounds are registers, it has no callbacks and its terminator is
  ``slcv.to_buffer`` of memory streams only;
* each such stream's last index is the loop index (lanes or scalar) and its other indices do
  not depend on the loop.

Callbacks beside the removed loop fired on its ``end``; the enclosing loop is now innermost, so
they fire on its ``iter``. Enclosing ``broadcast`` loops without a vector loop inside go back to
``scalar``.
"""

from __future__ import annotations

from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects import arith, func
from xdsl.dialects.builtin import ModuleOp, StringAttr, IntegerAttr, i64
from xdsl.ir import Operation, SSAValue
from xdsl.passes import ModulePass

from ..dialects import slc, slcv
from ._util import constant_int, functions, innermost_loops, is_loop, is_register, loops

__all__ = ["SimplifyStreams", "simplify_streams"]


def _length(fn: func.FuncOp, loop: slcv.ForOp) -> SSAValue:
    if constant_int(loop.lb) == 0:
        return loop.ub
    sub = arith.SubiOp(loop.ub, loop.lb)
    sub.result.name_hint = "len"
    block = fn.body.block
    first_loop = next(o for o in block.ops if is_loop(o))
    block.insert_op_before(sub, first_loop)
    return sub.result


def _simplify(loop: slcv.ForOp, fn: func.FuncOp) -> bool:
    block = loop.body.block
    term = block.last_op
    if not isinstance(term, slcv.ToBufferOp) or loop.step.value.data != 1:
        return False
    if not (is_register(loop.lb, fn) and is_register(loop.ub, fn)):
        return False
    if any(isinstance(o, slc.CallbackOp) for o in block.ops):
        return False
    local = {r for o in block.ops for r in o.results} | set(block.args)
    loads = []
    for v in term.values:
        op = v.owner
        if not isinstance(op, slc.MemStreamOp | slcv.MemStreamOp):
            return False
        if not op.indices or op.indices[-1] is not loop.index:
            return False
        if any(i in local for i in op.indices[:-1]):
            return False
        loads.append(op)
    parent = loop.parent_block()
    assert parent is not None
    length = _length(fn, loop)
    for v, r, ld in zip(term.values, loop.results, loads):
        buf = slcv.BufStreamOp(ld.memref, [*ld.indices[:-1], loop.lb], length)
        buf.location = ld.location
        buf.result.name_hint = r.name_hint
        parent.insert_op_before(buf, loop)
        r.replace_all_uses_with(buf.result)
    # callbacks on the removed loop's end now fire on the enclosing loop's iterations
    for op in parent.ops:
        if isinstance(op, slc.CallbackOp) and op.event.data == "end":
            op.event = StringAttr("iter")
    loop.detach()
    loop.erase(safe_erase=False)
    return True


def _reset_configs(fn: func.FuncOp) -> None:
    for loop in list(loops(fn)):
        if isinstance(loop, slcv.ForOp) and loop.config.data == "broadcast" and not any(
                isinstance(o, slcv.ForOp) and o.config.data == "vector" for o in loop.walk()):
            loop.config = StringAttr("scalar")
            loop.vlen = IntegerAttr(1, i64)


def simplify_streams(fn: func.FuncOp) -> None:
    """Replace each qualifying innermost loop by block loads (module docstring), in place."""
    for loop in innermost_loops(fn):
        if isinstance(loop, slcv.ForOp):
            _simplify(loop, fn)
    _reset_configs(fn)


@dataclass(frozen=True)
class SimplifyStreams(ModulePass):
    """``simplify-streams``: sequential memory streams into a buffer -> block loads."""

    name = "simplify-streams"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        for fn in functions(op):
            simplify_streams(fn)
