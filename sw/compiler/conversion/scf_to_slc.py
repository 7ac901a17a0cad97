"""SCF -> SLC: decide what the access unit does and what the core does (Ember's decoupling).

Rules (docs/compiler.md, "Decoupling"):

* A memref argument the function never stores to is **read-only**; loads from it whose indices
  the access unit can compute become memory streams (``slc.mem_stream``).
* An ``scf.for`` that contains (at any depth) a load from a read-only memref is **decoupled**: it
  becomes an ``slc.for`` (one layer of the access program). Its bounds must be computable by the
  access unit and its step a positive constant; values it carries (``iter_args``) live on the core
  in one-element memrefs (``carried_values.py``). The decoupled
  loops form one chain: at most one decoupled loop per loop body, one at function level.
* **Registers** are function-level integer values: constants, ``memref.dim`` with a constant
  axis, integer arguments, integer loads from read-only memrefs at register indices, and integer
  arithmetic on them. Register ops found inside loops are
  hoisted to function level (they are pure and loop-invariant).
* Integer arithmetic on streams and registers (``addi subi muli shli shrsi shrui andi ori xori
  maxsi minsi`` on ``index``/``i64``) becomes ``slc.alu_stream``; ``index_cast``/``extsi`` to a
  64-bit type is a free ``slc.cast``.
* Everything else in a decoupled loop body runs on the core, in **callbacks**: ops before the
  nested decoupled loop go into a callback on that loop's ``begin``, ops after it on its ``end``;
  in the innermost decoupled loop, into a callback on ``iter``. Nested ``scf.for``/``scf.if`` that
  contain no read-only loads move into the callback whole. Callback operands are
  ``slc.from_stream`` of access-side values; function-level values are used directly.
* Function-level ops before/after the decoupled loop nest are the core's prologue/epilogue.

Anything the rules cannot place raises :class:`CompileError` at the op's source location.
"""

from __future__ import annotations

from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects import arith, func, memref, scf
from xdsl.dialects.builtin import IndexType, IntegerAttr, IntegerType, MemRefType, ModuleOp
from xdsl.ir import Block, Operation, OpResult, Region, SSAValue
from xdsl.passes import ModulePass

from ...runtime.isa import IMM_MAX
from ..dialects import slc
from ..errors import CompileError, location_of
from .carried_values import carry_in_cells
from ..transforms.choose_decoupling import DECOUPLED_ATTR, READONLY_ATTR, choose_decoupling

__all__ = ["ConvertScfToSlc", "decouple_function", "ALU_OF", "is_free_cast"]

#: arith integer ops the access unit computes, and their ALU stream op.
ALU_OF: dict[type[Operation], str] = {
    arith.AddiOp: "add", arith.SubiOp: "sub", arith.MuliOp: "mul", arith.ShLIOp: "shl",
    arith.ShRSIOp: "sra", arith.ShRUIOp: "shr", arith.AndIOp: "and", arith.OrIOp: "or",
    arith.XOrIOp: "xor", arith.MaxSIOp: "max", arith.MinSIOp: "min",
}


def _is_wide_int(t) -> bool:
    """index or i64: types whose values the access unit's 64-bit arithmetic computes exactly."""
    return isinstance(t, IndexType) or (isinstance(t, IntegerType) and t.width.data == 64)


def is_free_cast(op: Operation) -> bool:
    """index_cast/extsi to a 64-bit type from a 64-bit or sign-extended 32-bit value."""
    if not isinstance(op, arith.IndexCastOp | arith.ExtSIOp):
        return False
    src, dst = op.operands[0].type, op.results[0].type
    narrow_ok = isinstance(src, IntegerType) and src.width.data == 32
    return _is_wide_int(dst) and (_is_wide_int(src) or narrow_ok)


def _describe(value: SSAValue) -> str:
    name = f"%{value.name_hint}" if value.name_hint else "a value"
    if isinstance(value, OpResult):
        loc = location_of(value.op)
        at = f" at {loc.line}:{loc.column}" if loc else ""
        return f"{name} ('{value.op.name}'{at})"
    return name


def _constant_int(value: SSAValue) -> int | None:
    if isinstance(value, OpResult) and isinstance(value.op, arith.ConstantOp):
        attr = value.op.value
        if isinstance(attr, IntegerAttr):
            return attr.value.data
    return None


