"""DLC -> the execute side as C11 source for a real core (``ember compile --emit c``).

The generated translation unit defines, for a kernel ``<name>`` (docs/backend.md, "The C execute
side")::

    int ember_<name>(<params>, <results>, void *scratch, size_t scratch_bytes);
    size_t ember_<name>_scratch_bytes(int64_t max_len);

Parameters follow the function's arguments: a memref is ``ember_memref_t *`` (row-major,
contiguous; ``data`` points at element 0, ``sizes[k]`` is dimension k in elements), ``index`` is
``int64_t``, ``iN`` is ``intN_t`` (``i1`` is ``bool``), ``f32``/``f64`` are ``float``/``double``.
Each function result is an output pointer appended to the parameters (``ember_memref_t *`` or a
scalar pointer); a result that is a memref argument is written back through it as well. Memref
elements are stored as ``float``/``double``/``intN_t``/``bool``; ``f16`` and ``bf16`` elements as
their IEEE-754 binary16 / bfloat16 bit patterns in ``uint16_t``.

The body is the DLC function: the **prologue** (ops before ``dlc.configure_access``), the
**compute loop** over control tokens (one ``case`` per ``dlc.case``, ``DONE`` = 0xFFFF ends it),
the **epilogue** (ops after ``dlc.compute_loop``). It returns ``EMBER_OK`` (0), or
``EMBER_ERR_SCRATCH`` when a buffered operand does not fit the scratch area, or
``EMBER_ERR_CONTROL`` for a control token that names no callback (the Python execute side raises
``RuntimeError`` there). Tokens come through the queue API, which the platform provides::

    uint16_t ember_pop_control(void);   /* next control token (callback id), blocks */
    uint64_t ember_pop_data(void);      /* next 64-bit data token, blocks */

Operands (docs/backend.md, "Operands and tokens"; docs/isa.md §7.5): unpacked, an element is the
low bits of its own token (an f32 bits [31:0], f16/bf16 bits [15:0], an integer sign-extended by
the unit); a vector operand is ``L`` tokens, a mask one token holding the number of active lanes;
``dlc.pop_packed`` and ``dlc.pop_buffer ... packed`` take elements of their natural size at
naturally aligned byte offsets, little-endian, from 64-bit tokens whose unused bytes are zero.

**Buffered operands** (``dlc.pop_buffer``, a runtime count ``n`` of elements) are popped into a
caller-provided scratch area, bump-allocated per callback firing (every ``case`` starts with an
empty scratch area, every iteration of a loop that pops buffers — ``segment-callbacks`` — starts
where the loop started), 8-byte aligned, ``8 * ceil(n * size / 8)`` bytes each.
``ember_<name>_scratch_bytes(max_len)`` is the size that suffices when no buffered operand is
longer than ``max_len`` elements (0 for kernels without buffers: ``scratch`` may then be NULL).
A scratch area rather than a fixed-size array, because ``n`` is a runtime length (an embedding
dimension); rather than a VLA, because C11 makes VLAs optional and a stack of unknown size is the
wrong place for a row; rather than consuming elements as they are popped, because callbacks read
rows more than once and out of order (TransE reads three rows per element of the loop).

**Vectors** (``vector<L x T>`` in callbacks, ``-O1`` and above) are structs ``ember_<T>x<L>_t``
with one array member ``v``; every ``vector`` op and every element-wise ``arith``/``math`` op on
vectors is a loop over the ``L`` lanes; ``vector.create_mask %n`` is lanes ``l < n`` active.

Arithmetic follows MLIR and the Python execute side (sw/compiler/backend/python.py): integer ops
wrap (computed in unsigned arithmetic, no undefined behaviour; conversion of an out-of-range value
to a signed type is modular as GCC and Clang define it), ``divsi`` truncates, shifts by the width
or more give 0 (or the sign for ``shrsi``). f32 ops are done in ``float`` and f64 in ``double``,
one op per C statement, so C11's rules (no contraction across statements; ``FLT_EVAL_METHOD == 0``
is checked at compile time) give IEEE-754 results rounded once per op, as NumPy's. ``math.fma``
is C's ``fmaf``/``fma`` (one rounding, as the Python side's ``_fma32``/``_fma64``). f16 and bf16 values are held in
``float`` and every op on them is rounded to the type (``ember_round``; an f32 result rounded to
f16/bf16 equals the correctly rounded f16/bf16 op for ``+ - * /`` and ``sqrt``, since 24 >= 2p + 2
bits). ``arith.maximumf``/``minimumf`` propagate NaN and order -0 < +0 (the Python side's ``_maximumf``), ``maxnumf``/``minnumf`` are
``fmax``/``fmin``. Compile without ``-ffast-math``.
"""

from __future__ import annotations

from xdsl.dialects import arith, func, math, memref, scf, vector
from xdsl.dialects.builtin import (
    BFloat16Type,
    Float16Type,
    Float32Type,
    Float64Type,
    FloatAttr,
    IndexType,
    IntegerAttr,
    IntegerType,
    MemRefType,
    VectorType,
)
from xdsl.ir import Attribute, Block, Operation, SSAValue

from ..dialects import dlc
from ..errors import CompileError, location_of
from .python import FLOAT_FORMATS

__all__ = ["generate_c", "generate_replay", "PRELUDE", "EMBER_OK", "EMBER_ERR_SCRATCH",
           "EMBER_ERR_CONTROL"]

#: Return codes of ``ember_<name>`` (also #defined in the generated source).
EMBER_OK, EMBER_ERR_SCRATCH, EMBER_ERR_CONTROL = 0, 1, 2

