"""Helpers shared by the SLC/SLCV passes."""

from __future__ import annotations

from collections.abc import Callable, Iterator

from xdsl.dialects import arith, func, scf
from xdsl.dialects.builtin import IndexType, IntegerAttr, IntegerType, ModuleOp
from xdsl.ir import Block, Operation, OpResult, Region, SSAValue

from ..dialects import dlc, slc, slcv

__all__ = ["functions", "loops", "is_loop", "innermost_loops", "constant_int", "index_constant",
           "function_block", "is_register", "replace_op", "child_loop", "parent_loop",
           "dlc_access_and_compute", "new_callback", "core_row_loop"]


def functions(module: ModuleOp) -> list[func.FuncOp]:
    return [f for f in module.ops if isinstance(f, func.FuncOp)]


def is_loop(op: Operation) -> bool:
    return isinstance(op, slc.ForOp | slcv.ForOp)


def loops(fn: func.FuncOp) -> Iterator[Operation]:
    """Every access-side loop of ``fn`` (``slc.for``/``slcv.for``), outermost first."""
    for op in fn.walk():
        if is_loop(op):
            yield op


def innermost_loops(fn: func.FuncOp) -> list[Operation]:
    return [l for l in loops(fn) if not any(is_loop(o) for o in l.regions[0].block.ops)]


def child_loop(loop: Operation) -> Operation | None:
    return next((o for o in loop.regions[0].block.ops if is_loop(o)), None)


def parent_loop(op: Operation) -> Operation | None:
    p = op.parent_op()
    while p is not None and not is_loop(p):
        p = p.parent_op()
    return p


def constant_int(value: SSAValue) -> int | None:
    if isinstance(value, OpResult) and isinstance(value.op, arith.ConstantOp) \
            and isinstance(value.op.value, IntegerAttr):
        return value.op.value.value.data
    return None


def function_block(fn: func.FuncOp) -> Block:
    return fn.body.block


def is_register(value: SSAValue, fn: func.FuncOp) -> bool:
    """A function-level integer value (usable by both the access unit and the core)."""
    owner = value.owner
    block = owner if isinstance(owner, Block) else owner.parent_block()
    return block is fn.body.block and isinstance(value.type, IndexType | IntegerType)


def index_constant(fn: func.FuncOp, value: int, before: Operation | None = None) -> SSAValue:
    """A function-level ``arith.constant value : index`` (reused if one exists at the top)."""
    block = fn.body.block
    for op in block.ops:
        if isinstance(op, arith.ConstantOp) and isinstance(op.result.type, IndexType) \
                and isinstance(op.value, IntegerAttr) and op.value.value.data == value:
            return op.result
    c = arith.ConstantOp(IntegerAttr(value, IndexType()))
    c.result.name_hint = f"c{value}" if value >= 0 else f"cm{-value}"
    block.insert_op_before(c, block.first_op)
    return c.result


def replace_op(old: Operation, new: Operation) -> None:
    """Insert ``new`` where ``old`` is and erase ``old`` (results replaced one for one)."""
    block = old.parent_block()
    assert block is not None
    block.insert_op_before(new, old)
    for a, b in zip(old.results, new.results):
        a.replace_all_uses_with(b)
    old.detach()
    old.erase(safe_erase=False)


def dlc_access_and_compute(fn: func.FuncOp):
    """A DLC function's ``dlc.configure_access`` op, its ``dlc.compute_loop`` op and the
    traversal units of the access configuration by layer (``{layer: dlc.TuOp}``); None when the
    function lacks either op (it is not in DLC form)."""
    block = fn.body.block
    access = next((o for o in block.ops if isinstance(o, dlc.ConfigureAccessOp)), None)
    compute = next((o for o in block.ops if isinstance(o, dlc.ComputeLoopOp)), None)
    if access is None or compute is None:
        return None
    tus = {o.layer.value.data: o for o in access.body.block.ops if isinstance(o, dlc.TuOp)}
    return access, compute, tus


def new_callback(event: str, like: Operation) -> tuple[slc.CallbackOp,
                                                      Callable[[Operation], Operation]]:
    """A new (unplaced) ``slc.callback`` on ``event`` at ``like``'s location, and ``put``: it
    inserts an op at the end of the callback's body (before its terminator) and returns it."""
    cb = slc.CallbackOp(event)
    cb.location = like.location
    block = cb.body.block
    term = block.last_op

    def put(op: Operation) -> Operation:
        block.insert_op_before(op, term)
        return op

    return cb, put


def core_row_loop(put: Callable[[Operation], Operation], lb: SSAValue, ub: SSAValue) -> Block:
    """``put`` an ``arith.constant 1 : index`` (``%c1``) and an ``scf.for`` over ``lb .. ub`` step
    1 with no iteration values; the loop's body block (one ``index`` argument, no ops yet: the
    caller fills it and ends it with ``scf.yield``)."""
    c1 = put(arith.ConstantOp(IntegerAttr(1, IndexType())))
    c1.results[0].name_hint = "c1"
    body = Block(arg_types=[IndexType()])
    put(scf.ForOp(lb, ub, c1.results[0], [], Region(body)))
    return body