def _load_of(value: SSAValue) -> memref.LoadOp | None:
    """The memref.load that ``value`` is, looking through free casts."""
    while isinstance(value, OpResult):
        if isinstance(value.op, memref.LoadOp):
            return value.op
        if not is_free_cast(value.op):
            return None
        value = value.op.operands[0]
    return None


@dataclass
class _Group:
    """Core ops of one loop body that go into one callback."""
    event: str
    ops: list[Operation]


class _Decoupler:
    def __init__(self, fn: func.FuncOp):
        self.fn = fn
        # The decision of choose-decoupling (transforms/choose_decoupling.py), made here if the
        # function was not annotated.
        if READONLY_ATTR not in fn.attributes:
            choose_decoupling(fn)
        ro = fn.attributes[READONLY_ATTR]
        self.readonly = {fn.args[i.data] for i in ro.data}
        # values carried by decoupled loops -> one-element core memrefs (carried_values.py)
        carry_in_cells(fn)
        # old value -> new value usable anywhere in the new function (function level)
        self.fmap: dict[SSAValue, SSAValue] = {}
        # old values that are registers (access side may use them)
        self.regs: set[SSAValue] = set()
        # old value -> new stream value (access side, inside slc.for)
        self.smap: dict[SSAValue, SSAValue] = {}
        self.new_block: Block | None = None
        self.top: slc.ForOp | None = None

    # ------------------------------------------------------------------ analysis
    def reads_readonly(self, op: Operation) -> memref.LoadOp | None:
        """The first load from a read-only memref inside ``op`` (or ``op`` itself)."""
        for inner in op.walk():
            if isinstance(inner, memref.LoadOp) and inner.memref in self.readonly:
                return inner
        return None

    def written_loads(self) -> str:
        """Why a loop loading from a memref argument is not decoupled: the kernel stores to it."""
        for loop in self.fn.walk():
            if not isinstance(loop, scf.ForOp):
                continue
            for load in loop.walk():
                if (isinstance(load, memref.LoadOp) and load.memref in self.fn.args
                        and load.memref not in self.readonly):
                    store = next(o for o in self.fn.walk() if isinstance(o, memref.StoreOp)
                                 and o.memref is load.memref)
                    at, st = (f"{loc.line}:{loc.column}" if (loc := location_of(o)) else "?"
                              for o in (load, store))
                    return (f" (%{load.memref.name_hint} is loaded at {at} but stored to at {st}; "
                            "the access unit loads only arrays the kernel never writes)")
        return ""

    def is_decoupled_loop(self, op: Operation) -> bool:
        return isinstance(op, scf.ForOp) and DECOUPLED_ATTR in op.attributes

    def access_value(self, old: SSAValue) -> SSAValue | None:
        """The new access-side value (stream or register) of ``old``, or None if core-only."""
        if old in self.smap:
            return self.smap[old]
        if old in self.regs:
            return self.fmap[old]
        return None

    def is_register_op(self, op: Operation) -> bool:
        """Is ``op`` (with operands already classified) a register computation?"""
        if isinstance(op, arith.ConstantOp):
            return isinstance(op.result.type, IndexType | IntegerType)
        if isinstance(op, memref.DimOp):
            return op.source in self.fmap and _constant_int(op.index) is not None
        if type(op) in ALU_OF or is_free_cast(op):
            return _is_wide_int(op.results[0].type) and all(o in self.regs for o in op.operands)
        return False

    def is_register_load(self, op: Operation) -> bool:
        """A function-level integer load from a read-only memref at register indices.

        The core reads it before the start (an EXPR argument register). Only at function level:
        hoisting a load out of a loop could fault where the loop would not have run.
        """
        return (isinstance(op, memref.LoadOp) and op.memref in self.readonly
                and isinstance(op.res.type, IndexType | IntegerType)
                and all(i in self.regs for i in op.indices))

    # ------------------------------------------------------------------ building
    def hoist(self, op: Operation) -> None:
        """Clone a pure register/constant op from a loop body to function level."""
        assert self.new_block is not None and self.top is not None
        register = self.is_register_op(op)
        new = op.clone(value_mapper=dict(self.fmap))
        self.new_block.insert_op_before(new, self.top)
        for old_r, new_r in zip(op.results, new.results):
            self.fmap[old_r] = new_r
            if register:
                self.regs.add(old_r)

    def run(self) -> func.FuncOp:
        fn = self.fn
        body = fn.body.block
        top_loops = [op for op in body.ops if self.is_decoupled_loop(op)]
        if not top_loops:
            raise CompileError(
                f"nothing to decouple in @{fn.sym_name.data}: no 'scf.for' loads from a read-only "
                f"memref argument{self.written_loads()}", location_of(fn))
        if len(top_loops) > 1:
            first = location_of(top_loops[0])
            raise CompileError(
                "unsupported second decoupled 'scf.for' at function level (the access program is "
                f"one loop chain; the first is at {first.line}:{first.column})",
                location_of(top_loops[1]))
        new_block = Block(arg_types=[a.type for a in fn.args])
        self.new_block = new_block
        for old, new in zip(fn.args, new_block.args):
            new.name_hint = old.name_hint
            self.fmap[old] = new
            if isinstance(old.type, IndexType | IntegerType):
                self.regs.add(old)
        for op in body.ops:
            if op is top_loops[0]:
                self.top = self.emit_loop(op, None)
                continue
            new = op.clone(value_mapper=dict(self.fmap))
            new_block.add_op(new)
            register = self.top is None and (self.is_register_op(op) or self.is_register_load(op))
            for old_r, new_r in zip(op.results, new.results):
                self.fmap[old_r] = new_r
                if register:
                    self.regs.add(old_r)
        new_fn = func.FuncOp(fn.sym_name.data, fn.function_type, Region(new_block),
                             fn.sym_visibility, arg_attrs=fn.arg_attrs, res_attrs=fn.res_attrs)
        new_fn.location = fn.location
        return new_fn

    def emit_loop(self, loop: scf.ForOp, parent: slc.ForOp | None) -> slc.ForOp:
        """Turn a decoupled ``scf.for`` into an ``slc.for`` appended to ``parent`` (or the function)."""
        loc = location_of(loop)
        if loop.iter_args:
            raise CompileError("unsupported 'scf.for' with iter_args in a decoupled loop", loc)
        step = _constant_int(loop.step)
        if step is None or not 0 < step <= IMM_MAX:
            what = "a non-constant step" if step is None else f"step {step}"
            raise CompileError(f"unsupported 'scf.for' with {what} in a decoupled loop", loc)
        bounds = []
        for name, value in (("lower", loop.lb), ("upper", loop.ub)):
            new = self.access_value(value)
            if new is None:
                raise CompileError(
                    f"the {name} bound of this 'scf.for' is {_describe(value)}, computed on the "
                    "core; a decoupled loop needs bounds the access unit can compute", loc)
            bounds.append(new)
        lb_load, ub_load = _load_of(loop.lb), _load_of(loop.ub)
        check_order = (lb_load is not None and ub_load is not None
                       and lb_load.memref is ub_load.memref and lb_load.memref in self.readonly
                       and loop.lb in self.smap and loop.ub in self.smap)
        new_loop = slc.ForOp(bounds[0], bounds[1], step, check_order=check_order)
        new_loop.location = loop.location
        new_loop.index.name_hint = loop.body.block.args[0].name_hint
        if parent is None:
            assert self.new_block is not None
            self.new_block.add_op(new_loop)
            self.top = new_loop
        else:
            parent.body.block.insert_op_before(new_loop, parent.body.block.last_op)
        self.smap[loop.body.block.args[0]] = new_loop.index

        ops = [op for op in loop.body.block.ops if not isinstance(op, scf.YieldOp)]
        children = [op for op in ops if self.is_decoupled_loop(op)]
        if len(children) > 1:
            first = location_of(children[0])
            raise CompileError(
                "unsupported second decoupled 'scf.for' in one loop body (the access program is "
                f"one loop chain; the first is at {first.line}:{first.column})",
                location_of(children[1]))
        child = children[0] if children else None
        before = _Group("begin" if child else "iter", [])
        after = _Group("end", [])
        group = before
        # Pass 1: streams of this layer; core ops collected in order.
        for op in ops:
            if op is child:
                group = after
                continue
            if not self.emit_access_op(op, new_loop):
                if isinstance(op, scf.IfOp | scf.ForOp) and (load := self.reads_readonly(op)):
                    lloc = location_of(load)
                    raise CompileError(
                        f"unsupported '{op.name}' in a decoupled loop: it contains a load from "
                        f"read-only memref %{load.memref.name_hint} at {lloc.line}:{lloc.column}",
                        location_of(op))
                group.ops.append(op)
        # Pass 2: callbacks and the nested loop, in program order.
        if before.ops:
            self.emit_callback(before, new_loop)
        if child is not None:
            self.emit_loop(child, new_loop)
        if after.ops:
            self.emit_callback(after, new_loop)
        return new_loop

    def emit_access_op(self, op: Operation, loop: slc.ForOp) -> bool:
        """Emit ``op`` on the access side if it belongs there; False if it runs on the core."""
        block = loop.body.block
        anchor = block.last_op  # the slc.yield: streams go before callbacks and nested loops
        first_nested = next((o for o in block.ops if isinstance(o, slc.ForOp | slc.CallbackOp)), None)
        if first_nested is not None:
            anchor = first_nested
        if isinstance(op, arith.ConstantOp):
            self.hoist(op)
            return True
        if self.is_register_op(op):
            self.hoist(op)
            return True
        new: Operation | None = None
        if type(op) in ALU_OF and _is_wide_int(op.results[0].type):
            lhs, rhs = (self.access_value(o) for o in op.operands)
            if lhs is not None and rhs is not None:
                new = slc.AluStreamOp(ALU_OF[type(op)], lhs, rhs, slc.StreamType(op.results[0].type))
        elif is_free_cast(op):
            src = self.access_value(op.operands[0])
            if src is not None:
                new = slc.CastOp(src, slc.StreamType(op.results[0].type))
        elif isinstance(op, memref.LoadOp) and op.memref in self.readonly:
            indices = [self.access_value(i) for i in op.indices]
            if all(i is not None for i in indices):
                new = slc.MemStreamOp(self.fmap[op.memref], indices)
        if new is None:
            return False
        new.location = op.location
        new.results[0].name_hint = op.results[0].name_hint
        block.insert_op_before(new, anchor)
        self.smap[op.results[0]] = new.results[0]
        return True

    def emit_callback(self, group: _Group, loop: slc.ForOp) -> None:
        cb = slc.CallbackOp(group.event)
        cb.location = group.ops[0].location
        loop.body.block.insert_op_before(cb, loop.body.block.last_op)
        cb_block = cb.body.block
        terminator = cb_block.last_op
        inside: set[SSAValue] = set()
        for op in group.ops:
            for inner in op.walk():
                inside.update(inner.results)
                for region in inner.regions:
                    for b in region.blocks:
                        inside.update(b.args)
        mapper: dict[SSAValue, SSAValue] = {}
        for op in group.ops:
            for inner in op.walk():
                for operand in inner.operands:
                    if operand in inside or operand in mapper:
                        continue
                    if operand in self.smap:
                        stream = self.smap[operand]
                        get = slc.FromStreamOp(stream)
                        get.results[0].name_hint = operand.name_hint
                        get.location = inner.location
                        cb_block.insert_op_before(get, terminator)
                        mapper[operand] = get.results[0]
                    elif operand in self.fmap:
                        mapper[operand] = self.fmap[operand]
                    else:
                        raise CompileError(
                            f"{_describe(operand)} runs on the core in one callback but is used in "
                            f"another ('{inner.name}'); only access-side values (index arithmetic, "
                            "loads from read-only memrefs) can be passed between callbacks",
                            location_of(inner))
        for op in group.ops:
            cb_block.insert_op_before(op.clone(value_mapper=mapper), terminator)


def decouple_function(fn: func.FuncOp) -> func.FuncOp:
    """The SLC form of a checked SCF kernel function (a new op; ``fn`` gets the annotations of
    choose-decoupling if it has none)."""
    return _Decoupler(fn).run()


@dataclass(frozen=True)
class ConvertScfToSlc(ModulePass):
    """Decouple every function: SCF loops and loads -> SLC loops, streams and callbacks."""

    name = "convert-scf-to-slc"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        for fn in [f for f in op.ops if isinstance(f, func.FuncOp)]:
            new = decouple_function(fn)
            op.body.block.insert_op_before(new, fn)
            fn.detach()
            fn.erase(safe_erase=False)
