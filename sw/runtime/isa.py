"""The binary access program, version 0: encoder, decoder, assembler and disassembler.

The format is specified bit by bit in ``docs/isa.md``; this module is its single Python mirror.
The RTL decoder (``hw/tmu``) implements the same checks and reports the same fault codes.

A :class:`Program` is a plain data structure (layers, regions, streams, actions); ``encode`` turns
it into little-endian 32-bit words, ``Program.decode`` turns words back into a program or raises
:class:`ProgramError` naming the word (PC), the field and the bad value, with the fault code the
RTL would set.
"""

from __future__ import annotations

import enum
import re
import struct
from dataclasses import dataclass, field

__all__ = [
    "MAGIC", "VERSION", "DONE_TOKEN", "MAX_CALLBACK_ID", "IMM_MIN", "IMM_MAX",
    "Fault", "SrcKind", "Source", "StreamKind", "AluOp", "Event", "ActionKind",
    "Layer", "Region", "Stream", "Action", "Program", "ProgramError", "Limits",
]

MAGIC = 0x554D5445          # the bytes "ETMU", little-endian
VERSION = 0
DONE_TOKEN = 0xFFFF         # control token pushed after a program completes
MAX_CALLBACK_ID = 0xFFFE
IMM_MIN = -(1 << 27)        # signed 28-bit immediate range of a source word
IMM_MAX = (1 << 27) - 1
HEADER_WORDS = 4
DESCRIPTOR_WORDS = 4
MASK64 = (1 << 64) - 1


class Fault(enum.IntEnum):
    """Fault codes of ``STATUS.FAULT_CODE`` (docs/isa.md §5)."""
    NONE = 0
    BAD_MAGIC = 1
    BAD_VERSION = 2
    RESOURCES = 3
    ILLEGAL_FIELD = 4
    ADDR_RANGE = 5
    MISALIGNED = 6
    RANGE_ORDER = 7
    WATCHDOG = 8
    TRUNCATED = 9


class SrcKind(enum.IntEnum):
    IMM = 0
    ARG = 1
    STREAM = 2
    INDEX = 3


class StreamKind(enum.IntEnum):
    MEM = 0
    ALU = 1
    FWD = 2


class AluOp(enum.IntEnum):
    ADD = 0
    SUB = 1
    MUL = 2
    SHL = 3
    SHR = 4
    SRA = 5
    AND = 6
    OR = 7
    XOR = 8
    MIN = 9
    MAX = 10
    LT = 11
    EQ = 12


class Event(enum.IntEnum):
    BEGIN = 0
    ITER = 1
    END = 2


class ActionKind(enum.IntEnum):
    OPERAND = 0
    CONTROL = 1


class ProgramError(ValueError):
    """A malformed program, as the decoder sees it.

    Attributes
    ----------
    code : Fault
        The fault code the RTL decoder sets for the same program.
    pc : int
        Index of the offending 32-bit word (for ``TRUNCATED``: the program length in words).
    """

    def __init__(self, code: Fault, pc: int, message: str):
        self.code = Fault(code)
        self.pc = pc
        super().__init__(f"word {pc}: {message} (fault {self.code.name})")


def _to_signed64(value: int) -> int:
    value &= MASK64
    return value - (1 << 64) if value >> 63 else value


# --------------------------------------------------------------------------------------------
# Sources
# --------------------------------------------------------------------------------------------

