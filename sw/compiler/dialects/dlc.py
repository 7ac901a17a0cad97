"""The ``dlc`` dialect: decoupled lookup-compute (Ember, arXiv 2504.09870, §5).

DLC is the last target-independent level: ``dlc.configure_access`` describes the access program
(traversal units, streams, marshaling registrations) and ``dlc.compute_loop`` is the core's
dispatch loop, one ``dlc.case`` per callback id, whose operands arrive by ``dlc.pop_operand``.

Layers are explicit (``layer k``); a memory stream has a single linear element index and a byte
stride, so every address computation is an explicit ALU stream. Function-level ``index`` values
used inside ``configure_access`` are registers (constants, ``memref.dim`` of an argument, scalar
arguments); memrefs name regions.

Example::

    dlc.configure_access {
      %i0 = dlc.tu layer 0 %c0 to %nbags step 1 : index, index
      %s0 = dlc.mem_stream layer 0 %offsets[%i0] stride 8 : memref<?xindex>, !dlc.stream<index>
      ...
      dlc.register_operand layer 2 iter %s5 : !dlc.stream<f32>
      dlc.register_callback layer 2 iter 0
    }
    dlc.compute_loop {
      dlc.case 0 {
        %0 = dlc.pop_operand : f32
        ...
      }
    }

Within one event, operands are registered before the callback's control token: the unit pushes
the operands of a firing, then its callback id (docs/compiler.md, "Marshaling order").
"""

from __future__ import annotations

from collections.abc import Sequence

from xdsl.dialects.builtin import IndexType, IntAttr, IntegerAttr, MemRefType, StringAttr, UnitAttr, i1, i64
from typing import ClassVar

from xdsl.ir import Attribute, Block, Dialect, ParametrizedAttribute, Region, SSAValue, TypeAttribute
from xdsl.irdl import (
    AnyAttr,
    IRDLOperation,
    irdl_attr_definition,
    irdl_op_definition,
    lazy_traits_def,
    operand_def,
    opt_prop_def,
    param_def,
    prop_def,
    region_def,
    result_def,
    traits_def,
    var_result_def,
)
from xdsl.parser import Parser
from xdsl.printer import Printer
from xdsl.traits import HasAncestor, HasParent, IsTerminator, SingleBlockImplicitTerminator, ensure_terminator
from xdsl.utils.exceptions import VerifyException

from ._syntax import (
    AluStreamSyntaxOp,
    ImplicitTerminatorOp,
    LanesTypeSyntax,
    OneOperandOp,
    as_region,
    parse_bounds,
    parse_layer,
    parse_nonempty_type_list,
    parse_result_type,
    parse_type_list,
    print_body,
    print_bounds,
    print_layer,
    print_result_type,
    print_subscript,
    print_types,
    resolve,
)
from .slc import check_alu_op, check_event, check_step, is_int_like
from .slcv import CONFIGS, check_config

__all__ = [
    "StreamType", "VStreamType", "BufferType", "FirstLaneOp", "MaskStreamOp", "BufStreamOp",
    "PopBufferOp", "PopPackedOp", "stream_lanes", "stream_type", "CONFIGS", "ConfigureAccessOp", "TuOp", "MemStreamOp", "AluStreamOp", "FwdStreamOp",
    "RegisterOperandOp", "RegisterCallbackOp", "ComputeLoopOp", "CaseOp", "PopOperandOp",
    "YieldOp", "SetVarOp", "GetVarOp", "IncrementVarOp", "DLC",
]


@irdl_attr_definition
class StreamType(ParametrizedAttribute, TypeAttribute):
    """``!dlc.stream<T>``: a stream (or a traversal unit's index) of the access program."""

    name = "dlc.stream"

    element_type: Attribute = param_def()

    def __init__(self, element_type: Attribute):
        super().__init__(element_type)


@irdl_attr_definition
class VStreamType(LanesTypeSyntax, ParametrizedAttribute, TypeAttribute):
    """``!dlc.vstream<T, L>``: a stream of a vector layer, ``L`` lanes of ``T`` per step."""

    name = "dlc.vstream"

    element_type: Attribute = param_def()
    lanes: IntAttr = param_def()


