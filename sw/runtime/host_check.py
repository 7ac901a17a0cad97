"""The host-side checks of a kernel's arguments: :class:`HostCheck` and the trip counts it reads
off the arguments, :class:`LoopExtent`.

The compiler derives the checks from a kernel's SCF function (``sw.compiler.backend.host_checks``,
which explains the kinds) and stores them in ``Kernel.host_checks``; ``Kernel.check_arguments``
runs them before the access unit starts, each refusal a ``ValueError`` naming the argument. This
module holds the checks of every kind but ``computed``, whose evaluation of the index is in
:mod:`sw.runtime.host_check_computed`. See docs/compiler.md, "Host-side argument checks".
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from .kernel import ParamSpec

__all__ = ["HostCheck", "LoopExtent"]


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
    see ``sw.runtime.host_check_computed._evaluate`` for the trees).
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
            from .host_check_computed import check_computed   # it imports this module
            check_computed(self, args, name)
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
