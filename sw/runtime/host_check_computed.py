"""The evaluation of a ``computed`` host check (``HostCheck.kind == "computed"``): the index of an
access as a tree (constants, scalar arguments, induction variables, loads from arguments the
kernel never writes, integer operations and casts; see :func:`_evaluate`), evaluated by the host
for every iteration of the loops around the access (:func:`_iterations`) and refused, naming the
argument and the iteration, when it leaves its axis (:func:`check_computed`).

The compiler builds the trees (``sw.compiler.backend.host_checks_computed``, which uses
:func:`expr_trees` and :func:`expr_lead`); :meth:`sw.runtime.host_check.HostCheck.check` calls
:func:`check_computed`. See docs/compiler.md, "Host-side argument checks".
"""

from __future__ import annotations

from .host_check import HostCheck, LoopExtent

__all__ = ["COMPUTED_MAX_ITERATIONS", "check_computed", "expr_lead", "expr_trees"]


#: Iterations beyond which a ``computed`` check is not made (the unit's region check remains).
COMPUTED_MAX_ITERATIONS = 1 << 20

_SYMBOLS_WRAPPING = ("+", "-", "*", "<<")          # exact for index, wrapped for iN
_OPERATIONS = {"+": "arith.addi", "-": "arith.subi", "*": "arith.muli", "<<": "arith.shli",
               ">>u": "arith.shrui", ">>": "arith.shrsi", "&": "arith.andi", "|": "arith.ori",
               "^": "arith.xori", "/": "arith.divsi", "/u": "arith.divui", "%": "arith.remsi",
               "%u": "arith.remui", "max": "arith.maxsi", "min": "arith.minsi"}


def _wrap(x, bits: int):
    """``x`` (an object array of Python ints) as a signed ``bits``-bit value."""
    half = 1 << (bits - 1)
    return (x + half) % (1 << bits) - half


def _unsigned(x, bits: int):
    return x % (1 << (bits or 64))


def _render(tree: tuple, name, ivs) -> str:
    """``tree`` as text: arguments by name, induction variables by their loop's name."""
    kind = tree[0]
    if kind == "const":
        return str(tree[1])
    if kind == "arg":
        return name(tree[1])
    if kind == "iv":
        return ivs[tree[1]]
    if kind == "load":
        return f"{name(tree[1])}[{', '.join(_render(i, name, ivs) for i in tree[3])}]"
    if kind == "cast":
        inner = _render(tree[4], name, ivs)
        return inner if tree[1] == "sext" else f"{tree[1]}{tree[3] or 64}({inner})"
    if kind == "range":
        base = _render(tree[1], name, ivs)
        simple = tree[1][0] in ("const", "arg", "iv", "load", "cast")
        return f"{base if simple else '(' + base + ')'} + {ivs[tree[2]]}"
    a, b = (_render(x, name, ivs) for x in tree[3:5])
    a = a if tree[3][0] in ("const", "arg", "iv", "load", "cast") else f"({a})"
    b = b if tree[4][0] in ("const", "arg", "iv", "load", "cast") else f"({b})"
    return f"{kind}({a}, {b})" if kind in ("max", "min") else f"{a} {kind} {b}"


class _Skip(Exception):
    """The arguments do not let the host evaluate the index (a load out of its array: that
    load's own check refuses it; too many iterations)."""