@irdl_attr_definition
class BufferType(ParametrizedAttribute, TypeAttribute):
    """``!dlc.buffer<T>``: a row of ``T`` of runtime length, pushed as one (buffered) operand."""

    name = "dlc.buffer"

    element_type: Attribute = param_def()

    def __init__(self, element_type: Attribute):
        super().__init__(element_type)


def stream_lanes(t: Attribute) -> int:
    """Lanes of a DLC stream type (1 for scalar streams and registers)."""
    return t.lanes.data if isinstance(t, VStreamType) else 1


def stream_type(elem: Attribute, lanes: int) -> Attribute:
    """``!dlc.stream<elem>`` for one lane, ``!dlc.vstream<elem, lanes>`` otherwise."""
    return VStreamType(elem, lanes) if lanes > 1 else StreamType(elem)


def _is_source(t: Attribute) -> bool:
    return is_int_like(t) or (isinstance(t, StreamType | VStreamType) and is_int_like(t.element_type))


def _check_sources(op: IRDLOperation, values: Sequence[SSAValue]) -> None:
    for v in values:
        if not _is_source(v.type):
            raise VerifyException(f"Expected an integer stream or register operand of {op.name}, "
                                  f"got {v.type}. Sources of the access unit are 64-bit integers.")


def _layer_prop(layer: int) -> IntegerAttr:
    return IntegerAttr(layer, i64)


@irdl_op_definition
class YieldOp(ImplicitTerminatorOp):
    """Terminator of ``dlc`` regions (implicit in the custom syntax)."""

    name = "dlc.yield"
    traits = lazy_traits_def(lambda: (IsTerminator(),
                                      HasParent(ConfigureAccessOp, ComputeLoopOp, CaseOp)))


class _RegionOp(IRDLOperation):
    """Shared custom syntax of ops that are a keyword and a single-block region."""

    def print(self, printer: Printer) -> None:
        print_body(printer, self.regions[0])

    @classmethod
    def parse(cls, parser: Parser):
        return cls(parser.parse_region())


@irdl_op_definition
class ConfigureAccessOp(_RegionOp):
    """The access program: ``dlc.tu``, streams and registrations, in program order.

    Example::

        dlc.configure_access {
          %i0 = dlc.tu layer 0 %c0 to %n step 1 : index, index
        }
    """

    name = "dlc.configure_access"
    body = region_def("single_block")
    traits = traits_def(SingleBlockImplicitTerminator(YieldOp))

    def __init__(self, body: Region | Block | None = None):
        super().__init__(regions=[as_region(body)])
        ensure_terminator(self, SingleBlockImplicitTerminator(YieldOp))


