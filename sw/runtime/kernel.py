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

__all__ = ["ArgKind", "ArgSpec", "ParamKind", "ParamSpec", "Kernel", "as_u64", "as_i64", "as_f32",
           "as_f64"]

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
    it (it is then copied into the memory image; the execute side never writes it).
    """
    name: str
    kind: ParamKind
    dtype: str
    rank: int = 0
    in_image: bool = False


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
    # The TMU configuration the program was compiled for (None: the default ``Limits()``); the
    # golden model decodes the program with it unless a run is given other limits.
    limits: Limits | None = None

    def execute_fn(self):
        """Compile ``execute_source`` and return its ``execute`` function."""
        namespace: dict = {}
        exec(compile(self.execute_source, f"<execute:{self.name}>", "exec"), namespace)
        return namespace["execute"]
