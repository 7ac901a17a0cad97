"""move-to-callback: canonicalise the callbacks of an SLC function.

Three rewrites, each reducing the tokens the access unit pushes per firing without changing what
the core computes (Ember, arXiv 2504.09870, §5, SLC canonicalisation):

1. **Merge** sibling ``slc.callback``s with the same event in one loop body (two callbacks on the
   same ``begin``/``end``/``iter`` become one: one control token instead of two).
2. **Deduplicate** ``slc.from_stream`` of the same stream within a callback (one operand).
3. **Sink** an ``slc.alu_stream`` whose only users are ``from_stream``s in
   callbacks, when every stream operand of it is already an operand of each of those callbacks:
   the op moves into the callbacks as ``arith`` on the core, and the operand disappears.
"""

from __future__ import annotations

from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects import arith, func
from xdsl.dialects.builtin import ModuleOp
from xdsl.ir import Operation, SSAValue
from xdsl.passes import ModulePass

from ..dialects import slc
from ._util import functions, is_loop, is_register, loops

__all__ = ["MoveToCallback", "move_to_callback"]

_ARITH_OF = {"add": arith.AddiOp, "sub": arith.SubiOp, "mul": arith.MuliOp, "shl": arith.ShLIOp,
             "sra": arith.ShRSIOp, "shr": arith.ShRUIOp, "and": arith.AndIOp, "or": arith.OrIOp,
             "xor": arith.XOrIOp, "max": arith.MaxSIOp, "min": arith.MinSIOp}


def _merge(loop: Operation) -> None:
    block = loop.regions[0].block
    prev: slc.CallbackOp | None = None
    for op in list(block.ops):
        if isinstance(op, slc.CallbackOp) and prev is not None and prev.event == op.event:
            term = prev.body.block.last_op
            for inner in list(op.body.block.ops):
                if isinstance(inner, slc.YieldOp):
                    continue
                inner.detach()
                prev.body.block.insert_op_before(inner, term)
            op.detach()
            op.erase()
            continue
        prev = op if isinstance(op, slc.CallbackOp) else None


def _dedupe(cb: slc.CallbackOp) -> None:
    seen: dict[SSAValue, SSAValue] = {}
    for op in list(cb.body.block.ops):
        if isinstance(op, slc.FromStreamOp):
            if op.stream in seen:
                op.result.replace_all_uses_with(seen[op.stream])
                op.detach()
                op.erase()
            else:
                seen[op.stream] = op.result


def _sink(op: slc.AluStreamOp, fn: func.FuncOp) -> bool:
    uses = [u.operation for u in op.results[0].uses]
    if not uses or not all(isinstance(u, slc.FromStreamOp) for u in uses):
        return False
    elem = op.result.type.element_type
    if any((v.type.element_type if isinstance(v.type, slc.StreamType) else v.type) != elem
           for v in op.operands):
        return False
    streams = [v for v in op.operands if not is_register(v, fn)]
    for get in uses:
        cb = get.parent_op()
        have = {o.stream: o.result for o in cb.body.block.ops if isinstance(o, slc.FromStreamOp)}
        if any(s not in have for s in streams):
            return False
    for get in uses:
        cb = get.parent_op()
        have = {o.stream: o.result for o in cb.body.block.ops if isinstance(o, slc.FromStreamOp)}
        args = [have[v] if v in have else v for v in op.operands]
        new = _ARITH_OF[op.op.data](args[0], args[1])
        new.result.name_hint = get.result.name_hint
        new.location = op.location
        last_get = [o for o in cb.body.block.ops if isinstance(o, slc.FromStreamOp)][-1]
        cb.body.block.insert_op_after(new, last_get)
        get.result.replace_all_uses_with(new.result)
        get.detach()
        get.erase()
    if not op.results[0].uses:
        op.detach()
        op.erase()
    return True


def move_to_callback(fn: func.FuncOp) -> None:
    """Apply the three canonicalisations of the module docstring to ``fn`` in place."""
    for loop in list(loops(fn)):
        _merge(loop)
    for cb in [o for o in fn.walk() if isinstance(o, slc.CallbackOp)]:
        _dedupe(cb)
    changed = True
    while changed:
        changed = False
        for op in [o for o in fn.walk() if isinstance(o, slc.AluStreamOp)]:
            if op.op.data in _ARITH_OF and _sink(op, fn):
                changed = True
                break


@dataclass(frozen=True)
class MoveToCallback(ModulePass):
    """Merge, deduplicate and sink computation into callbacks (-O1; rules: module docstring)."""

    name = "move-to-callback"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        for fn in functions(op):
            move_to_callback(fn)
