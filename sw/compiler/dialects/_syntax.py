"""Custom-syntax helpers shared by the ``slc``, ``slcv`` and ``dlc`` dialects.

Each helper prints (or parses) one fragment of an op's custom syntax exactly as the ops wrote it
by hand before; the golden IR files under ``tests/compiler/golden`` pin the printed form.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import ClassVar

from xdsl.dialects.builtin import IntAttr, IntegerAttr
from xdsl.ir import Attribute, Block, Region, SSAValue
from xdsl.irdl import IRDLOperation
from xdsl.parser import Parser, UnresolvedOperand
from xdsl.printer import Printer


def print_operands_with_types(printer: Printer, values: Sequence[SSAValue]) -> None:
    """Print ``%a, %b`` (types follow later with :func:`print_types`)."""
    printer.print_list(values, printer.print_ssa_value)


def print_types(printer: Printer, values: Sequence[SSAValue]) -> None:
    printer.print_list([v.type for v in values], printer.print_attribute)


def parse_operand_list(parser: Parser) -> list[UnresolvedOperand]:
    """Parse ``%a, %b, ...`` (possibly empty)."""
    first = parser.parse_optional_unresolved_operand()
    if first is None:
        return []
    operands = [first]
    while parser.parse_optional_punctuation(",") is not None:
        operands.append(parser.parse_unresolved_operand())
    return operands


def parse_type_list(parser: Parser, count: int) -> list[Attribute]:
    """Parse exactly ``count`` comma-separated types."""
    types: list[Attribute] = []
    for n in range(count):
        if n:
            parser.parse_punctuation(",")
        types.append(parser.parse_type())
    return types


def parse_nonempty_type_list(parser: Parser) -> list[Attribute]:
    """Parse ``T1, T2, ...`` (at least one type)."""
    types = [parser.parse_type()]
    while parser.parse_optional_punctuation(","):
        types.append(parser.parse_type())
    return types


def resolve(parser: Parser, operands: Sequence[UnresolvedOperand],
            types: Sequence[Attribute]) -> list[SSAValue]:
    return [parser.resolve_operand(o, t) for o, t in zip(operands, types, strict=True)]


# -- regions --------------------------------------------------------------------------------------

def as_region(body: Region | Block | None, arg_types: Sequence[Attribute] = ()) -> Region:
    """``body`` as a region: a new block with arguments of ``arg_types`` when ``body`` is None."""
    if body is None:
        body = Block(arg_types=arg_types)
    return Region(body) if isinstance(body, Block) else body


def print_body(printer: Printer, region: Region, terminators: bool = False) -> None:
    """Print `` {...}``: a region without its entry block's arguments (they are printed in the
    op's header) and, unless ``terminators``, without its implicit terminator."""
    printer.print_string(" ")
    printer.print_region(region, print_entry_block_args=False, print_block_terminators=terminators)


class ImplicitTerminatorOp(IRDLOperation):
    """Custom syntax of a terminator left out of printed regions: its attribute dictionary only."""

    def print(self, printer: Printer) -> None:
        printer.print_op_attributes(self.attributes)

    @classmethod
    def parse(cls, parser: Parser):
        op = cls()
        op.attributes |= parser.parse_optional_attr_dict()
        return op


# -- op fragments ---------------------------------------------------------------------------------

def print_layer(printer: Printer, layer: IntegerAttr) -> None:
    """Print `` layer N`` (the access layer of a ``dlc`` op)."""
    printer.print_string(f" layer {layer.value.data}")


def parse_layer(parser: Parser) -> int:
    """Parse ``layer N``."""
    parser.parse_keyword("layer")
    return parser.parse_integer()


def print_bounds(printer: Printer, lb: SSAValue, ub: SSAValue, step: IntegerAttr) -> None:
    """Print `` %lb to %ub step N`` (a loop's or traversal unit's iteration space)."""
    printer.print_string(" ")
    printer.print_ssa_value(lb)
    printer.print_string(" to ")
    printer.print_ssa_value(ub)
    printer.print_string(f" step {step.value.data}")


def parse_bounds(parser: Parser) -> tuple[UnresolvedOperand, UnresolvedOperand, int]:
    """Parse ``%lb to %ub step N``; the bounds are resolved once their types are parsed."""
    lb = parser.parse_unresolved_operand()
    parser.parse_keyword("to")
    ub = parser.parse_unresolved_operand()
    parser.parse_keyword("step")
    return lb, ub, parser.parse_integer()


def print_subscript(printer: Printer, memref: SSAValue, indices: Sequence[SSAValue]) -> None:
    """Print `` %memref[%i, %j]``."""
    printer.print_string(" ")
    printer.print_ssa_value(memref)
    printer.print_string("[")
    printer.print_list(indices, printer.print_ssa_value)
    printer.print_string("]")


def parse_subscript(parser: Parser) -> tuple[UnresolvedOperand, list[UnresolvedOperand]]:
    """Parse ``%memref[%i, %j]`` (possibly no index)."""
    memref = parser.parse_unresolved_operand()
    parser.parse_punctuation("[")
    indices = parse_operand_list(parser)
    parser.parse_punctuation("]")
    return memref, indices