@irdl_op_definition
class TuOp(IRDLOperation):
    """A traversal unit (one layer): ``for i in range(lb, ub, step)``; the result is its index.

    Example::

        %i1 = dlc.tu layer 1 %s1 to %s2 step 1 check_order : !dlc.stream<index>, !dlc.stream<index>
    """

    name = "dlc.tu"

    layer = prop_def(IntegerAttr)
    lb = operand_def(AnyAttr())
    ub = operand_def(AnyAttr())
    step = prop_def(IntegerAttr)
    check_order = opt_prop_def(UnitAttr)
    vlen = opt_prop_def(IntegerAttr)
    config = opt_prop_def(StringAttr)
    index = result_def(AnyAttr())

    traits = traits_def(HasParent(ConfigureAccessOp))

    def __init__(self, layer: int, lb: SSAValue, ub: SSAValue, step: int, check_order: bool = False,
                 vlen: int = 1, config: str = "scalar"):
        props: dict[str, Attribute] = {"layer": _layer_prop(layer), "step": IntegerAttr(step, i64)}
        if check_order:
            props["check_order"] = UnitAttr()
        if config != "scalar":
            props["vlen"] = IntegerAttr(vlen, i64)
            props["config"] = StringAttr(config)
        lanes = vlen if config == "vector" else 1
        super().__init__(operands=[lb, ub], properties=props,
                         result_types=[stream_type(IndexType(), lanes)])

    @property
    def config_name(self) -> str:
        return self.config.data if self.config is not None else "scalar"

    @property
    def lanes(self) -> int:
        """Lanes of this layer: ``vlen`` for a vector (lockstep) layer, else 1."""
        return self.vlen.value.data if self.config_name == "vector" else 1

    def verify_(self) -> None:
        _check_sources(self, (self.lb, self.ub))
        check_step(self.step)
        check_config(self.config_name)
        if (self.config is None) != (self.vlen is None):
            raise VerifyException("Expected vlen and config together. A non-scalar layer names both.")
        if self.index.type != stream_type(IndexType(), self.lanes):
            raise VerifyException(f"Expected index type {stream_type(IndexType(), self.lanes)}, got "
                                  f"{self.index.type}.")

    def print(self, printer: Printer) -> None:
        print_layer(printer, self.layer)
        print_bounds(printer, self.lb, self.ub, self.step)
        if self.check_order is not None:
            printer.print_string(" check_order")
        if self.config is not None and self.vlen is not None:
            printer.print_string(f" vlen {self.vlen.value.data} config {self.config.data}")
        printer.print_string(" : ")
        print_types(printer, (self.lb, self.ub))

    @classmethod
    def parse(cls, parser: Parser) -> "TuOp":
        layer = parse_layer(parser)
        lb, ub, step = parse_bounds(parser)
        check_order = parser.parse_optional_keyword("check_order") is not None
        vlen, config = 1, "scalar"
        if parser.parse_optional_keyword("vlen") is not None:
            vlen = parser.parse_integer()
            parser.parse_keyword("config")
            config = parser.parse_identifier()
        parser.parse_punctuation(":")
        lb_v, ub_v = resolve(parser, (lb, ub), parse_type_list(parser, 2))
        return cls(layer, lb_v, ub_v, step, check_order, vlen, config)


@irdl_op_definition
class MemStreamOp(IRDLOperation):
    """A memory stream of ``layer``: the element at byte address
    ``base(memref) + offset + index * stride`` (``offset`` in bytes, 0 when absent).

    The memref's buffer is the stream's region; the element size is the memref's element size.
    ``affine-streams`` (-O3) sets ``offset`` and a stride that is a multiple of the element size
    (``triples[3t + 1]`` -> ``%triples[%t] stride 24 offset 8``); the backend adds ``offset`` to
    the region's base with an ALU stream of invariant operands (docs/isa.md §1).

    Example::

        %s5 = dlc.mem_stream layer 2 %table[%s4] stride 4 : memref<?x?xf32>, !dlc.stream<index>
        %s1 = dlc.mem_stream layer 0 %triples[%t] stride 24 offset 8 : memref<?xi64>, !dlc.stream<index>
    """

    name = "dlc.mem_stream"

    layer = prop_def(IntegerAttr)
    memref = operand_def(MemRefType)
    index = operand_def(AnyAttr())
    stride = prop_def(IntegerAttr)
    offset = opt_prop_def(IntegerAttr)
    result = result_def(AnyAttr())

    traits = traits_def(HasParent(ConfigureAccessOp))

    def __init__(self, layer: int, memref: SSAValue, index: SSAValue, stride: int, offset: int = 0):
        assert isinstance(memref.type, MemRefType)
        properties = {"layer": _layer_prop(layer), "stride": IntegerAttr(stride, i64)}
        if offset:
            properties["offset"] = IntegerAttr(offset, i64)
        super().__init__(operands=[memref, index], properties=properties,
                         result_types=[stream_type(memref.type.element_type,
                                                   stream_lanes(index.type))])

    @property
    def byte_offset(self) -> int:
        """``offset`` in bytes, 0 when absent."""
        return self.offset.value.data if self.offset is not None else 0

    def verify_(self) -> None:
        _check_sources(self, (self.index,))
        assert isinstance(self.memref.type, MemRefType)
        want = stream_type(self.memref.type.element_type, stream_lanes(self.index.type))
        if self.result.type != want:
            raise VerifyException(f"Expected result type {want}, got {self.result.type}. A memory "
                                  "stream carries the memref's elements, one per lane of its index.")

    def print(self, printer: Printer) -> None:
        print_layer(printer, self.layer)
        print_subscript(printer, self.memref, (self.index,))
        printer.print_string(f" stride {self.stride.value.data}")
        if self.byte_offset:
            printer.print_string(f" offset {self.byte_offset}")
        printer.print_string(" : ")
        print_types(printer, (self.memref, self.index))

    @classmethod
    def parse(cls, parser: Parser) -> "MemStreamOp":
        layer = parse_layer(parser)
        memref = parser.parse_unresolved_operand()
        parser.parse_punctuation("[")
        index = parser.parse_unresolved_operand()
        parser.parse_punctuation("]")
        parser.parse_keyword("stride")
        stride = parser.parse_integer()
        offset = parser.parse_integer() if parser.parse_optional_keyword("offset") else 0
        parser.parse_punctuation(":")
        m, i = resolve(parser, (memref, index), parse_type_list(parser, 2))
        return cls(layer, m, i, stride, offset)


