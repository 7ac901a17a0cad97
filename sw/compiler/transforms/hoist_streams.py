"""hoist-streams: move loop-invariant ALU streams of the DLC access program to outer layers.

Address linearisation puts ``row * dim`` in the layer of the innermost index it is added to, so
the access unit recomputes it on every step of that layer although it changes only with the
row (Ember, arXiv 2504.09870, §6.3: hoisting of loop-invariant streams). An ``dlc.alu_stream``
whose operands are all streams of layers ``< k`` (or registers, with at least one stream) moves to
the deepest of those layers, right before the next layer's ``dlc.tu``; repeated until nothing
moves. ``add x, 0`` and ``mul x, 1`` left by linearisation are folded first. Memory streams are
not hoisted: a load hoisted out of a loop could fault where the loop
would not have run.
"""

from __future__ import annotations

from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects import func
from xdsl.dialects.builtin import IntegerAttr, ModuleOp, i64
from xdsl.ir import SSAValue
from xdsl.passes import ModulePass

from ..dialects import dlc
from ._util import functions

__all__ = ["HoistStreams", "hoist_streams"]


def _layer_of(v: SSAValue) -> int:
    """The layer of a DLC stream value, -1 for a register (a function-level value)."""
    owner = v.owner
    layer = getattr(owner, "layer", None)
    if isinstance(owner, dlc.ConfigureAccessOp) or not isinstance(layer, IntegerAttr):
        return -1
    return layer.value.data


def _fold_identities(block) -> None:
    """``add x, 0``/``sub x, 0``/``mul x, 1`` of a stream -> ``x`` (left by linearisation)."""
    from ._util import constant_int
    for op in list(block.ops):
        if isinstance(op, dlc.AluStreamOp) and op.lhs.type == op.result.type and (
                (op.op.data in ("add", "sub") and constant_int(op.rhs) == 0)
                or (op.op.data == "mul" and constant_int(op.rhs) == 1)):
            op.result.replace_all_uses_with(op.lhs)
            op.detach()
            op.erase()


def hoist_streams(fn: func.FuncOp) -> None:
    """Hoist loop-invariant ALU streams of ``fn``'s configure_access (module docstring); a
    function not in DLC form (no ``dlc.configure_access``) is left alone, as the other DLC
    passes leave it."""
    access = next((o for o in fn.body.block.ops if isinstance(o, dlc.ConfigureAccessOp)), None)
    if access is None:
        return
    block = access.body.block
    _fold_identities(block)
    moved = True
    while moved:
        moved = False
        tus = {o.layer.value.data: o for o in block.ops if isinstance(o, dlc.TuOp)}
        for op in list(block.ops):
            if not isinstance(op, dlc.AluStreamOp):
                continue
            k = op.layer.value.data
            target = max(_layer_of(v) for v in op.operands)
            if 0 <= target < k and dlc.stream_lanes(op.result.type) == 1:
                op.layer = IntegerAttr(target, i64)
                op.detach()
                block.insert_op_before(op, tus[target + 1])
                moved = True


@dataclass(frozen=True)
class HoistStreams(ModulePass):
    """Hoist loop-invariant ALU streams to the outermost layer they depend on (-O3)."""

    name = "hoist-streams"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        for fn in functions(op):
            hoist_streams(fn)
