"""MLIR SCF text frontend: parse, record source locations, check the supported subset.

The input is one ``func.func`` made of ``func``, ``scf``, ``arith`` and ``memref`` operations
(and ``math.fma``) —
what torch-mlir, the MLIR sparsifier and Ember's own tests produce for embedding operations.
Every operation gets a ``FileLineColLoc`` of where it starts in the input (unless the text gives
an explicit ``loc(...)``), so later stages can report errors at ``line:col``.
"""

from __future__ import annotations

import re

from xdsl.dialects import arith, func, memref, scf
from xdsl.dialects.builtin import (
    BFloat16Type,
    Float16Type,
    Float32Type,
    Float64Type,
    FileLineColLoc,
    IndexType,
    IntAttr,
    IntegerAttr,
    IntegerType,
    MemRefType,
    ModuleOp,
    NoneAttr,
    StringAttr,
    UnknownLoc,
)
from xdsl.ir import Attribute, Operation, SSAValue
from xdsl.parser import Parser
from xdsl.utils.exceptions import ParseError, VerifyException

from ..context import make_context
from ..errors import CompileError, Location, location_of

__all__ = ["parse_mlir", "check_supported", "SUPPORTED_OPS", "element_type_name", "MEMREF_ELEMENTS",
           "MAX_INDIRECTION", "TRUNCF_ROUNDING"]

#: Operations the compiler understands. Anything else is a CompileError at its location.
SUPPORTED_OPS = frozenset({
    "func.func", "func.return",
    "scf.for", "scf.if", "scf.yield",
    "memref.load", "memref.store", "memref.dim", "memref.alloc", "memref.dealloc",
    "arith.constant",
    "arith.addi", "arith.subi", "arith.muli", "arith.divsi", "arith.divui", "arith.remsi",
    "arith.remui", "arith.floordivsi", "arith.ceildivsi", "arith.andi", "arith.ori", "arith.xori",
    "arith.shli", "arith.shrsi", "arith.shrui", "arith.maxsi", "arith.minsi", "arith.maxui",
    "arith.minui",
    "arith.addf", "arith.subf", "arith.mulf", "arith.divf", "arith.negf", "arith.maximumf",
    "arith.minimumf", "arith.maxnumf", "arith.minnumf",
    "arith.cmpi", "arith.cmpf", "arith.select",
    "arith.index_cast", "arith.sitofp", "arith.uitofp", "arith.fptosi",
    "arith.fptoui", "arith.extf", "arith.truncf", "arith.extsi", "arith.extui", "arith.trunci",
    "math.fma", "math.sqrt",
})

_INT_WIDTHS = (1, 8, 16, 32, 64)


def element_type_name(t: Attribute) -> str | None:
    """The NumPy dtype name of a supported scalar type (the dtype of a memref argument's array),
    else None.

    ``f16`` is ``float16``; ``bf16`` is ``uint16``: NumPy has no bfloat16, so a bf16 memref is
    passed as its bit patterns (``torch_tensor.view(torch.int16).numpy().view(np.uint16)``); the
    execute side widens them to float32 (``bits << 16``) and rounds results back
    (docs/compiler.md, "Supported input"). ``index`` is ``int64``, ``i1`` ``bool``.
    """
    if isinstance(t, Float16Type):
        return "float16"
    if isinstance(t, BFloat16Type):
        return "uint16"
    if isinstance(t, Float32Type):
        return "float32"
    if isinstance(t, Float64Type):
        return "float64"
    if isinstance(t, IndexType):
        return "int64"
    if isinstance(t, IntegerType) and t.width.data in _INT_WIDTHS:
        return "bool" if t.width.data == 1 else f"int{t.width.data}"
    return None


#: Element types a memref may have: the access unit loads 1-, 2-, 4- and 8-byte elements (integers
#: sign-extended, floats as raw bits; docs/isa.md §1).
MEMREF_ELEMENTS = ("f16", "bf16", "f32", "f64", "i8", "i16", "i32", "i64", "index")

#: Most loads on one address chain of a memory stream (``x[idx2[idx1[i]]]`` is 3; loop indices
#: and registers count 0, loop bounds do not count): the subset of issue 4.
MAX_INDIRECTION = 3

