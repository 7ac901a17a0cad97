"""The compiler's one user-facing exception."""

from __future__ import annotations

from dataclasses import dataclass

from xdsl.dialects.builtin import FileLineColLoc
from xdsl.ir import Attribute, Operation

__all__ = ["Location", "CompileError", "location_of"]


@dataclass(frozen=True)
class Location:
    """A position in the compiler's input: file name, 1-based line and column."""
    filename: str
    line: int
    column: int

    def __str__(self) -> str:
        return f"{self.filename}:{self.line}:{self.column}"


class CompileError(Exception):
    """The input is outside what the compiler supports, or does not fit the access unit.

    ``str(error)`` is ``"<file>:<line>:<col>: <message>"`` when the error has a source location,
    else just the message; ``.location`` is a :class:`Location` or ``None`` and ``.message`` the
    message without the location.
    """

    def __init__(self, message: str, location: Location | None = None):
        self.message = message
        self.location = location
        super().__init__(f"{location}: {message}" if location else message)


def location_of(op: Operation | Attribute | None) -> Location | None:
    """The source location recorded on ``op`` (an op or a location attribute), if any."""
    loc = op.location if isinstance(op, Operation) else op
    if isinstance(loc, FileLineColLoc):
        return Location(loc.filename.data, loc.line.data, loc.column.data)
    return None
