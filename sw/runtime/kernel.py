"""The compiled kernel: what the compiler hands to the runtime.

A :class:`Kernel` bundles the three things a decoupled access/execute run needs:

* the binary **access program** (``program``, a :class:`sw.runtime.isa.Program`) for the access unit;
* the **argument map** (``arg_map``): how each argument register is filled from the call's inputs
  and the memory image (base addresses, sizes in bytes, dimensions, scalars, constants);
* the **execute-side code** (``execute_source``): Python source of the core's compute loop and its
  callbacks, generated from the DLC ``compute_loop``.

The execute-side source defines one function::

    def execute(args, control, pop):
        '''args: the function's arguments bound by position (NumPy arrays for memrefs, Python
        ints/floats for scalars); control: an iterator of control tokens (callback ids);
        pop(): the next data operand as a raw unsigned 64-bit Python int.
        Runs the prologue, then for each control token the callback it names until DONE (0xFFFF),
        then the epilogue; returns the tuple of the function's results.'''

The generated code decodes operands with the helpers of this module (``as_f32``, ``as_f64``,
``as_i64``, ``as_u64``), so it depends only on this contract, not on the runtime that runs it.
"""

from __future__ import annotations

import enum
import struct
from dataclasses import dataclass, field

from .isa import Limits, Program

__all__ = ["ArgKind", "ArgSpec", "ParamKind", "ParamSpec", "HostCheck", "Kernel", "as_u64", "as_i64",
           "as_f32", "as_f64", "fma32", "fma64"]

_F32 = struct.Struct("<f")
_F64 = struct.Struct("<d")
_U32 = struct.Struct("<I")
_U64 = struct.Struct("<Q")


def as_u64(raw: int) -> int:
    return raw & 0xFFFF_FFFF_FFFF_FFFF


def as_i64(raw: int) -> int:
    """Signed 64-bit integer (an ``index`` or i64 operand)."""
    raw &= 0xFFFF_FFFF_FFFF_FFFF
    return raw - (1 << 64) if raw >> 63 else raw


def as_f32(raw: int):
    """The f32 in bits [31:0] of an operand, as ``numpy.float32``."""
    import numpy as np
    return np.float32(_F32.unpack(_U32.pack(raw & 0xFFFF_FFFF))[0])


def as_f64(raw: int):
    """The f64 in bits [63:0] of an operand, as ``numpy.float64``."""
    import numpy as np
    return np.float64(_F64.unpack(_U64.pack(raw & 0xFFFF_FFFF_FFFF_FFFF))[0])


def fma64(a, b, c):
    """float64 ``a * b + c`` rounded once (IEEE 754 fusedMultiplyAdd; ``math.fma`` of Python
    3.13), from the exact rational value; non-finite operands give the unfused result."""
    import numpy as np
    from fractions import Fraction
    if not (np.isfinite(a) and np.isfinite(b) and np.isfinite(c)):
        return np.float64(a) * np.float64(b) + np.float64(c)
    return np.float64(float(Fraction(float(a)) * Fraction(float(b)) + Fraction(float(c))))


def fma32(a, b, c):
    """float32 ``a * b + c`` rounded once (IEEE 754 fusedMultiplyAdd, C's ``fmaf``), elementwise
    on scalars or NumPy arrays: the product is exact in float64, TwoSum gives the float64 sum's
    exact error, the sum is rounded to odd with it, and a round-to-odd float64 (53 >= 24 + 2 bits)
    rounds to the correctly rounded float32 (Boldo and Melquiond, IEEE Trans. Computers 57(4),
    2008). The execute sides (generated and hand-written) use it for ``math.fma`` on f32."""
    import numpy as np
    p = np.float64(a) * np.float64(b)
    c = np.float64(c)
    s = p + c
    t = s - p
    err = (p - (s - t)) + (c - t)
    even = (np.asarray(s).view(np.int64) & 1) == 0
    fix = np.isfinite(s) & np.isfinite(err) & (err != 0) & even
    return np.float32(np.where(fix, np.nextafter(s, np.copysign(np.inf, err)), s))