#: ``arith.truncf {roundingmode = N : i32}`` values the execute side implements (MLIR's
#: ``arith::RoundingMode``): 0 to_nearest_even (the default), 3 toward_zero, 4 to_nearest_away.
TRUNCF_ROUNDING = {0: "to_nearest_even", 3: "toward_zero", 4: "to_nearest_away"}

_HALF_TYPES = (Float16Type, BFloat16Type)


#: The name of the operation starting at a position (after its result list).
_OP_NAME = re.compile(r'(?:%[\w$.-]+(?::\d+)?\s*(?:,\s*%[\w$.-]+(?::\d+)?\s*)*=\s*)?"?([A-Za-z_][\w$.]*)')


class _LocatingParser(Parser):
    """xDSL's parser, recording each operation's start as a FileLineColLoc."""

    def __init__(self, ctx, text: str, filename: str):
        super().__init__(ctx, text, filename)
        self._filename = filename

    def parse_operation(self) -> Operation:
        start = self._current_token.span
        try:
            op = super().parse_operation()
        except ParseError as e:
            # Report at the innermost operation: unsupported ops by name, else the parse error.
            loc = start.get_location()
            here = Location(self._filename, loc.line, loc.col)
            m = re.fullmatch(r"Operation (\w+\.[\w.]+) is not registered", e.msg)
            if m is not None:
                raise CompileError(f"unsupported operation '{m[1]}'", here) from None
            name = _OP_NAME.match(start.input.content, start.start)
            if name is not None and "." in name[1] and name[1] not in SUPPORTED_OPS:
                raise CompileError(f"unsupported operation '{name[1]}'", here) from None
            at = e.span.get_location()
            what = f" in '{name[1]}'" if name is not None and "." in name[1] else ""
            raise CompileError(f"{e.msg}{what}", Location(self._filename, at.line, at.col)) from None
        except VerifyException as e:
            # A type the op's syntax rejects while parsing (memref.load of a memref<*xf32>).
            loc = start.get_location()
            here = Location(self._filename, loc.line, loc.col)
            name = _OP_NAME.match(start.input.content, start.start)
            what = f"'{name[1]}'" if name is not None else "this operation"
            m = re.fullmatch(r"(.+) should be of base attribute \w+", str(e))
            if m is not None:
                raise CompileError(f"unsupported type {m[1]} in {what}", here) from None
            raise CompileError(f"invalid {what}: {e}", here) from None
        if isinstance(op.location, UnknownLoc):
            loc = start.get_location()
            op.location = FileLineColLoc(StringAttr(self._filename), IntAttr(loc.line),
                                         IntAttr(loc.col))
        return op


def parse_mlir(text: str, filename: str = "<input>") -> ModuleOp:
    """Parse and verify MLIR text; errors become :class:`CompileError` with a location."""
    ctx = make_context()
    try:
        module = _LocatingParser(ctx, text, filename).parse_module()
    except ParseError as e:
        loc = e.span.get_location()
        raise CompileError(e.msg, Location(filename, loc.line, loc.col)) from None
    _verify(module)
    return module


def _verify(module: ModuleOp) -> None:
    # Verify innermost-first so that the error points at the op that is wrong, not its parent.
    for op in reversed(list(module.walk())):
        try:
            op.verify(verify_nested_ops=False)
        except Exception as e:      # VerifyException; some xDSL verifiers raise a bare Exception
            raise CompileError(f"invalid '{op.name}': {e}", location_of(op)) from None


def _type_ok(t: Attribute) -> bool:
    if isinstance(t, MemRefType):
        return str(t.element_type) in MEMREF_ELEMENTS and isinstance(t.layout, NoneAttr)
    return element_type_name(t) is not None


def _readonly_args(kernel: func.FuncOp) -> set[SSAValue]:
    """Memref arguments the function never stores to (transforms/choose_decoupling.py's rule)."""
    stored = {op.memref for op in kernel.walk() if isinstance(op, memref.StoreOp)}
    return {a for a in kernel.args if isinstance(a.type, MemRefType) and a not in stored}


