"""The binary access program's field tables (``docs/isa.md`` §2, §5, §7): the one source of truth.

Every code, constant and bit position of the format is written here once, as plain data, and
nothing else: ``sw/runtime/isa.py`` builds its ``IntEnum`` classes from :data:`ENUMS` and
encodes/decodes descriptor words with :func:`pack`/:func:`unpack` over :data:`WORDS`;
``hw/tmu/isa.py`` builds its Amaranth ``enum.Enum`` shapes and ``data.Struct`` layouts from the same
tables. This module imports nothing of the project (it is the lowest layer of
``docs/architecture.md``, importable by the hardware and the software alike).

:data:`ENUMS` maps an enumeration's name to ``(width in bits, ((member, code), ...), docstring)``.
:data:`WORDS` maps a 32-bit word's (or a sub-field's) name to its fields from bit 0 upwards, each
``(field name, width in bits)`` or ``(field name, enumeration name)``; a field whose name starts
with ``reserved`` must be zero in a well-formed program.
"""

from __future__ import annotations

__all__ = [
    "MAGIC", "VERSION", "VERSION_V1", "VERSIONS", "DONE_TOKEN", "HEADER_WORDS",
    "DESCRIPTOR_WORDS", "IMM_BITS", "MAX_CALLBACK_ID", "DATA_BITS", "CONTROL_BITS",
    "ENUMS", "WORDS", "field_width", "fields_of", "width_of", "pack", "unpack",
    "reserved_mask",
]

MAGIC = 0x554D5445           # the bytes "E T M U" read as a little-endian word
VERSION = 0                  # the base (scalar) format
VERSION_V1 = 1               # the vector extension (docs/isa.md §7)
VERSIONS = (0, 1)            # every version the format defines
DONE_TOKEN = 0xFFFF          # last control token of a run that completes normally
HEADER_WORDS = 4
DESCRIPTOR_WORDS = 4
IMM_BITS = 28                # width of a source's value field, and of a signed immediate
MAX_CALLBACK_ID = 0xFFFE     # DONE_TOKEN is not a callback id
DATA_BITS = 64               # width of a data-queue token (bits); v0 and v1 both fix it
CONTROL_BITS = 16            # width of a control-queue token (bits)


ENUMS: dict[str, tuple[int, tuple[tuple[str, int], ...], str]] = {
    "SourceKind": (4, (
        ("IMM", 0), ("ARG", 1), ("STREAM", 2), ("INDEX", 3),
        ("COUNT", 4),    # v1 only (§7.3): active lanes of a layer's current iteration
        ("FIRST", 5),    # v1 only: index of lane 0 of a layer's current iteration
    ), "Kind of a 32-bit source word, bits [31:28]; COUNT and FIRST exist in version 1 only."),
    "StreamKind": (4, (("MEM", 0), ("ALU", 1), ("FWD", 2)),
                   "Kind of a stream, stream word 0 bits [19:16]. Values 3..15 are illegal."),
    "AluOp": (4, (
        ("ADD", 0), ("SUB", 1), ("MUL", 2), ("SHL", 3), ("SHR", 4), ("SRA", 5), ("AND", 6),
        ("OR", 7), ("XOR", 8), ("MIN", 9), ("MAX", 10), ("LT", 11), ("EQ", 12),
    ), "ALU operation, stream word 0 bits [23:20] of an ALU stream. 13..15 are illegal."),
    "Event": (2, (("BEGIN", 0), ("ITER", 1), ("END", 2)),
              "Layer event an action fires on, action word 0 bits [9:8]. 3 is illegal."),
    "ActionKind": (2, (("OPERAND", 0), ("CONTROL", 1)),
                   "Marshaling action kind, action word 0 bits [11:10]. 2, 3 are illegal."),
    "LayerMode": (2, (("SINGLE", 0), ("LOCKSTEP", 1), ("BROADCAST", 2)),
                  "Layer descriptor word 0 bits [10:9] in version 1 (docs/isa.md §7.2). 3 is illegal."),
    "FaultCode": (8, (
        ("NONE", 0), ("BAD_MAGIC", 1), ("BAD_VERSION", 2), ("RESOURCES", 3),
        ("ILLEGAL_FIELD", 4), ("ADDR_RANGE", 5), ("MISALIGNED", 6), ("RANGE_ORDER", 7),
        ("WATCHDOG", 8), ("TRUNCATED", 9),
        ("BLOCK_LENGTH", 10),   # v1 (§7.7): a block stream's count out of range
        ("ADDR_OVERFLOW", 11),  # a load's address computation left the signed 64-bit range (§1)
    ), "Fault codes of STATUS.FAULT_CODE (docs/isa.md §5, §7.7)."),
}