PRELUDE = """\
#include <float.h>
#include <math.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#if !defined(FLT_EVAL_METHOD) || FLT_EVAL_METHOD != 0
#error "the execute side needs FLT_EVAL_METHOD == 0 (f32 arithmetic rounded to float)"
#endif

#ifndef EMBER_MEMREF_DEFINED
#define EMBER_MEMREF_DEFINED
/* A row-major contiguous memref: data at element 0, sizes in elements. */
typedef struct { void *data; int64_t rank; int64_t sizes[4]; } ember_memref_t;
#endif

#define EMBER_DONE 0xFFFFu
#define EMBER_OK 0            /* the compute loop reached DONE */
#define EMBER_ERR_SCRATCH 1   /* a buffered operand does not fit the scratch area */
#define EMBER_ERR_CONTROL 2   /* a control token names no callback */
uint16_t ember_pop_control(void);   /* next control token (callback id); blocks until one arrives */
uint64_t ember_pop_data(void);      /* next 64-bit data token; blocks until one arrives */

static inline float ember_as_f32(uint64_t t) { uint32_t u = (uint32_t)t; float f; memcpy(&f, &u, 4); return f; }
static inline double ember_as_f64(uint64_t t) { double d; memcpy(&d, &t, 8); return d; }
static inline int64_t ember_floordiv(int64_t a, int64_t b) { int64_t q = a / b; return (q * b != a && ((a < 0) != (b < 0))) ? q - 1 : q; }
static inline int64_t ember_ceildiv(int64_t a, int64_t b) { int64_t q = a / b; return (q * b != a && ((a < 0) == (b < 0))) ? q + 1 : q; }
static inline uint64_t ember_align8(uint64_t n) { return (n + 7u) & ~(uint64_t)7u; }

/* x rounded to a binary format with p significand bits and normal exponents emin..emax
   (f16: 11, -14, 15; bf16: 8, -126, 127; f32: 24, -126, 127), subnormals included. mode is
   MLIR's arith::RoundingMode: 0 to nearest even, 3 toward zero, 4 to nearest away. */
static inline double ember_round(double x, int p, int emin, int emax, int mode)
{
    if (isnan(x) || isinf(x) || x == 0.0) return x;
    double a = fabs(x);
    int e;
    (void)frexp(a, &e);
    e -= 1;                                       /* a in [2^e, 2^(e+1)) */
    if (e < emin) e = emin;
    double q = ldexp(1.0, e - p + 1);             /* the spacing of the format at a */
    double r = a / q, f = floor(r), frac = r - f; /* exact: q is a power of two */
    if (mode == 0) { if (frac > 0.5 || (frac == 0.5 && fmod(f, 2.0) != 0.0)) f += 1.0; }
    else if (mode == 4) { if (frac >= 0.5) f += 1.0; }
    double y = f * q, top = ldexp(2.0 - ldexp(1.0, 1 - p), emax);
    if (y > top) y = mode == 3 ? top : INFINITY;
    return x < 0 ? -y : y;
}
static inline float ember_round_f16(double x) { return (float)ember_round(x, 11, -14, 15, 0); }
static inline float ember_round_bf16(double x) { return (float)ember_round(x, 8, -126, 127, 0); }
/* Raw bits <-> values (the value already representable in the format). */
static inline float ember_f16_value(uint16_t h)
{
    int e = (h >> 10) & 0x1F, m = h & 0x3FF;
    float v = e == 0 ? ldexpf((float)m, -24) : e == 31 ? (m ? NAN : INFINITY) : ldexpf((float)(m | 0x400), e - 25);
    return (h & 0x8000) ? -v : v;
}
static inline uint16_t ember_f16_bits(float v)
{
    uint16_t s = signbit(v) ? 0x8000 : 0;
    float a = fabsf(v);
    if (isnan(v)) return (uint16_t)(s | 0x7E00);
    if (isinf(v) || a >= 65536.0f) return (uint16_t)(s | 0x7C00);
    if (a < ldexpf(1.0f, -14)) return (uint16_t)(s | (uint16_t)ldexpf(a, 24));
    int e;
    float m = frexpf(a, &e);                      /* a = m 2^e, m in [0.5, 1) */
    return (uint16_t)(s | (uint16_t)((e + 14) << 10) | ((uint16_t)ldexpf(m, 11) & 0x3FF));
}
static inline float ember_bf16_value(uint16_t h) { uint32_t u = (uint32_t)h << 16; float f; memcpy(&f, &u, 4); return f; }
static inline uint16_t ember_bf16_bits(float v)
{
    uint32_t u;
    memcpy(&u, &v, 4);
    return (uint16_t)(isnan(v) ? (u >> 16) | 0x40u : u >> 16);
}
/* IEEE-754 maximum/minimum (MLIR arith.maximumf/minimumf, np.maximum/np.minimum): NaN propagates,
   -0 < +0. */
static inline float ember_maximum_f32(float a, float b) { return isnan(a) ? a : isnan(b) ? b : a == b ? (signbit(a) ? b : a) : a > b ? a : b; }
static inline float ember_minimum_f32(float a, float b) { return isnan(a) ? a : isnan(b) ? b : a == b ? (signbit(a) ? a : b) : a < b ? a : b; }
static inline double ember_maximum_f64(double a, double b) { return isnan(a) ? a : isnan(b) ? b : a == b ? (signbit(a) ? b : a) : a > b ? a : b; }
static inline double ember_minimum_f64(double a, double b) { return isnan(a) ? a : isnan(b) ? b : a == b ? (signbit(a) ? a : b) : a < b ? a : b; }

/* Element kinds of buffered operands: how an element is stored in a memref. */
typedef enum { EMBER_E_I8, EMBER_E_I16, EMBER_E_I32, EMBER_E_I64, EMBER_E_HALF, EMBER_E_F32,
               EMBER_E_F64 } ember_elem_t;
static inline unsigned ember_elem_size(ember_elem_t k)
{
    return k == EMBER_E_I8 ? 1u : k == EMBER_E_I16 || k == EMBER_E_HALF ? 2u
         : k == EMBER_E_I32 || k == EMBER_E_F32 ? 4u : 8u;
}
/* Element i of dst (of kind k) from the low bytes of x. */
static inline void ember_store_elem(void *dst, int64_t i, ember_elem_t k, uint64_t x)
{
    switch (k) {
    case EMBER_E_I8: ((int8_t *)dst)[i] = (int8_t)(uint8_t)x; break;
    case EMBER_E_I16: ((int16_t *)dst)[i] = (int16_t)(uint16_t)x; break;
    case EMBER_E_I32: ((int32_t *)dst)[i] = (int32_t)(uint32_t)x; break;
    case EMBER_E_I64: ((int64_t *)dst)[i] = (int64_t)x; break;
    case EMBER_E_HALF: ((uint16_t *)dst)[i] = (uint16_t)x; break;
    case EMBER_E_F32: ((float *)dst)[i] = ember_as_f32(x); break;
    case EMBER_E_F64: ((double *)dst)[i] = ember_as_f64(x); break;
    }
}
/* A buffered operand of n elements into dst (docs/backend.md): pushed as ceil(n / lanes) vectors
   of `lanes` lanes (lanes > 1; the tail's masked lanes are dropped) or as one row (lanes == 1);
   each vector or the row starts at a token boundary; one token per element unless packed, then
   8 / size elements per token, little-endian. */
static inline void ember_pop_buffer(void *dst, int64_t n, int64_t lanes, bool packed, ember_elem_t k)
{
    unsigned size = ember_elem_size(k), per = packed ? 8u / size : 1u;
    int64_t chunk = lanes > 1 ? lanes : n;
    for (int64_t base = 0; base < n; base += chunk) {
        uint64_t tok = 0;
        for (int64_t l = 0; l < chunk; l++) {
            if ((uint64_t)l % per == 0) tok = ember_pop_data();
            uint64_t x = tok >> (8u * size * (unsigned)((uint64_t)l % per));
            if (base + l < n) ember_store_elem(dst, base + l, k, x);
        }
    }
}
"""


