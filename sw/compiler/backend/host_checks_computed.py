"""The host checks of indices computed by arithmetic (``sw.compiler.backend.host_checks``, which
explains the kinds): ``block`` (``M[.., A[j] * b + r, ..]``: a block id times a block size plus
the index of a loop over the block) and ``computed`` (any other index the host can compute for
every iteration of the loops around the access: the ``expression`` trees that
``sw.runtime.host_check_computed`` evaluates). See docs/compiler.md, "Host-side argument checks".
"""

from __future__ import annotations

from xdsl.dialects import arith, func, memref, scf
from xdsl.dialects.builtin import IndexType, IntegerType, MemRefType
from xdsl.ir import BlockArgument, OpResult, SSAValue

from ...runtime.host_check import HostCheck, LoopExtent
from ...runtime.host_check_computed import expr_lead, expr_trees
from ..errors import location_of
from .host_checks_ir import (_CASTS, Params, _from_zero, _int, _loop_of, _read_only, _strip,
                             host_extent, loaded_param)

# The integer operations an index computed on the unit may go through (``computed``), by symbol.
_BINARY = {arith.AddiOp: "+", arith.SubiOp: "-", arith.MuliOp: "*", arith.ShLIOp: "<<",
           arith.ShRUIOp: ">>u", arith.ShRSIOp: ">>", arith.AndIOp: "&", arith.OrIOp: "|",
           arith.XOrIOp: "^", arith.DivSIOp: "/", arith.DivUIOp: "/u", arith.RemSIOp: "%",
           arith.RemUIOp: "%u", arith.MaxSIOp: "max", arith.MinSIOp: "min"}


def _width(t) -> int | None:
    """Bits of an integer type; 0 for ``index`` (its arithmetic is exact on the host: an
    address that overflows is an error, not another row), None for other types."""
    if isinstance(t, IndexType):
        return 0
    if isinstance(t, IntegerType):
        return t.width.data
    return None


def _iv_name(loop: scf.ForOp, n: int) -> str:
    hint = loop.body.block.args[0].name_hint
    return hint if hint and hint.isidentifier() else f"i{n}"


def block_size(params: Params, b: SSAValue, loop: scf.ForOp) -> LoopExtent | None:
    """The block size ``b`` (also the upper bound of ``loop``) as the host reads it: a
    constant, a scalar argument, or a trip count of ``host_extent``."""
    b = _strip(b)
    if _int(b) is not None:
        return LoopExtent(value=_int(b))
    source = params.get(b)
    if source is not None:
        return None if isinstance(b.type, MemRefType) else LoopExtent(source, element=())
    return host_extent(params, loop)


def block_index(params: Params, value: SSAValue) -> tuple[int, object, LoopExtent] | None:
    """``(A, load, b)`` when ``value`` is ``A[..] * b + r`` (either order of both operations):
    a value loaded from the argument ``A`` (never written) at loop indices, times ``b``, plus
    the induction variable ``r`` of a loop from 0 to the same ``b`` in steps of 1."""
    value = _strip(value)
    if not (isinstance(value, OpResult) and isinstance(value.op, arith.AddiOp)):
        return None
    for base, r in ((value.op.lhs, value.op.rhs), (value.op.rhs, value.op.lhs)):
        loop, base = _loop_of(_strip(r)), _strip(base)
        if loop is None or not _from_zero(loop) or \
                not (isinstance(base, OpResult) and isinstance(base.op, arith.MuliOp)):
            continue
        ub = _strip(loop.ub)
        for x, b in ((base.op.lhs, base.op.rhs), (base.op.rhs, base.op.lhs)):
            found = loaded_param(params, x, at_loop_indices=True)
            b = _strip(b)
            same = b is ub or (_int(b) is not None and _int(b) == _int(ub))
            if found is None or not same or not _read_only(found[1].memref):
                continue
            size = block_size(params, b, loop)
            if size is not None:
                return found[0], found[1], size
    return None