WORDS: dict[str, tuple[tuple[str, int | str], ...]] = {
    # A source word (layer bound, stream operand, action operand). IMM: value is a signed
    # immediate; ARG: register; STREAM: stream id; INDEX/COUNT/FIRST: layer.
    "Source": (("value", IMM_BITS), ("kind", "SourceKind")),
    # The same word for every kind but IMM: an 8-bit number, the rest reserved.
    "SourceNumber": (("number", 8), ("reserved", IMM_BITS - 8), ("kind", "SourceKind")),
    # Header words 1..3 (word 0 is MAGIC).
    "VersionWord": (("version", 16), ("reserved", 16)),
    "CountsWord": (("n_layers", 8), ("n_regions", 8), ("n_streams", 8), ("n_actions", 8)),
    "ArgsWord": (("n_args", 8), ("reserved", 24)),
    # Layer descriptor word 0; words 1..3 are the lb, ub and step sources.
    "LayerWord0": (("id", 8), ("check_order", 1), ("reserved", 23)),
    # ``mode`` holds a LayerMode code (a plain 2-bit field, as the RTL compares it to the codes).
    "LayerWord0V1": (("id", 8), ("check_order", 1), ("mode", 2), ("reserved0", 5),
                     ("lanes_m1", 8), ("reserved1", 8)),
    # Region descriptor word 0; words 1, 2: base and size sources (bytes); word 3 reserved.
    "RegionWord0": (("id", 8), ("reserved", 24)),
    # Stream descriptor word 0; words 1, 2: sources a, b; word 3: MEM stride (bytes, signed) or,
    # for a v1 block stream, the count source. ``mode`` is the AluOp (ALU), MemMode (MEM) or
    # reserved (FWD); ``region`` is reserved except for MEM.
    "StreamWord0": (("id", 8), ("layer", 8), ("kind", "StreamKind"), ("mode", 4), ("region", 8)),
    # The mode nibble of a MEM stream: v0 (bit 3 reserved) and v1 (bit 3 BLOCK, §7.4).
    "MemMode": (("log2_size", 2), ("sign", 1), ("reserved", 1)),
    "MemModeV1": (("log2_size", 2), ("sign", 1), ("block", 1)),
    # Action descriptor word 0; word 1: source (OPERAND) or ControlWord1; words 2, 3 reserved.
    "ActionWord0": (("layer", 8), ("event", "Event"), ("kind", "ActionKind"), ("reserved", 20)),
    # Word 0 of an OPERAND action in version 1 (§7.5): 2**pack elements of 64 >> pack bits per
    # data token; join: do not flush after this action.
    "OperandWord0V1": (("layer", 8), ("event", "Event"), ("kind", "ActionKind"), ("pack", 2),
                       ("join", 1), ("reserved", 17)),
    "ControlWord1": (("callback", 16), ("reserved", 16)),
}


def field_width(shape: int | str) -> int:
    """Width in bits of a field's shape: an integer, or the name of an entry of :data:`ENUMS`."""
    return ENUMS[shape][0] if isinstance(shape, str) else shape


def _layout(word: str) -> dict[str, tuple[int, int]]:
    out, offset = {}, 0
    for name, shape in WORDS[word]:
        width = field_width(shape)
        out[name] = (offset, width)
        offset += width
    return out


_LAYOUTS = {word: _layout(word) for word in WORDS}
_RESERVED = {word: sum(((1 << width) - 1) << offset for name, (offset, width) in layout.items()
                       if name.startswith("reserved"))
             for word, layout in _LAYOUTS.items()}


def fields_of(word: str) -> dict[str, tuple[int, int]]:
    """``{field: (lowest bit, width)}`` of the entry ``word`` of :data:`WORDS`, in bit order."""
    return dict(_LAYOUTS[word])


def width_of(word: str) -> int:
    """Total width in bits of the entry ``word`` of :data:`WORDS`."""
    return sum(field_width(shape) for _, shape in WORDS[word])


def pack(word: str, **values: int) -> int:
    """The integer whose fields of layout ``word`` hold ``values`` (missing fields are 0).

    Raises
    ------
    ValueError
        A field name the layout does not have, or a value that is negative or does not fit its
        field's width (named).
    """
    layout = _LAYOUTS[word]
    out = 0
    for name, value in values.items():
        if name not in layout:
            raise ValueError(f"{word} has no field {name!r} (fields: {', '.join(layout)})")
        offset, width = layout[name]
        value = int(value)
        if not 0 <= value < 1 << width:
            raise ValueError(f"{word}.{name} must be in [0, {(1 << width) - 1}], not {value!r}")
        out |= value << offset
    return out


def unpack(word: str, value: int) -> dict[str, int]:
    """``{field: unsigned value}`` of the integer ``value`` read with layout ``word``."""
    return {name: (value >> offset) & ((1 << width) - 1)
            for name, (offset, width) in _LAYOUTS[word].items()}


def reserved_mask(word: str) -> int:
    """The bits of layout ``word`` that belong to ``reserved*`` fields."""
    return _RESERVED[word]
