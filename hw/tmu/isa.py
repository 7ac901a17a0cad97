"""The binary access program (``docs/isa.md``, versions 0 and 1) as Amaranth shapes.

Every code, constant and bit position comes from the field tables of ``sw/runtime/isa_fields.py``,
the one source of the format that ``sw/runtime/isa.py`` encodes and decodes with too: each
enumeration of ``ENUMS`` becomes an ``amaranth.lib.enum.Enum`` of the same width, each word of
``WORDS`` a ``data.Struct`` with the same fields from bit 0 upwards. Every other RTL module takes
field positions, codes and constants from here.
"""

import types

from amaranth.hdl import signed, unsigned
from amaranth.lib import data, enum

from sw.runtime import isa_fields
from sw.runtime.isa_fields import (DESCRIPTOR_WORDS, DONE_TOKEN, HEADER_WORDS, IMM_BITS, MAGIC,
                                   VERSION, VERSION_V1)


__all__ = [
    "MAGIC", "VERSION", "DONE_TOKEN", "HEADER_WORDS", "DESCRIPTOR_WORDS", "IMM_BITS",
    "SourceKind", "StreamKind", "AluOp", "Event", "ActionKind", "FaultCode",
    "Source", "VersionWord", "CountsWord", "ArgsWord", "LayerWord0", "RegionWord0",
    "StreamWord0", "MemMode", "ActionWord0", "ControlWord1",
    "VERSION_V1", "LayerMode", "LayerWord0V1", "OperandWord0V1",
]


def _enum(name: str) -> type:
    """The Amaranth enumeration ``name`` of ``isa_fields.ENUMS``, shaped ``unsigned(width)``."""
    width, members, doc = isa_fields.ENUMS[name]

    def body(namespace):
        for member, code in members:
            namespace[member] = code
        namespace["__doc__"] = doc
        namespace["__module__"] = __name__
    return types.new_class(name, (enum.Enum,), {"shape": width}, body)


def _struct(name: str) -> type:
    """The ``data.Struct`` of the word ``name`` of ``isa_fields.WORDS`` (fields from bit 0 up;
    a field named after an enumeration has that enumeration as its shape)."""
    annotations = {field: _ENUMS[shape] if isinstance(shape, str) else unsigned(shape)
                   for field, shape in isa_fields.WORDS[name]}

    def body(namespace):
        namespace["__annotations__"] = annotations
        namespace["__doc__"] = f"``{name}`` of ``sw/runtime/isa_fields.py`` WORDS (docs/isa.md §2, §7)."
        namespace["__module__"] = __name__
    return types.new_class(name, (data.Struct,), {}, body)


_ENUMS = {name: _enum(name) for name in isa_fields.ENUMS}

SourceKind = _ENUMS["SourceKind"]
StreamKind = _ENUMS["StreamKind"]
AluOp = _ENUMS["AluOp"]
Event = _ENUMS["Event"]
ActionKind = _ENUMS["ActionKind"]
LayerMode = _ENUMS["LayerMode"]
FaultCode = _ENUMS["FaultCode"]

Source = _struct("Source")
VersionWord = _struct("VersionWord")
CountsWord = _struct("CountsWord")
ArgsWord = _struct("ArgsWord")
LayerWord0 = _struct("LayerWord0")
LayerWord0V1 = _struct("LayerWord0V1")
RegionWord0 = _struct("RegionWord0")
StreamWord0 = _struct("StreamWord0")
MemMode = _struct("MemMode")            # v1 reads its ``reserved`` bit as BLOCK (docs/isa.md §7.4)
ActionWord0 = _struct("ActionWord0")
OperandWord0V1 = _struct("OperandWord0V1")
ControlWord1 = _struct("ControlWord1")


# Shapes of values inside the unit.
VALUE = signed(64)       # every stream value, index and bound
STRIDE = signed(32)      # MEM stride in bytes
