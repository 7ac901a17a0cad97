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

The checks of the arguments that :meth:`Kernel.check_arguments` makes before a run are in
:mod:`sw.runtime.host_check` (:class:`HostCheck`, :class:`LoopExtent`) and
:mod:`sw.runtime.host_check_computed` (the ``computed`` kind); this module re-exports their names.
"""

from __future__ import annotations

import enum
import struct
from dataclasses import dataclass, field

from .host_check import HostCheck, LoopExtent  # noqa: F401 (LoopExtent: re-exported)
# Moved to host_check_computed.py; imported here so that ``sw.runtime.kernel`` still names them.
from .host_check_computed import COMPUTED_MAX_ITERATIONS, expr_lead, expr_trees  # noqa: F401
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
