"""Small parsing/printing helpers shared by the ``slc`` and ``dlc`` custom syntaxes."""

from __future__ import annotations

from collections.abc import Sequence

from xdsl.ir import Attribute, SSAValue
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


def resolve(parser: Parser, operands: Sequence[UnresolvedOperand],
            types: Sequence[Attribute]) -> list[SSAValue]:
    return [parser.resolve_operand(o, t) for o, t in zip(operands, types, strict=True)]
