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

from xdsl.dialects.builtin import IndexType, IntegerAttr, MemRefType, StringAttr, UnitAttr, i64
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
)
from xdsl.parser import Parser
from xdsl.printer import Printer
from xdsl.traits import HasAncestor, HasParent, IsTerminator, SingleBlockImplicitTerminator, ensure_terminator
from xdsl.utils.exceptions import VerifyException

from ._syntax import parse_type_list, print_types, resolve
from .slc import ALU_OPS, EVENTS, is_int_like

__all__ = [
    "StreamType", "ConfigureAccessOp", "TuOp", "MemStreamOp", "AluStreamOp", "FwdStreamOp",
    "RegisterOperandOp", "RegisterCallbackOp", "ComputeLoopOp", "CaseOp", "PopOperandOp",
    "YieldOp", "DLC",
]


@irdl_attr_definition
class StreamType(ParametrizedAttribute, TypeAttribute):
    """``!dlc.stream<T>``: a stream (or a traversal unit's index) of the access program."""

    name = "dlc.stream"

    element_type: Attribute = param_def()

    def __init__(self, element_type: Attribute):
        super().__init__(element_type)


def _is_source(t: Attribute) -> bool:
    return is_int_like(t) or (isinstance(t, StreamType) and is_int_like(t.element_type))


def _check_sources(op: IRDLOperation, values: Sequence[SSAValue]) -> None:
    for v in values:
        if not _is_source(v.type):
            raise VerifyException(f"Expected an integer stream or register operand of {op.name}, "
                                  f"got {v.type}. Sources of the access unit are 64-bit integers.")


def _check_event(op: IRDLOperation, event: str) -> None:
    if event not in EVENTS:
        raise VerifyException(f"Expected an event in begin, iter, end, got {event!r}. "
                              "These are the layer events of the access unit.")


def _layer_prop(layer: int) -> IntegerAttr:
    return IntegerAttr(layer, i64)


@irdl_op_definition
class YieldOp(IRDLOperation):
    """Terminator of ``dlc`` regions (implicit in the custom syntax)."""

    name = "dlc.yield"
    traits = lazy_traits_def(lambda: (IsTerminator(),
                                      HasParent(ConfigureAccessOp, ComputeLoopOp, CaseOp)))

    def print(self, printer: Printer) -> None:
        printer.print_op_attributes(self.attributes)

    @classmethod
    def parse(cls, parser: Parser) -> "YieldOp":
        op = cls()
        op.attributes |= parser.parse_optional_attr_dict()
        return op


class _RegionOp(IRDLOperation):
    """Shared custom syntax of ops that are a keyword and a single-block region."""

    def _init_region(self, body: Region | Block | None) -> Region:
        if body is None:
            body = Block()
        return Region(body) if isinstance(body, Block) else body

    def print(self, printer: Printer) -> None:
        printer.print_string(" ")
        printer.print_region(self.regions[0], print_entry_block_args=False,
                             print_block_terminators=False)

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
        super().__init__(regions=[self._init_region(body)])
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
    index = result_def(StreamType)

    traits = traits_def(HasParent(ConfigureAccessOp))

    def __init__(self, layer: int, lb: SSAValue, ub: SSAValue, step: int, check_order: bool = False):
        props: dict[str, Attribute] = {"layer": _layer_prop(layer), "step": IntegerAttr(step, i64)}
        if check_order:
            props["check_order"] = UnitAttr()
        super().__init__(operands=[lb, ub], properties=props,
                         result_types=[StreamType(IndexType())])

    def verify_(self) -> None:
        _check_sources(self, (self.lb, self.ub))
        if self.step.value.data <= 0:
            raise VerifyException(f"Expected a step > 0, got {self.step.value.data}. "
                                  "Traversal units count upwards.")

    def print(self, printer: Printer) -> None:
        printer.print_string(f" layer {self.layer.value.data} ")
        printer.print_ssa_value(self.lb)
        printer.print_string(" to ")
        printer.print_ssa_value(self.ub)
        printer.print_string(f" step {self.step.value.data}")
        if self.check_order is not None:
            printer.print_string(" check_order")
        printer.print_string(" : ")
        print_types(printer, (self.lb, self.ub))

    @classmethod
    def parse(cls, parser: Parser) -> "TuOp":
        parser.parse_keyword("layer")
        layer = parser.parse_integer()
        lb = parser.parse_unresolved_operand()
        parser.parse_keyword("to")
        ub = parser.parse_unresolved_operand()
        parser.parse_keyword("step")
        step = parser.parse_integer()
        check_order = parser.parse_optional_keyword("check_order") is not None
        parser.parse_punctuation(":")
        lb_v, ub_v = resolve(parser, (lb, ub), parse_type_list(parser, 2))
        return cls(layer, lb_v, ub_v, step, check_order)


