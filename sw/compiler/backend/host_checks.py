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
    ``out`` narrower than ``table``). An index ``a * i + c`` (``arith.addi``/``arith.muli`` of the
    induction variable and constants, either order; ``a >= 1``, ``c >= 0``) of a loop from 0 to
    ``n`` in steps of 1 reads entry ``a * (n - 1) + c`` on its last iteration: the axis must have
    ``a * (n - 1) + c + 1`` entries when ``n > 0`` (``offsets[b + 1]``: ``offsets`` needs the
    output's rows + 1; ``rowptr[i + 1]``; TransE's ``triples[3 * t + 2]``: ``3 n`` entries). The
    loop may also run to a count loaded at constant indices from an argument the kernel never
    writes (``spmm_csr.mlir``'s ``nrows[0]``: the host reads it from the argument) or to
    ``dim(X, j) - m``; those new forms, and ``a > 1``, are used only for an access in the loop's
    own body (made on every iteration), but for ``M[.., i, ..]`` itself, checked wherever it is
    in the loop as for ``dim(X, j)`` (``spmm_csr.mlir``'s ``out[i, d]`` in the loop over a row's
    nonzeros: ``out`` needs ``nrows[0]`` rows). A loop to ``dim(M, k) - m`` over ``M[i + c]``, ``c <= m``,
    is always in range (``block_sparse_gather.mlir``'s ``block_ptr[q + 1]``): no check.
``index`` at ``a * i + c``
    a value loaded (in the loop's body) from a 1-D argument ``A`` never written, at ``a * i + c``
    of such a loop, indexes axis ``k`` of ``M``: the elements ``A[a * i + c]``, ``i < n``, must be
    in ``[0, M.shape[k])`` (TransE's relation ids ``triples[3 * t + 1]``).
``last``
    ``M[a * s + c]`` (not ``s`` itself) read in the body of ``scf.for %s = A[g + p] to
    A[g + q] step 1`` (``A`` 1-D, never written), itself in the body of a loop over ``g`` from 0
    to a count the host knows: for every ``g`` whose range is not empty, the first and the last
    entry read must lie in ``[0, M.shape[k])`` (``csr_of_csr.mlir``'s ``sptr[s + 1]``: ``sptr``
    needs ``gptr[g + 1] + 1`` entries for each group with sessions). Exact: an empty range, or a
    ``g`` past the loop, asks for nothing.

``block``
    ``M[.., A[j, ..] * b + r, ..]`` (``arith.muli`` and ``arith.addi``, either order, casts
    looked through): a value ``v`` loaded from argument ``A`` (never written) at loop indices,
    times a block size ``b``, plus the induction variable ``r`` of a loop from 0 to that same
    ``b`` in steps of 1, reads the entries ``v * b`` to ``v * b + b - 1`` of axis ``k`` of
    ``M``: ``b`` must not be negative (-O3 loads the rows as one block of ``b`` times their
    length), and when ``b > 0``, every element of ``A`` must be in ``[0, M.shape[k] // b)``
    (``block_sparse_gather.mlir``'s ``key[blk * bs + r]``: ``block_idx`` against the blocks of
    ``bs`` rows in ``key``). ``b`` is a constant, a scalar (index) argument, or a trip count the
    host reads off the arguments as above.
``alloc``
    a dynamic size of a ``memref.alloc`` that the arguments may make negative (``dim(X, j) - m``,
    ``m > 0``: ``embedding_bag_alloc.mlir``'s ``nbags = dim(offsets) - 1``; a scalar argument; a
    count loaded at constant indices from an argument never written; the last two minus ``m``):
    at least 0, so ``X`` needs ``m`` entries along axis ``j``.
``order``
    ``scf.for %j = A[g + p] to A[g + q]``: two loads of one 1-D argument ``A`` the kernel never
    writes (the loops the compiler gives ``check_order``; the unit faults ``RANGE_ORDER`` on a
    reversed range): ``A[g + p] <= A[g + q]`` for each ``g`` that ``g``'s loop takes when the
    host knows them (a loop from 0 to a count it reads; ``csr_of_csr.mlir``'s ``sptr``: each
    ``s`` in ``[gptr[h], gptr[h + 1])``, ``h`` below such a count), else for every ``g``.
    These come after the other checks, so an offset past the end is reported by its range check.

``computed``
    any other index the host can compute: an expression (``HostCheck.expr``, evaluated by
    ``sw.runtime.host_check_computed``) of constants, scalar arguments, the induction variables
    of the loops around the access and loads from arguments never written, through the integer
    operations of ``host_checks_computed._BINARY`` and casts, when every loop around the access
    runs in steps of 1 from 0 to a count the host reads (``host_extent``) or between bounds that
    are such expressions of the outer loops' indices (the host enumerates the iterations); the
    index may end in ``+ r``, ``r`` the induction variable of a loop from 0 to a count that
    appears nowhere else (a row read from ``base``). Every iteration's index (first and last
    entry of a row) must lie in ``[0, M.shape[k])``: ``hashed_gather.mlir``'s
    ``remap[h(ids[i])]`` (the hash mod 2**64, as its i64 operations compute it) and
    ``table[(remap[h] << logd) + d]`` (``index`` arithmetic exact),
    ``block_sparse_gather.mlir``'s ``k_out[j * bs + r]`` (``j`` from ``block_ptr[q]`` to
    ``block_ptr[q + 1]``); a shift by an amount outside ``[0, bits)`` or a division by 0 is
    refused.

Accesses inside an ``scf.if`` are not used (they may be guarded). For ``index``, ``bound`` and
``block`` every element of ``A`` is checked, whether or not the traversal reaches it (as PyTorch
checks every index); ``computed`` is exact. Indices that go through other arithmetic in loops
the host cannot enumerate (from loaded bounds) are not checked here; the unit's region check
and address-overflow fault catch them at run time.
The checks run in :func:`sw.runtime.kernel.Kernel.check_arguments` before the unit starts
(``sw.runtime.host_check``). This module holds the entry point, :func:`host_checks`, and the
recognition of every kind but ``block`` and ``computed`` (in ``host_checks_computed.py``); the
readers of the IR they share are in ``host_checks_ir.py``. See docs/compiler.md, "Host-side
argument checks".
"""

from __future__ import annotations

from dataclasses import replace

from xdsl.dialects import func, memref, scf
from xdsl.dialects.builtin import MemRefType
from xdsl.ir import OpResult, SSAValue

from ...runtime.host_check import HostCheck, LoopExtent
from ..errors import location_of
from .host_checks_computed import block_index, computed
from .host_checks_ir import (Params, _affine, _constant, _from_zero, _guarded, _int, _loop_of,
                             _minus_constant, _read_only, _strip, argument_count, host_extent,
                             loaded_param)

__all__ = ["host_checks"]


def strided_load(params: Params, value: SSAValue) -> tuple[int, object, scf.ForOp, int, int] | None:
    """``(A, load, loop, a, c)`` when ``value`` is loaded from the 1-D argument ``A`` (never
    written) at ``a * i + c`` (not ``i`` itself) of a loop whose trip count the host knows,
    in that loop's body (so loaded on every iteration)."""
    value = _strip(value)
    if not (isinstance(value, OpResult) and isinstance(value.op, memref.LoadOp)):
        return None
    load = value.op
    source = params.get(load.memref)
    if source is None or len(load.indices) != 1 or not _read_only(load.memref):
        return None
    found = _affine(load.indices[0])
    if found is None:
        return None
    loop, a, c = found
    if (a, c) == (1, 0) or a < 1 or c < 0 or load.parent_op() is not loop:
        return None
    return source, load, loop, a, c


def range_of(params: Params, loop: scf.ForOp) -> tuple[int, scf.ForOp | None, int, int] | None:
    """``(A, g_loop, p, q)`` when ``loop`` runs from ``A[g + p]`` to ``A[g + q]``: two loads
    of one 1-D argument ``A`` that the kernel never writes, at ``g + p`` and ``g + q`` for
    the induction variable ``g`` of ``g_loop`` (or both at constants: ``g_loop`` None)."""
    ends = []
    for bound in (loop.lb, loop.ub):
        bound = _strip(bound)
        if not (isinstance(bound, OpResult) and isinstance(bound.op, memref.LoadOp)):
            return None
        load = bound.op
        if _guarded(load) or len(load.indices) != 1 or params.get(load.memref) is None or \
                not _read_only(load.memref):
            return None
        if _int(load.indices[0]) is not None:
            ends.append((params.get(load.memref), None, _int(load.indices[0])))
            continue
        found = _affine(load.indices[0])
        if found is None or found[1] != 1 or found[2] < 0:
            return None
        ends.append((params.get(load.memref), found[0], found[2]))
    (source, outer, p), (source_q, outer_q, q) = ends
    if source != source_q or outer is not outer_q:
        return None
    return source, outer, p, q


def last_check(params: Params, op, target: int, axis: int, loop: scf.ForOp, a: int,
               c: int) -> HostCheck | None:
    """``target[a * s + c]`` read in the body of ``scf.for %s = A[g + p] to A[g + q] step 1``
    (``A`` 1-D, never written: ``range_of``) that is itself in the body of a loop over ``g``
    whose trip count the host knows: the check of the last (and first) entry read per ``g``."""
    if op.parent_op() is not loop or _int(loop.step) != 1:
        return None
    found = range_of(params, loop)
    if found is None:
        return None
    source, outer, p, q = found
    if outer is None or loop.parent_op() is not outer:      # both bounds at constants, or not g's
        return None
    extent = host_extent(params, outer)
    if extent is None:
        return None
    return HostCheck("last", source, target, axis, offset=c, scale=a, loop=extent, pair=(p, q),
                     where=str(location_of(loop) or ""))


def order_check(params: Params, loop: scf.ForOp) -> HostCheck | None:
    """A loop from ``A[g + p]`` to ``A[g + q]`` (the access unit checks that it does not run
    backwards: ``check_order``): the check of those pairs, for the ``g`` its loop takes
    when the host knows them (a loop from 0 to a count it reads, or one from ``B[h + p']``
    to ``B[h + q']`` inside such a loop), else for every ``g``."""
    found = range_of(params, loop)
    if found is None or _guarded(loop):
        return None
    source, outer, p, q = found
    where = str(location_of(loop) or "")
    if outer is None:
        return HostCheck("order", source, source, 0, pair=(p, q), loop=LoopExtent(value=1),
                         where=where)
    extent = host_extent(params, outer)
    if extent is not None:
        return HostCheck("order", source, source, 0, pair=(p, q), loop=extent, where=where)
    ranges = range_of(params, outer)
    if ranges is not None and ranges[1] is not None and \
            (extent := host_extent(params, ranges[1])) is not None:
        return HostCheck("order", source, source, 0, pair=(p, q), loop=extent,
                         outer=(ranges[0], ranges[2], ranges[3]), where=where)
    return HostCheck("order", source, source, 0, pair=(p, q), where=where)


def alloc_size(params: Params, value: SSAValue) -> LoopExtent | None:
    """A dynamic size of a ``memref.alloc`` that the arguments may make negative, as the
    host reads it: ``dim(X, j) - m`` (``m > 0``), a scalar argument, or a count loaded at
    constant indices from an argument the kernel never writes (either minus ``m``)."""
    value, minus = _minus_constant(value)
    if params.get(value) is not None:
        return None if isinstance(value.type, MemRefType) else LoopExtent(params.get(value), element=(),
                                                                           minus=minus)
    if isinstance(value, OpResult) and isinstance(value.op, memref.DimOp) and minus <= 0:
        return None                                     # dim(X, j) - m, m <= 0: never negative
    return argument_count(params, value, minus)


def host_checks(fn: func.FuncOp) -> list[HostCheck]:
    """The checks of ``fn``'s arguments (module docstring), without duplicates, in program order."""
    params = {arg: n for n, arg in enumerate(fn.body.block.args)}

    checks: list[HostCheck] = []

    def add(check: HostCheck) -> None:
        if any(c.same_as(check) for c in checks):
            return
        if check.kind == "extent" and (check.offset or check.scale != 1):
            # reads a * i + c of one loop for several c: the largest c says what is needed
            for k, c in enumerate(checks):
                if c.kind == "extent" and (c.offset or c.scale != 1) and \
                        c.same_as(replace(check, offset=c.offset, where=c.where)):
                    if c.offset < check.offset:
                        checks[k] = check
                    return
        checks.append(check)

    orders: list[HostCheck] = []      # after the range checks: an offset past the end is that
    for op in fn.walk():
        if isinstance(op, memref.AllocOp) and not _guarded(op):
            shape = op.memref.type.get_shape()
            dynamic = [axis for axis, extent in enumerate(shape) if extent < 0]
            for axis, size in zip(dynamic, op.dynamic_sizes):
                extent = alloc_size(params, size)
                if extent is not None:
                    add(HostCheck("alloc", extent.source, extent.source, axis, loop=extent,
                                  where=str(location_of(op) or "")))
            continue
        if isinstance(op, scf.ForOp) and _int(op.step) == 1:
            found = order_check(params, op)
            if found is not None and not any(c.same_as(found) for c in orders):
                orders.append(found)
            continue
        if not isinstance(op, (memref.LoadOp, memref.StoreOp)) or _guarded(op):
            continue
        target = params.get(op.memref)
        if target is None:
            continue
        where = str(location_of(op) or "")
        for axis, index in enumerate(op.indices):
            index = _strip(index)
            found = loaded_param(params, index, at_loop_indices=True)
            if found is not None:
                add(HostCheck("index", found[0], target, axis, where=str(location_of(found[1]) or where)))
                continue
            found = block_index(params, index)
            if found is not None:
                source, load, size = found
                add(HostCheck("block", source, target, axis, loop=size,
                              where=str(location_of(load) or where)))
                continue
            found = strided_load(params, index)
            if found is not None:
                source, load, loop, a, c = found
                add(HostCheck("index", source, target, axis, offset=c, scale=a,
                              loop=host_extent(params, loop), where=str(location_of(load) or where)))
                continue
            found = computed(params, op, index, target, axis)
            if found is not None:
                add(found)
                continue
            loop, scale, offset = _loop_of(index), 1, 0
            if loop is None:
                loop, scale, offset = _affine(index) or (None, 1, 0)
                if loop is None or scale < 1 or offset < 0 or (scale, offset) == (1, 0):
                    continue
                # a * i + c is checked from 0 in steps of 1, where the last i is n - 1; in a loop
                # over [A[g + p], A[g + q]) per g, on the last i of each g ("last").
                if not _from_zero(loop):
                    found = last_check(params, op, target, axis, loop, scale, offset)
                    if found is not None:
                        add(found)
                    continue
            loop_where = str(location_of(loop) or where)
            lower, upper = _constant(loop.lb), _constant(loop.ub)
            for bound in (loop.lb, loop.ub) if (scale, offset) == (1, 0) else ():
                found = loaded_param(params, bound, at_loop_indices=False)
                # A bound loaded at constant indices is one field of an array of sizes (the sparse
                # storage specifier, frontends/mlir.py), not an array of offsets: not every element
                # of it bounds this loop, so it is left to the unit's region check.
                if found is not None and not all(_constant(i) is not None for i in found[1].indices):
                    add(HostCheck("bound", found[0], target, axis, where=loop_where))
            lower_ok = lower is not None and lower >= 0 or \
                loaded_param(params, loop.lb, at_loop_indices=False)
            if not lower_ok:
                continue
            ub = _strip(loop.ub)
            direct = op.parent_op() is loop          # the access runs on every iteration
            if scale != 1 and not direct:
                continue
            if upper is not None:
                add(HostCheck("extent", -1, target, axis, value=upper, offset=offset, scale=scale,
                              where=loop_where))
            elif isinstance(ub, OpResult) and isinstance(ub.op, memref.DimOp):
                source, source_axis = params.get(ub.op.source), _constant(ub.op.index)
                if source is not None and source_axis is not None and \
                        (offset or scale != 1 or (source, source_axis) != (target, axis)):
                    add(HostCheck("extent", source, target, axis, source_axis=source_axis, offset=offset,
                                  scale=scale, where=loop_where))
            elif (direct or (scale, offset) == (1, 0)) and (extent := host_extent(params, loop)) is not None:
                # a loop to a loaded count or to dim(X, j) - m; dim(M, k) - m over M[i + c] with
                # c <= m is always in range. M[i] itself in a nested loop (that may not run), as
                # for a loop to dim(X, j): spmm_csr's out[i, d] needs nrows[0] rows
                if (extent.source, extent.axis, extent.element) == (target, axis, None) and \
                        scale == 1 and offset <= extent.minus:
                    continue
                add(HostCheck("extent", extent.source, target, axis, offset=offset, scale=scale,
                              loop=extent, where=loop_where))
    return checks + orders