def enclosing_loops(params: Params, op) -> list[tuple[scf.ForOp, object]] | None:
    """The loops around ``op``, outermost first, each with its trip count (``host_extent``:
    from 0 in steps of 1 to a count the host reads) or ``("bounds", lb, ub)``, the
    ``expression`` trees of its bounds (in steps of 1, from and to values the host computes
    from the outer loops' indices: ``block_ptr[q]`` to ``block_ptr[q + 1]``); None when a
    loop is neither (or ``op`` is inside another operation)."""
    chain = []
    parent = op.parent_op()
    while not isinstance(parent, func.FuncOp):
        if not isinstance(parent, scf.ForOp):
            return None
        chain.append(parent)
        parent = parent.parent_op()
    loops: list = []
    for loop in reversed(chain):
        spec = host_extent(params, loop)
        if spec is None and _int(loop.step) == 1:
            lb, ub = expression(params, loop.lb, loops), expression(params, loop.ub, loops)
            spec = None if lb is None or ub is None else ("bounds", lb, ub)
        if spec is None:
            return None
        loops.append((loop, spec))
    return loops


def expression(params: Params, value: SSAValue, loops: list) -> tuple | None:
    """``value`` as a tree the host evaluates (``HostCheck`` kind ``computed``): constants
    ``("const", c)``, scalar arguments ``("arg", k)``, induction variables ``("iv", n)`` of
    ``loops[n]``, loads ``("load", k, where, indices)`` from arguments the kernel never
    writes, casts ``("cast", kind, bits_in, bits_out, x)`` and the operations of
    ``_BINARY`` ``(symbol, bits, where, a, b)`` (bits 0: ``index``); None otherwise."""
    if isinstance(value, BlockArgument):
        source = params.get(value)
        if source is not None:
            return None if isinstance(value.type, MemRefType) or _width(value.type) is None \
                else ("arg", source)
        loop = _loop_of(value)
        for n, (outer, _) in enumerate(loops):
            if outer is loop:
                return ("iv", n)
        return None
    if not isinstance(value, OpResult):
        return None
    op = value.op
    if _int(value) is not None:
        return ("const", _int(value))
    if isinstance(op, memref.LoadOp):
        source = params.get(op.memref)
        if source is None or not _read_only(op.memref) or _width(value.type) is None:
            return None
        indices = tuple(expression(params, i, loops) for i in op.indices)
        return None if None in indices else ("load", source, str(location_of(op) or ""), indices)
    if isinstance(op, _CASTS + (arith.TruncIOp,)):
        inner = expression(params, op.input, loops)
        w_in, w_out = _width(op.input.type), _width(value.type)
        if inner is None or w_in is None or w_out is None:
            return None
        kind = "zext" if isinstance(op, arith.ExtUIOp) else \
            "trunc" if w_out and (not w_in or w_out < w_in) else "sext"
        return ("cast", kind, w_in, w_out, inner)
    symbol = _BINARY.get(type(op))
    if symbol is None or _width(value.type) is None:
        return None
    a, b = expression(params, op.lhs, loops), expression(params, op.rhs, loops)
    if a is None or b is None:
        return None
    return (symbol, _width(value.type), str(location_of(op) or ""), a, b)


def computed(params: Params, op, index: SSAValue, target: int, axis: int) -> HostCheck | None:
    """Kind ``computed``: an index other than the patterns above that the host can compute
    for every iteration (an ``expression`` of loads, scalar arguments and induction
    variables of the ``enclosing_loops``), optionally plus the induction variable ``r`` of
    a loop from 0 to a count that appears nowhere else (a row: ``base + r``)."""
    loops = enclosing_loops(params, op)
    if loops is None:
        return None
    tree = expression(params, index, loops)
    if tree is None or not any(t[0] in ("load", "arg") for t in expr_trees(tree)):
        return None
    if tree[0] == "+" and tree[1] == 0:
        for base, r in ((tree[3], tree[4]), (tree[4], tree[3])):
            if r[0] == "iv" and r not in expr_trees(base) and isinstance(loops[r[1]][1], LoopExtent) \
                    and not any(r in expr_trees(spec) for _, spec in loops if isinstance(spec, tuple)):
                tree = ("range", base, r[1])
                break
    lead = expr_lead(tree)
    return HostCheck("computed", -1 if lead is None else lead[1], target, axis,
                     expr=tree, loops=tuple((_iv_name(loop, n), spec)
                                            for n, (loop, spec) in enumerate(loops)),
                     access="store" if isinstance(op, memref.StoreOp) else "load",
                     where=str(location_of(op) or ""))