# ------------------------------------------------------------------------------------------------
# Types
# ------------------------------------------------------------------------------------------------

_HALF = (Float16Type, BFloat16Type)


def _scalar(t: Attribute) -> Attribute:
    return t.element_type if isinstance(t, VectorType) else t


def _bits(t: Attribute) -> int:
    t = _scalar(t)
    return 64 if isinstance(t, IndexType) else t.width.data


def _tag(t: Attribute) -> str:
    """Short name of a scalar type in C identifiers (``f32``, ``index``, ``i1``...)."""
    return "index" if isinstance(t, IndexType) else str(t)


def _ctype(t: Attribute) -> str:
    """The C type of a value (not of memref storage: f16/bf16 values are ``float``)."""
    if isinstance(t, Float32Type | Float16Type | BFloat16Type):
        return "float"
    if isinstance(t, Float64Type):
        return "double"
    if isinstance(t, IndexType):
        return "int64_t"
    if isinstance(t, IntegerType):
        w = t.width.data
        if w == 1:
            return "bool"
        if w in (8, 16, 32, 64):
            return f"int{w}_t"
    if isinstance(t, MemRefType):
        return "ember_memref_t"
    if isinstance(t, VectorType) and len(t.get_shape()) == 1:
        _ctype(t.element_type)
        return f"ember_{_tag(t.element_type)}x{t.get_shape()[0]}_t"
    raise CompileError(f"type {t} has no C equivalent in the execute side")


def _storage(t: Attribute) -> str:
    """The C type of one memref element in memory."""
    return "uint16_t" if isinstance(t, _HALF) else _ctype(t)


_ELEM_KIND = {1: "EMBER_E_I8", 2: "EMBER_E_I16", 4: "EMBER_E_I32", 8: "EMBER_E_I64"}