class ArgKind(str, enum.Enum):
    """How an argument register is filled (``sw.runtime.image.bind_arguments``)."""
    BASE = "base"       # byte address of memref parameter ``param`` in the memory image
    BYTES = "bytes"     # size in bytes of memref parameter ``param``
    DIM = "dim"         # dimension ``axis`` of memref parameter ``param`` (elements)
    SCALAR = "scalar"   # value of integer/index scalar parameter ``param``
    CONST = "const"     # the constant ``value``
    EXPR = "expr"       # computed by the core before start: Python expression ``expr`` over ``args``
                        # (the function's arguments) and ``np``, e.g. "args[2].shape[0] - 1"


@dataclass(frozen=True)
class ArgSpec:
    kind: ArgKind
    param: int = -1
    axis: int = 0
    value: int = 0
    expr: str = ""

    def __str__(self) -> str:
        if self.kind == ArgKind.EXPR:
            return f"expr {self.expr}"
        if self.kind == ArgKind.CONST:
            return f"const {self.value}"
        if self.kind == ArgKind.DIM:
            return f"dim arg{self.param}[{self.axis}]"
        return f"{self.kind.value} arg{self.param}"


class ParamKind(str, enum.Enum):
    MEMREF = "memref"
    INDEX = "index"     # MLIR index scalar (int64 on the host)
    INT = "int"
    FLOAT = "float"


@dataclass(frozen=True)
class ParamSpec:
    """One function parameter.

    ``dtype`` is a NumPy dtype name (``float32``, ``float64``, ``int64`` for ``index``, ...);
    ``rank`` is the memref rank (0 for scalars); ``in_image`` is true when the access unit reads
    it (it is then copied into the memory image; the execute side never writes it); ``shape``
    is the memref type's static extents, ``None`` for a dynamic one (``?``), or ``None`` as a
    whole when unknown (hand-built kernels): the program's strides assume a static extent, so a
    call must match it.
    """
    name: str
    kind: ParamKind
    dtype: str
    rank: int = 0
    in_image: bool = False
    shape: tuple[int | None, ...] | None = None


@dataclass(frozen=True)
class LoopExtent:
    """The trip count of a loop from 0 in steps of 1, as the host reads it off the call's
    arguments: the constant ``value`` when ``source`` is -1; else ``args[source].shape[axis]``, or
    with ``element`` the value ``args[source][element]`` (a count the kernel loads from an
    argument it never writes; ``()``: the scalar argument itself); minus ``minus``; 0 when that is
    negative (the loop does not run)."""
    source: int = -1
    axis: int = 0
    value: int = 0
    element: tuple[int, ...] | None = None
    minus: int = 0

    def of(self, args) -> int | None:
        """The trip count, or ``None`` when the arguments do not give it (a missing axis or
        element, a non-integer count: other checks, or the unit, refuse those)."""
        n = self.raw(args)
        return None if n is None else max(n, 0)

    def raw(self, args) -> int | None:
        """The count minus ``minus``, not clamped at 0 (``None`` as for :meth:`of`)."""
        import numpy as np

        if self.source < 0:
            n = self.value
        else:
            a = np.asarray(args[self.source])
            if self.element is None:
                if self.axis >= a.ndim:
                    return None
                n = a.shape[self.axis]
            else:
                if a.dtype.kind not in "iu" or len(self.element) != a.ndim or \
                        any(not 0 <= i < e for i, e in zip(self.element, a.shape)):
                    return None
                n = int(a[self.element])
        return n - self.minus

    def describe(self, n: int, name) -> str:
        """``n`` and where it comes from, for messages (``name(k)`` names argument ``k``)."""
        if self.source < 0:
            what = f"the constant {self.value}"
        elif self.element is None:
            what = f"the size of {name(self.source)} along axis {self.axis}"
        elif not self.element:
            what = f"the value of {name(self.source)}"
        else:
            what = f"the value of {name(self.source)}[{', '.join(map(str, self.element))}]"
        return f"{n}, {what}" + (f" minus {self.minus}" if self.minus else "")