def print_alu(printer: Printer, op: str, lhs: SSAValue, rhs: SSAValue, result_type: Attribute) -> None:
    """Print `` op %lhs, %rhs : T, U -> R`` (an ALU stream)."""
    printer.print_string(f" {op} ")
    printer.print_list((lhs, rhs), printer.print_ssa_value)
    printer.print_string(" : ")
    print_types(printer, (lhs, rhs))
    print_result_type(printer, result_type)


def parse_alu(parser: Parser) -> tuple[str, SSAValue, SSAValue, Attribute]:
    """Parse ``op %lhs, %rhs : T, U -> R`` into ``(op, lhs, rhs, R)``."""
    op = parser.parse_identifier()
    lhs = parser.parse_unresolved_operand()
    parser.parse_punctuation(",")
    rhs = parser.parse_unresolved_operand()
    parser.parse_punctuation(":")
    lhs_v, rhs_v = resolve(parser, (lhs, rhs), parse_type_list(parser, 2))
    return op, lhs_v, rhs_v, parse_result_type(parser)


def print_typed_operand(printer: Printer, value: SSAValue) -> None:
    """Print `` %v : T``."""
    printer.print_string(" ")
    printer.print_ssa_value(value)
    printer.print_string(" : ")
    printer.print_attribute(value.type)


def parse_typed_operand(parser: Parser) -> SSAValue:
    """Parse ``%v : T``."""
    value = parser.parse_unresolved_operand()
    parser.parse_punctuation(":")
    return parser.resolve_operand(value, parser.parse_type())


def print_result_type(printer: Printer, result_type: Attribute) -> None:
    """Print `` -> R``."""
    printer.print_string(" -> ")
    printer.print_attribute(result_type)


def parse_result_type(parser: Parser) -> Attribute:
    """Parse ``-> R``."""
    parser.parse_punctuation("->")
    return parser.parse_type()


class OneOperandOp(IRDLOperation):
    """Custom syntax ``[layer N] %v : T [-> R]`` of an op with one operand and one result whose
    result type follows from the operand: built as ``cls(v)`` or, with ``LAYER``, ``cls(N, v)``.

    ``LAYER``: the op has a ``layer`` property printed first. ``ARROW``: the result type is printed
    after ``->`` (parsed and dropped: the constructor derives it and the verifier checks it).
    """

    LAYER: ClassVar[bool] = False
    ARROW: ClassVar[bool] = False

    def print(self, printer: Printer) -> None:
        if self.LAYER:
            print_layer(printer, self.properties["layer"])  # type: ignore[arg-type]
        print_typed_operand(printer, self.operands[0])
        if self.ARROW:
            print_result_type(printer, self.results[0].type)

    @classmethod
    def parse(cls, parser: Parser):
        layer = parse_layer(parser) if cls.LAYER else None
        value = parse_typed_operand(parser)
        if cls.ARROW:
            parse_result_type(parser)
        return cls(value) if layer is None else cls(layer, value)  # type: ignore[call-arg]


class AluStreamSyntaxOp(IRDLOperation):
    """Custom syntax ``[layer N] op %lhs, %rhs : T, U -> R`` of an ALU stream: a string property
    ``op``, two operands and one result; built as ``cls(op, lhs, rhs, R)`` or, with ``LAYER``
    (a ``layer`` property printed first), ``cls(N, op, lhs, rhs, R)``."""

    LAYER: ClassVar[bool] = False

    def print(self, printer: Printer) -> None:
        if self.LAYER:
            print_layer(printer, self.properties["layer"])  # type: ignore[arg-type]
        lhs, rhs = self.operands
        print_alu(printer, self.properties["op"].data, lhs, rhs,  # type: ignore[attr-defined]
                  self.results[0].type)

    @classmethod
    def parse(cls, parser: Parser):
        layer = [parse_layer(parser)] if cls.LAYER else []
        return cls(*layer, *parse_alu(parser))  # type: ignore[call-arg]


# -- types ----------------------------------------------------------------------------------------

class LanesTypeSyntax:
    """Constructor and parameter syntax ``<T, L>`` of a vector-stream type whose parameters are
    ``element_type`` and ``lanes`` (an ``IntAttr``). Listed before ``ParametrizedAttribute`` in the
    bases, so that its ``print_parameters``/``parse_parameters`` are the ones used."""

    def __init__(self, element_type: Attribute, lanes: int | IntAttr):
        super().__init__(element_type, lanes if isinstance(lanes, IntAttr) else IntAttr(lanes))  # type: ignore[call-arg]

    def print_parameters(self, printer: Printer) -> None:
        printer.print_string("<")
        printer.print_attribute(self.element_type)
        printer.print_string(f", {self.lanes.data}>")

    @classmethod
    def parse_parameters(cls, parser: Parser) -> list[Attribute]:
        parser.parse_punctuation("<")
        t = parser.parse_type()
        parser.parse_punctuation(",")
        n = parser.parse_integer()
        parser.parse_punctuation(">")
        return [t, IntAttr(n)]
