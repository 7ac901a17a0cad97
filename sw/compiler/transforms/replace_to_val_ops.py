"""replace-to-val-ops: keep the outermost loop index on the core instead of pushing it each firing.

Ember's ``ReplaceToValOps`` (arXiv 2504.09870, §6.3; DLC ``get_var``/``increment_var``): the
bag index ``b`` of an EmbeddingBag, the row ``i`` of an SpMM, is an operand of the callbacks of
the inner layers — one data token per looked-up row at ``-O3`` — although the core can count it
itself: layer 0 runs ``lb, lb + step, ...`` once, in order, and the ISA fires layer 1's ``BEGIN``
and ``END`` once per iteration of layer 0, even when layer 1's traversal is empty (docs/isa.md,
"Execution order"). So for the index of layer 0, with a register lower bound and a scalar
(non-vector) layer, this pass:

1. sets a **core variable** before the compute loop (``dlc.set_var N, %lb``);
2. replaces every registration of the index (``dlc.register_operand ... %b``) and its pop in the
   callback by ``dlc.get_var N``;
3. advances the variable once per iteration of layer 0, in a callback that fires exactly once per
   iteration, chosen in this order:

   * the first callback of layer 0's ``iter`` event, or else of layer 1's ``begin``: it fires
     first in the iteration, so it increments *first* (``dlc.increment_var N by step`` at the top
     of the callback) and the variable starts at ``lb - step``;
   * the last callback of layer 1's ``end``: it fires last in the iteration, so it increments
     *last* (at the bottom), the variable starting at ``lb``;
   * none of these: a new callback on layer 1's ``end`` whose only work is the increment (one
     control token per iteration of layer 0 instead of one data token per firing that used the
     index: fewer tokens unless layer 0's iterations average less than one such firing — bags
     that are mostly empty).

It runs on the DLC after ``hoist-streams`` and before ``align-queues`` (``-O3``), on unpacked
registrations; an index registered with ``packed`` (IR already aligned), one of a deeper layer
(it restarts at each traversal of its layer: not done), of a vector layer, or with a lower bound
computed by the access unit, is left as it is.
"""

from __future__ import annotations

from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects import arith, func
from xdsl.dialects.builtin import IndexType, IntegerAttr, ModuleOp
from xdsl.ir import Operation
from xdsl.passes import ModulePass

from ..dialects import dlc
from ._util import constant_int, dlc_access_and_compute, functions, index_constant
from .align_queues import _registrations
from .hoist_streams import _layer_of

__all__ = ["ReplaceToValOps", "replace_to_val_ops"]

_POPS = (dlc.PopOperandOp, dlc.PopBufferOp, dlc.PopPackedOp)


def _callbacks(access: dlc.ConfigureAccessOp) -> dict[tuple[int, str], list[int]]:
    """(layer, event) -> callback ids registered on it, in action order."""
    out: dict[tuple[int, str], list[int]] = {}
    for op in access.body.block.ops:
        if isinstance(op, dlc.RegisterCallbackOp):
            out.setdefault((op.layer.value.data, op.event.data), []).append(op.id.value.data)
    return out


def _insert_at_end(block, op: Operation) -> None:
    last = block.last_op
    if isinstance(last, dlc.YieldOp):
        block.insert_op_before(op, last)
    else:
        block.add_op(op)


def replace_to_val_ops(fn: func.FuncOp) -> list[int]:
    """Apply the module docstring's rewrite to a DLC function in place; the variables made."""
    block = fn.body.block
    found = dlc_access_and_compute(fn)
    if found is None:
        return []
    access, compute, tus = found
    tu = tus.get(0)
    if tu is None or tu.lanes != 1 or _layer_of(tu.lb) != -1:
        return []
    cases = {c.id.value.data: c for c in compute.body.block.ops if isinstance(c, dlc.CaseOp)}
    uses = []
    for cid, (operands, _) in _registrations(access).items():
        case = cases.get(cid)
        if case is None:
            return []
        pops = [o for o in case.walk() if isinstance(o, _POPS)]   # in program order
        for reg, pop in zip(operands, pops):
            if reg.value is not tu.index:
                continue
            if len(pops) != len(operands) or not isinstance(pop, dlc.PopOperandOp) \
                    or reg.packed is not None or reg.join is not None:
                return []                # not the shape convert-slc-to-dlc emits: leave it
            uses.append((reg, pop))
    if not uses:
        return []
    var = 1 + max((o.var.value.data for o in fn.walk()
                   if isinstance(o, dlc.SetVarOp | dlc.GetVarOp | dlc.IncrementVarOp)), default=-1)
    step = tu.step.value.data
    events = _callbacks(access)
    first = events.get((0, "iter")) or events.get((1, "begin"))
    init = tu.lb
    if first:                                        # increment first, start at lb - step
        host = cases[first[0]]
        host.body.block.insert_op_before(dlc.IncrementVarOp(var, step), host.body.block.first_op)
        lb = constant_int(tu.lb)
        if lb is not None and isinstance(tu.lb.type, IndexType):
            init = index_constant(fn, lb - step)
        else:
            c = arith.ConstantOp(IntegerAttr(step, tu.lb.type))
            c.result.name_hint = f"c{step}"
            sub = arith.SubiOp(tu.lb, c.result)
            sub.result.name_hint = f"var{var}_init"
            block.insert_ops_before([c, sub], compute)
            init = sub.result
    elif events.get((1, "end")):                     # increment last, start at lb
        host = cases[events[(1, "end")][-1]]
        _insert_at_end(host.body.block, dlc.IncrementVarOp(var, step))
    elif 1 in tus:                                   # a new callback on layer 1's end
        cid = 1 + max(cases, default=-1)
        _insert_at_end(access.body.block, dlc.RegisterCallbackOp(1, "end", cid))
        new = dlc.CaseOp(cid)
        _insert_at_end(new.body.block, dlc.IncrementVarOp(var, step))
        _insert_at_end(compute.body.block, new)
    else:
        return []
    block.insert_op_before(dlc.SetVarOp(var, init), compute)
    for reg, pop in uses:
        get = dlc.GetVarOp(var, pop.result.type)
        get.result.name_hint = pop.result.name_hint
        pop.parent_block().insert_op_before(get, pop)
        pop.result.replace_all_uses_with(get.result)
        pop.detach(); pop.erase()
        reg.detach(); reg.erase()
    return [var]


@dataclass(frozen=True)
class ReplaceToValOps(ModulePass):
    """Keep layer 0's index (the bag, the CSR row) in a core variable instead of pushing it (-O3)."""

    name = "replace-to-val-ops"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        for fn in functions(op):
            replace_to_val_ops(fn)