@dataclass(frozen=True)
class HostCheck:
    """One check of the call's arguments that the host makes before the access unit starts
    (derived by ``sw.compiler.backend.host_checks``, which explains the kinds).

    ``kind``: ``"index"`` (every element of ``args[source]`` in ``[0, args[target].shape[axis])``;
    with ``loop``, only the elements ``scale * i + offset`` of the 1-D ``args[source]`` for ``i``
    in ``range(n)``, ``n`` the loop's trip count), ``"bound"`` (every element in
    ``[0, args[target].shape[axis]]``), ``"extent"`` (``args[source].shape[source_axis]``, or
    ``value`` when ``source`` is -1, or the trip count of ``loop`` when given, at most
    ``args[target].shape[axis]``; with ``offset`` c > 0 or ``scale`` a > 1, for a loop from 0
    that reads entry ``a * i + c``: ``a * (n - 1) + c + 1`` when that extent ``n > 0``) or
    ``"last"`` (a loop over ``[args[source][g + pair[0]], args[source][g + pair[1]])`` for each
    ``g`` in ``range(n)``, ``n`` the trip count of the outer ``loop``, reads entry
    ``scale * i + offset`` of ``args[target]`` along ``axis``: for every ``g`` whose range is not
    empty, its first and last such entry lie in ``[0, args[target].shape[axis])``) or ``"block"``
    (every element ``v`` of ``args[source]`` reads the entries ``v * b`` to ``v * b + b - 1``
    along ``axis``, ``b`` the trip count of ``loop``, the block size, never negative: when
    ``b > 0``, ``v`` in ``[0, args[target].shape[axis] // b)``) or ``"order"`` (a loop from ``A[i + pair[0]]`` to
    ``A[i + pair[1]]``, ``A = args[source]`` 1-D, must not run backwards: ``A[i + pair[0]] <=
    A[i + pair[1]]`` for every ``i < n``, ``n`` the trip count of ``loop``; with ``outer``
    ``(B, p, q)``, for every ``i`` in ``[args[B][g + p], args[B][g + q])``, ``g < n``; with
    neither, for every ``i``; pairs past the end of ``A`` are the extent check's business) or
    ``"alloc"`` (a ``memref.alloc`` whose size along its axis ``axis`` is ``loop``'s count, not
    clamped: ``dim(X, j) - m``, a scalar argument, a loaded count: at least 0) or
    ``"computed"`` (the index ``expr`` of the ``access`` along ``axis``, evaluated for every
    iteration of ``loops``, the loops around the access, ``(name, trip count)`` or ``(name,
    ("bounds", lb, ub))`` with trees of the bounds: inside ``[0, args[target].shape[axis])``;
    see :func:`_evaluate` for the trees).
    ``where`` is the ``file:line:col`` of the load, loop or allocation.
    """
    kind: str
    source: int
    target: int
    axis: int
    source_axis: int = 0
    value: int = 0
    where: str = ""
    offset: int = 0
    scale: int = 1
    loop: LoopExtent | None = None
    pair: tuple[int, int] = (0, 1)
    outer: tuple[int, int, int] | None = None
    expr: tuple | None = None
    loops: tuple[tuple[str, object], ...] = ()
    access: str = "load"

    def _key(self) -> tuple:
        return (self.kind, self.source, self.target, self.axis, self.source_axis, self.value,
                self.offset, self.scale, self.loop, self.pair, self.outer, self.expr, self.loops)

    def same_as(self, other: "HostCheck") -> bool:
        return self._key() == other._key()

    def check(self, params: list["ParamSpec"], args) -> None:
        """Raise ``ValueError`` naming the argument (``argN (name)``), the position and the bad
        value when ``args`` violate the check."""
        import numpy as np

        def name(n: int) -> str:
            return f"arg{n} ({params[n].name})"

        if self.kind == "alloc":
            self._check_alloc(args, name)
            return
        if self.kind == "computed":
            _check_computed(self, args, name)
            return
        target = np.asarray(args[self.target])
        if self.axis >= target.ndim:
            return
        size = target.shape[self.axis]
        at = f" at {self.where}" if self.where else ""
        entry = (f"{self.scale} * i" if self.scale != 1 else "i") + \
            (f" + {self.offset}" if self.offset else "")
        if self.kind == "last":
            self._check_last(params, args, name, size, at, entry)
            return
        if self.kind == "index" and self.loop is not None:
            self._check_strided_index(params, args, name, size, at, entry)
            return
        if self.kind == "block":
            self._check_block(args, name, target, size, at)
            return
        if self.kind == "order":
            self._check_order(args, name, at)
            return
        if self.kind == "extent":
            if self.loop is not None:
                need = self.loop.of(args)
                if need is None:
                    return
                what = self.loop.describe(need, name)
            elif self.source < 0:
                need, what = self.value, f"the constant {self.value}"
            else:
                source = np.asarray(args[self.source])
                if self.source_axis >= source.ndim:
                    return
                need = source.shape[self.source_axis]
                what = f"{need}, the size of {name(self.source)} along axis {self.source_axis}"
            if self.offset or self.scale != 1:
                need = self.scale * (need - 1) + self.offset + 1 if need > 0 else 0
                if need > size:
                    raise ValueError(f"{name(self.target)} has {size} entries along axis {self.axis}, "
                                     f"fewer than the {need} that the loop{at} reads (it runs over "
                                     f"{what}, and reads entry {entry})")
                return
            if need > size:
                raise ValueError(f"{name(self.target)} has {size} entries along axis {self.axis}, "
                                 f"fewer than the loop{at} that indexes it runs over ({what})")
            return
        values = np.asarray(args[self.source])
        if values.size == 0 or values.dtype.kind not in "iu":
            return
        upper = size if self.kind == "bound" else size - 1
        bad = np.flatnonzero((values.reshape(-1) < 0) | (values.reshape(-1) > upper))
        if not bad.size:
            return
        position = np.unravel_index(int(bad[0]), values.shape)
        value = int(values[position])
        pos = ", ".join(str(int(p)) for p in position)
        if self.kind == "bound":
            raise ValueError(f"{name(self.source)}[{pos}] = {value} is outside [0, {size}]: it is a "
                             f"bound of the loop{at} whose index selects along axis {self.axis} of "
                             f"{name(self.target)}, which has {size} entries")
        stride = int(np.prod(target.shape[self.axis + 1:], dtype=np.int64)) * target.dtype.itemsize
        overflow = ""
        if abs(value) * stride >= 1 << 63:
            overflow = f"; its byte offset {value} * {stride} does not fit in 64 bits"
        raise ValueError(f"{name(self.source)}[{pos}] = {value} is outside [0, {size}): it "
                         f"indexes axis {self.axis} of {name(self.target)}, which has {size} "
                         f"entries (the load{at}){overflow}")


    def _check_strided_index(self, params, args, name, size, at, entry) -> None:
        """``"index"`` with ``loop``: the elements ``scale * i + offset`` (``i < n``) of the 1-D
        source index axis ``axis`` of the target."""
        import numpy as np

        values = np.asarray(args[self.source])
        n = self.loop.of(args)
        if n is None or values.ndim != 1 or values.dtype.kind not in "iu":
            return
        positions = self.offset + self.scale * np.arange(n, dtype=np.int64)
        positions = positions[positions < values.size]          # the extent check's business
        read = values[positions]
        bad = np.flatnonzero((read < 0) | (read >= size))
        if not bad.size:
            return
        pos, value = int(positions[bad[0]]), int(read[bad[0]])
        raise ValueError(f"{name(self.source)}[{pos}] = {value} is outside [0, {size}): it "
                         f"indexes axis {self.axis} of {name(self.target)}, which has {size} "
                         f"entries (the load{at}, read as entry {entry} of {name(self.source)} for "
                         f"i < {self.loop.describe(n, name)})")

    def _check_block(self, args, name, target, size, at) -> None:
        """``"block"``: every element ``v`` of the source reads entries ``v * b + i``, ``i < b``
        (``b`` the trip count of ``loop``), along ``axis`` of the target: all inside ``[0, size)``."""
        import numpy as np

        values = np.asarray(args[self.source])
        b = self.loop.raw(args)
        if b is not None and b < 0:
            # the loop over a block's rows would not run, but -O3 loads the rows as one block of
            # b * (row length) elements, which the unit refuses (BLOCK_LENGTH): no block size < 0
            what = self.loop.describe(b, name).split(", ", 1)[1]
            raise ValueError(f"the block size b = {b} ({what}) is negative: the load{at} reads the "
                             f"entries v * b + i for i < b along axis {self.axis} of "
                             f"{name(self.target)}, v an element of {name(self.source)}")
        if not b or values.size == 0 or values.dtype.kind not in "iu":
            return                        # no block is read (b = 0), or no integers to check
        blocks = size // b
        flat = values.reshape(-1)
        bad = np.flatnonzero((flat < 0) | (flat >= blocks))
        if not bad.size:
            return
        position = np.unravel_index(int(bad[0]), values.shape)
        value = int(values[position])
        pos = ", ".join(str(int(p)) for p in position)
        first, last = value * b, value * b + b - 1
        stride = int(np.prod(target.shape[self.axis + 1:], dtype=np.int64)) * target.dtype.itemsize
        overflow = ""
        if max(abs(first), abs(last)) * stride >= 1 << 63:
            overflow = f"; its byte offset {first} * {stride} does not fit in 64 bits"
        raise ValueError(f"{name(self.source)}[{pos}] = {value} is outside [0, {blocks}): it "
                         f"selects entries {first} to {last} along axis {self.axis} of "
                         f"{name(self.target)}, which has {size} entries (the load{at}, read as "
                         f"block entries {value} * b + i for i < b = "
                         f"{self.loop.describe(b, name)}){overflow}")

    def _check_alloc(self, args, name) -> None:
        """``"alloc"``: the allocation's size along ``axis``, ``loop``'s count, is not negative."""
        import numpy as np

        n = self.loop.raw(args)
        if n is None or n >= 0:
            return
        at = f" at {self.where}" if self.where else ""
        sized = f"(the size of its axis {self.axis} is {self.loop.describe(n, name)})"
        source = np.asarray(args[self.loop.source])
        if self.loop.element is None:
            have = source.shape[self.loop.axis]
            raise ValueError(f"{name(self.loop.source)} has {have} entries along axis {self.loop.axis}, "
                             f"fewer than the {self.loop.minus} that the allocation{at} needs {sized}")
        pos = f"[{', '.join(map(str, self.loop.element))}]" if self.loop.element else ""
        raise ValueError(f"{name(self.loop.source)}{pos} = {n + self.loop.minus} is less than "
                         f"{self.loop.minus}: it is a size of the allocation{at} {sized}")

    def _check_order(self, args, name, at) -> None:
        """``"order"``: ``A[i + p] <= A[i + q]`` for the ``i`` the loop's range is read at."""
        import numpy as np

        bounds = np.asarray(args[self.source])
        if bounds.ndim != 1 or bounds.dtype.kind not in "iu":
            return
        p, q = self.pair
        span = bounds.size - max(p, q)                  # the i whose pair lies inside A
        if span <= 0:
            return
        def entry(c: int) -> str:
            return f"i + {c}" if c else "i"

        if self.loop is None:
            reached = np.ones(span, dtype=bool)
            which = "every i"
        else:
            n = self.loop.of(args)
            if n is None:
                return
            what = self.loop.describe(n, name)
            if self.outer is None:
                reached = np.arange(span) < n
                which = f"i < {what}"
            else:
                b, bp, bq = self.outer
                ranges = np.asarray(args[b])
                if ranges.ndim != 1 or ranges.dtype.kind not in "iu":
                    return
                g = np.arange(n, dtype=np.int64)
                g = g[g + max(bp, bq) < ranges.size]
                lo = np.clip(ranges[g + bp].astype(np.int64), 0, span)
                hi = np.clip(ranges[g + bq].astype(np.int64), 0, span)
                keep = lo < hi
                marks = np.zeros(span + 1, dtype=np.int64)
                np.add.at(marks, lo[keep], 1)
                np.add.at(marks, hi[keep], -1)
                reached = np.cumsum(marks[:-1]) > 0
                which = (f"each i from {name(b)}[{entry(bp).replace('i', 'g')}] to "
                         f"{name(b)}[{entry(bq).replace('i', 'g')}], g < {what}")
        i = np.flatnonzero(reached & (bounds[p:p + span] > bounds[q:q + span]))
        if not i.size:
            return
        k = int(i[0])
        A = name(self.source)
        raise ValueError(f"{A}[{k + q}] = {int(bounds[k + q])} is less than {A}[{k + p}] = "
                         f"{int(bounds[k + p])}: they are the upper and lower bound of the loop{at} "
                         f"(entries {entry(q)} and {entry(p)} of {A} for {which}), which must not "
                         f"run backwards")

    def _check_last(self, params, args, name, size, at, entry) -> None:
        """``"last"``: the loops over ``[A[g + pair[0]], A[g + pair[1]])``, ``g < n``, that run,
        read entries ``scale * i + offset`` of the target inside ``[0, size)``."""
        import numpy as np

        bounds = np.asarray(args[self.source])
        n = self.loop.of(args)
        if n is None or bounds.ndim != 1 or bounds.dtype.kind not in "iu":
            return
        p, q = self.pair
        g = np.arange(n, dtype=np.int64)
        g = g[(g + max(p, q) < bounds.size)]                     # the extent check's business
        lo, hi = bounds[g + p].astype(object), bounds[g + q].astype(object)   # exact arithmetic
        first = lo * self.scale + self.offset
        last = (hi - 1) * self.scale + self.offset
        bad = np.flatnonzero(np.array((lo < hi) & ((first < 0) | (last >= size)), dtype=bool))
        if not bad.size:
            return
        k = int(bad[0])
        at_lo, at_hi = int(g[k]) + p, int(g[k]) + q
        span = (f"it runs from {name(self.source)}[{at_lo}] = {lo[k]} to {name(self.source)}"
                f"[{at_hi}] = {hi[k]}, and reads entry {entry}")
        if last[k] >= size:
            raise ValueError(f"{name(self.target)} has {size} entries along axis {self.axis}, fewer "
                             f"than the {last[k] + 1} that the loop{at} reads ({span})")
        raise ValueError(f"the loop{at} reads entry {first[k]} of {name(self.target)} along axis "
                         f"{self.axis}, below 0 ({span})")


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


