"""align-queues: queue alignment of the DLC marshaling (Ember, arXiv 2504.09870, §6.3).

Without it every operand element is one 64-bit data token (an f32 wastes half of it). This pass:

1. **drops redundant operands**: an operand the callback never uses, and the second registration
   of a value already registered for the same firing (its pop reuses the first);
2. **drops redundant control tokens**: a callback left with no work (no ops besides its pops) is
   removed with its registrations; two callbacks registered back to back on the same layer and
   event (only the second one's operands between them: TransE's squared distance and square
   root, both on layer 0's ``iter`` once ``simplify-streams`` removed the element layer) become
   one, whose case runs the first body, then the second;
3. **packs** the rest (ISA v1 §7.5): every ``dlc.register_operand`` gets ``packed`` (elements at
   their natural size: 4 bytes for f32/i32, 8 for index/i64/f64), and ``join`` when the next
   operand of the same firing is a scalar or vector too, so consecutive scalars/vectors share
   tokens; buffers start at a token boundary. In the ``dlc.case`` each joined run of pops becomes
   one ``dlc.pop_packed`` and buffer pops become ``dlc.pop_buffer ... packed``.

Tokens per firing after packing: ``ceil(bytes / 8)`` per joined run, ``ceil(n * size / 8)`` per
row buffer, ``ceil(L * size / 8)`` per vector of a collected buffer.
"""

from __future__ import annotations

from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects import func
from xdsl.dialects.builtin import ModuleOp, UnitAttr
from xdsl.ir import Operation
from xdsl.passes import ModulePass

from ..dialects import dlc
from ._util import dlc_access_and_compute, functions

__all__ = ["AlignQueues", "align_queues"]

_POPS = (dlc.PopOperandOp, dlc.PopBufferOp)


def _registrations(access: dlc.ConfigureAccessOp) -> dict[int, tuple[list, Operation]]:
    """callback id -> (its operand registrations in order, its register_callback)."""
    out: dict[int, tuple[list, Operation]] = {}
    pending: list = []
    for op in access.body.block.ops:
        if isinstance(op, dlc.RegisterOperandOp):
            pending.append(op)
        elif isinstance(op, dlc.RegisterCallbackOp):
            out[op.id.value.data] = (pending, op)
            pending = []
    return out


def _merge_adjacent_callbacks(access: dlc.ConfigureAccessOp, compute: dlc.ComputeLoopOp) -> None:
    """Callback X and the next callback Y registered on the same (layer, event) with only Y's
    operands between them fire back to back: one control token runs X's body, then Y's."""
    cases = {c.id.value.data: c for c in compute.body.block.ops if isinstance(c, dlc.CaseOp)}
    prev = None
    for op in list(access.body.block.ops):
        if isinstance(op, dlc.RegisterOperandOp):
            if prev is not None and (op.layer, op.event) != (prev.layer, prev.event):
                prev = None
            continue
        if not isinstance(op, dlc.RegisterCallbackOp):
            prev = None
            continue
        if prev is not None and (op.layer, op.event) == (prev.layer, prev.event):
            x, y = cases.get(prev.id.value.data), cases.get(op.id.value.data)
            if x is not None and y is not None and x is not y:
                body = y.body.block
                first = body.first_op
                for moved in [o for o in x.body.block.ops if not isinstance(o, dlc.YieldOp)]:
                    moved.detach()
                    body.insert_op_before(moved, first)
                prev.detach(); prev.erase()
                x.detach(); x.erase()
                del cases[x.id.value.data]
        prev = op


def align_queues(fn: func.FuncOp) -> None:
    """Apply the rewrites of the module docstring to a DLC function in place; a function not in
    DLC form (no ``dlc.configure_access`` and ``dlc.compute_loop``) is left alone."""
    found = dlc_access_and_compute(fn)
    if found is None:
        return
    access, compute, _ = found
    _merge_adjacent_callbacks(access, compute)
    regs = _registrations(access)
    for case in [c for c in compute.body.block.ops if isinstance(c, dlc.CaseOp)]:
        cid = case.id.value.data
        operands, reg_cb = regs[cid]
        pops = [o for o in case.walk() if isinstance(o, _POPS)]   # in program order
        if len(pops) != len(operands):
            continue     # not the shape slc_to_dlc emits: leave it
        pairs = list(zip(operands, pops))
        kept = []
        first: dict = {}
        for reg, pop in pairs:
            key = (reg.value, reg.layer.value.data, reg.event.data)
            if isinstance(pop, dlc.PopOperandOp) and key in first:
                pop.result.replace_all_uses_with(first[key].result)
            if not pop.results[0].uses:
                pop.detach(); pop.erase()
                reg.detach(); reg.erase()
                continue
            first.setdefault(key, pop)
            kept.append((reg, pop))
        body = [o for o in case.body.block.ops if not isinstance(o, dlc.YieldOp)]
        if not body:
            for reg, _ in kept:
                reg.detach(); reg.erase()
            reg_cb.detach(); reg_cb.erase()
            case.detach(); case.erase()
            continue
        # pack
        for n, (reg, pop) in enumerate(kept):
            reg.packed = UnitAttr()
            nxt = kept[n + 1][0] if n + 1 < len(kept) else None
            if nxt is not None and isinstance(pop, dlc.PopOperandOp) \
                    and not isinstance(reg.value.type, dlc.BufferType) \
                    and not isinstance(nxt.value.type, dlc.BufferType) \
                    and (nxt.layer, nxt.event) == (reg.layer, reg.event) \
                    and isinstance(kept[n + 1][1], dlc.PopOperandOp):
                reg.join = UnitAttr()
        run: list = []
        for reg, pop in kept + [(None, None)]:
            if pop is not None and isinstance(pop, dlc.PopOperandOp):
                run.append(pop)
                if reg.join is not None:
                    continue
            if run:
                packed = dlc.PopPackedOp([p.result.type for p in run])
                packed.location = run[0].location
                run[0].parent_block().insert_op_before(packed, run[0])
                for p, r in zip(run, packed.values):
                    r.name_hint = p.result.name_hint
                    p.result.replace_all_uses_with(r)
                    p.detach(); p.erase()
                run = []
            if isinstance(pop, dlc.PopBufferOp):
                pop.packed = UnitAttr()


@dataclass(frozen=True)
class AlignQueues(ModulePass):
    """Drop redundant operands and callbacks; pack operands into 64-bit tokens (-O3)."""

    name = "align-queues"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        for fn in functions(op):
            align_queues(fn)
