"""DLC -> the execute side as C11 source for a real core (``ember compile --emit c``).

The generated translation unit defines one function per kernel::

    void ember_<name>(<params>, <results>);

Parameters follow the function's arguments: a memref is ``ember_memref_t *`` (row-major,
contiguous; ``data`` points at element 0, ``sizes[k]`` is dimension k in elements), ``index`` is
``int64_t``, ``iN`` is ``intN_t`` (``i1`` is ``bool``), ``f32``/``f64`` are ``float``/``double``.
Each function result is an output pointer appended to the parameters (``ember_memref_t *`` or a
scalar pointer); a result that is a memref argument is written back through it as well.

The body is the DLC function: the **prologue** (ops before ``dlc.configure_access``), the
**compute loop** over control tokens (one ``case`` per ``dlc.case``, ``DONE`` = 0xFFFF ends it),
the **epilogue** (ops after ``dlc.compute_loop``). Tokens come through the queue API, which the
platform provides (docs/backend.md):

    uint16_t ember_pop_control(void);   /* next control token (callback id), blocks */
    uint64_t ember_pop_data(void);      /* next 64-bit data token, blocks */

An f32 operand is bits [31:0] of its token, an f64 all 64 bits, an integer the low bits
(sign-extended by the unit where the stream is signed). Arithmetic follows MLIR: integer ops wrap
(computed in unsigned arithmetic, no undefined behaviour), ``divsi`` truncates, f32 ops are done
in ``float`` (``FLT_EVAL_METHOD == 0`` is required and checked), ``math.fma`` is C's ``fma``/
``fmaf``.
"""

from __future__ import annotations

from xdsl.dialects import arith, func, math, memref, scf
from xdsl.dialects.builtin import (
    Float32Type,
    Float64Type,
    FloatAttr,
    IndexType,
    IntegerAttr,
    IntegerType,
    MemRefType,
)
from xdsl.ir import Attribute, Block, Operation, SSAValue

from ..dialects import dlc
from ..errors import CompileError, location_of

__all__ = ["generate_c", "PRELUDE"]

PRELUDE = """\
#include <float.h>
#include <math.h>
#include <stdbool.h>
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
uint16_t ember_pop_control(void);   /* next control token (callback id); blocks until one arrives */
uint64_t ember_pop_data(void);      /* next 64-bit data token; blocks until one arrives */

static inline float ember_as_f32(uint64_t t) { uint32_t u = (uint32_t)t; float f; memcpy(&f, &u, 4); return f; }
static inline double ember_as_f64(uint64_t t) { double d; memcpy(&d, &t, 8); return d; }
static inline int64_t ember_floordiv(int64_t a, int64_t b) { int64_t q = a / b; return (q * b != a && ((a < 0) != (b < 0))) ? q - 1 : q; }
static inline int64_t ember_ceildiv(int64_t a, int64_t b) { int64_t q = a / b; return (q * b != a && ((a < 0) == (b < 0))) ? q + 1 : q; }
"""

_FLOAT_BIN = {arith.AddfOp: "+", arith.SubfOp: "-", arith.MulfOp: "*", arith.DivfOp: "/"}
_FLOAT_FN = {arith.MaxnumfOp: "fmax", arith.MinnumfOp: "fmin",
             arith.MaximumfOp: "fmax", arith.MinimumfOp: "fmin"}
_INT_WRAP = {arith.AddiOp: "+", arith.SubiOp: "-", arith.MuliOp: "*", arith.AndIOp: "&",
             arith.OrIOp: "|", arith.XOrIOp: "^", arith.ShLIOp: "<<"}
_CMPI = {"eq": "==", "ne": "!=", "slt": "<", "sle": "<=", "sgt": ">", "sge": ">=",
         "ult": "<", "ule": "<=", "ugt": ">", "uge": ">="}
_CMPF = {"oeq": "==", "ogt": ">", "oge": ">=", "olt": "<", "ole": "<=", "une": "!="}


def _ctype(t: Attribute) -> str:
    if isinstance(t, Float32Type):
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
    raise CompileError(f"type {t} has no C equivalent in the execute side")


def _bits(t: Attribute) -> int:
    return 64 if isinstance(t, IndexType) else t.width.data


