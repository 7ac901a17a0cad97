"""Values carried by a decoupled loop (``scf.for ... iter_args``) kept on the core.

Ember's ``slc.for`` carries loop values; the access unit itself has no place for them (a layer
has an index and streams, nothing the core computes). A decoupled loop's carried values are
computed on the core anyway — in its callbacks — so each one becomes a one-element core memref
(a *cell*, ``memref.alloc() : memref<1xT>`` at function level) before decoupling:

* the initial value is stored to the cell before the loop (in the parent's ``begin`` callback,
  or the prologue for the outermost loop);
* every use of the loop's block argument reads the cell right before the using op (so each
  callback that uses it reads it itself: a core value never crosses callbacks);
* the ``scf.yield`` operands are stored to the cell at the end of the body (in the callback
  where the body's last ops run);
* every use of the loop's result reads the cell right before the using op, after the loop.

In program order this is exactly the carried value of ``scf.for``'s semantics (each iteration
reads what the previous one yielded; the result is the last yield, or the initial value when the
loop runs no iteration). Types: ``index``, ``i8``…``i64``, ``f16``, ``bf16``, ``f32``, ``f64``.

Refused (:class:`CompileError` naming the carried value): an ``i1`` or other carried type, and a
carried value (or the loop's result) that a decoupled loop inside would need as a bound — the
access unit computes bounds, the carried value exists only on the core.
"""

from __future__ import annotations

from xdsl.dialects import arith, func, memref, scf
from xdsl.dialects.builtin import (
    BFloat16Type,
    Float16Type,
    Float32Type,
    Float64Type,
    IndexType,
    IntegerAttr,
    IntegerType,
    MemRefType,
)
from xdsl.ir import Block, Operation, SSAValue

from ..errors import CompileError, location_of
from ..transforms.choose_decoupling import DECOUPLED_ATTR

__all__ = ["carry_in_cells"]


def _supported(t) -> bool:
    if isinstance(t, IntegerType):
        return t.width.data in (8, 16, 32, 64)
    return isinstance(t, IndexType | Float16Type | BFloat16Type | Float32Type | Float64Type)


def _name(v: SSAValue) -> str:
    return f"%{v.name_hint}" if v.name_hint else "a carried value"


def _depends_on(value: SSAValue, carried: set[SSAValue], seen: set[SSAValue] | None = None) -> bool:
    """``value`` is computed (through any ops) from one of ``carried``."""
    seen = set() if seen is None else seen
    if value in carried:
        return True
    if value in seen or isinstance(value.owner, Block):
        return False
    seen.add(value)
    return any(_depends_on(v, carried, seen) for v in value.owner.operands)


def _check_bounds(loop: scf.ForOp) -> None:
    carried = set(loop.body.block.args[1:])
    for inner in loop.body.walk():
        if isinstance(inner, scf.ForOp) and DECOUPLED_ATTR in inner.attributes:
            for which, bound in (("lower", inner.lb), ("upper", inner.ub)):
                if _depends_on(bound, carried):
                    arg = next(a for a in carried if _depends_on(bound, {a}))
                    at = location_of(loop)
                    raise CompileError(
                        f"the {which} bound of this decoupled 'scf.for' depends on "
                        f"{_name(arg)}, an iter_args value of the loop at "
                        f"{f'{at.line}:{at.column}' if at else '?'}: "
                        "carried values live on the core, and the access unit computes the "
                        "bounds of decoupled loops", location_of(inner))


def _load_before(user: Operation, cell: SSAValue, zero: SSAValue, hint: str | None) -> SSAValue:
    load = memref.LoadOp.get(cell, [zero])
    load.res.name_hint = hint
    load.location = user.location
    user.parent_block().insert_op_before(load, user)
    return load.res


def _replace_uses(value: SSAValue, cell: SSAValue, zero: SSAValue) -> None:
    for use in list(value.uses):
        user = use.operation
        user.operands[use.index] = _load_before(user, cell, zero, value.name_hint)


def carry_in_cells(fn: func.FuncOp) -> None:
    """Rewrite every decoupled ``scf.for`` of ``fn`` (marked by choose-decoupling) that has
    ``iter_args`` as described in the module docstring, in place."""
    loops = [op for op in fn.walk() if isinstance(op, scf.ForOp)
             and DECOUPLED_ATTR in op.attributes and op.iter_args]
    if not loops:
        return
    top = fn.body.block
    zero_op = None                                # an index 0 defined before every loop, else new
    for op in top.ops:
        if isinstance(op, scf.ForOp):
            break
        if isinstance(op, arith.ConstantOp) and isinstance(op.result.type, IndexType) \
                and isinstance(op.value, IntegerAttr) and op.value.value.data == 0:
            zero_op = op
            break
    if zero_op is None:
        zero_op = arith.ConstantOp(IntegerAttr(0, IndexType()))
        zero_op.result.name_hint = "c0"
        top.insert_op_before(zero_op, top.first_op)
    zero = zero_op.result
    for loop in reversed(loops):                  # inner loops first
        body = loop.body.block
        for arg in body.args[1:]:
            if not _supported(arg.type):
                raise CompileError(f"unsupported iter_args type {arg.type} of {_name(arg)} in a "
                                   "decoupled 'scf.for' (supported: index, i8…i64, f16, bf16, "
                                   "f32, f64)", location_of(loop))
        _check_bounds(loop)
        cells = []
        for arg, init in zip(body.args[1:], loop.iter_args):
            alloc = memref.AllocOp([], [], MemRefType(arg.type, [1]))
            alloc.memref.name_hint = f"{arg.name_hint or 'carried'}_cell"
            alloc.location = loop.location
            top.insert_op_after(alloc, zero_op)
            cells.append(alloc.memref)
            store = memref.StoreOp.get(init, alloc.memref, [zero])
            store.location = loop.location
            loop.parent_block().insert_op_before(store, loop)
        for arg, cell in zip(list(body.args[1:]), cells):
            _replace_uses(arg, cell, zero)
        yield_op = body.last_op
        assert isinstance(yield_op, scf.YieldOp)
        for value, cell in zip(yield_op.operands, cells):
            store = memref.StoreOp.get(value, cell, [zero])
            store.location = yield_op.location
            body.insert_op_before(store, yield_op)
        new_yield = scf.YieldOp()
        new_yield.location = yield_op.location
        body.insert_op_before(new_yield, yield_op)
        yield_op.detach()
        yield_op.erase()
        for arg in list(body.args[1:]):
            body.erase_arg(arg)
        for result, cell in zip(loop.results, cells):
            _replace_uses(result, cell, zero)
        region = loop.detach_region(loop.body)
        new = scf.ForOp(loop.lb, loop.ub, loop.step, [], region)
        new.attributes.update(loop.attributes)
        new.location = loop.location
        loop.parent_block().insert_op_before(new, loop)
        loop.detach()
        loop.erase()