@dataclass(frozen=True)
class Source:
    """One operand: an immediate, an argument register, a stream or a layer's index.

    ``value`` is the signed immediate (``IMM``), the argument register (``ARG``), the stream id
    (``STREAM``) or the layer number (``INDEX``).
    """
    kind: SrcKind
    value: int

    @staticmethod
    def imm(value: int) -> "Source":
        if not IMM_MIN <= value <= IMM_MAX:
            raise ValueError(f"immediate must be in [{IMM_MIN}, {IMM_MAX}], not {value!r}; "
                             f"pass it in an argument register")
        return Source(SrcKind.IMM, value)

    @staticmethod
    def arg(n: int) -> "Source":
        return Source(SrcKind.ARG, n)

    @staticmethod
    def stream(n: int) -> "Source":
        return Source(SrcKind.STREAM, n)

    @staticmethod
    def index(layer: int) -> "Source":
        return Source(SrcKind.INDEX, layer)

    def encode(self) -> int:
        if self.kind == SrcKind.IMM:
            if not IMM_MIN <= self.value <= IMM_MAX:
                raise ValueError(f"immediate must be in [{IMM_MIN}, {IMM_MAX}], not {self.value!r}")
            return (int(self.kind) << 28) | (self.value & 0x0FFF_FFFF)
        if not 0 <= self.value <= 0xFF:
            raise ValueError(f"{self.kind.name.lower()} number must be in [0, 255], not {self.value!r}")
        return (int(self.kind) << 28) | self.value

    @staticmethod
    def decode(word: int, pc: int) -> "Source":
        kind = word >> 28
        if kind > SrcKind.INDEX:
            raise ProgramError(Fault.ILLEGAL_FIELD, pc, f"source kind must be 0..3, not {kind}")
        if kind == SrcKind.IMM:
            value = word & 0x0FFF_FFFF
            if value >> 27:
                value -= 1 << 28
            return Source(SrcKind.IMM, value)
        if word & 0x0FFF_FF00:
            raise ProgramError(Fault.ILLEGAL_FIELD, pc,
                               f"source {SrcKind(kind).name} has reserved bits set in {word:#010x}")
        return Source(SrcKind(kind), word & 0xFF)

    def __str__(self) -> str:
        prefix = {SrcKind.IMM: "#", SrcKind.ARG: "a", SrcKind.STREAM: "s", SrcKind.INDEX: "i"}
        return f"{prefix[self.kind]}{self.value}"

    @staticmethod
    def parse(text: str) -> "Source":
        m = re.fullmatch(r"([#asi])(-?\d+|-?0x[0-9a-fA-F]+)", text.strip())
        if not m:
            raise ValueError(f"source must look like #<imm>, a<n>, s<n> or i<n>, not {text!r}")
        kind = {"#": SrcKind.IMM, "a": SrcKind.ARG, "s": SrcKind.STREAM, "i": SrcKind.INDEX}[m[1]]
        value = int(m[2], 0)
        return Source.imm(value) if kind == SrcKind.IMM else Source(kind, value)


# --------------------------------------------------------------------------------------------
# Descriptors
# --------------------------------------------------------------------------------------------

@dataclass
class Layer:
    """A traversal unit: ``for i in range(lb, ub, step)``; ``check_order`` faults when ub < lb."""
    lb: Source
    ub: Source
    step: Source = field(default_factory=lambda: Source.imm(1))
    check_order: bool = False


@dataclass
class Region:
    """A granted memory region ``[base, base + size)`` in bytes; memory streams load only inside it."""
    base: Source
    size: Source


@dataclass
class Stream:
    """A stream of ``layer``: MEM loads ``size`` bytes at ``a + b*stride``; ALU ``op(a, b)``; FWD ``a``."""
    layer: int
    kind: StreamKind
    a: Source
    b: Source = field(default_factory=lambda: Source.imm(0))
    op: AluOp = AluOp.ADD
    size: int = 8           # MEM: element size in bytes (1, 2, 4, 8)
    signed: bool = False    # MEM: sign-extend the element
    stride: int = 0         # MEM: bytes per unit of b, signed 32-bit
    region: int = 0         # MEM: region id


@dataclass
class Action:
    """On ``event`` of ``layer``: push ``source`` (OPERAND) or ``callback`` id (CONTROL)."""
    layer: int
    event: Event
    kind: ActionKind
    source: Source | None = None
    callback: int = 0


@dataclass
class Limits:
    """Resources of one access-unit configuration (the RTL's constructor parameters)."""
    layers: int = 4
    regions: int = 4
    streams: int = 16
    actions: int = 16
    args: int = 16


def _field(word: int, lo: int, width: int) -> int:
    return (word >> lo) & ((1 << width) - 1)