@irdl_op_definition
class AluStreamOp(AluStreamSyntaxOp):
    """An ALU stream of ``layer``: ``op(lhs, rhs)`` on 64-bit integers.

    Example::

        %s3 = dlc.alu_stream layer 2 mul %s2, %dim : !dlc.stream<index>, index -> !dlc.stream<index>
    """

    name = "dlc.alu_stream"
    LAYER: ClassVar[bool] = True

    layer = prop_def(IntegerAttr)
    op = prop_def(StringAttr)
    lhs = operand_def(AnyAttr())
    rhs = operand_def(AnyAttr())
    result = result_def(AnyAttr())

    traits = traits_def(HasParent(ConfigureAccessOp))

    def __init__(self, layer: int, op: str, lhs: SSAValue, rhs: SSAValue, result_type: Attribute):
        super().__init__(operands=[lhs, rhs], result_types=[result_type],
                         properties={"layer": _layer_prop(layer), "op": StringAttr(op)})

    def verify_(self) -> None:
        check_alu_op(self.op)
        _check_sources(self, (self.lhs, self.rhs, self.result))


@irdl_op_definition
class FwdStreamOp(OneOperandOp):
    """A forward stream of ``layer``: a register, constant or outer stream brought into the layer.

    Example::

        %s0 = dlc.fwd_stream layer 1 %n : index
    """

    name = "dlc.fwd_stream"
    LAYER: ClassVar[bool] = True

    layer = prop_def(IntegerAttr)
    value = operand_def(AnyAttr())
    result = result_def(AnyAttr())

    traits = traits_def(HasParent(ConfigureAccessOp))

    def __init__(self, layer: int, value: SSAValue):
        t = value.type
        elem = t.element_type if isinstance(t, StreamType) else t
        super().__init__(operands=[value], result_types=[StreamType(elem)],
                         properties={"layer": _layer_prop(layer)})

    def verify_(self) -> None:
        _check_sources(self, (self.value,))