def _elem_kind(t: Attribute) -> str:
    if isinstance(t, _HALF):
        return "EMBER_E_HALF"
    if isinstance(t, Float32Type):
        return "EMBER_E_F32"
    if isinstance(t, Float64Type):
        return "EMBER_E_F64"
    if isinstance(t, IndexType) or (isinstance(t, IntegerType) and t.width.data in (8, 16, 32, 64)):
        return _ELEM_KIND[_bits(t) // 8]
    raise CompileError(f"a buffered operand of {t} elements has no C form")


def _esize(t: Attribute) -> int:
    """Bytes of one element in a packed token (docs/isa.md §7.5: the natural size; ``i1`` and
    ``index`` 8)."""
    if isinstance(t, _HALF):
        return 2
    if isinstance(t, Float32Type | Float64Type):
        return t.bitwidth // 8
    if isinstance(t, IntegerType) and t.width.data == 1:
        return 8
    return _bits(t) // 8


def _from_token(t: Attribute, x: str) -> str:
    """A scalar of type ``t`` from the low bits of the uint64_t expression ``x``."""
    if isinstance(t, Float32Type):
        return f"ember_as_f32({x})"
    if isinstance(t, Float64Type):
        return f"ember_as_f64({x})"
    if isinstance(t, Float16Type):
        return f"ember_f16_value((uint16_t)({x}))"
    if isinstance(t, BFloat16Type):
        return f"ember_bf16_value((uint16_t)({x}))"
    if isinstance(t, IntegerType) and t.width.data == 1:
        return f"(({x}) & 1u) != 0"
    w = _bits(t)
    return f"(int64_t)({x})" if w == 64 else f"(int{w}_t)(uint{w}_t)({x})"


def _round(t: Attribute, expr: str) -> str:
    """``expr`` (a float) rounded to ``t`` where ``t`` is narrower than float."""
    if isinstance(t, Float16Type):
        return f"ember_round_f16({expr})"
    if isinstance(t, BFloat16Type):
        return f"ember_round_bf16({expr})"
    return expr


def _fsuffix(t: Attribute) -> str:
    return "" if isinstance(_scalar(t), Float64Type) else "f"


def _float_literal(v: float) -> str:
    if v != v:
        return "NAN"
    if abs(v) == float("inf"):
        return "INFINITY" if v > 0 else "-INFINITY"
    return repr(float(v))


_FLOAT_BIN = {arith.AddfOp: "+", arith.SubfOp: "-", arith.MulfOp: "*", arith.DivfOp: "/"}
_FLOAT_FN = {arith.MaxnumfOp: "fmax", arith.MinnumfOp: "fmin"}
_FLOAT_IEEE = {arith.MaximumfOp: "ember_maximum", arith.MinimumfOp: "ember_minimum"}
_INT_WRAP = {arith.AddiOp: "+", arith.SubiOp: "-", arith.MuliOp: "*", arith.AndIOp: "&",
             arith.OrIOp: "|", arith.XOrIOp: "^"}
_CMPI = {"eq": "==", "ne": "!=", "slt": "<", "sle": "<=", "sgt": ">", "sge": ">=",
         "ult": "<", "ule": "<=", "ugt": ">", "uge": ">="}
_CMPF = {"false": "false", "true": "true",
         "oeq": "{a} == {b}", "ogt": "{a} > {b}", "oge": "{a} >= {b}", "olt": "{a} < {b}",
         "ole": "{a} <= {b}", "one": "({a} < {b} || {a} > {b})",
         "ord": "!(isnan({a}) || isnan({b}))", "uno": "(isnan({a}) || isnan({b}))",
         "ueq": "!({a} < {b} || {a} > {b})", "ugt": "!({a} <= {b})", "uge": "!({a} < {b})",
         "ult": "!({a} >= {b})", "ule": "!({a} > {b})", "une": "{a} != {b}"}
_ELEMENTWISE = (*_FLOAT_BIN, *_FLOAT_FN, *_FLOAT_IEEE, *_INT_WRAP, arith.NegfOp, math.FmaOp,
                math.SqrtOp, arith.ShLIOp, arith.ShRSIOp, arith.ShRUIOp, arith.DivSIOp,
                arith.RemSIOp, arith.DivUIOp, arith.RemUIOp, arith.MaxSIOp, arith.MinSIOp,
                arith.MaxUIOp, arith.MinUIOp, arith.FloorDivSIOp, arith.CeilDivSIOp, arith.CmpiOp,
                arith.CmpfOp, arith.SelectOp, arith.IndexCastOp, arith.ExtSIOp, arith.ExtUIOp,
                arith.TruncIOp, arith.SIToFPOp, arith.UIToFPOp, arith.FPToSIOp, arith.FPToUIOp,
                arith.ExtFOp, arith.TruncFOp)

#: arith.truncf roundingmode -> ember_round's mode (MLIR arith::RoundingMode values).
_TRUNCF_MODES = {0: 0, 3: 3, 4: 4}


def _has_pop_buffer(block: Block) -> bool:
    return any(isinstance(op, dlc.PopBufferOp) for op in block.walk())


# ------------------------------------------------------------------------------------------------
# Generator
# ------------------------------------------------------------------------------------------------

class _Gen:
    def __init__(self, fn: func.FuncOp, symbol: str):
        self.fn = fn
        self.symbol = symbol
        self.names: dict[SSAValue, str] = {}
        self.lines: list[str] = []
        self.counter = 0
        self.vector_types: dict[str, VectorType] = {}
        self.vars: set[str] = set()

    def n(self, v: SSAValue) -> str:
        if v not in self.names:
            self.counter += 1
            self.names[v] = f"v{self.counter}"
        return self.names[v]

    def e(self, indent: int, text: str) -> None:
        self.lines.append("    " * indent + text)

    def ctype(self, t: Attribute) -> str:
        c = _ctype(t)
        if isinstance(t, VectorType):
            self.vector_types[c] = t
        return c

    def decl(self, indent: int, v: SSAValue, expr: str) -> None:
        # "(void)x;" keeps -Wall -Werror quiet about values only the access side used
        self.e(indent, f"{self.ctype(v.type)} {self.n(v)} = {expr}; (void){self.n(v)};")

    def flat(self, m: SSAValue, indices: list[str]) -> str:
        name = self.n(m)
        flat = "0"
        for k, i in enumerate(indices):
            flat = f"({flat}) * {name}.sizes[{k}] + {i}" if k else i
        return flat

    def ref(self, m: SSAValue, indices: list[str]) -> str:
        """The lvalue of one element of memref ``m``."""
        t = m.type
        assert isinstance(t, MemRefType)
        return f"(({_storage(t.element_type)} *){self.n(m)}.data)[{self.flat(m, indices)}]"

    def load(self, m: SSAValue, indices: list[str]) -> str:
        t = m.type.element_type
        r = self.ref(m, indices)
        if isinstance(t, Float16Type):
            return f"ember_f16_value({r})"
        if isinstance(t, BFloat16Type):
            return f"ember_bf16_value({r})"
        return r

    def store(self, indent: int, m: SSAValue, indices: list[str], value: str) -> None:
        t = m.type.element_type
        if isinstance(t, Float16Type):
            value = f"ember_f16_bits({value})"
        elif isinstance(t, BFloat16Type):
            value = f"ember_bf16_bits({value})"
        self.e(indent, f"{self.ref(m, indices)} = {value};")

    # ------------------------------------------------------------------ driver
    def generate(self) -> str:
        fn = self.fn
        sym = self.symbol
        params = []
        for k, arg in enumerate(fn.args):
            if isinstance(arg.type, MemRefType):
                params.append(f"ember_memref_t *p{k}")
            else:
                params.append(f"{self.ctype(arg.type)} {self.n(arg)}")
        for k, t in enumerate(fn.function_type.outputs.data):
            params.append(f"{self.ctype(t)} *result{k}")
        params += ["void *ember_scratch", "size_t ember_scratch_bytes"]
        self.e(0, f"int ember_{sym}({', '.join(params)})")
        self.e(0, "{")
        self.e(1, "(void)ember_scratch; (void)ember_scratch_bytes;")
        if _has_pop_buffer(fn.body.block):
            self.e(1, "if ((uintptr_t)ember_scratch % 8u != 0) return EMBER_ERR_SCRATCH;")
            self.e(1, "ember_scratch_bytes &= ~(size_t)7u;")
        for k, arg in enumerate(fn.args):
            if isinstance(arg.type, MemRefType):
                self.e(1, f"ember_memref_t {self.n(arg)} = *p{k}; (void){self.n(arg)};")
            else:
                self.e(1, f"(void){self.n(arg)};")
        self.block(fn.body.block, 1)
        self.e(0, "}")
        body = self.lines
        self.lines = []
        self.scratch_fn()
        typedefs = [f"typedef struct {{ {_ctype(t.element_type)} v[{t.get_shape()[0]}]; }} {c};"
                    for c, t in sorted(self.vector_types.items())]
        head = f"/* Execute side of kernel @{fn.sym_name.data} (sw.compiler, DLC compute_loop). */\n"
        return (head + PRELUDE + "\n" + "".join(t + "\n" for t in typedefs)
                + ("\n" if typedefs else "") + "\n".join(self.lines + [""] + body) + "\n")

    def scratch_fn(self) -> None:
        """``ember_<sym>_scratch_bytes(max_len)``: the largest per-firing sum of buffer sizes."""
        per_case = []
        for op in self.fn.walk():
            if isinstance(op, dlc.CaseOp):
                sizes = [f"ember_align8(m * {_esize(p.result.type.element_type)}u)"
                         for p in op.walk() if isinstance(p, dlc.PopBufferOp)]
                if sizes:
                    per_case.append(" + ".join(sizes))
        self.e(0, "/* Scratch bytes ember_" + self.symbol + " needs when no buffered operand has "
                  "more than max_len elements. */")
        self.e(0, f"size_t ember_{self.symbol}_scratch_bytes(int64_t max_len)")
        self.e(0, "{")
        self.e(1, "uint64_t m = max_len > 0 ? (uint64_t)max_len : 0u, need = 0; (void)m;")
        for k, s in enumerate(per_case):
            self.e(1, f"uint64_t case{k} = {s};")
            self.e(1, f"if (case{k} > need) need = case{k};")
        self.e(1, "return (size_t)need;")
        self.e(0, "}")

    def block(self, block: Block, indent: int) -> None:
        for op in block.ops:
            if not isinstance(op, scf.YieldOp | dlc.YieldOp):
                self.op(op, indent)

    # ------------------------------------------------------------------ element-wise ops
    def expr(self, op: Operation, a: list[str]) -> str:   # noqa: C901 - one case per op
        """The C expression of one lane (or the scalar) of an element-wise op over operand
        expressions ``a``."""
        t = _scalar(op.results[0].type)
        if type(op) in _FLOAT_BIN:
            return _round(t, f"{a[0]} {_FLOAT_BIN[type(op)]} {a[1]}")
        if type(op) in _FLOAT_FN:
            return _round(t, f"{_FLOAT_FN[type(op)]}{_fsuffix(t)}({a[0]}, {a[1]})")
        if type(op) in _FLOAT_IEEE:
            width = "f64" if isinstance(t, Float64Type) else "f32"
            return f"{_FLOAT_IEEE[type(op)]}_{width}({a[0]}, {a[1]})"
        if isinstance(op, arith.NegfOp):
            return f"-{a[0]}"
        if isinstance(op, math.FmaOp):
            if isinstance(t, _HALF):
                return _round(t, f"fma((double){a[0]}, (double){a[1]}, (double){a[2]})")
            return f"fma{_fsuffix(t)}({a[0]}, {a[1]}, {a[2]})"
        if isinstance(op, math.SqrtOp):
            return _round(t, f"sqrt{_fsuffix(t)}({a[0]})")
        c = _ctype(t)
        w = _bits(t) if isinstance(t, IntegerType | IndexType) else 0
        u = f"uint{w}_t" if w > 1 else "unsigned"
        if type(op) in _INT_WRAP:
            expr = f"({u}){a[0]} {_INT_WRAP[type(op)]} ({u}){a[1]}"
            return f"({c})(({expr}) & 1u)" if w == 1 else f"({c})({expr})"
        if isinstance(op, arith.ShLIOp):
            return f"(({u}){a[1]} >= {w}u ? ({c})0 : ({c})(({u}){a[0]} << ({u}){a[1]}))"
        if isinstance(op, arith.ShRUIOp):
            return f"(({u}){a[1]} >= {w}u ? ({c})0 : ({c})(({u}){a[0]} >> ({u}){a[1]}))"
        if isinstance(op, arith.ShRSIOp):
            return (f"(({u}){a[1]} >= {w}u ? ({c})({a[0]} < 0 ? -1 : 0) : "
                    f"({c})({a[0]} >> ({u}){a[1]}))")
        if isinstance(op, arith.DivUIOp | arith.RemUIOp):
            sym = "/" if isinstance(op, arith.DivUIOp) else "%"
            return f"({c})(({u}){a[0]} {sym} ({u}){a[1]})"
        if isinstance(op, arith.MaxUIOp | arith.MinUIOp):
            sym = ">=" if isinstance(op, arith.MaxUIOp) else "<="
            return f"(({u}){a[0]} {sym} ({u}){a[1]} ? {a[0]} : {a[1]})"
        if isinstance(op, arith.DivSIOp | arith.RemSIOp | arith.MaxSIOp | arith.MinSIOp
                      | arith.FloorDivSIOp | arith.CeilDivSIOp):
            x, y = a
            expr = {arith.DivSIOp: f"{x} / {y}", arith.RemSIOp: f"{x} % {y}",
                    arith.MaxSIOp: f"{x} > {y} ? {x} : {y}", arith.MinSIOp: f"{x} < {y} ? {x} : {y}",
                    arith.FloorDivSIOp: f"ember_floordiv({x}, {y})",
                    arith.CeilDivSIOp: f"ember_ceildiv({x}, {y})"}[type(op)]
            return f"({c})({expr})"
        if isinstance(op, arith.CmpiOp):
            pred = arith.CMPI_COMPARISON_OPERATIONS[op.predicate.value.data]
            x, y = a
            if pred.startswith("u"):
                wu = _bits(op.lhs.type)
                cu = f"uint{wu}_t" if wu > 1 else "unsigned"
                x, y = f"({cu}){x}", f"({cu}){y}"
            return f"{x} {_CMPI[pred]} {y}"
        if isinstance(op, arith.CmpfOp):
            pred = arith.CMPF_COMPARISON_OPERATIONS[op.predicate.value.data]
            return _CMPF[pred].format(a=a[0], b=a[1])
        if isinstance(op, arith.SelectOp):
            return f"{a[0]} ? {a[1]} : {a[2]}"
        src = _scalar(op.operands[0].type)
        if isinstance(op, arith.IndexCastOp | arith.ExtSIOp | arith.TruncIOp):
            return f"({c})({a[0]} & 1)" if w == 1 else f"({c}){a[0]}"
        if isinstance(op, arith.ExtUIOp):
            ws = _bits(src)
            return f"({c})({'bool' if ws == 1 else f'uint{ws}_t'}){a[0]}"
        if isinstance(op, arith.SIToFPOp):
            return _round(t, f"({'float' if isinstance(t, Float32Type) else 'double'}){a[0]}")
        if isinstance(op, arith.UIToFPOp):
            ws = _bits(src)
            cu = "bool" if ws == 1 else f"uint{ws}_t"
            return _round(t, f"({'float' if isinstance(t, Float32Type) else 'double'})({cu}){a[0]}")
        if isinstance(op, arith.FPToSIOp):
            return f"({c}){a[0]}"
        if isinstance(op, arith.FPToUIOp):
            return f"({c})({u}){a[0]}"
        if isinstance(op, arith.ExtFOp):
            return f"({c}){a[0]}"
        if isinstance(op, arith.TruncFOp):
            mode_attr = op.attributes.get("roundingmode")
            mode = mode_attr.value.data if isinstance(mode_attr, IntegerAttr) else 0
            if mode not in _TRUNCF_MODES:
                raise CompileError(f"arith.truncf rounding mode {mode} has no C form",
                                   location_of(op))
            if mode == 0 and isinstance(t, Float32Type):
                return f"(float){a[0]}"
            p, emin, emax = FLOAT_FORMATS[type(t)]
            return f"(float)ember_round((double){a[0]}, {p}, {emin}, {emax}, {_TRUNCF_MODES[mode]})"
        raise AssertionError(op.name)

    def elementwise(self, op: Operation, indent: int) -> None:
        res = op.results[0]
        if not isinstance(res.type, VectorType):
            self.decl(indent, res, self.expr(op, [self.n(v) for v in op.operands]))
            return
        lanes = res.type.get_shape()[0]
        lane = [f"{self.n(v)}.v[l]" if isinstance(v.type, VectorType) else self.n(v)
                for v in op.operands]
        r = self.n(res)
        self.e(indent, f"{self.ctype(res.type)} {r}; (void){r};")
        self.e(indent, f"for (int l = 0; l < {lanes}; l++) {r}.v[l] = {self.expr(op, lane)};")

    # ------------------------------------------------------------------ ops
    def op(self, op: Operation, indent: int) -> None:   # noqa: C901 - one case per op
        e, n = self.e, self.n
        if isinstance(op, dlc.ConfigureAccessOp):
            return                                   # runs on the access unit
        if isinstance(op, dlc.ComputeLoopOp):
            e(indent, "for (;;) {")
            e(indent + 1, "uint16_t tok = ember_pop_control();")
            e(indent + 1, "if (tok == EMBER_DONE) break;")
            e(indent + 1, "switch (tok) {")
            for case in op.body.block.ops:
                if isinstance(case, dlc.CaseOp):
                    e(indent + 1, f"case {case.id.value.data}: {{")
                    if _has_pop_buffer(case.body.block):
                        e(indent + 2, "size_t ember_used = 0;   /* scratch is per firing */")
                    self.block(case.body.block, indent + 2)
                    e(indent + 2, "break;")
                    e(indent + 1, "}")
            e(indent + 1, "default: return EMBER_ERR_CONTROL;")
            e(indent + 1, "}")
            e(indent, "}")
            return
        if isinstance(op, func.ReturnOp):
            for k, v in enumerate(op.operands):
                e(indent, f"*result{k} = {n(v)};")
            e(indent, "return EMBER_OK;")
            return
        if isinstance(op, dlc.SetVarOp):      # core variable: a local of the function (64-bit)
            var = f"ember_var{op.var.value.data}"
            if var in self.vars:
                e(indent, f"{var} = (int64_t){n(op.value)};")
            else:
                self.vars.add(var)
                e(indent, f"int64_t {var} = (int64_t){n(op.value)}; (void){var};")
            return
        if isinstance(op, dlc.GetVarOp):
            self.decl(indent, op.result, f"({self.ctype(op.result.type)})ember_var{op.var.value.data}")
            return
        if isinstance(op, dlc.IncrementVarOp):
            var = f"ember_var{op.var.value.data}"
            e(indent, f"{var} = (int64_t)((uint64_t){var} + (uint64_t)INT64_C({op.step.value.data}));")
            return
        if isinstance(op, dlc.PopOperandOp):
            t = op.result.type
            if isinstance(t, VectorType):
                lanes = t.get_shape()[0]
                r = n(op.result)
                e(indent, f"{self.ctype(t)} {r}; (void){r};")
                if isinstance(t.element_type, IntegerType) and t.element_type.width.data == 1:
                    e(indent, "{ uint64_t count = ember_pop_data();   /* COUNT: active lanes */")
                    e(indent, f"  for (int l = 0; l < {lanes}; l++) {r}.v[l] = (uint64_t)l < count; }}")
                else:
                    e(indent, f"for (int l = 0; l < {lanes}; l++) "
                              f"{r}.v[l] = {_from_token(t.element_type, 'ember_pop_data()')};")
                return
            self.decl(indent, op.result, _from_token(t, "ember_pop_data()"))
            return
        if isinstance(op, dlc.PopBufferOp):
            self.pop_buffer(op, indent)
            return
        if isinstance(op, dlc.PopPackedOp):
            self.pop_packed(op, indent)
            return
        if isinstance(op, arith.ConstantOp):
            self.constant(op, indent)
            return
        if isinstance(op, _ELEMENTWISE):
            self.elementwise(op, indent)
            return
        if isinstance(op, vector.CreateMaskOp):
            res = op.results[0]
            r = n(res)
            e(indent, f"{self.ctype(res.type)} {r}; (void){r};")
            e(indent, f"for (int l = 0; l < {res.type.get_shape()[0]}; l++) "
                      f"{r}.v[l] = l < {n(op.operands[0])};")
            return
        if isinstance(op, vector.BroadcastOp):
            if isinstance(op.source.type, VectorType):
                raise CompileError("vector.broadcast of a vector has no C form", location_of(op))
            r = n(op.vector)
            e(indent, f"{self.ctype(op.vector.type)} {r}; (void){r};")
            e(indent, f"for (int l = 0; l < {op.vector.type.get_shape()[0]}; l++) "
                      f"{r}.v[l] = {n(op.source)};")
            return
        if isinstance(op, vector.ExtractOp):
            pos = op.get_mixed_position()
            if len(pos) != 1:
                raise CompileError("vector.extract of more than one position has no C form",
                                   location_of(op))
            p = pos[0] if isinstance(pos[0], int) else n(pos[0])
            self.decl(indent, op.result, f"{n(op.vector)}.v[{p}]")
            return
        if isinstance(op, vector.MaskedLoadOp):
            lanes = op.result.type.get_shape()[0]
            lead = [n(i) for i in op.indices[:-1]]
            last = n(op.indices[-1])
            r = n(op.result)
            e(indent, f"{self.ctype(op.result.type)} {r}; (void){r};")
            e(indent, f"for (int l = 0; l < {lanes}; l++) {r}.v[l] = {n(op.mask)}.v[l] ? "
                      f"{self.load(op.base, lead + [f'{last} + l'])} : {n(op.pass_thru)}.v[l];")
            return
        if isinstance(op, vector.MaskedStoreOp):
            lanes = op.value_to_store.type.get_shape()[0]
            lead = [n(i) for i in op.indices[:-1]]
            last = n(op.indices[-1])
            e(indent, f"for (int l = 0; l < {lanes}; l++) if ({n(op.mask)}.v[l])")
            self.store(indent + 1, op.base, lead + [f"{last} + l"], f"{n(op.value_to_store)}.v[l]")
            return
        if isinstance(op, memref.LoadOp):
            if isinstance(op.res.type, VectorType):
                raise CompileError("memref.load of a vector has no C form", location_of(op))
            self.decl(indent, op.res, self.load(op.memref, [n(i) for i in op.indices]))
            return
        if isinstance(op, memref.StoreOp):
            self.store(indent, op.memref, [n(i) for i in op.indices], n(op.value))
            return
        if isinstance(op, memref.DimOp):
            self.decl(indent, op.result, f"{n(op.source)}.sizes[{n(op.index)}]")
            return
        if isinstance(op, memref.AllocOp):
            t = op.memref.type
            dyn = iter(op.dynamic_sizes)
            sizes = [n(next(dyn)) if s < 0 else str(s) for s in t.get_shape()]
            if len(sizes) > 4:
                raise CompileError("memrefs of rank > 4 have no C form here", location_of(op))
            count = " * ".join(f"(size_t){s}" for s in sizes) or "1"
            r = n(op.memref)
            e(indent, f"ember_memref_t {r} = {{ calloc({count}, sizeof({_storage(t.element_type)})), "
                      f"{len(sizes)}, {{ {', '.join(sizes) or '0'} }} }};")
            return
        if isinstance(op, memref.DeallocOp):
            e(indent, f"free({n(op.memref)}.data);")
            return
        if isinstance(op, scf.ForOp):
            pops = _has_pop_buffer(op.body.block)
            if pops and op.iter_args:
                raise CompileError("a dlc.pop_buffer inside a loop of a callback that carries "
                                   "values has no C form", location_of(op))
            for res, init in zip(op.results, op.iter_args):
                self.decl(indent, res, n(init))
            iv = n(op.body.block.args[0])
            if pops:    # buffers popped in an iteration die with it: each iteration reuses the scratch
                e(indent, f"const size_t ember_mark_{iv} = ember_used;")
            e(indent, f"for (int64_t {iv} = {n(op.lb)}; {iv} < {n(op.ub)}; {iv} += {n(op.step)}) {{")
            if pops:
                e(indent + 1, f"ember_used = ember_mark_{iv};")
            for arg, res in zip(op.body.block.args[1:], op.results):
                self.decl(indent + 1, arg, n(res))
            self.block(op.body.block, indent + 1)
            yld = op.body.block.last_op
            for res, v in zip(op.results, yld.operands):
                e(indent + 1, f"{n(res)} = {n(v)};")
            e(indent, "}")
            return
        if isinstance(op, scf.IfOp):
            for res in op.results:
                e(indent, f"{self.ctype(res.type)} {n(res)};")
            e(indent, f"if ({n(op.cond)}) {{")
            self.branch(op, op.true_region.block, indent + 1)
            if op.false_region.blocks:
                e(indent, "} else {")
                self.branch(op, op.false_region.block, indent + 1)
            e(indent, "}")
            return
        raise CompileError(f"'{op.name}' has no C form in the execute side yet", location_of(op))

    def branch(self, op: scf.IfOp, block: Block, indent: int) -> None:
        self.block(block, indent)
        yld = block.last_op
        if isinstance(yld, scf.YieldOp):
            for res, v in zip(op.results, yld.operands):
                self.e(indent, f"{self.n(res)} = {self.n(v)};")

    def constant(self, op: arith.ConstantOp, indent: int) -> None:
        attr, t = op.value, op.result.type

        def lit(value, et) -> str:
            if isinstance(et, IntegerType) and et.width.data == 1:
                return "true" if int(value) & 1 else "false"
            if isinstance(et, IntegerType | IndexType):
                return f"({_ctype(et)})INT64_C({int(value)})"
            text = _float_literal(float(value))
            if isinstance(et, _HALF):
                return _round(et, text)
            return f"({_ctype(et)})({text})"

        if isinstance(t, VectorType):
            values = attr.get_values() if hasattr(attr, "get_values") else None
            if values is None or len(t.get_shape()) != 1:
                raise CompileError(f"constant {attr} has no C form", location_of(op))
            lanes = t.get_shape()[0]
            values = list(values) * (lanes if len(values) == 1 else 1)
            items = ", ".join(lit(v, t.element_type) for v in values)
            self.decl(indent, op.result, f"({self.ctype(t)}){{ {{ {items} }} }}")
            return
        if isinstance(attr, IntegerAttr):
            self.decl(indent, op.result, lit(attr.value.data, t))
        elif isinstance(attr, FloatAttr):
            self.decl(indent, op.result, lit(attr.value.data, t))
        else:
            raise CompileError(f"constant {attr} has no C form", location_of(op))

    def pop_buffer(self, op: dlc.PopBufferOp, indent: int) -> None:
        t = op.result.type
        assert isinstance(t, MemRefType)
        et = t.element_type
        kind = _elem_kind(et)
        st = _storage(et)
        n_ = self.n(op.length)
        r = self.n(op.result)
        e = self.e
        e(indent, f"if ({n_} > 0 && (uint64_t){n_} > (ember_scratch_bytes - ember_used) / "
                  f"sizeof({st})) return EMBER_ERR_SCRATCH;")
        e(indent, f"ember_memref_t {r} = {{ (char *)ember_scratch + ember_used, 1, {{ {n_} }} }}; "
                  f"(void){r};")
        e(indent, f"if ({n_} > 0) ember_used += (size_t)ember_align8((uint64_t){n_} * sizeof({st}));")
        e(indent, f"ember_pop_buffer({r}.data, {n_}, {op.lane_count}, "
                  f"{'true' if op.packed is not None else 'false'}, {kind});")

    def pop_packed(self, op: dlc.PopPackedOp, indent: int) -> None:
        """Unpack one packed group (the layout of the Python side's ``_pop_packed``)."""
        layout, off = [], 0
        for r in op.values:
            t = r.type
            if isinstance(t, MemRefType):
                raise CompileError("a buffer inside dlc.pop_packed has no C form",
                                   location_of(op))
            if isinstance(t, VectorType):
                et = t.element_type
                mask = isinstance(et, IntegerType) and et.width.data == 1
                size, count = (8, 1) if mask else (_esize(et), t.get_shape()[0])
            else:
                mask, size, count = False, _esize(t), 1
            off = -(-off // size) * size
            layout.append((r, mask, size, off, count))
            off += size * count
        ntok = max(1, -(-off // 8))
        e = self.e
        tokens = f"pk{self.counter + 1}"
        self.counter += 1
        e(indent, f"uint64_t {tokens}[{ntok}];")
        e(indent, f"for (int k = 0; k < {ntok}; k++) {tokens}[k] = ember_pop_data();")

        def word(at: int, size: int) -> str:
            shift = 8 * (at % 8)
            w = f"{tokens}[{at // 8}]"
            return f"({w} >> {shift})" if shift else w

        for r, mask, size, at, count in layout:
            t = r.type
            if isinstance(t, VectorType):
                name = self.n(r)
                e(indent, f"{self.ctype(t)} {name}; (void){name};")
                lanes = t.get_shape()[0]
                if mask:
                    e(indent, f"for (int l = 0; l < {lanes}; l++) {name}.v[l] = (uint64_t)l < {word(at, 8)};")
                else:
                    for l in range(lanes):
                        e(indent, f"{name}.v[{l}] = {_from_token(t.element_type, word(at + l * size, size))};")
            else:
                self.decl(indent, r, _from_token(t, word(at, size)))


def generate_c(fn: func.FuncOp, *, symbol: str | None = None) -> str:
    """The C11 translation unit of a DLC function's execute side (see the module docstring).

    Parameters
    ----------
    fn : func.FuncOp
        A DLC function (any ``-O`` level: ``emit(text, "dlc", opt_level=k)``).
    symbol : str, optional
        The kernel's name in C identifiers (``ember_<symbol>``); default the function's name.

    Raises
    ------
    CompileError
        An op or type of the compute loop has no C form (named, with its location).
    """
    return _Gen(fn, symbol or fn.sym_name.data).generate()


# ------------------------------------------------------------------------------------------------
# Replay harness
# ------------------------------------------------------------------------------------------------

_REPLAY_HEAD = r"""
/* Replay harness (sw.compiler.backend.c.generate_replay): runs execute sides on token streams
   recorded from the golden model or the RTL. Usage: replay SYMBOL FILE [SCRATCH_BYTES] > results
   (default scratch: 64 bytes per data token + 64, more than any buffer of the stream needs);
   replay SYMBOL --scratch-bytes MAX_LEN prints ember_SYMBOL_scratch_bytes(MAX_LEN).
   FILE (little-endian): u32 n_control, u32 n_data; per parameter, a memref as u32 rank,
   i64 sizes[rank], its elements (row-major, element bytes as stored), a scalar as 8 bytes (i64 or
   f64 bits); then u16 control[n_control], u64 data[n_data]. Writes to stdout the elements of
   every memref parameter after the run (in parameter order; the kernel may have written them),
   then each result's elements (a memref) or its value (a scalar, in its C type). Exit status
   0, 2 a queue underflow, 3 a short file, 4 data left over, 10 + the kernel's error code. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#ifndef EMBER_MEMREF_DEFINED
#define EMBER_MEMREF_DEFINED
typedef struct { void *data; int64_t rank; int64_t sizes[4]; } ember_memref_t;
#endif

static uint16_t *ctrl; static uint64_t *data; static size_t nc, nd, ic, id;
uint16_t ember_pop_control(void) { if (ic >= nc) { fprintf(stderr, "control underflow\n"); exit(2); } return ctrl[ic++]; }
uint64_t ember_pop_data(void) { if (id >= nd) { fprintf(stderr, "data underflow\n"); exit(2); } return data[id++]; }

static void need(int ok) { if (!ok) { fprintf(stderr, "short token file\n"); exit(3); } }
static ember_memref_t read_memref(FILE *f, size_t esize)
{
    ember_memref_t m = { 0, 0, { 0, 0, 0, 0 } };
    uint32_t rank;
    need(fread(&rank, 4, 1, f) == 1 && rank <= 4);
    m.rank = rank;
    size_t count = 1;
    need(fread(m.sizes, 8, rank, f) == rank);
    for (uint32_t k = 0; k < rank; k++) count *= (size_t)m.sizes[k];
    m.data = calloc(count ? count : 1, esize);
    need(fread(m.data, esize, count, f) == count);
    return m;
}
static size_t count_of(const ember_memref_t *m) { size_t c = 1; for (int64_t k = 0; k < m->rank; k++) c *= (size_t)m->sizes[k]; return c; }
static void read_queues(FILE *f, uint32_t n[2])
{
    nc = n[0]; nd = n[1]; ic = id = 0;
    ctrl = malloc(2 * nc + 2); data = malloc(8 * nd + 8);
    need(fread(ctrl, 2, nc, f) == nc && fread(data, 8, nd, f) == nd);
}
"""


def _replay_fn(fn: func.FuncOp, symbol: str) -> str:
    decl = []
    for arg in fn.args:
        decl.append("ember_memref_t *" if isinstance(arg.type, MemRefType) else _ctype(arg.type))
    for t in fn.function_type.outputs.data:
        decl.append(f"{_ctype(t)} *")
    decl += ["void *", "size_t"]
    lines = [f"int ember_{symbol}({', '.join(decl)});",
             f"size_t ember_{symbol}_scratch_bytes(int64_t max_len);",
             f"static int replay_{symbol}(FILE *f, long long scratch_arg)", "{",
             "    uint32_t n[2];", "    need(fread(n, 4, 2, f) == 2);"]
    call = []
    for k, arg in enumerate(fn.args):
        t = arg.type
        if isinstance(t, MemRefType):
            lines.append(f"    ember_memref_t a{k} = read_memref(f, sizeof({_storage(t.element_type)}));")
            call.append(f"&a{k}")
        else:
            lines.append(f"    {_ctype(t)} a{k}; {{ uint64_t raw; need(fread(&raw, 8, 1, f) == 1); "
                         + (f"memcpy(&a{k}, &raw, 8); }}" if isinstance(t, Float64Type)
                            else f"double d; memcpy(&d, &raw, 8); a{k} = (float)d; }}"
                            if isinstance(t, Float32Type) else f"a{k} = ({_ctype(t)})(int64_t)raw; }}"))
            call.append(f"a{k}")
    lines.append("    read_queues(f, n);")
    outs = fn.function_type.outputs.data
    for k, t in enumerate(outs):
        lines.append(f"    {_ctype(t)} r{k}; memset(&r{k}, 0, sizeof r{k});")
        call.append(f"&r{k}")
    lines.append("    size_t scratch_bytes = scratch_arg >= 0 ? (size_t)scratch_arg : 64 * nd + 64;")
    lines.append("    void *scratch = malloc(scratch_bytes ? scratch_bytes : 1);")
    lines.append(f"    int rc = ember_{symbol}({', '.join(call)}, scratch, scratch_bytes);")
    lines.append("    if (rc != 0) { fprintf(stderr, \"kernel error %d\\n\", rc); return 10 + rc; }")
    lines.append("    if (id != nd) { fprintf(stderr, \"data left over\\n\"); return 4; }")
    for k, arg in enumerate(fn.args):
        if isinstance(arg.type, MemRefType):
            lines.append(f"    fwrite(a{k}.data, sizeof({_storage(arg.type.element_type)}), "
                         f"count_of(&a{k}), stdout);")
    for k, t in enumerate(outs):
        if isinstance(t, MemRefType):
            lines.append(f"    fwrite(r{k}.data, sizeof({_storage(t.element_type)}), count_of(&r{k}), stdout);")
        else:
            lines.append(f"    {{ {_ctype(t)} s = r{k}; fwrite(&s, sizeof s, 1, stdout); }}")
    lines += ["    return 0;", "}"]
    return "\n".join(lines) + "\n"


def generate_replay(kernels: dict[str, func.FuncOp]) -> str:
    """C11 source of a replay harness for the execute sides ``generate_c(fn, symbol=s)`` of
    ``kernels`` (symbol -> DLC function): ``main(argc, argv)`` runs ``argv[1]``'s kernel on the
    argument values and token streams of file ``argv[2]`` (format in the generated comment) and
    writes the results to stdout. Used by the tests to check the C execute side against the
    Python one on the golden model's tokens; usable on a real core's host to replay recorded
    streams."""
    out = [_REPLAY_HEAD]
    for sym, fn in kernels.items():
        out.append(_replay_fn(fn, sym))
    out.append("int main(int argc, char **argv)\n{")
    out.append("    if (argc != 3 && argc != 4) { fprintf(stderr, \"usage: replay SYMBOL FILE "
               "[SCRATCH_BYTES]\\n\"); return 1; }")
    out.append("    long long scratch = argc == 4 ? strtoll(argv[3], NULL, 10) : -1;")
    for sym in kernels:   # replay SYMBOL --scratch-bytes MAX_LEN: what the kernel asks for
        out.append(f"    if (!strcmp(argv[1], \"{sym}\") && !strcmp(argv[2], \"--scratch-bytes\")) "
                   f"{{ printf(\"%zu\\n\", ember_{sym}_scratch_bytes(scratch)); return 0; }}")
    out.append("    FILE *f = fopen(argv[2], \"rb\");")
    out.append("    if (!f) { perror(argv[2]); return 1; }")
    for sym in kernels:
        out.append(f"    if (!strcmp(argv[1], \"{sym}\")) return replay_{sym}(f, scratch);")
    out.append("    fprintf(stderr, \"unknown kernel %s\\n\", argv[1]);\n    return 1;\n}")
    return "\n".join(out) + "\n"
