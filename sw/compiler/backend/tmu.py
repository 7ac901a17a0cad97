"""DLC -> the binary access program (``sw.runtime.isa.Program``) and its argument map.

Mapping (docs/isa.md):

* ``dlc.tu layer k`` -> layer k; ``dlc.mem_stream``/``alu_stream``/``fwd_stream`` -> streams, ids in
  program order; ``dlc.register_operand``/``register_callback`` -> actions in program order.
* Registers become sources: an ``index``/integer constant is an ``IMM`` when it fits in 28 bits
  (else a ``CONST`` argument register); ``memref.dim %arg, c`` is a ``DIM`` argument register; an
  integer function argument is a ``SCALAR`` argument register; anything else the access side
  uses at function level (integer arithmetic on those, sizes of ``memref.alloc`` results,
  integer loads from argument memrefs) is an
  ``EXPR`` argument register, a Python expression over ``args`` the core evaluates before start.
* Each memref argument that a memory stream loads gets one region (base = its ``BASE`` argument
  register, size = its ``BYTES`` argument register); its streams use the base register as ``a``.
* The program must fit the unit's :class:`~sw.runtime.isa.Limits`; otherwise CompileError names
  the resource, what the kernel needs and what the unit has.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from xdsl.dialects import arith, func, memref
from xdsl.dialects.builtin import (
    Float32Type,
    ModuleOp,
    Float64Type,
    IndexType,
    IntegerAttr,
    IntegerType,
    MemRefType,
)
from xdsl.ir import BlockArgument, Operation, OpResult, SSAValue

from ...runtime import isa
from ...runtime.kernel import ArgKind, ArgSpec, ParamKind, ParamSpec
from ..conversion.scf_to_slc import ALU_OF, is_free_cast
from ..dialects import dlc
from .resources import ResourceError, to_program, to_tmu
from ..errors import CompileError, location_of
from ..frontends.mlir import element_type_name

__all__ = ["AccessProgram", "build_program", "control_first", "param_specs", "SUPPORTS_V1"]

#: The backend emits ISA version 1 (docs/isa.md §7) for configurations that have it.
SUPPORTS_V1 = True

_EXPR = {
    "add": "({a} + {b})", "sub": "({a} - {b})", "mul": "({a} * {b})", "shl": "({a} << {b})",
    "sra": "({a} >> {b})", "shr": "(({a} & 0xFFFFFFFFFFFFFFFF) >> {b})", "and": "({a} & {b})",
    "or": "({a} | {b})", "xor": "({a} ^ {b})", "max": "({a} if {a} >= {b} else {b})",
    "min": "({a} if {a} <= {b} else {b})",
}

_EVENTS = {"begin": isa.Event.BEGIN, "iter": isa.Event.ITER, "end": isa.Event.END}


# DLC vector forms (the IR engineer's dlc.py); absent in older trees.
_FirstLaneOp = getattr(dlc, "FirstLaneOp", None)
_MaskStreamOp = getattr(dlc, "MaskStreamOp", None)
_BufStreamOp = getattr(dlc, "BufStreamOp", None)
_BufferType = getattr(dlc, "BufferType", None)
_PACK = {8: 0, 4: 1, 2: 2, 1: 3}
_MODES = {"scalar": isa.LayerMode.SINGLE, "broadcast": isa.LayerMode.BROADCAST,
          "vector": isa.LayerMode.LOCKSTEP}


def _layer_mode(op: "dlc.TuOp") -> tuple[isa.LayerMode, int]:
    """ISA layer mode and lanes of a ``dlc.tu`` (``config`` scalar / broadcast / vector)."""
    config = getattr(op, "config", None)
    name = config.data if config is not None else "scalar"
    mode = _MODES[name]
    lanes = op.vlen.value.data if mode == isa.LayerMode.LOCKSTEP else 1
    return mode, lanes


def _element_type(t):
    return getattr(t, "element_type", t)


def _element_bytes(t, op: Operation) -> int:
    """Bytes of one element of type ``t`` in memory and in a packed token."""
    if isinstance(t, IndexType):
        return 8
    width = getattr(t, "bitwidth", None)
    if isinstance(t, IntegerType):
        width = t.width.data
    if width is None or width > 64:
        raise CompileError(f"element type {t} has no size the access unit can load or pack",
                           location_of(op))
    return max(1, width // 8)


@dataclass
class AccessProgram:
    """What the backend derives from ``dlc.configure_access``."""
    program: isa.Program
    arg_map: list[ArgSpec]
    in_image: set[int]                                   # parameter numbers the unit loads
    callbacks: dict[int, tuple[str, int]] = field(default_factory=dict)
    tmu: ModuleOp | None = None                          # the tmu.program (``--emit tmu``)


def _constant(value: SSAValue) -> int | None:
    if isinstance(value, OpResult) and isinstance(value.op, arith.ConstantOp) \
            and isinstance(value.op.value, IntegerAttr):
        return value.op.value.value.data
    return None


def param_specs(fn: func.FuncOp, in_image: set[int]) -> list[ParamSpec]:
    """One ParamSpec per function argument."""
    specs = []
    for n, arg in enumerate(fn.args):
        name = arg.name_hint or f"arg{n}"
        t = arg.type
        if isinstance(t, MemRefType):
            shape = tuple(d if d >= 0 else None for d in t.get_shape())    # negative: '?'
            specs.append(ParamSpec(name, ParamKind.MEMREF, element_type_name(t.element_type) or "?",
                                   t.get_num_dims(), n in in_image, shape))
        elif isinstance(t, IndexType):
            specs.append(ParamSpec(name, ParamKind.INDEX, "int64"))
        elif isinstance(t, IntegerType):
            specs.append(ParamSpec(name, ParamKind.INT, element_type_name(t) or "?"))
        elif isinstance(t, Float32Type | Float64Type):
            specs.append(ParamSpec(name, ParamKind.FLOAT, element_type_name(t) or "?"))
        else:  # the frontend rejects other types
            raise CompileError(f"unsupported parameter type {t}", location_of(fn))
    return specs


class _Builder:
    def __init__(self, fn: func.FuncOp, limits: isa.Limits, control_first: bool = False):
        self.fn = fn
        self.limits = limits
        self.control_first = control_first
        self.program = isa.Program()
        self.args: list[ArgSpec] = []
        self.values: dict[SSAValue, isa.Source] = {}     # dlc streams / tu indices
        self.regions: dict[int, int] = {}                 # param number -> region id
        self.callbacks: dict[int, tuple[str, int]] = {}
        self.pending_operands: dict[tuple[int, str], int] = {}
        self.ops_of_layer: list[Operation] = []           # the dlc.tu of each layer
        self.feature_op: dict[isa.Feature, Operation] = {}  # first op needing a v1 feature
        self.first_over: dict[str, Operation] = {}
        self.offset_bases: dict[tuple, isa.Source] = {}   # (layer, base, offset) -> ALU stream

    def arg(self, spec: ArgSpec, op: Operation) -> isa.Source:
        if spec not in self.args:
            self.args.append(spec)
            if len(self.args) > self.limits.args:
                self.first_over.setdefault("args", op)
        return isa.Source.arg(self.args.index(spec))

    def param_of(self, value: SSAValue) -> int | None:
        if isinstance(value, BlockArgument) and value.block is self.fn.body.block:
            return value.index
        return None

    def source(self, value: SSAValue, op: Operation) -> isa.Source:
        if value in self.values:
            return self.values[value]
        param = self.param_of(value)
        if param is not None and isinstance(value.type, IndexType | IntegerType):
            return self.arg(ArgSpec(ArgKind.SCALAR, param), op)
        if isinstance(value, OpResult):
            owner = value.op
            if isinstance(owner, arith.ConstantOp) and isinstance(owner.value, IntegerAttr):
                v = owner.value.value.data
                if isa.IMM_MIN <= v <= isa.IMM_MAX:
                    return isa.Source.imm(v)
                return self.arg(ArgSpec(ArgKind.CONST, value=v), op)
            if isinstance(owner, memref.DimOp):
                param = self.param_of(owner.source)
                axis = _constant(owner.index)
                if param is not None and axis is not None:
                    return self.arg(ArgSpec(ArgKind.DIM, param, axis=axis), op)
            if is_free_cast(owner):
                return self.source(owner.operands[0], op)
        return self.arg(ArgSpec(ArgKind.EXPR, expr=self.expr(value, op)), op)

    def expr(self, value: SSAValue, op: Operation) -> str:
        """A Python expression over ``args`` computing a function-level register (ArgKind.EXPR)."""
        param = self.param_of(value)
        if param is not None and isinstance(value.type, IndexType | IntegerType):
            return f"args[{param}]"
        if isinstance(value, OpResult):
            owner = value.op
            if isinstance(owner, arith.ConstantOp) and isinstance(owner.value, IntegerAttr):
                return str(owner.value.value.data)
            if is_free_cast(owner):
                return self.expr(owner.operands[0], op)
            if isinstance(owner, memref.DimOp) and (axis := _constant(owner.index)) is not None:
                src = owner.source
                mtype = src.type
                assert isinstance(mtype, MemRefType)
                if mtype.get_shape()[axis] >= 0:
                    return str(mtype.get_shape()[axis])
                if (p := self.param_of(src)) is not None:
                    return f"args[{p}].shape[{axis}]"
                if isinstance(src, OpResult) and isinstance(src.op, memref.AllocOp):
                    dynamic_before = sum(1 for s in mtype.get_shape()[:axis] if s < 0)
                    return self.expr(src.op.dynamic_sizes[dynamic_before], op)
            if type(owner) in ALU_OF:
                a, b = (self.expr(o, op) for o in owner.operands)
                return _EXPR[ALU_OF[type(owner)]].format(a=a, b=b)
            if isinstance(owner, memref.LoadOp) and (p := self.param_of(owner.memref)) is not None:
                index = ", ".join(self.expr(i, op) for i in owner.indices) or "()"
                return f"args[{p}][{index}]"
        what = f"'{value.op.name}'" if isinstance(value, OpResult) else "a block argument"
        raise CompileError(f"{what} is not a value the access unit can use (constants, sizes, "
                           "integer arguments and integer arithmetic on them are)", location_of(op))

    def count(self, what: str, items: list, op: Operation, limit: int) -> None:
        if len(items) > limit:
            self.first_over.setdefault(what, op)

    def build(self) -> AccessProgram:
        access = next((o for o in self.fn.body.block.ops if isinstance(o, dlc.ConfigureAccessOp)), None)
        if access is None:
            raise CompileError("the function has no dlc.configure_access", location_of(self.fn))
        prog = self.program
        for op in access.body.block.ops:
            if isinstance(op, dlc.TuOp):
                layer = op.layer.value.data
                if layer != len(prog.layers):
                    raise CompileError(f"dlc.tu layer {layer} out of order (expected layer "
                                       f"{len(prog.layers)})", location_of(op))
                mode, lanes = _layer_mode(op)
                prog.layers.append(isa.Layer(self.source(op.lb, op), self.source(op.ub, op),
                                             isa.Source.imm(op.step.value.data),
                                             op.check_order is not None, mode, lanes))
                self.count("layers", prog.layers, op, self.limits.layers)
                self.ops_of_layer.append(op)
                self.values[op.index] = isa.Source.index(layer)
            elif isinstance(op, dlc.MemStreamOp):
                param = self.param_of(op.memref)
                if param is None:
                    raise CompileError("a memory stream must load from a memref argument",
                                       location_of(op))
                base = self.arg(ArgSpec(ArgKind.BASE, param), op)
                if param not in self.regions:
                    size = self.arg(ArgSpec(ArgKind.BYTES, param), op)
                    self.regions[param] = len(prog.regions)
                    prog.regions.append(isa.Region(base, size))
                    self.count("regions", prog.regions, op, self.limits.regions)
                elem = op.memref.type.element_type
                signed = isinstance(elem, IntegerType) and elem.width.data < 64
                size_bytes = 8 if isinstance(elem, IndexType) else elem.bitwidth // 8
                if op.byte_offset:
                    base = self.offset_base(op, base, op.byte_offset)
                self.add_stream(op, isa.Stream(op.layer.value.data, isa.StreamKind.MEM, base,
                                               self.source(op.index, op), size=size_bytes,
                                               signed=signed, stride=op.stride.value.data,
                                               region=self.regions[param]))
            elif isinstance(op, dlc.AluStreamOp):
                self.add_stream(op, isa.Stream(op.layer.value.data, isa.StreamKind.ALU,
                                               self.source(op.lhs, op), self.source(op.rhs, op),
                                               op=isa.AluOp[op.op.data.upper()]))
            elif isinstance(op, dlc.FwdStreamOp):
                self.add_stream(op, isa.Stream(op.layer.value.data, isa.StreamKind.FWD,
                                               self.source(op.value, op)))
            elif isinstance(op, dlc.RegisterOperandOp):
                key = (op.layer.value.data, op.event.data)
                self.pending_operands[key] = self.pending_operands.get(key, 0) + 1
                packed = getattr(op, "packed", None) is not None
                pack = _PACK[_element_bytes(_element_type(op.value.type), op)] if packed else 0
                action = isa.Action(op.layer.value.data, _EVENTS[op.event.data],
                                    isa.ActionKind.OPERAND, source=self.source(op.value, op), pack=pack,
                                    join=getattr(op, "join", None) is not None)
                self.add_action(op, action)
            elif isinstance(op, dlc.RegisterCallbackOp):
                layer, event, cb_id = op.layer.value.data, op.event.data, op.id.value.data
                if not 0 <= cb_id <= isa.MAX_CALLBACK_ID:
                    raise CompileError(f"callback id must be in [0, {isa.MAX_CALLBACK_ID}], not {cb_id}",
                                       location_of(op))
                self.callbacks[cb_id] = (f"layer{layer}_{event}",
                                         self.pending_operands.pop((layer, event), 0))
                self.add_action(op, isa.Action(layer, _EVENTS[event], isa.ActionKind.CONTROL,
                                               callback=cb_id))
            elif _FirstLaneOp is not None and isinstance(op, _FirstLaneOp):
                src = self.source(op.value, op)
                if src.kind != isa.SrcKind.INDEX:
                    raise CompileError("dlc.first_lane is supported on a vector layer's index only "
                                       "(ISA source FIRST)", location_of(op))
                self.values[op.result] = isa.Source.first(src.value)
            elif _MaskStreamOp is not None and isinstance(op, _MaskStreamOp):
                # a lane mask reaches the core as the count of active lanes (docs/isa.md §7.3)
                self.values[op.result] = isa.Source.count(op.layer.value.data)
            elif _BufStreamOp is not None and isinstance(op, _BufStreamOp):
                self.add_block_stream(op)
            elif isinstance(op, dlc.YieldOp):
                pass
            else:
                raise CompileError(f"unexpected '{op.name}' in dlc.configure_access", location_of(op))
        prog.n_args = len(self.args)
        if self.control_first:
            prog.actions = control_first(prog.actions)
        self.promote_broadcast()
        prog.version = prog.required_version()
        self.check_limits()
        try:
            prog.validate(self.limits)
        except (isa.ProgramError, ValueError) as e:  # a bug of the compiler, reported clearly
            raise CompileError(f"internal error: the generated access program is invalid: {e}",
                               location_of(access)) from None
        in_image = set(self.regions)
        try:
            tmu_module = to_tmu(prog, self.args, self.limits)
        except ResourceError as e:          # check_limits reports these with a location first
            raise CompileError(str(e), location_of(access)) from None
        mapped = to_program(tmu_module)
        if mapped != prog:                  # the printed tmu IR must be what is encoded
            raise CompileError("internal error: the tmu.program does not encode the access program",
                               location_of(access))
        return AccessProgram(mapped, list(self.args), in_image, self.callbacks, tmu_module)

    def offset_base(self, op: Operation, base: isa.Source, offset: int) -> isa.Source:
        """``base + offset`` (bytes) as an ALU stream of ``op``'s layer, one per (layer, base,
        offset): both operands are invariant, so the unit evaluates it once per layer entry and a
        MEM stream on it stays affine in its index (run-ahead engines, docs/rtl.md)."""
        layer = op.layer.value.data
        key = (layer, base, offset)
        if key not in self.offset_bases:
            if not isa.IMM_MIN <= offset <= isa.IMM_MAX:
                raise CompileError(f"a memory stream's offset must be in [{isa.IMM_MIN}, "
                                   f"{isa.IMM_MAX}] bytes, not {offset}", location_of(op))
            self.program.streams.append(isa.Stream(layer, isa.StreamKind.ALU, base,
                                                   isa.Source.imm(offset), op=isa.AluOp.ADD))
            self.count("streams", self.program.streams, op, self.limits.streams)
            self.offset_bases[key] = isa.Source.stream(len(self.program.streams) - 1)
        return self.offset_bases[key]

    def region_of(self, op: Operation, memref: SSAValue) -> tuple[int, isa.Source]:
        param = self.param_of(memref)
        if param is None:
            raise CompileError("a memory stream must load from a memref argument", location_of(op))
        base = self.arg(ArgSpec(ArgKind.BASE, param), op)
        if param not in self.regions:
            size = self.arg(ArgSpec(ArgKind.BYTES, param), op)
            self.regions[param] = len(self.program.regions)
            self.program.regions.append(isa.Region(base, size))
            self.count("regions", self.program.regions, op, self.limits.regions)
        return self.regions[param], base

    def add_block_stream(self, op: Operation) -> None:
        """``dlc.buf_stream``: a BLOCK memory stream (docs/isa.md §7.4) of ``len`` elements from
        element ``index * stride / size``."""
        region, base = self.region_of(op, op.memref)
        elem = op.memref.type.element_type
        size = _element_bytes(elem, op)
        stride = op.stride.value.data
        index = self.source(op.index, op)
        if stride != size:
            if stride <= 0 or stride % size:
                raise CompileError(f"a buffer stream's stride must be a positive multiple of the "
                                   f"element size ({size} bytes), not {stride}", location_of(op))
            scaled = isa.Stream(op.layer.value.data, isa.StreamKind.ALU, index,
                                isa.Source.imm(stride // size), op=isa.AluOp.MUL)
            self.program.streams.append(scaled)
            self.count("streams", self.program.streams, op, self.limits.streams)
            index = isa.Source.stream(len(self.program.streams) - 1)
        signed = isinstance(elem, IntegerType) and elem.width.data < 64
        count = self.source(op.length, op)
        length = self.static_value(count)
        if length is not None and length > self.limits.max_block:
            name = f"'{self.limits.name}'" if self.limits.name else "the configuration"
            raise CompileError(
                f"a block stream loads rows of embedding_dim = {length} elements, more than "
                f"max_block = {self.limits.max_block} of {name} (Limits.max_block); compile at -O2 "
                f"or lower, or for a configuration with a larger max_block", location_of(op))
        self.add_stream(op, isa.Stream(op.layer.value.data, isa.StreamKind.MEM, base, index,
                                       size=size, signed=signed, region=region, block=True,
                                       count=count))

    def static_value(self, source: isa.Source) -> int | None:
        """The value of ``source`` if the compiler knows it: an immediate, a ``CONST`` argument
        register or the ``DIM`` register of a static dimension."""
        if source.kind == isa.SrcKind.IMM:
            return source.value
        if source.kind != isa.SrcKind.ARG:
            return None
        spec = self.args[source.value]
        if spec.kind == ArgKind.CONST:
            return spec.value
        if spec.kind == ArgKind.DIM:
            t = self.fn.args[spec.param].type
            if isinstance(t, MemRefType):
                size = t.get_shape()[spec.axis]
                return size if size >= 0 else None
        return None

    def add_stream(self, op: Operation, stream: isa.Stream) -> None:
        self.values[op.results[0]] = isa.Source.stream(len(self.program.streams))
        self.program.streams.append(stream)
        self.count("streams", self.program.streams, op, self.limits.streams)
        if stream.block:
            self.feature_op.setdefault(isa.Feature.BLOCK, op)
        in_layer = sum(1 for s in self.program.streams if s.layer == stream.layer)
        if in_layer > self.limits.slots_per_layer:
            self.first_over.setdefault(f"slots{stream.layer}", op)

    def add_action(self, op: Operation, action: isa.Action) -> None:
        if action.pack:
            self.feature_op.setdefault(isa.Feature.PACK, op)
        self.program.actions.append(action)
        self.count("actions", self.program.actions, op, self.limits.actions)

    def promote_broadcast(self) -> None:
        """A scalar layer whose index or streams a lockstep layer's streams read becomes
        BROADCAST (its values must reach the lanes; docs/isa.md §7.6)."""
        prog = self.program
        for s in prog.streams:
            if prog.layers[s.layer].mode != isa.LayerMode.LOCKSTEP:
                continue
            for src in (s.a, s.b, s.count):
                if src is None:
                    continue
                if src.kind == isa.SrcKind.STREAM:
                    layer = prog.streams[src.value].layer
                elif src.kind in (isa.SrcKind.INDEX, isa.SrcKind.COUNT, isa.SrcKind.FIRST):
                    layer = src.value
                else:
                    continue
                if layer < s.layer and prog.layers[layer].mode == isa.LayerMode.SINGLE:
                    prog.layers[layer].mode = isa.LayerMode.BROADCAST

    def check_features(self) -> None:
        """Refuse v1 features the configuration lacks (CompileError naming feature, need, have)."""
        prog, lim = self.program, self.limits
        name = f"'{lim.name}'" if lim.name else "the configuration"
        for n, layer in enumerate(prog.layers):
            if layer.mode == isa.LayerMode.LOCKSTEP:
                self.feature_op.setdefault(isa.Feature.LOCKSTEP, self.ops_of_layer[n])
            elif layer.mode == isa.LayerMode.BROADCAST:
                self.feature_op.setdefault(isa.Feature.BROADCAST, self.ops_of_layer[n])
        what = {isa.Feature.LOCKSTEP: "a vector (lockstep) layer", isa.Feature.BROADCAST: "a broadcast layer",
                isa.Feature.BLOCK: "a block (buffer) stream", isa.Feature.PACK: "packed operands"}
        if prog.version not in lim.versions:
            feature = next((f for f in isa.Feature if f in self.feature_op), None)
            op = self.feature_op.get(feature, self.fn) if feature else self.fn
            detail = f" ({what[feature]}, ISA feature '{feature.value}')" if feature else ""
            raise CompileError(f"the kernel needs ISA version {prog.version}{detail}; {name} supports "
                               f"ISA version(s) {', '.join(map(str, lim.versions))} only (Limits.versions). "
                               f"Compile at -O0 or for a configuration with the vector extension "
                               f"(configs/tmu_vector.json)", location_of(op))
        for feature, op in self.feature_op.items():
            if feature not in lim.features:
                raise CompileError(f"the kernel needs the ISA feature '{feature.value}' ({what[feature]}); "
                                   f"{name} has {sorted(f.value for f in lim.features) or 'no v1 features'} "
                                   f"(Limits.features)", location_of(op))
        for n, layer in enumerate(prog.layers):
            if layer.lanes > lim.lanes:
                raise CompileError(f"the kernel does not fit the access unit: layer {n} needs "
                                   f"{layer.lanes} lanes, the unit has {lim.lanes} (Limits.lanes)",
                                   location_of(self.ops_of_layer[n]))

    def check_limits(self) -> None:
        prog, lim = self.program, self.limits
        self.check_features()
        for n in range(len(prog.layers)):
            needed = sum(1 for s in prog.streams if s.layer == n)
            if needed > lim.slots_per_layer:
                op = self.first_over.get(f"slots{n}", self.fn)
                raise CompileError(f"the kernel does not fit the access unit: layer {n} needs {needed} "
                                   f"stream slots, the unit has {lim.slots_per_layer} per layer "
                                   f"(Limits.streams_per_layer)", location_of(op))
        for what, needed, available, field_name in (
                ("layers", len(prog.layers), lim.layers, "layers"),
                ("streams", len(prog.streams), lim.streams, "streams"),
                ("actions", len(prog.actions), lim.actions, "actions"),
                ("regions", len(prog.regions), lim.regions, "regions"),
                ("argument registers", len(self.args), lim.args, "args")):
            if needed > available:
                op = self.first_over.get(field_name)
                raise CompileError(f"the kernel does not fit the access unit: it needs {needed} "
                                   f"{what}, the unit has {available} (Limits.{field_name})",
                                   location_of(op) if op is not None else location_of(self.fn))


def control_first(actions: list[isa.Action]) -> list[isa.Action]:
    """The actions with each firing's (``layer``, ``event``) ``CONTROL`` actions before its
    ``OPERAND`` actions, each kind in its own order; every action keeps the place of one of its
    firing's actions (``docs/compiler.md``, "Control tokens first").

    The token streams are unchanged: control tokens and operands go to different queues, each
    queue gets its tokens in the same order, and an action cannot fault (a firing's addresses
    were checked when its streams were evaluated, ``docs/isa.md`` §1), so no run can tell the
    two orders apart by its tokens. The unit's microcode does: a control token first rides in
    the uop of the layer's last stream (``fuse_act``), as in the hand-written programs
    (``sw/runtime/handwritten/suite.py``), where after a row (TransE's three rows) it was the
    second action of the last row's uop."""
    slots: dict[tuple, list[int]] = {}
    for n, a in enumerate(actions):
        slots.setdefault((a.layer, a.event), []).append(n)
    out = list(actions)
    for positions in slots.values():
        group = [actions[n] for n in positions]
        ordered = ([a for a in group if a.kind == isa.ActionKind.CONTROL]
                   + [a for a in group if a.kind != isa.ActionKind.CONTROL])
        for n, a in zip(positions, ordered):
            out[n] = a
    return out


def build_program(fn: func.FuncOp, limits: isa.Limits | None = None, *,
                  control_first: bool = False) -> AccessProgram:
    """The access program of a DLC function. ``control_first`` (``-O3``): each firing's control
    tokens are pushed before its operands (:func:`control_first`)."""
    return _Builder(fn, limits or isa.Limits(), control_first).build()