@dataclass
class Program:
    """A version-0 access program. ``encode()`` gives the binary; ``Program.decode`` checks it."""
    layers: list[Layer] = field(default_factory=list)
    regions: list[Region] = field(default_factory=list)
    streams: list[Stream] = field(default_factory=list)
    actions: list[Action] = field(default_factory=list)
    n_args: int = 0

    # ---------------------------------------------------------------- binary
    def encode(self) -> bytes:
        """The program as little-endian 32-bit words (docs/isa.md §2). Validates first."""
        self.validate()
        words = [MAGIC, VERSION,
                 len(self.layers) | len(self.regions) << 8 | len(self.streams) << 16
                 | len(self.actions) << 24,
                 self.n_args]
        for n, layer in enumerate(self.layers):
            words += [n | int(layer.check_order) << 8,
                      layer.lb.encode(), layer.ub.encode(), layer.step.encode()]
        for n, region in enumerate(self.regions):
            words += [n, region.base.encode(), region.size.encode(), 0]
        for n, s in enumerate(self.streams):
            if s.kind == StreamKind.MEM:
                sub = (s.size.bit_length() - 1) | int(s.signed) << 2
                words += [n | s.layer << 8 | s.kind << 16 | sub << 20 | s.region << 24,
                          s.a.encode(), s.b.encode(), s.stride & 0xFFFF_FFFF]
            elif s.kind == StreamKind.ALU:
                words += [n | s.layer << 8 | s.kind << 16 | int(s.op) << 20,
                          s.a.encode(), s.b.encode(), 0]
            else:
                words += [n | s.layer << 8 | s.kind << 16, s.a.encode(), 0, 0]
        for a in self.actions:
            w0 = a.layer | int(a.event) << 8 | int(a.kind) << 10
            w1 = a.source.encode() if a.kind == ActionKind.OPERAND else a.callback
            words += [w0, w1, 0, 0]
        return struct.pack(f"<{len(words)}I", *words)

    @classmethod
    def decode(cls, data: bytes, limits: Limits | None = None) -> "Program":
        """Decode and check a binary program.

        Raises
        ------
        ProgramError
            With the fault code and PC the RTL decoder reports for the same bytes.
        """
        limits = limits or Limits()
        if len(data) % 4:
            raise ProgramError(Fault.TRUNCATED, len(data) // 4,
                               f"program length must be a multiple of 4 bytes, not {len(data)}")
        words = list(struct.unpack(f"<{len(data) // 4}I", data))
        n_words = len(words)
        if n_words < HEADER_WORDS:
            if n_words >= 1 and words[0] != MAGIC:
                raise ProgramError(Fault.BAD_MAGIC, 0, f"magic must be {MAGIC:#010x}, not {words[0]:#010x}")
            raise ProgramError(Fault.TRUNCATED, n_words,
                               f"program must have a {HEADER_WORDS}-word header, has {n_words} words")
        if words[0] != MAGIC:
            raise ProgramError(Fault.BAD_MAGIC, 0, f"magic must be {MAGIC:#010x}, not {words[0]:#010x}")
        if words[1] != VERSION:
            if words[1] & 0xFFFF != VERSION:
                raise ProgramError(Fault.BAD_VERSION, 1, f"version must be {VERSION}, not {words[1] & 0xFFFF}")
            raise ProgramError(Fault.ILLEGAL_FIELD, 1, "header word 1 has reserved bits set")
        n_layers, n_regions, n_streams, n_actions = (_field(words[2], 8 * k, 8) for k in range(4))
        n_args = words[3] & 0xFF
        if words[3] >> 8:
            raise ProgramError(Fault.ILLEGAL_FIELD, 3, "header word 3 has reserved bits set")
        for name, count, limit, pc in (("n_layers", n_layers, limits.layers, 2),
                                       ("n_regions", n_regions, limits.regions, 2),
                                       ("n_streams", n_streams, limits.streams, 2),
                                       ("n_actions", n_actions, limits.actions, 2),
                                       ("n_args", n_args, limits.args, 3)):
            if count > limit:
                raise ProgramError(Fault.RESOURCES, pc,
                                   f"{name} must be at most {limit} for this unit, not {count}")
        if n_layers == 0:
            raise ProgramError(Fault.RESOURCES, 2, "n_layers must be at least 1, not 0")
        expected = HEADER_WORDS + DESCRIPTOR_WORDS * (n_layers + n_regions + n_streams + n_actions)
        if n_words != expected:
            raise ProgramError(Fault.TRUNCATED, n_words,
                               f"header announces {expected} words, program has {n_words}")

        prog = cls(n_args=n_args)
        pc = HEADER_WORDS

        def src(at: int) -> Source:
            return Source.decode(words[at], at)

        def reserved(at: int, mask: int, what: str):
            if words[at] & mask:
                raise ProgramError(Fault.ILLEGAL_FIELD, at, f"{what} has reserved bits set: {words[at]:#010x}")

        for n in range(n_layers):
            w0 = words[pc]
            if w0 & 0xFF != n:
                raise ProgramError(Fault.ILLEGAL_FIELD, pc, f"layer id must be {n}, not {w0 & 0xFF}")
            reserved(pc, 0xFFFF_FE00, "layer word 0")
            prog.layers.append(Layer(src(pc + 1), src(pc + 2), src(pc + 3), bool(w0 >> 8 & 1)))
            pc += 4
        for n in range(n_regions):
            if words[pc] & 0xFF != n:
                raise ProgramError(Fault.ILLEGAL_FIELD, pc, f"region id must be {n}, not {words[pc] & 0xFF}")
            reserved(pc, 0xFFFF_FF00, "region word 0")
            reserved(pc + 3, 0xFFFF_FFFF, "region word 3")
            prog.regions.append(Region(src(pc + 1), src(pc + 2)))
            pc += 4
        for n in range(n_streams):
            w0 = words[pc]
            if w0 & 0xFF != n:
                raise ProgramError(Fault.ILLEGAL_FIELD, pc, f"stream id must be {n}, not {w0 & 0xFF}")
            layer, kind, sub, region = _field(w0, 8, 8), _field(w0, 16, 4), _field(w0, 20, 4), _field(w0, 24, 8)
            if kind > StreamKind.FWD:
                raise ProgramError(Fault.ILLEGAL_FIELD, pc, f"stream kind must be 0..2, not {kind}")
            kind = StreamKind(kind)
            if kind == StreamKind.MEM:
                if sub & 0b1000:
                    raise ProgramError(Fault.ILLEGAL_FIELD, pc, "MEM stream bit 23 is reserved")
                stride = words[pc + 3]
                stride = stride - (1 << 32) if stride >> 31 else stride
                prog.streams.append(Stream(layer, kind, src(pc + 1), src(pc + 2), size=1 << (sub & 3),
                                           signed=bool(sub & 4), stride=stride, region=region))
            elif kind == StreamKind.ALU:
                if sub > max(AluOp):
                    raise ProgramError(Fault.ILLEGAL_FIELD, pc, f"ALU op must be 0..{int(max(AluOp))}, not {sub}")
                if region:
                    raise ProgramError(Fault.ILLEGAL_FIELD, pc, "ALU stream bits [31:24] are reserved")
                reserved(pc + 3, 0xFFFF_FFFF, "ALU stream word 3")
                prog.streams.append(Stream(layer, kind, src(pc + 1), src(pc + 2), op=AluOp(sub)))
            else:
                if sub or region:
                    raise ProgramError(Fault.ILLEGAL_FIELD, pc, "FWD stream bits [31:20] are reserved")
                reserved(pc + 2, 0xFFFF_FFFF, "FWD stream word 2")
                reserved(pc + 3, 0xFFFF_FFFF, "FWD stream word 3")
                prog.streams.append(Stream(layer, kind, src(pc + 1)))
            pc += 4
        for n in range(n_actions):
            w0 = words[pc]
            layer, event, kind = w0 & 0xFF, _field(w0, 8, 2), _field(w0, 10, 2)
            reserved(pc, 0xFFFF_F000, "action word 0")
            if event > Event.END:
                raise ProgramError(Fault.ILLEGAL_FIELD, pc, f"action event must be 0..2, not {event}")
            if kind > ActionKind.CONTROL:
                raise ProgramError(Fault.ILLEGAL_FIELD, pc, f"action kind must be 0..1, not {kind}")
            reserved(pc + 2, 0xFFFF_FFFF, "action word 2")
            reserved(pc + 3, 0xFFFF_FFFF, "action word 3")
            if kind == ActionKind.OPERAND:
                prog.actions.append(Action(layer, Event(event), ActionKind.OPERAND, source=src(pc + 1)))
            else:
                reserved(pc + 1, 0xFFFF_0000, "control action word 1")
                cb = words[pc + 1]
                if cb > MAX_CALLBACK_ID:
                    raise ProgramError(Fault.ILLEGAL_FIELD, pc + 1,
                                       f"callback id must be at most {MAX_CALLBACK_ID:#x}, not {cb:#x}")
                prog.actions.append(Action(layer, Event(event), ActionKind.CONTROL, callback=cb))
            pc += 4
        prog._check_semantics()
        return prog

    # ---------------------------------------------------------------- checks
    def _pc(self, section: str, n: int, word: int = 0) -> int:
        base = HEADER_WORDS
        order = ["layers", "regions", "streams", "actions"]
        for name in order:
            if name == section:
                return base + DESCRIPTOR_WORDS * n + word
            base += DESCRIPTOR_WORDS * len(getattr(self, name))
        raise AssertionError(section)

    def _check_source(self, s: Source, pc: int, *, index_le: int,
                      stream_ok, what: str) -> None:
        def bad(msg):
            raise ProgramError(Fault.ILLEGAL_FIELD, pc, f"{what}: {msg}")
        if s.kind == SrcKind.ARG and s.value >= self.n_args:
            bad(f"argument register must be below n_args={self.n_args}, not a{s.value}")
        if s.kind == SrcKind.INDEX and not s.value <= index_le:
            bad(f"index i{s.value} is not visible here (layers up to {index_le})")
        if s.kind == SrcKind.STREAM:
            if s.value >= len(self.streams):
                bad(f"stream s{s.value} does not exist ({len(self.streams)} streams)")
            if not stream_ok(s.value):
                bad(f"stream s{s.value} is not visible here")

    def _check_semantics(self) -> None:
        n_layers = len(self.layers)
        for n, layer in enumerate(self.layers):
            pc = self._pc("layers", n)
            for word, (name, s) in enumerate((("lb", layer.lb), ("ub", layer.ub)), start=1):
                self._check_source(s, pc + word, index_le=n - 1,
                                   stream_ok=lambda sid, n=n: self.streams[sid].layer < n,
                                   what=f"layer {n} {name}")
            if layer.step.kind != SrcKind.IMM or layer.step.value <= 0:
                raise ProgramError(Fault.ILLEGAL_FIELD, pc + 3,
                                   f"layer {n} step must be an immediate > 0, not {layer.step}")
        for n, region in enumerate(self.regions):
            pc = self._pc("regions", n)
            for word, s in ((1, region.base), (2, region.size)):
                if s.kind not in (SrcKind.IMM, SrcKind.ARG):
                    raise ProgramError(Fault.ILLEGAL_FIELD, pc + word,
                                       f"region {n} base/size must be an immediate or argument, not {s}")
                self._check_source(s, pc + word, index_le=-1, stream_ok=lambda sid: False,
                                   what=f"region {n}")
        for n, s in enumerate(self.streams):
            pc = self._pc("streams", n)
            if s.layer >= n_layers:
                raise ProgramError(Fault.ILLEGAL_FIELD, pc,
                                   f"stream {n} layer must be below n_layers={n_layers}, not {s.layer}")
            if s.kind == StreamKind.MEM and s.region >= len(self.regions):
                raise ProgramError(Fault.ILLEGAL_FIELD, pc,
                                   f"stream {n} region must be below n_regions={len(self.regions)}, not {s.region}")
            ops = [(1, s.a)] + ([] if s.kind == StreamKind.FWD else [(2, s.b)])
            for word, op in ops:
                self._check_source(op, pc + word, index_le=s.layer,
                                   stream_ok=lambda sid, n=n, L=s.layer: (self.streams[sid].layer < L
                                                                           or (self.streams[sid].layer == L and sid < n)),
                                   what=f"stream {n}")
        for n, a in enumerate(self.actions):
            pc = self._pc("actions", n)
            if a.layer >= n_layers:
                raise ProgramError(Fault.ILLEGAL_FIELD, pc,
                                   f"action {n} layer must be below n_layers={n_layers}, not {a.layer}")
            if a.kind == ActionKind.OPERAND:
                limit = a.layer if a.event == Event.ITER else a.layer - 1
                self._check_source(a.source, pc + 1, index_le=limit,
                                   stream_ok=lambda sid, limit=limit: self.streams[sid].layer <= limit,
                                   what=f"action {n} ({a.event.name})")

    def validate(self, limits: Limits | None = None) -> None:
        """Check the program against the format and, if given, a unit's resources.

        Raises ``ProgramError`` exactly where ``decode`` of the encoded program would, plus
        ``ValueError`` for fields that cannot be encoded at all (an out-of-range stride, size or id).
        """
        limits = limits or Limits(layers=255, regions=255, streams=255, actions=255, args=255)
        for name, count, limit in (("layers", len(self.layers), limits.layers),
                                   ("regions", len(self.regions), limits.regions),
                                   ("streams", len(self.streams), limits.streams),
                                   ("actions", len(self.actions), limits.actions),
                                   ("n_args", self.n_args, limits.args)):
            if count > limit:
                raise ProgramError(Fault.RESOURCES, 2 if name != "n_args" else 3,
                                   f"{name} must be at most {limit} for this unit, not {count}")
        if not self.layers:
            raise ProgramError(Fault.RESOURCES, 2, "n_layers must be at least 1, not 0")
        for n, s in enumerate(self.streams):
            if s.kind == StreamKind.MEM:
                if s.size not in (1, 2, 4, 8):
                    raise ValueError(f"stream {n} size must be 1, 2, 4 or 8 bytes, not {s.size!r}")
                if not -(1 << 31) <= s.stride < (1 << 31):
                    raise ValueError(f"stream {n} stride must fit in 32 bits signed, not {s.stride!r}")
            if not 0 <= s.region <= 255 or not 0 <= s.layer <= 255:
                raise ValueError(f"stream {n} layer/region must be in [0, 255]")
        for n, a in enumerate(self.actions):
            if a.kind == ActionKind.CONTROL and not 0 <= a.callback <= MAX_CALLBACK_ID:
                raise ValueError(f"action {n} callback id must be in [0, {MAX_CALLBACK_ID:#x}], not {a.callback!r}")
            if a.kind == ActionKind.OPERAND and a.source is None:
                raise ValueError(f"action {n} is an OPERAND action without a source")
        self._check_semantics()

    # ---------------------------------------------------------------- assembly text
    def to_asm(self) -> str:
        """The readable form of docs/isa.md §6; ``Program.from_asm`` reads it back."""
        out = [f".version {VERSION}", f".args {self.n_args}"]
        for n, layer in enumerate(self.layers):
            line = f"layer {n}  lb={layer.lb} ub={layer.ub} step={layer.step}"
            out.append(line + (" check_order" if layer.check_order else ""))
        for n, r in enumerate(self.regions):
            out.append(f"region {n} base={r.base} size={r.size}")
        for n, s in enumerate(self.streams):
            if s.kind == StreamKind.MEM:
                out.append(f"stream {n} layer={s.layer} mem  region={s.region} a={s.a} b={s.b} "
                           f"stride={s.stride} size={s.size}" + (" signed" if s.signed else ""))
            elif s.kind == StreamKind.ALU:
                out.append(f"stream {n} layer={s.layer} alu  {s.op.name.lower()} a={s.a} b={s.b}")
            else:
                out.append(f"stream {n} layer={s.layer} fwd  a={s.a}")
        for a in self.actions:
            what = f"operand {a.source}" if a.kind == ActionKind.OPERAND else f"control {a.callback}"
            out.append(f"action layer={a.layer} {a.event.name.lower()} {what}")
        return "\n".join(out) + "\n"

    @classmethod
    def from_asm(cls, text: str) -> "Program":
        """Assemble the text form. Raises ``ValueError`` naming the line number and the bad token."""
        prog = cls()
        for lineno, raw in enumerate(text.splitlines(), start=1):
            line = _strip_comment(raw)
            if not line:
                continue
            try:
                _assemble_line(prog, line)
            except (ValueError, KeyError, IndexError) as e:
                raise ValueError(f"line {lineno}: {e}: {raw.strip()!r}") from None
        prog.validate()
        return prog