@irdl_op_definition
class RegisterOperandOp(IRDLOperation):
    """Marshaling: on ``event`` of ``layer``, push the current value of ``value`` as an operand.

    A scalar is one element, a vector its lanes in lane order (masked lanes 0), a buffer its
    elements; a lane mask is pushed as the count of active lanes (ISA v1 ``COUNT``). Without
    ``packed`` every element is one 64-bit token; with ``packed`` elements take their natural size
    (4 bytes for f32/i32, 8 for index/i64/f64) and share tokens, and ``join`` continues the token
    into the next operand of the same firing (ISA v1 §7.5: ``esize``, ``JOIN``).

    Example::

        dlc.register_operand layer 2 iter %s5 : !dlc.stream<f32>
    """

    name = "dlc.register_operand"

    layer = prop_def(IntegerAttr)
    event = prop_def(StringAttr)
    value = operand_def(AnyAttr())
    packed = opt_prop_def(UnitAttr)
    join = opt_prop_def(UnitAttr)

    traits = traits_def(HasParent(ConfigureAccessOp))

    def __init__(self, layer: int, event: str, value: SSAValue, packed: bool = False,
                 join: bool = False):
        props: dict[str, Attribute] = {"layer": _layer_prop(layer), "event": StringAttr(event)}
        if packed:
            props["packed"] = UnitAttr()
        if join:
            props["join"] = UnitAttr()
        super().__init__(operands=[value], properties=props)

    def verify_(self) -> None:
        check_event(self.event.data)
        if not isinstance(self.value.type, StreamType | VStreamType | BufferType):
            raise VerifyException(f"Expected a stream, vector stream or buffer operand, got "
                                  f"{self.value.type}. Operands are values of the access program.")

    def print(self, printer: Printer) -> None:
        print_layer(printer, self.layer)
        printer.print_string(f" {self.event.data} ")
        printer.print_ssa_value(self.value)
        if self.packed is not None:
            printer.print_string(" packed")
        if self.join is not None:
            printer.print_string(" join")
        printer.print_string(" : ")
        printer.print_attribute(self.value.type)

    @classmethod
    def parse(cls, parser: Parser) -> "RegisterOperandOp":
        layer = parse_layer(parser)
        event = parser.parse_identifier()
        value = parser.parse_unresolved_operand()
        packed = parser.parse_optional_keyword("packed") is not None
        join = parser.parse_optional_keyword("join") is not None
        parser.parse_punctuation(":")
        return cls(layer, event, parser.resolve_operand(value, parser.parse_type()), packed, join)


@irdl_op_definition
class RegisterCallbackOp(IRDLOperation):
    """Marshaling: on ``event`` of ``layer``, push control token ``id`` (run ``dlc.case id``).

    Example::

        dlc.register_callback layer 2 iter 0
    """

    name = "dlc.register_callback"

    layer = prop_def(IntegerAttr)
    event = prop_def(StringAttr)
    id = prop_def(IntegerAttr)

    traits = traits_def(HasParent(ConfigureAccessOp))

    def __init__(self, layer: int, event: str, callback_id: int):
        super().__init__(properties={"layer": _layer_prop(layer), "event": StringAttr(event),
                                     "id": IntegerAttr(callback_id, i64)})

    def verify_(self) -> None:
        check_event(self.event.data)

    def print(self, printer: Printer) -> None:
        print_layer(printer, self.layer)
        printer.print_string(f" {self.event.data} {self.id.value.data}")

    @classmethod
    def parse(cls, parser: Parser) -> "RegisterCallbackOp":
        layer = parse_layer(parser)
        event = parser.parse_identifier()
        return cls(layer, event, parser.parse_integer())


@irdl_op_definition
class ComputeLoopOp(_RegionOp):
    """The core's dispatch loop: pop a control token, run the ``dlc.case`` with that id, until DONE.

    Example::

        dlc.compute_loop {
          dlc.case 0 { ... }
        }
    """

    name = "dlc.compute_loop"
    body = region_def("single_block")
    traits = traits_def(SingleBlockImplicitTerminator(YieldOp))

    def __init__(self, body: Region | Block | None = None):
        super().__init__(regions=[as_region(body)])
        ensure_terminator(self, SingleBlockImplicitTerminator(YieldOp))


@irdl_op_definition
class CaseOp(IRDLOperation):
    """The callback with control token ``id``; its operands arrive by ``dlc.pop_operand``.

    Example::

        dlc.case 0 {
          %v = dlc.pop_operand : f32
        }
    """

    name = "dlc.case"

    id = prop_def(IntegerAttr)
    body = region_def("single_block")
    traits = traits_def(SingleBlockImplicitTerminator(YieldOp), HasParent(ComputeLoopOp))

    def __init__(self, callback_id: int, body: Region | Block | None = None):
        super().__init__(regions=[as_region(body)], properties={"id": IntegerAttr(callback_id, i64)})
        ensure_terminator(self, SingleBlockImplicitTerminator(YieldOp))

    def print(self, printer: Printer) -> None:
        printer.print_string(f" {self.id.value.data}")
        print_body(printer, self.body)

    @classmethod
    def parse(cls, parser: Parser) -> "CaseOp":
        callback_id = parser.parse_integer()
        return cls(callback_id, parser.parse_region())


