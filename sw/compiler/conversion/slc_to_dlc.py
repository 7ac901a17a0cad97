"""SLC -> DLC: layers, linear addresses, marshaling registrations and the compute loop.

* Each ``slc.for`` becomes a ``dlc.tu`` of the next layer (layer 0 = outermost).
* A multi-dimensional ``slc.mem_stream m[i0, .., ik]`` becomes ALU streams computing the
  row-major linear index ``((i0 * d1 + i1) * d2 + ..)`` (``dk`` a ``memref.dim`` register or a
  static size) and a ``dlc.mem_stream`` with the element size as byte stride.
* Registers (function-level constants, dims, integer arguments and arithmetic on them) stay
  function-level values; the backend maps them to immediates and argument registers.
* Callbacks get ids in program order. For each, the operands (its ``slc.from_stream`` values, in
  order) are registered, then the control token: a firing pushes its operands, then its id.
  ``begin``/``end`` callbacks beside a nested loop fire on that loop's layer; ``iter`` callbacks
  on their own loop's layer.
* ``dlc.compute_loop`` has one ``dlc.case`` per callback: ``dlc.pop_operand`` per operand, then
  the callback's body.
"""

from __future__ import annotations

from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects import arith, func, memref
from xdsl.dialects.builtin import IndexType, IntegerAttr, IntegerType, MemRefType, ModuleOp
from xdsl.ir import Block, BlockArgument, Operation, OpResult, Region, SSAValue
from xdsl.passes import ModulePass

from ..dialects import dlc, slc, slcv
from ..errors import CompileError, location_of

__all__ = ["ConvertSlcToDlc", "lower_function", "element_bytes"]


def element_bytes(t) -> int:
    """Bytes of one memref element (f32/i32: 4, f64/i64/index: 8)."""
    if isinstance(t, IndexType):
        return 8
    width = t.width.data if isinstance(t, IntegerType) else t.bitwidth
    return width // 8


#: Ops that bring an access-side value into a callback (each one operand of the firing).
_GETS = (slc.FromStreamOp, slcv.FromStreamOp, slcv.FromBufferOp)


@dataclass
class _Callback:
    op: slc.CallbackOp
    layer: int
    event: str