class _Gen:
    def __init__(self, fn: func.FuncOp):
        self.fn = fn
        self.names: dict[SSAValue, str] = {}
        self.lines: list[str] = []
        self.counter = 0

    def n(self, v: SSAValue) -> str:
        if v not in self.names:
            self.counter += 1
            self.names[v] = f"v{self.counter}"
        return self.names[v]

    def e(self, indent: int, text: str) -> None:
        self.lines.append("    " * indent + text)

    def decl(self, indent: int, v: SSAValue, expr: str) -> None:
        # "(void)x;" keeps -Wall -Werror quiet about values only the access side used
        self.e(indent, f"{_ctype(v.type)} {self.n(v)} = {expr}; (void){self.n(v)};")

    def elem(self, m: SSAValue, indices) -> str:
        t = m.type
        assert isinstance(t, MemRefType)
        name = self.n(m)
        flat = "0"
        for k, i in enumerate(indices):
            flat = f"({flat}) * {name}.sizes[{k}] + {self.n(i)}" if k else self.n(i)
        return f"(({_ctype(t.element_type)} *){name}.data)[{flat}]"

    def generate(self) -> str:
        fn = self.fn
        name = fn.sym_name.data
        params = []
        for k, arg in enumerate(fn.args):
            if isinstance(arg.type, MemRefType):
                params.append(f"ember_memref_t *p{k}")
            else:
                params.append(f"{_ctype(arg.type)} {self.n(arg)}")
        for k, t in enumerate(fn.function_type.outputs.data):
            params.append(f"{_ctype(t)} *result{k}")
        self.e(0, f"void ember_{name}({', '.join(params) or 'void'})")
        self.e(0, "{")
        for k, arg in enumerate(fn.args):
            if isinstance(arg.type, MemRefType):
                self.e(1, f"ember_memref_t {self.n(arg)} = *p{k}; (void){self.n(arg)};")
        self.block(fn.body.block, 1)
        self.e(0, "}")
        return PRELUDE + "\n" + "\n".join(self.lines) + "\n"

    def block(self, block: Block, indent: int) -> None:
        for op in block.ops:
            if not isinstance(op, scf.YieldOp | dlc.YieldOp):
                self.op(op, indent)

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
                    self.block(case.body.block, indent + 2)
                    e(indent + 2, "break;")
                    e(indent + 1, "}")
            e(indent + 1, "default: break;")
            e(indent + 1, "}")
            e(indent, "}")
            return
        if isinstance(op, func.ReturnOp):
            for k, v in enumerate(op.operands):
                e(indent, f"*result{k} = {n(v)};")
            e(indent, "return;")
            return
        if isinstance(op, dlc.PopOperandOp):
            t = op.result.type
            if isinstance(t, Float32Type):
                self.decl(indent, op.result, "ember_as_f32(ember_pop_data())")
            elif isinstance(t, Float64Type):
                self.decl(indent, op.result, "ember_as_f64(ember_pop_data())")
            else:
                self.decl(indent, op.result, f"({_ctype(t)})ember_pop_data()")
            return
        if isinstance(op, arith.ConstantOp):
            attr = op.value
            if isinstance(attr, IntegerAttr):
                v = attr.value.data
                if isinstance(op.result.type, IntegerType) and op.result.type.width.data == 1:
                    self.decl(indent, op.result, "true" if v else "false")
                else:
                    self.decl(indent, op.result, f"({_ctype(op.result.type)})INT64_C({v})")
            elif isinstance(attr, FloatAttr):
                v = attr.value.data
                lit = repr(float(v)) if v == v and abs(v) != float("inf") else \
                    ("NAN" if v != v else ("INFINITY" if v > 0 else "-INFINITY"))
                self.decl(indent, op.result, f"({_ctype(op.result.type)})({lit})")
            else:
                raise CompileError(f"constant {attr} has no C form", location_of(op))
            return
        if type(op) in _FLOAT_BIN:
            a, b = (n(x) for x in op.operands)
            self.decl(indent, op.result, f"{a} {_FLOAT_BIN[type(op)]} {b}")
            return
        if type(op) in _FLOAT_FN:
            a, b = (n(x) for x in op.operands)
            f = _FLOAT_FN[type(op)] + ("f" if isinstance(op.result.type, Float32Type) else "")
            self.decl(indent, op.result, f"{f}({a}, {b})")
            return
        if isinstance(op, arith.NegfOp):
            self.decl(indent, op.result, f"-{n(op.operand)}")
            return
        if isinstance(op, math.FmaOp):
            f = "fmaf" if isinstance(op.result.type, Float32Type) else "fma"
            self.decl(indent, op.result, f"{f}({n(op.a)}, {n(op.b)}, {n(op.c)})")
            return
        if isinstance(op, math.SqrtOp):
            f = "sqrtf" if isinstance(op.result.type, Float32Type) else "sqrt"
            self.decl(indent, op.result, f"{f}({n(op.operand)})")
            return
        if type(op) in _INT_WRAP:
            t = op.result.type
            u = f"uint{_bits(t)}_t" if _bits(t) > 1 else "unsigned"
            a, b = (n(x) for x in op.operands)
            self.decl(indent, op.result, f"({_ctype(t)})(({u}){a} {_INT_WRAP[type(op)]} ({u}){b})")
            return
        if isinstance(op, arith.DivSIOp | arith.RemSIOp | arith.ShRSIOp | arith.MaxSIOp | arith.MinSIOp
                      | arith.FloorDivSIOp | arith.CeilDivSIOp):
            a, b = (n(x) for x in op.operands)
            expr = {arith.DivSIOp: f"{a} / {b}", arith.RemSIOp: f"{a} % {b}",
                    arith.ShRSIOp: f"{a} >> {b}", arith.MaxSIOp: f"({a} > {b} ? {a} : {b})",
                    arith.MinSIOp: f"({a} < {b} ? {a} : {b})",
                    arith.FloorDivSIOp: f"ember_floordiv({a}, {b})",
                    arith.CeilDivSIOp: f"ember_ceildiv({a}, {b})"}[type(op)]
            self.decl(indent, op.result, f"({_ctype(op.result.type)})({expr})")
            return
        if isinstance(op, arith.CmpiOp):
            pred = arith.CMPI_COMPARISON_OPERATIONS[op.predicate.value.data]
            a, b = n(op.lhs), n(op.rhs)
            if pred.startswith("u"):
                u = f"uint{_bits(op.lhs.type)}_t"
                a, b = f"({u}){a}", f"({u}){b}"
            self.decl(indent, op.result, f"{a} {_CMPI[pred]} {b}")
            return
        if isinstance(op, arith.CmpfOp):
            pred = arith.CMPF_COMPARISON_OPERATIONS[op.predicate.value.data]
            if pred not in _CMPF:
                raise CompileError(f"arith.cmpf {pred} has no C form here", location_of(op))
            self.decl(indent, op.result, f"{n(op.lhs)} {_CMPF[pred]} {n(op.rhs)}")
            return
        if isinstance(op, arith.SelectOp):
            self.decl(indent, op.result, f"{n(op.cond)} ? {n(op.lhs)} : {n(op.rhs)}")
            return
        if isinstance(op, arith.IndexCastOp | arith.ExtSIOp | arith.TruncIOp | arith.SIToFPOp
                      | arith.FPToSIOp | arith.ExtFOp | arith.TruncFOp):
            self.decl(indent, op.result, f"({_ctype(op.result.type)}){n(op.operands[0])}")
            return
        if isinstance(op, arith.ExtUIOp):
            u = f"uint{_bits(op.operands[0].type)}_t" if _bits(op.operands[0].type) > 1 else "bool"
            self.decl(indent, op.result, f"({_ctype(op.result.type)})({u}){n(op.operands[0])}")
            return
        if isinstance(op, memref.LoadOp):
            self.decl(indent, op.res, self.elem(op.memref, op.indices))
            return
        if isinstance(op, memref.StoreOp):
            e(indent, f"{self.elem(op.memref, op.indices)} = {n(op.value)};")
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
            e(indent, f"ember_memref_t {r} = {{ calloc({count}, sizeof({_ctype(t.element_type)})), "
                      f"{len(sizes)}, {{ {', '.join(sizes) or '0'} }} }};")
            return
        if isinstance(op, memref.DeallocOp):
            e(indent, f"free({n(op.memref)}.data);")
            return
        if isinstance(op, scf.ForOp):
            for res, init in zip(op.results, op.iter_args):
                self.decl(indent, res, n(init))
            iv = n(op.body.block.args[0])
            e(indent, f"for (int64_t {iv} = {n(op.lb)}; {iv} < {n(op.ub)}; {iv} += {n(op.step)}) {{")
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
                e(indent, f"{_ctype(res.type)} {n(res)};")
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


def generate_c(fn: func.FuncOp) -> str:
    """The C11 translation unit of a DLC function's execute side (see the module docstring).

    Raises
    ------
    CompileError
        An op or type of the compute loop has no C form (named, with its location).
    """
    return _Gen(fn).generate()