@irdl_op_definition
class PopOperandOp(IRDLOperation):
    """The next operand of the data queue, reinterpreted as ``type``.

    Example::

        %v = dlc.pop_operand : f32
    """

    name = "dlc.pop_operand"

    result = result_def(AnyAttr())
    traits = traits_def(HasAncestor(CaseOp))

    def __init__(self, result_type: Attribute):
        super().__init__(result_types=[result_type])

    def print(self, printer: Printer) -> None:
        printer.print_string(" : ")
        printer.print_attribute(self.result.type)

    @classmethod
    def parse(cls, parser: Parser) -> "PopOperandOp":
        parser.parse_punctuation(":")
        return cls(parser.parse_type())


@irdl_op_definition
class FirstLaneOp(OneOperandOp):
    """Lane 0 of a vector stream of ``layer`` as a scalar stream (for a vector layer's index: the
    index of the step's first iteration).

    Example::

        %d0 = dlc.first_lane layer 2 %d : !dlc.vstream<index, 8> -> !dlc.stream<index>
    """

    name = "dlc.first_lane"
    LAYER: ClassVar[bool] = True
    ARROW: ClassVar[bool] = True

    layer = prop_def(IntegerAttr)
    value = operand_def(VStreamType)
    result = result_def(StreamType)

    traits = traits_def(HasParent(ConfigureAccessOp))

    def __init__(self, layer: int, value: SSAValue):
        t = value.type
        assert isinstance(t, VStreamType)
        super().__init__(operands=[value], properties={"layer": _layer_prop(layer)},
                         result_types=[StreamType(t.element_type)])


@irdl_op_definition
class MaskStreamOp(OneOperandOp):
    """The lane mask of vector layer ``layer``: lane ``l`` is active when its index is below the
    layer's upper bound (the tail of a traversal masks the lanes past it).

    Example::

        %m = dlc.mask_stream layer 2 %d : !dlc.vstream<index, 8> -> !dlc.vstream<i1, 8>
    """

    name = "dlc.mask_stream"
    LAYER: ClassVar[bool] = True
    ARROW: ClassVar[bool] = True

    layer = prop_def(IntegerAttr)
    index = operand_def(VStreamType)
    result = result_def(VStreamType)

    traits = traits_def(HasParent(ConfigureAccessOp))

    def __init__(self, layer: int, index: SSAValue):
        super().__init__(operands=[index], properties={"layer": _layer_prop(layer)},
                         result_types=[VStreamType(i1, stream_lanes(index.type))])

    def verify_(self) -> None:
        if not (isinstance(self.index.owner, TuOp) and self.index.owner.lanes > 1):
            raise VerifyException("Expected the index of a vector dlc.tu. A mask belongs to a "
                                  "vector layer.")


@irdl_op_definition
class BufStreamOp(IRDLOperation):
    """A buffer (block) stream of ``layer``: ``len`` consecutive elements starting at byte address
    ``base(memref) + index * stride``, as one buffer per iteration.

    Example::

        %r = dlc.buf_stream layer 1 %table[%0] len %dim stride 4 : memref<?x?xf32>, !dlc.stream<index>, index -> !dlc.buffer<f32>
    """

    name = "dlc.buf_stream"

    layer = prop_def(IntegerAttr)
    memref = operand_def(MemRefType)
    index = operand_def(AnyAttr())
    length = operand_def(AnyAttr())
    stride = prop_def(IntegerAttr)
    result = result_def(BufferType)

    traits = traits_def(HasParent(ConfigureAccessOp))

    def __init__(self, layer: int, memref: SSAValue, index: SSAValue, length: SSAValue, stride: int):
        assert isinstance(memref.type, MemRefType)
        super().__init__(operands=[memref, index, length],
                         properties={"layer": _layer_prop(layer), "stride": IntegerAttr(stride, i64)},
                         result_types=[BufferType(memref.type.element_type)])

    def verify_(self) -> None:
        _check_sources(self, (self.index, self.length))
        if stream_lanes(self.index.type) != 1:
            raise VerifyException(f"Expected a scalar index, got {self.index.type}. A buffer stream "
                                  "loads one row per iteration.")

    def print(self, printer: Printer) -> None:
        print_layer(printer, self.layer)
        print_subscript(printer, self.memref, (self.index,))
        printer.print_string(" len ")
        printer.print_ssa_value(self.length)
        printer.print_string(f" stride {self.stride.value.data} : ")
        print_types(printer, (self.memref, self.index, self.length))
        print_result_type(printer, self.result.type)

    @classmethod
    def parse(cls, parser: Parser) -> "BufStreamOp":
        layer = parse_layer(parser)
        memref = parser.parse_unresolved_operand()
        parser.parse_punctuation("[")
        index = parser.parse_unresolved_operand()
        parser.parse_punctuation("]")
        parser.parse_keyword("len")
        length = parser.parse_unresolved_operand()
        parser.parse_keyword("stride")
        stride = parser.parse_integer()
        parser.parse_punctuation(":")
        m, i, n = resolve(parser, (memref, index, length), parse_type_list(parser, 3))
        parse_result_type(parser)
        return cls(layer, m, i, n, stride)