@irdl_op_definition
class MemStreamOp(IRDLOperation):
    """A memory stream of ``layer``: the element at byte address ``base(memref) + index * stride``.

    The memref's buffer is the stream's region; the element size is the memref's element size.

    Example::

        %s5 = dlc.mem_stream layer 2 %table[%s4] stride 4 : memref<?x?xf32>, !dlc.stream<index>
    """

    name = "dlc.mem_stream"

    layer = prop_def(IntegerAttr)
    memref = operand_def(MemRefType)
    index = operand_def(AnyAttr())
    stride = prop_def(IntegerAttr)
    result = result_def(StreamType)

    traits = traits_def(HasParent(ConfigureAccessOp))

    def __init__(self, layer: int, memref: SSAValue, index: SSAValue, stride: int):
        assert isinstance(memref.type, MemRefType)
        super().__init__(operands=[memref, index],
                         properties={"layer": _layer_prop(layer), "stride": IntegerAttr(stride, i64)},
                         result_types=[StreamType(memref.type.element_type)])

    def verify_(self) -> None:
        _check_sources(self, (self.index,))
        assert isinstance(self.memref.type, MemRefType)
        if self.result.type != StreamType(self.memref.type.element_type):
            raise VerifyException(f"Expected result type !dlc.stream<{self.memref.type.element_type}>, "
                                  f"got {self.result.type}. A memory stream carries the memref's elements.")

    def print(self, printer: Printer) -> None:
        printer.print_string(f" layer {self.layer.value.data} ")
        printer.print_ssa_value(self.memref)
        printer.print_string("[")
        printer.print_ssa_value(self.index)
        printer.print_string(f"] stride {self.stride.value.data} : ")
        print_types(printer, (self.memref, self.index))

    @classmethod
    def parse(cls, parser: Parser) -> "MemStreamOp":
        parser.parse_keyword("layer")
        layer = parser.parse_integer()
        memref = parser.parse_unresolved_operand()
        parser.parse_punctuation("[")
        index = parser.parse_unresolved_operand()
        parser.parse_punctuation("]")
        parser.parse_keyword("stride")
        stride = parser.parse_integer()
        parser.parse_punctuation(":")
        m, i = resolve(parser, (memref, index), parse_type_list(parser, 2))
        return cls(layer, m, i, stride)


@irdl_op_definition
class AluStreamOp(IRDLOperation):
    """An ALU stream of ``layer``: ``op(lhs, rhs)`` on 64-bit integers.

    Example::

        %s3 = dlc.alu_stream layer 2 mul %s2, %dim : !dlc.stream<index>, index -> !dlc.stream<index>
    """

    name = "dlc.alu_stream"

    layer = prop_def(IntegerAttr)
    op = prop_def(StringAttr)
    lhs = operand_def(AnyAttr())
    rhs = operand_def(AnyAttr())
    result = result_def(StreamType)

    traits = traits_def(HasParent(ConfigureAccessOp))

    def __init__(self, layer: int, op: str, lhs: SSAValue, rhs: SSAValue, result_type: Attribute):
        super().__init__(operands=[lhs, rhs], result_types=[result_type],
                         properties={"layer": _layer_prop(layer), "op": StringAttr(op)})

    def verify_(self) -> None:
        if self.op.data not in ALU_OPS:
            raise VerifyException(f"Expected an ALU op in {', '.join(ALU_OPS)}, got {self.op.data!r}. "
                                  "These are the access unit's ALU operations.")
        _check_sources(self, (self.lhs, self.rhs, self.result))

    def print(self, printer: Printer) -> None:
        printer.print_string(f" layer {self.layer.value.data} {self.op.data} ")
        printer.print_list((self.lhs, self.rhs), printer.print_ssa_value)
        printer.print_string(" : ")
        print_types(printer, (self.lhs, self.rhs))
        printer.print_string(" -> ")
        printer.print_attribute(self.result.type)

    @classmethod
    def parse(cls, parser: Parser) -> "AluStreamOp":
        parser.parse_keyword("layer")
        layer = parser.parse_integer()
        op = parser.parse_identifier()
        lhs = parser.parse_unresolved_operand()
        parser.parse_punctuation(",")
        rhs = parser.parse_unresolved_operand()
        parser.parse_punctuation(":")
        lv, rv = resolve(parser, (lhs, rhs), parse_type_list(parser, 2))
        parser.parse_punctuation("->")
        return cls(layer, op, lv, rv, parser.parse_type())