def _check_computed(check: HostCheck, args, name) -> None:
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


@dataclass
class Kernel:
    """A compiled kernel (see module docstring)."""
    name: str
    params: list[ParamSpec]
    program: Program
    arg_map: list[ArgSpec]
    execute_source: str
    n_results: int = 1
    result_dtypes: list[str] = field(default_factory=list)
    # Callback id -> (name, number of operands popped): for the cost model and for checks.
    callbacks: dict[int, tuple[str, int]] = field(default_factory=dict)
    # The TMU configuration the program was compiled for (the compiler always sets it, by default
    # configs/tmu_rtl.json; None only in hand-built kernels: the golden model's ``Limits()``); the
    # golden model decodes the program with it unless a run is given other limits.
    limits: Limits | None = None
    # Checks of the arguments the host makes before a run (index ranges, loop bounds, extents).
    host_checks: list[HostCheck] = field(default_factory=list)

    def check_arguments(self, args) -> None:
        """Run :attr:`host_checks` on the call's arguments (bound by position).

        Raises
        ------
        ValueError
            An index outside the dimension it selects from (or whose byte offset would overflow
            64 bits), a loop bound past the array it ranges over, offsets that decrease, an
            argument smaller than the loop over it; the message names ``argN (name)``, the
            position and the value.
        """
        for check in self.host_checks:
            check.check(self.params, args)

    def execute_fn(self):
        """Compile ``execute_source`` and return its ``execute`` function."""
        namespace: dict = {}
        exec(compile(self.execute_source, f"<execute:{self.name}>", "exec"), namespace)
        return namespace["execute"]