@irdl_op_definition
class PopBufferOp(IRDLOperation):
    """The next buffered operand, ``length`` elements, as a 1-D memref.

    With ``lanes L > 1`` the buffer was pushed by the ``iter`` firings of a vector layer, one
    vector of ``L`` lanes each (the tail's masked lanes are 0): ``ceil(length / L)`` vectors are
    popped and the first ``length`` elements kept. ``packed``: elements at their natural size,
    each vector (or the whole row) from a token boundary; else one token per element.

    Example::

        %row = dlc.pop_buffer %dim lanes 8 packed : memref<?xf32>
    """

    name = "dlc.pop_buffer"

    length = operand_def(AnyAttr())
    lanes = opt_prop_def(IntegerAttr)
    packed = opt_prop_def(UnitAttr)
    result = result_def(MemRefType)
    traits = traits_def(HasAncestor(CaseOp))

    def __init__(self, length: SSAValue, result_type: Attribute, lanes: int = 1,
                 packed: bool = False):
        props: dict[str, Attribute] = {}
        if lanes > 1:
            props["lanes"] = IntegerAttr(lanes, i64)
        if packed:
            props["packed"] = UnitAttr()
        super().__init__(operands=[length], result_types=[result_type], properties=props)

    @property
    def lane_count(self) -> int:
        return self.lanes.value.data if self.lanes is not None else 1

    def print(self, printer: Printer) -> None:
        printer.print_string(" ")
        printer.print_ssa_value(self.length)
        if self.lanes is not None:
            printer.print_string(f" lanes {self.lanes.value.data}")
        if self.packed is not None:
            printer.print_string(" packed")
        printer.print_string(" : ")
        printer.print_attribute(self.result.type)

    @classmethod
    def parse(cls, parser: Parser) -> "PopBufferOp":
        length = parser.parse_unresolved_operand()
        lanes = 1
        if parser.parse_optional_keyword("lanes") is not None:
            lanes = parser.parse_integer()
        packed = parser.parse_optional_keyword("packed") is not None
        parser.parse_punctuation(":")
        t = parser.parse_type()
        return cls(parser.resolve_operand(length, IndexType()), t, lanes, packed)


@irdl_op_definition
class PopPackedOp(IRDLOperation):
    """The operands of one packed group — ``dlc.register_operand ... packed`` operands of one
    firing joined by ``join`` — unpacked from the data tokens: scalars at their natural size and
    alignment, vectors lane by lane, a lane mask as its count of active lanes (8 bytes); the group
    ends on a token boundary (docs/compiler.md, "Queue alignment").

    Example::

        %b, %d0 = dlc.pop_packed : index, index
    """

    name = "dlc.pop_packed"

    values = var_result_def(AnyAttr())
    traits = traits_def(HasAncestor(CaseOp))

    def __init__(self, result_types: Sequence[Attribute]):
        super().__init__(result_types=[list(result_types)])

    def print(self, printer: Printer) -> None:
        printer.print_string(" : ")
        printer.print_list([r.type for r in self.values], printer.print_attribute)

    @classmethod
    def parse(cls, parser: Parser) -> "PopPackedOp":
        parser.parse_punctuation(":")
        return cls(parse_nonempty_type_list(parser))