def _check_indirection(kernel: func.FuncOp) -> None:
    """Reject a load from a read-only memref whose address chain has more than MAX_INDIRECTION
    loads (counting itself): ``t[i3[i2[i1[i]]]]`` is 4."""
    readonly = _readonly_args(kernel)
    depth: dict[SSAValue, int] = {}

    def of(value: SSAValue) -> int:
        return depth.get(value, 0)

    for op in kernel.walk():
        inner = max((of(v) for v in op.operands), default=0)
        if isinstance(op, memref.LoadOp):
            inner = max((of(v) for v in op.indices), default=0)
            if op.memref in readonly:
                inner += 1
                if inner > MAX_INDIRECTION:
                    raise CompileError(
                        f"unsupported 'memref.load' from %{op.memref.name_hint}: {inner} levels of "
                        f"indirection (loads on its address chain, itself included); the supported "
                        f"subset has at most {MAX_INDIRECTION}", location_of(op))
        elif isinstance(op, scf.ForOp | scf.IfOp):
            continue          # loop indices and bounds do not count: a new traversal
        for r in op.results:
            depth[r] = inner


def check_supported(module: ModuleOp) -> func.FuncOp:
    """Check the subset (docs/compiler.md, "Supported input") and return the kernel function.

    Raises
    ------
    CompileError
        Naming the first unsupported operation, type or attribute and its ``file:line:col``.
    """
    funcs = [op for op in module.ops if isinstance(op, func.FuncOp)]
    others = [op for op in module.ops if not isinstance(op, func.FuncOp)]
    if others:
        raise CompileError(f"unsupported operation '{others[0].name}' at module level",
                           location_of(others[0]))
    for f in funcs:                       # unsupported ops first: a func.call names the callee
        for op in f.body.walk():
            if op.name not in SUPPORTED_OPS:
                raise CompileError(f"unsupported operation '{op.name}'", location_of(op))
    if len(funcs) != 1:
        raise CompileError(f"expected one func.func in the module, found {len(funcs)}",
                           location_of(funcs[1]) if funcs else None)
    kernel = funcs[0]
    fname = kernel.sym_name.data
    if kernel.is_declaration:
        raise CompileError(f"func.func @{fname} has no body", location_of(kernel))
    for arg in kernel.body.block.args:
        name = f"%{arg.name_hint or arg.index}"
        if not _type_ok(arg.type):
            raise CompileError(f"unsupported type {arg.type} of argument {name} of @{fname}",
                               location_of(kernel))
        if isinstance(arg.type, _HALF_TYPES):
            raise CompileError(f"unsupported scalar {arg.type} argument {name} of @{fname} "
                               "(f16/bf16 only as memref elements and values inside the function; "
                               "pass an f32 and arith.truncf it)", location_of(kernel))
    for t in kernel.function_type.outputs.data:
        if not _type_ok(t):
            raise CompileError(f"unsupported result type {t} of @{fname}", location_of(kernel))
    for op in kernel.body.walk():
        if op is kernel:
            continue
        for value in (*op.operands, *op.results):
            if not _type_ok(value.type):
                raise CompileError(f"unsupported type {value.type} in '{op.name}'", location_of(op))
        for region in op.regions:
            for block in region.blocks:
                for barg in block.args:
                    if not _type_ok(barg.type):
                        raise CompileError(f"unsupported type {barg.type} of a block argument of "
                                           f"'{op.name}'", location_of(op))
        if isinstance(op, memref.AllocOp) and op.symbol_operands:
            raise CompileError("unsupported 'memref.alloc' with symbol operands", location_of(op))
        if isinstance(op, arith.ConstantOp) and not isinstance(
                op.result.type, IndexType | IntegerType | Float32Type | Float64Type | Float16Type
                | BFloat16Type):
            raise CompileError(f"unsupported constant of type {op.result.type}", location_of(op))
        if isinstance(op, scf.ForOp) and not isinstance(op.lb.type, IndexType):
            raise CompileError(f"unsupported 'scf.for' over {op.lb.type} (index loops only)",
                               location_of(op))
        if isinstance(op, arith.TruncFOp) and "roundingmode" in op.attributes:
            mode = op.attributes["roundingmode"]
            value = mode.value.data if isinstance(mode, IntegerAttr) else None
            if value not in TRUNCF_ROUNDING:
                raise CompileError(
                    f"unsupported 'arith.truncf' rounding mode {mode} (supported: "
                    + ", ".join(f"{k} = {v}" for k, v in TRUNCF_ROUNDING.items()) + ")",
                    location_of(op))
    _check_indirection(kernel)
    return kernel