def _strip_comment(raw: str) -> str:
    # '#' starts a comment unless it begins an immediate ('#5', '#-3' right after '=' or a space
    # inside an operand field); comments are '#' followed by a space or at the start of a line.
    out = []
    tokens = raw.strip().split()
    for tok in tokens:
        if tok.startswith("#") and not re.fullmatch(r"#-?(0x[0-9a-fA-F]+|\d+)", tok):
            break
        out.append(tok)
    return " ".join(out)


def _kv(tokens: list[str]) -> tuple[dict[str, str], list[str]]:
    kv, flags = {}, []
    for tok in tokens:
        if "=" in tok:
            k, v = tok.split("=", 1)
            kv[k] = v
        else:
            flags.append(tok)
    return kv, flags


def _assemble_line(prog: Program, line: str) -> None:
    tokens = line.split()
    head = tokens[0]
    if head == ".version":
        if int(tokens[1]) != VERSION:
            raise ValueError(f"version must be {VERSION}, not {tokens[1]}")
    elif head == ".args":
        prog.n_args = int(tokens[1])
    elif head == "layer":
        n = int(tokens[1])
        if n != len(prog.layers):
            raise ValueError(f"layer {len(prog.layers)} expected next, not {n}")
        kv, flags = _kv(tokens[2:])
        if set(flags) - {"check_order"}:
            raise ValueError(f"unknown layer flag {sorted(set(flags) - {'check_order'})[0]!r}")
        prog.layers.append(Layer(Source.parse(kv["lb"]), Source.parse(kv["ub"]),
                                 Source.parse(kv.get("step", "#1")), "check_order" in flags))
    elif head == "region":
        n = int(tokens[1])
        if n != len(prog.regions):
            raise ValueError(f"region {len(prog.regions)} expected next, not {n}")
        kv, _ = _kv(tokens[2:])
        prog.regions.append(Region(Source.parse(kv["base"]), Source.parse(kv["size"])))
    elif head == "stream":
        n = int(tokens[1])
        if n != len(prog.streams):
            raise ValueError(f"stream {len(prog.streams)} expected next, not {n}")
        kv, flags = _kv(tokens[2:])
        kind = flags[0]
        layer = int(kv["layer"])
        if kind == "mem":
            prog.streams.append(Stream(layer, StreamKind.MEM, Source.parse(kv["a"]), Source.parse(kv["b"]),
                                       size=int(kv.get("size", "8")), signed="signed" in flags,
                                       stride=int(kv.get("stride", "0"), 0), region=int(kv.get("region", "0"))))
        elif kind == "alu":
            op = AluOp[flags[1].upper()]
            prog.streams.append(Stream(layer, StreamKind.ALU, Source.parse(kv["a"]), Source.parse(kv["b"]), op=op))
        elif kind == "fwd":
            prog.streams.append(Stream(layer, StreamKind.FWD, Source.parse(kv["a"])))
        else:
            raise ValueError(f"stream kind must be mem, alu or fwd, not {kind!r}")
    elif head == "action":
        kv, flags = _kv(tokens[1:])
        layer = int(kv["layer"])
        event = Event[flags[0].upper()]
        if flags[1] == "operand":
            prog.actions.append(Action(layer, event, ActionKind.OPERAND, source=Source.parse(flags[2])))
        elif flags[1] == "control":
            prog.actions.append(Action(layer, event, ActionKind.CONTROL, callback=int(flags[2], 0)))
        else:
            raise ValueError(f"action kind must be operand or control, not {flags[1]!r}")
    else:
        raise ValueError(f"unknown directive {head!r}")