def _evaluate(tree: tuple, args, grid: dict, name, ivs, loads: list, scalars: dict):
    """The value of ``tree`` for every point of ``grid`` (loop number -> an object array of its
    induction variable, shaped to broadcast), as an object array of Python ints. ``loads``
    collects ``(load tree, index arrays, values)``, ``scalars`` the scalar arguments read.

    Trees: ``("const", c)``; ``("arg", k)`` (a scalar argument); ``("iv", n)``; ``("load", k,
    where, (index trees))`` (an argument the kernel never writes); ``("cast", "sext" | "zext" |
    "trunc", bits_in, bits_out, x)``; ``(op, bits, where, a, b)`` for the integer operations
    ``+ - * << >>u >> & | ^ / /u % %u max min`` of ``bits`` (0: ``index``, whose ``+ - * <<``
    are exact: an index that overflows 64 bits is out of range, not another row; iN operations
    wrap). A shift by an amount outside ``[0, bits)`` and a division by 0 are undefined
    (poison in MLIR): ``ValueError`` naming what the amount is computed from.
    """
    import numpy as np

    kind = tree[0]
    if kind == "const":
        return np.array(tree[1], dtype=object)
    if kind == "arg":
        value = int(np.asarray(args[tree[1]]).item())
        scalars[tree[1]] = value
        return np.array(value, dtype=object)
    if kind == "iv":
        return grid[tree[1]]
    if kind == "load":
        array = np.asarray(args[tree[1]])
        if array.dtype.kind not in "iu" or array.ndim != len(tree[3]):
            raise _Skip()
        index = [_evaluate(i, args, grid, name, ivs, loads, scalars) for i in tree[3]]
        shape = np.broadcast_shapes(*(np.shape(i) for i in index)) if index else ()
        index = [np.broadcast_to(i, shape) for i in index]
        if any(((i < 0) | (i >= n)).any() for i, n in zip(index, array.shape)):
            raise _Skip()
        values = array[tuple(i.astype(np.int64) for i in index)].astype(object)
        loads.append((tree, index, values))
        return values
    if kind == "cast":
        x = _evaluate(tree[4], args, grid, name, ivs, loads, scalars)
        _, how, bits_in, bits_out, _ = tree
        if how == "zext":
            return _unsigned(x, bits_in)
        if how == "trunc":
            return _wrap(x, bits_out or 64)
        return x
    op, bits, where = tree[:3]
    a = _evaluate(tree[3], args, grid, name, ivs, loads, scalars)
    b = _evaluate(tree[4], args, grid, name, ivs, loads, scalars)
    width = bits or 64
    if op in ("<<", ">>u", ">>") or op.startswith(("/", "%")):
        bad = ((b < 0) | (b >= width)) if op in ("<<", ">>u", ">>") else (_unsigned(b, bits) == 0 if
                                                                        op.endswith("u") else b == 0)
        bad = np.broadcast_to(np.asarray(bad, dtype=bool), np.broadcast_shapes(np.shape(a), np.shape(b)))
        if bad.any():
            point = np.unravel_index(int(np.flatnonzero(bad)[0]), bad.shape)
            amount = np.broadcast_to(b, bad.shape)[point]
            what = f"shift amount {_render(tree[4], name, ivs)}" if op in ("<<", ">>u", ">>") else \
                f"divisor {_render(tree[4], name, ivs)}"
            valid = f", outside [0, {width})" if op in ("<<", ">>u", ">>") else ""
            at = f" at {where}" if where else ""
            context = _context(tree[4], args, grid, point, name, ivs)
            raise ValueError(f"the {what} of the {_OPERATIONS[op]}{at} is {amount}{valid}"
                             f"{' (' + context + ')' if context else ''}")
    if op == "+":
        r = a + b
    elif op == "-":
        r = a - b
    elif op == "*":
        r = a * b
    elif op == "<<":
        r = a << b
    elif op == ">>u":
        r = _unsigned(a, bits) >> b
    elif op == ">>":
        r = _wrap(a, width) >> b
    elif op in ("&", "|", "^"):
        a, b = _wrap(a, width), _wrap(b, width)
        r = a & b if op == "&" else a | b if op == "|" else a ^ b
    elif op in ("/", "%"):
        a, b = _wrap(a, width), _wrap(b, width)
        q = np.frompyfunc(lambda x, y: abs(x) // abs(y) * (1 if (x < 0) == (y < 0) else -1), 2, 1)(a, b)
        r = q if op == "/" else a - b * q
    elif op in ("/u", "%u"):
        a, b = _unsigned(a, bits), _unsigned(b, bits)
        r = a // b if op == "/u" else a % b
    else:
        a, b = _wrap(a, width), _wrap(b, width)
        r = np.maximum(a, b) if op == "max" else np.minimum(a, b)
    if bits and op in _SYMBOLS_WRAPPING or op in (">>u", "/u", "%u"):
        r = _wrap(r, width)
    return np.asarray(r, dtype=object)


def _context(tree, args, grid, point, name, ivs, skip=None, shown=None) -> str:
    """The induction variables (those in ``tree``, or ``shown``), loaded values (but the load
    ``skip``) and scalar arguments ``tree`` reads at ``point``."""
    import numpy as np

    loads, scalars = [], {}
    _evaluate(tree, args, grid, name, ivs, loads, scalars)
    if shown is None:
        shown = {t[1] for t in expr_trees(tree) if t[0] == "iv"}
    parts = [f"{ivs[n]} = {np.broadcast_to(grid[n], np.shape(grid[n]))[_at(grid[n], point)]}"
             for n in sorted(grid) if n in shown]
    for load, index, values in loads:
        if load is skip:
            continue
        pos = ", ".join(str(np.broadcast_to(i, np.shape(values))[_at(values, point)]) for i in index)
        parts.append(f"{name(load[1])}[{pos}] = {values[_at(values, point)]}")
    parts += [f"{name(k)} = {v}" for k, v in scalars.items()]
    return ", ".join(dict.fromkeys(parts))


def _at(array, point):
    """``point`` of the grid in ``array``, which broadcasts to it (axes of length 1: 0)."""
    import numpy as np

    shape = np.shape(array)
    point = point[len(point) - len(shape):] if shape else ()
    return tuple(p if n > 1 else 0 for p, n in zip(point, shape))


def expr_trees(tree: tuple):
    """``tree`` and its subtrees (a ``computed`` check's index), top first."""
    yield tree
    for part in tree:
        if isinstance(part, tuple) and part and isinstance(part[0], str):
            yield from expr_trees(part)
        elif isinstance(part, tuple):
            for x in part:
                if isinstance(x, tuple):
                    yield from expr_trees(x)


def _iterations(check: HostCheck, args, name, ivs, used: set, row):
    """The iterations of ``check.loops`` in which the access is made, as ``{loop number:
    object array of its index}`` for the loops in ``used`` (all of the same length, one entry
    per iteration, in loop order): a loop to a count repeats the iterations so far for each of
    its indices (or, unused, only asks for a count > 0); a loop over ``[lb, ub)`` evaluates its
    bounds at each iteration so far and keeps the non-empty ones, expanded by their indices when
    used. None when the access is never made, the arguments do not let the host evaluate the
    bounds, or there are more than ``COMPUTED_MAX_ITERATIONS``."""
    import numpy as np

    columns: dict = {}
    count = 1
    for n, (_, spec) in enumerate(check.loops):
        if isinstance(spec, LoopExtent):
            c = spec.of(args)
            if not c:
                return None                                # no iteration (or no count)
            if n not in used or n == row:
                continue
            if count * c > COMPUTED_MAX_ITERATIONS:
                return None
            columns = {k: np.repeat(v, c) for k, v in columns.items()}
            columns[n] = np.tile(np.arange(c, dtype=np.int64), count).astype(object)
            count *= c
            continue
        try:
            lo, hi = (np.broadcast_to(_evaluate(b, args, columns, name, ivs, [], {}), (count,))
                      for b in spec[1:])
        except _Skip:
            return None
        lengths = np.asarray(np.maximum(hi - lo, 0), dtype=object)
        if n not in used:
            keep = np.asarray(lengths > 0, dtype=bool)
            columns = {k: v[keep] for k, v in columns.items()}
            count = int(keep.sum())
        else:
            total = int(lengths.sum()) if count else 0
            if total > COMPUTED_MAX_ITERATIONS:
                return None
            reps = lengths.astype(np.int64)
            columns = {k: np.repeat(v, reps) for k, v in columns.items()}
            first = np.repeat(np.cumsum(reps) - reps, reps)
            columns[n] = np.repeat(lo, reps) + (np.arange(total, dtype=np.int64) - first).astype(object)
            count = total
        if not count:
            return None
    return columns, count


def check_computed(check: HostCheck, args, name) -> None:
    """``"computed"``: evaluate ``check.expr`` over the loops' iterations (with a ``range`` top,
    ``base + r`` for ``r`` below its loop's count: the first and last entry of each row) and
    refuse the first iteration whose index leaves ``[0, size)`` along ``axis``."""
    import numpy as np

    target = np.asarray(args[check.target])
    if check.axis >= target.ndim:
        return
    size = target.shape[check.axis]
    ivs = [n for n, _ in check.loops]
    tree, row = check.expr, None
    if tree[0] == "range":
        tree, row = tree[1], tree[2]
    used = {t[1] for t in expr_trees(tree) if t[0] == "iv"}
    for n in reversed(range(len(check.loops))):       # and the indices their bounds read
        spec = check.loops[n][1]
        if n in used and not isinstance(spec, LoopExtent):
            used |= {t[1] for b in spec[1:] for t in expr_trees(b) if t[0] == "iv"}
    found = _iterations(check, args, name, ivs, used, row)
    if found is None:
        return
    grid, count = found
    loads: list = []
    try:
        value = np.broadcast_to(_evaluate(tree, args, grid, name, ivs, loads, {}), (count,))
    except _Skip:
        return
    span = check.loops[row][1].of(args) - 1 if row is not None else 0
    bad = np.asarray((value < 0) | (value + span >= size), dtype=bool)
    if not bad.any():
        return
    point = (int(np.flatnonzero(bad)[0]),)
    first = value[point]
    entries = f"entry {first}" if row is None else f"entries {first} to {first + span}"
    at = f" at {check.where}" if check.where else ""
    index = _render(check.expr, name, ivs)
    if row is not None:
        index += f" for {ivs[row]} < {check.loops[row][1].describe(span + 1, name)}"
    lead = next((x for x in loads if x[0] is expr_lead(tree)), None)
    context = _context(tree, args, grid, point, name, ivs, skip=expr_lead(tree), shown=used)
    if lead is not None:
        load, idx, values = lead
        pos = ", ".join(str(np.broadcast_to(i, np.shape(values))[_at(values, point)]) for i in idx)
        head = f"{name(load[1])}[{pos}] = {values[_at(values, point)]} selects"
    else:
        head = "the index selects"
    raise ValueError(f"{head} {entries} along axis {check.axis} of {name(check.target)}, which has "
                     f"{size} entries (the {check.access}{at}, at the index {index}; {context})")


def expr_lead(tree: tuple) -> tuple | None:
    """The load nearest the top of ``tree`` (what a ``computed`` check's message leads with)."""
    level = [tree]
    while level:
        for t in level:
            if t[0] == "load":
                return t
        level = [x for t in level for x in t if isinstance(x, tuple) and x and isinstance(x[0], str)]
    return None