class _Lowering:
    def __init__(self, fn: func.FuncOp):
        self.fn = fn
        self.fmap: dict[SSAValue, SSAValue] = {}       # old function-level value -> new
        self.smap: dict[SSAValue, SSAValue] = {}       # old stream value -> new dlc stream
        self.created: dict[tuple, SSAValue] = {}       # new function-level helper values
        self.callbacks: list[_Callback] = []
        self.lengths: dict[SSAValue, SSAValue] = {}     # old buffer value -> its length register
        self.collected: dict[SSAValue, int] = {}        # old to_buffer result -> its layer
        self.new_block = Block(arg_types=[a.type for a in fn.args])
        self.access: dlc.ConfigureAccessOp | None = None

    # ------------------------------------------------------------------ registers
    def _before_access(self, op: Operation) -> SSAValue:
        assert self.access is not None
        self.new_block.insert_op_before(op, self.access)
        return op.results[0]

    def constant(self, value: int) -> SSAValue:
        key = ("const", value)
        if key not in self.created:
            op = arith.ConstantOp(IntegerAttr(value, IndexType()))
            op.results[0].name_hint = f"c{value}" if value >= 0 else f"cm{-value}"
            self.created[key] = self._before_access(op)
        return self.created[key]

    def dim(self, old_memref: SSAValue, axis: int) -> SSAValue:
        """A register holding dimension ``axis`` of memref argument ``old_memref``."""
        mtype = old_memref.type
        assert isinstance(mtype, MemRefType)
        size = mtype.get_shape()[axis]
        if size >= 0:
            return self.constant(size)
        key = ("dim", old_memref, axis)
        if key not in self.created:
            op = memref.DimOp(self.fmap[old_memref], self.constant(axis))
            self.created[key] = self._before_access(op)
        return self.created[key]

    def remember(self, new: Operation) -> None:
        """Reuse the prologue's own constants and dims instead of creating duplicates."""
        if isinstance(new, arith.ConstantOp) and isinstance(new.result.type, IndexType):
            self.created.setdefault(("const", new.value.value.data), new.result)
        elif (isinstance(new, memref.DimOp) and isinstance(new.index, OpResult)
              and isinstance(new.index.op, arith.ConstantOp)):
            old_src = next((o for o, n in self.fmap.items() if n is new.source), None)
            if old_src is not None:
                self.created.setdefault(("dim", old_src, new.index.op.value.value.data), new.result)

    def source(self, old: SSAValue, layer: int) -> SSAValue:
        """The DLC value of an SLC operand used by something in ``layer``.

        Registers stay function-level values; the backend turns them into immediates or
        argument registers (arithmetic on registers becomes an ``EXPR`` argument register
        that the core computes before the start).
        """
        if old in self.smap:
            return self.smap[old]
        if old not in self.fmap:
            raise CompileError("an slc operand must be a stream or a function-level register",
                               location_of(old.op) if isinstance(old, OpResult) else None)
        return self.fmap[old]

    # ------------------------------------------------------------------ building
    def append(self, op: Operation) -> None:
        assert self.access is not None
        block = self.access.body.block
        block.insert_op_before(op, block.last_op)

    def run(self) -> func.FuncOp:
        fn = self.fn
        for old, new in zip(fn.args, self.new_block.args):
            new.name_hint = old.name_hint
            self.fmap[old] = new
        tops = [op for op in fn.body.block.ops if isinstance(op, slc.ForOp | slcv.ForOp)]
        if len(tops) != 1:
            raise CompileError(f"expected one slc.for at function level, found {len(tops)}",
                               location_of(fn))
        top = tops[0]
        for op in fn.body.block.ops:
            if op is top:
                self.access = dlc.ConfigureAccessOp()
                self.access.location = top.location
                self.new_block.add_op(self.access)
                compute = dlc.ComputeLoopOp()
                compute.location = top.location
                self.new_block.add_op(compute)
                self.lower_top(top)
                self.build_compute_loop(compute)
                continue
            new = op.clone(value_mapper=dict(self.fmap))
            self.new_block.add_op(new)
            self.fmap.update(zip(op.results, new.results))
            self.remember(new)
        new_fn = func.FuncOp(fn.sym_name.data, fn.function_type, Region(self.new_block),
                             fn.sym_visibility, arg_attrs=fn.arg_attrs, res_attrs=fn.res_attrs)
        new_fn.location = fn.location
        return new_fn

    def lower_top(self, top: slc.ForOp) -> None:
        self.lower_loop(top, 0)
        # Registrations, in callback order: operands first, then the control token.
        for cb_id, cb in enumerate(self.callbacks):
            for get in self.gets(cb.op):
                layer, event = cb.layer, cb.event
                if get.operands[0] in self.collected:
                    layer, event = self.collected[get.operands[0]], "iter"
                reg = dlc.RegisterOperandOp(layer, event, self.smap[get.operands[0]])
                reg.location = get.location
                self.append(reg)
            reg_cb = dlc.RegisterCallbackOp(cb.layer, cb.event, cb_id)
            reg_cb.location = cb.op.location
            self.append(reg_cb)

    def lower_loop(self, loop: slc.ForOp | slcv.ForOp, layer: int) -> None:
        lb, ub = (self.source(v, layer) for v in (loop.lb, loop.ub))
        if isinstance(loop, slcv.ForOp):
            tu = dlc.TuOp(layer, lb, ub, loop.step.value.data, loop.check_order is not None,
                          loop.lanes, loop.config.data)
        else:
            tu = dlc.TuOp(layer, lb, ub, loop.step.value.data, loop.check_order is not None)
        tu.location = loop.location
        tu.results[0].name_hint = loop.index.name_hint
        self.append(tu)
        self.smap[loop.index] = tu.results[0]
        if isinstance(loop, slcv.ForOp) and loop.mask is not None and loop.mask.uses:
            mask = dlc.MaskStreamOp(layer, tu.results[0])
            mask.location = loop.location
            mask.results[0].name_hint = loop.mask.name_hint
            self.append(mask)
            self.smap[loop.mask] = mask.results[0]
        has_child = any(isinstance(o, slc.ForOp | slcv.ForOp) for o in loop.body.block.ops)
        for op in loop.body.block.ops:
            if isinstance(op, slc.ForOp | slcv.ForOp):
                self.lower_loop(op, layer + 1)
            elif isinstance(op, slc.CallbackOp):
                event = op.event.data
                self.callbacks.append(_Callback(op, layer + 1 if has_child else layer, event))
            elif isinstance(op, slc.MemStreamOp):
                self.lower_mem_stream(op, layer)
            elif isinstance(op, slcv.MemStreamOp):
                self.lower_mem_stream(op, layer)
            elif isinstance(op, slc.AluStreamOp | slcv.AluStreamOp):
                lhs, rhs = self.source(op.lhs, layer), self.source(op.rhs, layer)
                lanes = max(dlc.stream_lanes(lhs.type), dlc.stream_lanes(rhs.type))
                new = dlc.AluStreamOp(layer, op.op.data, lhs, rhs,
                                      dlc.stream_type(op.result.type.element_type, lanes))
                self.emit_stream(op, new)
            elif isinstance(op, slcv.FirstLaneOp):
                self.emit_stream(op, dlc.FirstLaneOp(layer, self.smap[op.value]))
            elif isinstance(op, slcv.BufStreamOp):
                self.lower_buf_stream(op, layer)
            elif isinstance(op, slcv.ToBufferOp):
                # A buffer collected over this layer's traversal: its stream is pushed on every
                # ``iter`` of the layer (vectors of L lanes, tail lanes 0); the callback on the
                # layer's ``end`` pops it first (docs/compiler.md, "Operands in the data queue").
                # Several values would be pushed together per firing (v0 w0 v1 w1 ...), not
                # each whole as the callback pops them: refused (bufferize never produces it).
                if len(op.values) > 1:
                    raise CompileError(
                        f"a loop collecting {len(op.values)} buffers ('slcv.to_buffer' of "
                        f"{len(op.values)} values) is not supported: its traversal pushes them "
                        "interleaved, one element (vector) of each per firing; collect one "
                        "buffer per loop, or load rows with 'slcv.buf_stream'", location_of(op))
                for value, result in zip(op.values, loop.results, strict=True):
                    self.smap[result] = self.smap[value]
                    self.collected[result] = layer
                    self.lengths[result] = self.loop_length(loop)
            elif isinstance(op, slcv.YieldOp):
                pass
            elif isinstance(op, slc.ToStreamOp):
                self.emit_stream(op, dlc.FwdStreamOp(layer, self.source(op.value, layer)))
            elif isinstance(op, slc.CastOp):
                self.smap[op.result] = self.smap[op.value]
            elif isinstance(op, slc.YieldOp):
                pass
            else:
                raise CompileError(f"unexpected '{op.name}' in an slc.for body", location_of(op))

    def emit_stream(self, old: Operation, new: Operation) -> None:
        new.location = old.location
        new.results[0].name_hint = old.results[0].name_hint
        self.append(new)
        self.smap[old.results[0]] = new.results[0]

    def linearize(self, op: Operation, memref_value: SSAValue, indices, layer: int) -> SSAValue:
        """Row-major linear element index of ``memref[indices]`` as ALU streams of ``layer``."""
        if not (isinstance(memref_value, BlockArgument) and memref_value.block is self.fn.body.block):
            raise CompileError("a memory stream must load from a memref argument of the function",
                               location_of(op))
        linear: SSAValue | None = None
        for axis, index in enumerate(indices):
            idx = self.source(index, layer)
            if linear is None:
                linear = idx
                continue
            lanes = dlc.stream_lanes(linear.type)
            mul = dlc.AluStreamOp(layer, "mul", linear, self.dim(memref_value, axis),
                                  dlc.stream_type(IndexType(), lanes))
            mul.location = op.location
            self.append(mul)
            lanes = max(lanes, dlc.stream_lanes(idx.type))
            add = dlc.AluStreamOp(layer, "add", mul.results[0], idx, dlc.stream_type(IndexType(), lanes))
            add.location = op.location
            self.append(add)
            linear = add.results[0]
        if linear is None:  # rank 0
            linear = self.constant(0)
        return linear

    def lower_mem_stream(self, op: slc.MemStreamOp | slcv.MemStreamOp, layer: int) -> None:
        mtype = op.memref.type
        assert isinstance(mtype, MemRefType)
        linear = self.linearize(op, op.memref, op.indices, layer)
        new = dlc.MemStreamOp(layer, self.fmap[op.memref], linear, element_bytes(mtype.element_type))
        self.emit_stream(op, new)

    def lower_buf_stream(self, op: slcv.BufStreamOp, layer: int) -> None:
        mtype = op.memref.type
        assert isinstance(mtype, MemRefType)
        linear = self.linearize(op, op.memref, op.indices, layer)
        new = dlc.BufStreamOp(layer, self.fmap[op.memref], linear, self.source(op.length, layer),
                              element_bytes(mtype.element_type))
        self.emit_stream(op, new)
        self.lengths[op.result] = self.source(op.length, layer)

    def loop_length(self, loop: slcv.ForOp) -> SSAValue:
        """A register with the trip count of a bufferised loop (bounds are registers, step 1)."""
        lb, ub = self.source(loop.lb, 0), self.source(loop.ub, 0)
        if loop.step.value.data != 1 or isinstance(lb.type, dlc.StreamType | dlc.VStreamType) \
                or isinstance(ub.type, dlc.StreamType | dlc.VStreamType):
            raise CompileError("a bufferised loop needs register bounds and step 1",
                               location_of(loop))
        if isinstance(lb, OpResult) and isinstance(lb.op, arith.ConstantOp) \
                and lb.op.value.value.data == 0:
            return ub
        key = ("len", lb, ub)
        if key not in self.created:
            op = arith.SubiOp(ub, lb)
            op.results[0].name_hint = "len"
            self.created[key] = self._before_access(op)
        return self.created[key]

    def gets(self, op: Operation) -> list[Operation]:
        """The ops of a callback that take an operand, in queue order: buffers collected over
        a nested layer's traversal (pushed before the firing), then the rest in program order."""
        gets = [o for o in op.walk() if isinstance(o, _GETS)]
        return sorted(gets, key=lambda g: g.operands[0] not in self.collected)

    def build_compute_loop(self, compute: dlc.ComputeLoopOp) -> None:
        block = compute.body.block
        for cb_id, cb in enumerate(self.callbacks):
            case = dlc.CaseOp(cb_id)
            case.location = cb.op.location
            block.insert_op_before(case, block.last_op)
            cblock = case.body.block
            terminator = cblock.last_op
            pops = []
            for get in self.gets(cb.op):
                if isinstance(get, slcv.FromBufferOp):
                    lanes = dlc.stream_lanes(self.smap[get.buffer].type) \
                        if get.buffer in self.collected else 1
                    pop = dlc.PopBufferOp(self.lengths[get.buffer], get.result.type, lanes)
                else:
                    pop = dlc.PopOperandOp(get.results[0].type)
                pop.location = get.location
                pop.results[0].name_hint = get.results[0].name_hint
                cblock.insert_op_before(pop, terminator)
                pops.append(pop.results[0])
            mapper = dict(self.fmap)
            for op in cb.op.body.block.ops:
                if isinstance(op, slc.YieldOp):
                    continue
                cblock.insert_op_before(op.clone(value_mapper=mapper), terminator)
            gets = self.gets(case)
            for get, pop in zip(gets, pops, strict=True):
                get.results[0].replace_all_uses_with(pop)
                get.detach()
                get.erase()


def lower_function(fn: func.FuncOp) -> func.FuncOp:
    """The DLC form of an SLC kernel function (a new op)."""
    return _Lowering(fn).run()


@dataclass(frozen=True)
class ConvertSlcToDlc(ModulePass):
    """Lower every SLC function to DLC (configure_access + compute_loop)."""

    name = "convert-slc-to-dlc"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        for fn in [f for f in op.ops if isinstance(f, func.FuncOp)]:
            new = lower_function(fn)
            op.body.block.insert_op_before(new, fn)
            fn.detach()
            fn.erase(safe_erase=False)