@irdl_op_definition
class SetVarOp(IRDLOperation):
    """Core variable ``var`` := ``value``, before the compute loop (function level).

    A core variable is an integer the execute side keeps across callback firings (Ember's
    ``ReplaceToValOps``: a loop index of the access program that the core tracks itself instead
    of receiving it as an operand each firing; ``transforms/replace_to_val_ops.py``).

    Example::

        dlc.set_var 0, %c0 : index
    """

    name = "dlc.set_var"

    var = prop_def(IntegerAttr)
    value = operand_def(AnyAttr())

    def __init__(self, var: int, value: SSAValue):
        super().__init__(operands=[value], properties={"var": IntegerAttr(var, i64)})

    def verify_(self) -> None:
        if not is_int_like(self.value.type):
            raise VerifyException(f"Expected an integer value of dlc.set_var, got {self.value.type}.")
        from xdsl.dialects.func import FuncOp
        if not isinstance(self.parent_op(), FuncOp):
            raise VerifyException("Expected dlc.set_var at function level. A core variable is set "
                                  "before the compute loop.")

    def print(self, printer: Printer) -> None:
        printer.print_string(f" {self.var.value.data}, ")
        printer.print_ssa_value(self.value)
        printer.print_string(" : ")
        printer.print_attribute(self.value.type)

    @classmethod
    def parse(cls, parser: Parser) -> "SetVarOp":
        var = parser.parse_integer()
        parser.parse_punctuation(",")
        value = parser.parse_unresolved_operand()
        parser.parse_punctuation(":")
        return cls(var, parser.resolve_operand(value, parser.parse_type()))


@irdl_op_definition
class GetVarOp(IRDLOperation):
    """The current value of core variable ``var`` (set by ``dlc.set_var``), in a callback.

    Example::

        %b = dlc.get_var 0 : index
    """

    name = "dlc.get_var"

    var = prop_def(IntegerAttr)
    result = result_def(AnyAttr())
    traits = traits_def(HasAncestor(CaseOp))

    def __init__(self, var: int, result_type: Attribute):
        super().__init__(result_types=[result_type], properties={"var": IntegerAttr(var, i64)})

    def verify_(self) -> None:
        if not is_int_like(self.result.type):
            raise VerifyException(f"Expected an integer type of dlc.get_var, got {self.result.type}.")

    def print(self, printer: Printer) -> None:
        printer.print_string(f" {self.var.value.data} : ")
        printer.print_attribute(self.result.type)

    @classmethod
    def parse(cls, parser: Parser) -> "GetVarOp":
        var = parser.parse_integer()
        parser.parse_punctuation(":")
        return cls(var, parser.parse_type())


@irdl_op_definition
class IncrementVarOp(IRDLOperation):
    """Core variable ``var`` += ``step`` (64-bit, wrapping), in a callback.

    Example::

        dlc.increment_var 0 by 1
    """

    name = "dlc.increment_var"

    var = prop_def(IntegerAttr)
    step = prop_def(IntegerAttr)
    traits = traits_def(HasAncestor(CaseOp))

    def __init__(self, var: int, step: int):
        super().__init__(properties={"var": IntegerAttr(var, i64), "step": IntegerAttr(step, i64)})

    def print(self, printer: Printer) -> None:
        printer.print_string(f" {self.var.value.data} by {self.step.value.data}")

    @classmethod
    def parse(cls, parser: Parser) -> "IncrementVarOp":
        var = parser.parse_integer()
        parser.parse_keyword("by")
        return cls(var, parser.parse_integer())


DLC = Dialect(
    "dlc",
    [ConfigureAccessOp, TuOp, MemStreamOp, AluStreamOp, FwdStreamOp, RegisterOperandOp,
     RegisterCallbackOp, ComputeLoopOp, CaseOp, PopOperandOp, YieldOp,
     FirstLaneOp, MaskStreamOp, BufStreamOp, PopBufferOp, PopPackedOp, SetVarOp, GetVarOp,
     IncrementVarOp],
    [StreamType, VStreamType, BufferType],
)
