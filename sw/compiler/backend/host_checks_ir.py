"""What the patterns of the host checks (``sw.compiler.backend.host_checks``) read off a kernel's
SCF function: casts looked through, the loop of an induction variable, constants, affine indices
``a * i + c``, arguments the kernel never writes, accesses under an ``scf.if``, values loaded
from an argument, and the trip count of a loop as the host reads it off the call's arguments.
Shared by ``host_checks.py`` and ``host_checks_computed.py``; see docs/compiler.md, "Host-side
argument checks".
"""

from __future__ import annotations

from xdsl.dialects import arith, func, memref, scf
from xdsl.ir import Block, BlockArgument, OpResult, SSAValue

from ...runtime.host_check import LoopExtent

#: The function's arguments: block argument -> its position (``HostCheck.source``, ``.target``).
Params = dict[SSAValue, int]

_CASTS = (arith.IndexCastOp, arith.ExtSIOp, arith.ExtUIOp)


def _strip(value: SSAValue) -> SSAValue:
    while isinstance(value, OpResult) and isinstance(value.op, _CASTS):
        value = value.op.input
    return value


def _loop_of(value: SSAValue) -> scf.ForOp | None:
    """The ``scf.for`` whose induction variable ``value`` is."""
    if isinstance(value, BlockArgument) and value.index == 0 and isinstance(value.block, Block):
        parent = value.block.parent_op()
        if isinstance(parent, scf.ForOp):
            return parent
    return None


def _constant(value: SSAValue) -> int | None:
    value = _strip(value)
    if isinstance(value, OpResult) and isinstance(value.op, arith.ConstantOp):
        attr = value.op.value
        data = getattr(attr, "value", None)
        return getattr(data, "data", None) if data is not None else None
    return None


def _int(value: SSAValue) -> int | None:
    c = _constant(value)
    return c if isinstance(c, int) and not isinstance(c, bool) else None


def _affine(value: SSAValue) -> tuple[scf.ForOp, int, int] | None:
    """``(loop, a, c)`` when ``value`` is ``a * i + c`` for the induction variable ``i`` of
    ``loop`` and constants ``a``, ``c``: ``arith.addi`` and ``arith.muli`` of such a value and a
    constant (either order), casts looked through; ``(loop, 1, 0)`` for ``i`` itself."""
    value = _strip(value)
    loop = _loop_of(value)
    if loop is not None:
        return loop, 1, 0
    if not (isinstance(value, OpResult) and isinstance(value.op, (arith.AddiOp, arith.MuliOp))):
        return None
    for x, const in ((value.op.lhs, value.op.rhs), (value.op.rhs, value.op.lhs)):
        k, inner = _int(const), None
        if k is not None:
            inner = _affine(x)
        if inner is not None:
            loop, a, c = inner
            return (loop, a, c + k) if isinstance(value.op, arith.AddiOp) else (loop, a * k, c * k)
    return None


def _read_only(arg: SSAValue) -> bool:
    """``arg`` is only loaded from and measured (its elements are what the host passed)."""
    return all(isinstance(use.operation, (memref.LoadOp, memref.DimOp)) for use in arg.uses)


def _from_zero(loop: scf.ForOp) -> bool:
    return _int(loop.lb) == 0 and _int(loop.step) == 1


def _guarded(op) -> bool:
    parent = op.parent_op()
    while parent is not None and not isinstance(parent, func.FuncOp):
        if isinstance(parent, scf.IfOp):
            return True
        parent = parent.parent_op()
    return False


def loaded_param(params: Params, value: SSAValue, *, at_loop_indices: bool) -> tuple[int, object] | None:
    """``(A, load)`` when ``value`` (casts looked through) is loaded from the argument ``A``
    outside an ``scf.if``; with ``at_loop_indices``, only at induction variables."""
    value = _strip(value)
    if not (isinstance(value, OpResult) and isinstance(value.op, memref.LoadOp)):
        return None
    load = value.op
    source = params.get(load.memref)
    if source is None or _guarded(load):
        return None
    if at_loop_indices and not all(_loop_of(_strip(i)) is not None for i in load.indices):
        return None
    return source, load


def host_extent(params: Params, loop: scf.ForOp) -> LoopExtent | None:
    """The trip count of ``loop`` as the host reads it off the arguments (from 0 in steps of
    1 to a constant, ``dim(X, j)``, or a count loaded from an argument the kernel never
    writes at constant indices; either of the last two minus a constant), else ``None``."""
    if not _from_zero(loop):
        return None
    ub, minus = _minus_constant(loop.ub)
    if minus == 0 and _int(ub) is not None:
        return LoopExtent(value=_int(ub))
    return argument_count(params, ub, minus)


def _minus_constant(value: SSAValue) -> tuple[SSAValue, int]:
    """``(x, m)`` when ``value`` is ``x - m`` for a constant ``m`` (``arith.subi``, casts looked
    through), else ``(value, 0)``."""
    value, minus = _strip(value), 0
    if isinstance(value, OpResult) and isinstance(value.op, arith.SubiOp) and _int(value.op.rhs) is not None:
        value, minus = _strip(value.op.lhs), _int(value.op.rhs)
    return value, minus


def argument_count(params: Params, value: SSAValue, minus: int) -> LoopExtent | None:
    """``value - minus`` as the host reads it off the arguments when ``value`` is ``dim(X, j)``
    or a count loaded at constant indices from an argument the kernel never writes, else None."""
    if not isinstance(value, OpResult):
        return None
    if isinstance(value.op, memref.DimOp):
        source, axis = params.get(value.op.source), _int(value.op.index)
        if source is not None and axis is not None:
            return LoopExtent(source, axis, minus=minus)
    if isinstance(value.op, memref.LoadOp):
        source, at = params.get(value.op.memref), [_int(i) for i in value.op.indices]
        if source is not None and None not in at and _read_only(value.op.memref):
            return LoopExtent(source, element=tuple(at), minus=minus)
    return None