@irdl_op_definition
class FwdStreamOp(IRDLOperation):
    """A forward stream of ``layer``: a register, constant or outer stream brought into the layer.

    Example::

        %s0 = dlc.fwd_stream layer 1 %n : index
    """

    name = "dlc.fwd_stream"

    layer = prop_def(IntegerAttr)
    value = operand_def(AnyAttr())
    result = result_def(StreamType)

    traits = traits_def(HasParent(ConfigureAccessOp))

    def __init__(self, layer: int, value: SSAValue):
        t = value.type
        elem = t.element_type if isinstance(t, StreamType) else t
        super().__init__(operands=[value], result_types=[StreamType(elem)],
                         properties={"layer": _layer_prop(layer)})

    def verify_(self) -> None:
        _check_sources(self, (self.value,))

    def print(self, printer: Printer) -> None:
        printer.print_string(f" layer {self.layer.value.data} ")
        printer.print_ssa_value(self.value)
        printer.print_string(" : ")
        printer.print_attribute(self.value.type)

    @classmethod
    def parse(cls, parser: Parser) -> "FwdStreamOp":
        parser.parse_keyword("layer")
        layer = parser.parse_integer()
        value = parser.parse_unresolved_operand()
        parser.parse_punctuation(":")
        return cls(layer, parser.resolve_operand(value, parser.parse_type()))


@irdl_op_definition
class RegisterOperandOp(IRDLOperation):
    """Marshaling: on ``event`` of ``layer``, push the current value of ``value`` as an operand.

    Example::

        dlc.register_operand layer 2 iter %s5 : !dlc.stream<f32>
    """

    name = "dlc.register_operand"

    layer = prop_def(IntegerAttr)
    event = prop_def(StringAttr)
    value = operand_def(AnyAttr())

    traits = traits_def(HasParent(ConfigureAccessOp))

    def __init__(self, layer: int, event: str, value: SSAValue):
        super().__init__(operands=[value],
                         properties={"layer": _layer_prop(layer), "event": StringAttr(event)})

    def verify_(self) -> None:
        _check_event(self, self.event.data)

    def print(self, printer: Printer) -> None:
        printer.print_string(f" layer {self.layer.value.data} {self.event.data} ")
        printer.print_ssa_value(self.value)
        printer.print_string(" : ")
        printer.print_attribute(self.value.type)

    @classmethod
    def parse(cls, parser: Parser) -> "RegisterOperandOp":
        parser.parse_keyword("layer")
        layer = parser.parse_integer()
        event = parser.parse_identifier()
        value = parser.parse_unresolved_operand()
        parser.parse_punctuation(":")
        return cls(layer, event, parser.resolve_operand(value, parser.parse_type()))


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
        _check_event(self, self.event.data)

    def print(self, printer: Printer) -> None:
        printer.print_string(f" layer {self.layer.value.data} {self.event.data} {self.id.value.data}")

    @classmethod
    def parse(cls, parser: Parser) -> "RegisterCallbackOp":
        parser.parse_keyword("layer")
        layer = parser.parse_integer()
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
        super().__init__(regions=[self._init_region(body)])
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
        if body is None:
            body = Block()
        if isinstance(body, Block):
            body = Region(body)
        super().__init__(regions=[body], properties={"id": IntegerAttr(callback_id, i64)})
        ensure_terminator(self, SingleBlockImplicitTerminator(YieldOp))

    def print(self, printer: Printer) -> None:
        printer.print_string(f" {self.id.value.data} ")
        printer.print_region(self.body, print_entry_block_args=False, print_block_terminators=False)

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


DLC = Dialect(
    "dlc",
    [ConfigureAccessOp, TuOp, MemStreamOp, AluStreamOp, FwdStreamOp, RegisterOperandOp,
     RegisterCallbackOp, ComputeLoopOp, CaseOp, PopOperandOp, YieldOp],
    [StreamType],
)
