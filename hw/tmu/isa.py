"""The binary access program (``docs/isa.md``, versions 0 and 1) as Amaranth shapes.

This module mirrors the tables of ``docs/isa.md`` once; every other RTL module takes field
positions, codes and constants from here. ``tb/tmu/test_isa_mirror.py`` checks them against
``sw/runtime/isa.py``.
"""

from amaranth.hdl import signed, unsigned
from amaranth.lib import data, enum


__all__ = [
    "MAGIC", "VERSION", "DONE_TOKEN", "HEADER_WORDS", "DESCRIPTOR_WORDS", "IMM_BITS",
    "SourceKind", "StreamKind", "AluOp", "Event", "ActionKind", "FaultCode",
    "Source", "VersionWord", "CountsWord", "ArgsWord", "LayerWord0", "RegionWord0",
    "StreamWord0", "MemMode", "ActionWord0", "ControlWord1",
    "VERSION_V1", "LayerMode", "LayerWord0V1", "OperandWord0V1",
]


MAGIC          = 0x554D5445  # the bytes "E T M U" read as a little-endian word
VERSION        = 0
VERSION_V1     = 1           # the vector extension (docs/isa.md §7)
DONE_TOKEN     = 0xFFFF      # last control token of a run that completes normally
HEADER_WORDS   = 4
DESCRIPTOR_WORDS = 4
IMM_BITS       = 28          # width of a source's value field, and of a signed immediate


class SourceKind(enum.Enum, shape=4):
    """Kind of a 32-bit source word, bits [31:28]. Values 4..15 are illegal."""
    IMM    = 0
    ARG    = 1
    STREAM = 2
    INDEX  = 3
    COUNT  = 4   # ISA v1 only (docs/isa.md §7.3): active lanes of a layer's iteration
    FIRST  = 5   # ISA v1 only: index of lane 0 of a layer's iteration


class StreamKind(enum.Enum, shape=4):
    """Kind of a stream, stream word 0 bits [19:16]. Values 3..15 are illegal."""
    MEM = 0
    ALU = 1
    FWD = 2


class AluOp(enum.Enum, shape=4):
    """ALU operation, stream word 0 bits [23:20] of an ``ALU`` stream. 13..15 are illegal."""
    ADD = 0
    SUB = 1
    MUL = 2
    SHL = 3
    SHR = 4
    SRA = 5
    AND = 6
    OR  = 7
    XOR = 8
    MIN = 9
    MAX = 10
    LT  = 11
    EQ  = 12


class Event(enum.Enum, shape=2):
    """Layer event an action fires on, action word 0 bits [9:8]. 3 is illegal."""
    BEGIN = 0
    ITER  = 1
    END   = 2


class ActionKind(enum.Enum, shape=2):
    """Marshaling action kind, action word 0 bits [11:10]. 2, 3 are illegal."""
    OPERAND = 0
    CONTROL = 1


class FaultCode(enum.Enum, shape=8):
    """Fault codes of ``docs/isa.md`` §5 (``STATUS.FAULT_CODE``)."""
    NONE          = 0
    BAD_MAGIC     = 1
    BAD_VERSION   = 2
    RESOURCES     = 3
    ILLEGAL_FIELD = 4
    ADDR_RANGE    = 5
    MISALIGNED    = 6
    RANGE_ORDER   = 7
    WATCHDOG      = 8
    TRUNCATED     = 9
    BLOCK_LENGTH  = 10  # ISA v1 only (docs/isa.md §7.7): a block stream's count out of range
    ADDR_OVERFLOW = 11  # a load's address computation left the signed 64-bit range (§1)


class Source(data.Struct):
    """A 32-bit source word (TU bound, stream operand, action operand)."""
    value: unsigned(IMM_BITS)  # IMM: signed immediate; ARG: register; STREAM: stream id; INDEX: layer
    kind:  SourceKind


class VersionWord(data.Struct):
    """Header word 1."""
    version:  16
    reserved: 16


class CountsWord(data.Struct):
    """Header word 2 (all counts in descriptors)."""
    n_layers:  8
    n_regions: 8
    n_streams: 8
    n_actions: 8


class ArgsWord(data.Struct):
    """Header word 3."""
    n_args:   8   # argument registers
    reserved: 24


class LayerWord0(data.Struct):
    """Layer (TU) descriptor word 0. Words 1..3 are the ``lb``, ``ub`` and ``step`` sources."""
    id:          8
    check_order: 1
    reserved:    23


class RegionWord0(data.Struct):
    """Region descriptor word 0. Words 1, 2: base and size sources (bytes); word 3 reserved."""
    id:       8
    reserved: 24


class MemMode(data.Struct):
    """The ``mode`` nibble of a ``MEM`` stream."""
    log2_size: 2   # log2 of the element size in bytes
    sign:      1   # sign-extend the loaded element
    reserved:  1   # v0: reserved; v1: BLOCK (docs/isa.md §7.4; word 3 is then the count source)


class LayerMode(enum.Enum, shape=2):
    """Layer descriptor word 0 bits [10:9] in version 1 (docs/isa.md §7.2). 3 is illegal."""
    SINGLE    = 0
    LOCKSTEP  = 1
    BROADCAST = 2


class LayerWord0V1(data.Struct):
    """Layer descriptor word 0 in version 1."""
    id:          8
    check_order: 1
    mode:        2   # LayerMode
    reserved0:   5
    lanes_m1:    8   # lanes - 1
    reserved1:   8


class OperandWord0V1(data.Struct):
    """Word 0 of an ``OPERAND`` action in version 1 (docs/isa.md §7.5)."""
    layer:    8
    event:    Event
    kind:     ActionKind
    pack:     2    # 2**pack elements of 64 >> pack bits per data token
    join:     1    # do not flush after this action
    reserved: 17


class StreamWord0(data.Struct):
    """Stream descriptor word 0. Words 1, 2: sources ``a``, ``b``; word 3: ``MEM`` stride (bytes)."""
    id:     8
    layer:  8
    kind:   StreamKind
    mode:   4      # ALU: AluOp; MEM: MemMode; FWD: reserved
    region: 8      # MEM: region id; others: reserved


class ActionWord0(data.Struct):
    """Action descriptor word 0. Word 1: source or callback id; words 2, 3 reserved."""
    layer:    8
    event:    Event
    kind:     ActionKind
    reserved: 20


class ControlWord1(data.Struct):
    """Action word 1 of a ``CONTROL`` action."""
    callback: 16
    reserved: 16


# Shapes of values inside the unit.
VALUE = signed(64)       # every stream value, index and bound
STRIDE = signed(32)      # MEM stride in bytes
