"""Host-side checks of a kernel's arguments, derived from its SCF function.

The access unit checks every load against the region it was granted (fault ``ADDR_RANGE``), but a
fault names an address, not the user's argument, and an address computed from a huge index can
wrap past 2^64 into another row. The PyTorch frontend therefore checks its inputs on the host, as
PyTorch does; this module gives every compiled kernel (MLIR, PyTorch, TensorFlow frontends) the
same checks, read off the patterns of the SCF function (MLIR's ``memref.load``/``store`` out of
bounds is undefined behaviour, so refusing such arguments changes no defined result):

``index``
    ``M[..., A[i, j], ...]``: a value loaded from argument ``A`` at loop indices (``i``, ``j`` the
    induction variables themselves, possibly through ``index_cast``/``extsi``/``extui``) indexes
    axis ``k`` of argument ``M`` unconditionally: every element ``v`` of ``A`` must satisfy
    ``0 <= v < M.shape[k]`` (e.g. ``indices`` into the rows of ``table``).
``bound``
    a loop bound loaded from argument ``A`` (``scf.for %j = %A[b] to %A[b + 1]``) whose
    induction variable indexes axis ``k`` of ``M``: every element of ``A`` must satisfy
    ``0 <= v <= M.shape[k]`` (e.g. ``offsets`` into ``indices``).
``extent``
    a loop from a constant ``>= 0`` to ``dim(X, j)`` (or to a constant) whose induction variable
    indexes axis ``k`` of ``M``: ``X.shape[j]`` (the constant) must be ``<= M.shape[k]`` (e.g. an
    ``out`` narrower than ``table``). An index ``i + c`` (``arith.addi`` of the induction variable
    and a constant ``c > 0``, either order) of a loop from 0 to ``n`` in steps of 1 reads entry
    ``n - 1 + c`` on its last iteration: the axis must have ``n + c`` entries when ``n > 0``
    (``offsets[b + 1]``: ``offsets`` needs the output's rows + 1; ``rowptr[i + 1]``).

Accesses inside an ``scf.if`` are not used (they may be guarded). Every element of ``A`` is
checked, whether or not the traversal reaches it (as PyTorch checks every index). Index values
that go through other arithmetic (``table[(row << 3) + d]``, ``triples[3 * i + k]``) are not
checked here; the unit's region check and address-overflow fault catch them at run time.
The checks run in :func:`sw.runtime.kernel.Kernel.check_arguments` before the unit starts.
"""

from __future__ import annotations

from xdsl.dialects import arith, func, memref, scf
from xdsl.ir import Block, BlockArgument, OpResult, SSAValue

from ...runtime.kernel import HostCheck
from ..errors import location_of

__all__ = ["host_checks"]

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


def _affine(value: SSAValue) -> tuple[scf.ForOp, int] | None:
    """``(loop, c)`` when ``value`` is ``i + c`` (``arith.addi``, either order, casts looked through)
    for the induction variable ``i`` of ``loop`` and a constant ``c > 0``."""
    value = _strip(value)
    if not (isinstance(value, OpResult) and isinstance(value.op, arith.AddiOp)):
        return None
    for iv, const in ((value.op.lhs, value.op.rhs), (value.op.rhs, value.op.lhs)):
        loop, c = _loop_of(_strip(iv)), _constant(const)
        if loop is not None and isinstance(c, int) and c > 0:
            return loop, c
    return None


def _guarded(op) -> bool:
    parent = op.parent_op()
    while parent is not None and not isinstance(parent, func.FuncOp):
        if isinstance(parent, scf.IfOp):
            return True
        parent = parent.parent_op()
    return False


def host_checks(fn: func.FuncOp) -> list[HostCheck]:
    """The checks of ``fn``'s arguments (module docstring), without duplicates, in program order."""
    params = {arg: n for n, arg in enumerate(fn.body.block.args)}

    def param(value: SSAValue) -> int | None:
        return params.get(value)

    def loaded_param(value: SSAValue, *, at_loop_indices: bool) -> tuple[int, object] | None:
        value = _strip(value)
        if not (isinstance(value, OpResult) and isinstance(value.op, memref.LoadOp)):
            return None
        load = value.op
        source = param(load.memref)
        if source is None or _guarded(load):
            return None
        if at_loop_indices and not all(_loop_of(_strip(i)) is not None for i in load.indices):
            return None
        return source, load

    checks: list[HostCheck] = []

    def add(check: HostCheck) -> None:
        if not any(c.same_as(check) for c in checks):
            checks.append(check)

    for op in fn.walk():
        if not isinstance(op, (memref.LoadOp, memref.StoreOp)) or _guarded(op):
            continue
        target = param(op.memref)
        if target is None:
            continue
        where = str(location_of(op) or "")
        for axis, index in enumerate(op.indices):
            index = _strip(index)
            found = loaded_param(index, at_loop_indices=True)
            if found is not None:
                add(HostCheck("index", found[0], target, axis, where=str(location_of(found[1]) or where)))
                continue
            loop, offset = _loop_of(index), 0
            if loop is None:
                loop, offset = _affine(index) or (None, 0)
                # i + c is checked only from 0 in steps of 1, where the last i is n - 1.
                if loop is None or _constant(loop.lb) != 0 or _constant(loop.step) != 1:
                    continue
            loop_where = str(location_of(loop) or where)
            lower, upper = _constant(loop.lb), _constant(loop.ub)
            for bound in (loop.lb, loop.ub) if not offset else ():
                found = loaded_param(bound, at_loop_indices=False)
                # A bound loaded at constant indices is one field of an array of sizes (the sparse
                # storage specifier, frontends/mlir.py), not an array of offsets: not every element
                # of it bounds this loop, so it is left to the unit's region check.
                if found is not None and not all(_constant(i) is not None for i in found[1].indices):
                    add(HostCheck("bound", found[0], target, axis, where=loop_where))
            lower_ok = lower is not None and lower >= 0 or loaded_param(loop.lb, at_loop_indices=False)
            if not lower_ok:
                continue
            ub = _strip(loop.ub)
            if upper is not None:
                add(HostCheck("extent", -1, target, axis, value=upper, offset=offset, where=loop_where))
            elif isinstance(ub, OpResult) and isinstance(ub.op, memref.DimOp):
                source, source_axis = param(ub.op.source), _constant(ub.op.index)
                if source is not None and source_axis is not None and \
                        (offset or (source, source_axis) != (target, axis)):
                    add(HostCheck("extent", source, target, axis, source_axis=source_axis, offset=offset,
                                  where=loop_where))
    return checks
