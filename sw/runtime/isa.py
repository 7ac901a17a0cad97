"""The binary access program, versions 0 and 1: encoder, decoder, assembler and disassembler.

The format is specified bit by bit in ``docs/isa.md`` (§§1–6 version 0, §7 version 1, the vector
extension); its codes and bit positions are the tables of ``sw/runtime/isa_fields.py`` (from which
``hw/tmu/isa.py`` builds its Amaranth layouts too), and this module packs and unpacks words with
them. The RTL decoder (``hw/tmu``) implements the same checks and reports the same fault codes.

A :class:`Program` is a plain data structure (layers, regions, streams, actions, version);
``encode`` turns it into little-endian 32-bit words, ``Program.decode`` turns words back into a
program or raises :class:`ProgramError` naming the word (PC), the field and the bad value, with the
fault code the RTL would set. :class:`Limits` describes one access-unit configuration (resources,
ISA versions and v1 features it implements); ``configs/*.json`` hold the project's configurations
(``Limits.from_file``).
"""

from __future__ import annotations

import enum
import json
import os
import re
import struct
from dataclasses import dataclass, field, fields
from typing import Iterable

from .isa_fields import (CONTROL_BITS, DATA_BITS, DESCRIPTOR_WORDS, DONE_TOKEN, ENUMS, HEADER_WORDS,
                         IMM_BITS, MAGIC, MAX_CALLBACK_ID, VERSION, VERSION_V1, VERSIONS, pack,
                         reserved_mask, unpack)

__all__ = [
    "MAGIC", "VERSION", "VERSION_V1", "VERSIONS", "DONE_TOKEN", "MAX_CALLBACK_ID", "IMM_MIN",
    "IMM_MAX", "DATA_BITS", "CONTROL_BITS",
    "Fault", "SrcKind", "Source", "StreamKind", "AluOp", "Event", "ActionKind", "LayerMode",
    "Feature", "Layer", "Region", "Stream", "Action", "Program", "ProgramError", "Limits",
    "CONFIG_DIR",
]

IMM_MIN = -(1 << (IMM_BITS - 1))   # signed 28-bit immediate range of a source word
IMM_MAX = (1 << (IMM_BITS - 1)) - 1
MASK64 = (1 << 64) - 1
WORD_MASK = (1 << 32) - 1          # a descriptor word that is reserved as a whole
MAX_LANES = 256             # the lanes-1 field is 8 bits wide
CONFIG_DIR = os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))),
                          "configs")


def _int_enum(name: str, table: str) -> type[enum.IntEnum]:
    """The ``IntEnum`` of the entry ``table`` of ``isa_fields.ENUMS``."""
    _, members, doc = ENUMS[table]
    cls = enum.IntEnum(name, members, module=__name__, qualname=name)
    cls.__doc__ = doc
    return cls


# The codes of docs/isa.md, generated from sw/runtime/isa_fields.py (as are hw/tmu/isa.py's).
Fault = _int_enum("Fault", "FaultCode")
SrcKind = _int_enum("SrcKind", "SourceKind")
StreamKind = _int_enum("StreamKind", "StreamKind")
AluOp = _int_enum("AluOp", "AluOp")
Event = _int_enum("Event", "Event")
ActionKind = _int_enum("ActionKind", "ActionKind")
LayerMode = _int_enum("LayerMode", "LayerMode")


class Feature(str, enum.Enum):
    """Version-1 features a unit may implement (``Limits.features``; docs/isa.md §7.7)."""
    LOCKSTEP = "lockstep"     # LOCKSTEP layers (lanes > 1)
    BROADCAST = "broadcast"   # BROADCAST layers
    BLOCK = "block"           # BLOCK memory streams
    PACK = "pack"             # operand packing (pack != 0) and JOIN


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

_PREFIX = {SrcKind.IMM: "#", SrcKind.ARG: "a", SrcKind.STREAM: "s", SrcKind.INDEX: "i",
           SrcKind.COUNT: "c", SrcKind.FIRST: "f"}
_LAYER_KINDS = (SrcKind.INDEX, SrcKind.COUNT, SrcKind.FIRST)
_SOURCE_RESERVED = reserved_mask("SourceNumber")


@dataclass(frozen=True)
class Source:
    """One operand: an immediate, an argument register, a stream, or a layer's index/count/first.

    ``value`` is the signed immediate (``IMM``), the argument register (``ARG``), the stream id
    (``STREAM``) or the layer number (``INDEX``, ``COUNT``, ``FIRST``).
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

    @staticmethod
    def count(layer: int) -> "Source":
        """Version 1: the number of active lanes of ``layer``'s current iteration."""
        return Source(SrcKind.COUNT, layer)

    @staticmethod
    def first(layer: int) -> "Source":
        """Version 1: the index of lane 0 of ``layer``'s current iteration."""
        return Source(SrcKind.FIRST, layer)

    def encode(self) -> int:
        if self.kind == SrcKind.IMM:
            if not IMM_MIN <= self.value <= IMM_MAX:
                raise ValueError(f"immediate must be in [{IMM_MIN}, {IMM_MAX}], not {self.value!r}")
            return pack("Source", kind=self.kind, value=self.value & ((1 << IMM_BITS) - 1))
        if not 0 <= self.value <= 0xFF:
            raise ValueError(f"{self.kind.name.lower()} number must be in [0, 255], not {self.value!r}")
        return pack("SourceNumber", kind=self.kind, number=self.value)

    @staticmethod
    def decode(word: int, pc: int, version: int = 0) -> "Source":
        f = unpack("Source", word)
        kind = f["kind"]
        last = SrcKind.INDEX if version == 0 else SrcKind.FIRST
        if kind > last:
            raise ProgramError(Fault.ILLEGAL_FIELD, pc, f"source kind must be 0..{int(last)}, not {kind}")
        if kind == SrcKind.IMM:
            value = f["value"]
            if value >> (IMM_BITS - 1):
                value -= 1 << IMM_BITS
            return Source(SrcKind.IMM, value)
        if word & _SOURCE_RESERVED:
            raise ProgramError(Fault.ILLEGAL_FIELD, pc,
                               f"source {SrcKind(kind).name} has reserved bits set in {word:#010x}")
        return Source(SrcKind(kind), unpack("SourceNumber", word)["number"])

    def __str__(self) -> str:
        return f"{_PREFIX[self.kind]}{self.value}"

    @staticmethod
    def parse(text: str) -> "Source":
        m = re.fullmatch(r"([#asicf])(-?\d+|-?0x[0-9a-fA-F]+)", text.strip())
        if not m:
            raise ValueError(f"source must look like #<imm>, a<n>, s<n>, i<n>, c<n> or f<n>, "
                             f"not {text!r}")
        kind = {v: k for k, v in _PREFIX.items()}[m[1]]
        value = int(m[2], 0)
        return Source.imm(value) if kind == SrcKind.IMM else Source(kind, value)


# --------------------------------------------------------------------------------------------
# Descriptors
# --------------------------------------------------------------------------------------------

@dataclass
class Layer:
    """A traversal unit: ``for i in range(lb, ub, step)``; ``check_order`` faults when ub < lb.

    Version 1: ``mode`` (:class:`LayerMode`) and ``lanes`` (1 … 256; > 1 only for ``LOCKSTEP``,
    whose vector iteration covers ``lanes`` consecutive iterations, docs/isa.md §7.2).
    """
    lb: Source
    ub: Source
    step: Source = field(default_factory=lambda: Source.imm(1))
    check_order: bool = False
    mode: LayerMode = LayerMode.SINGLE
    lanes: int = 1


@dataclass
class Region:
    """A granted memory region ``[base, base + size)`` in bytes; memory streams load only inside it."""
    base: Source
    size: Source


@dataclass
class Stream:
    """A stream of ``layer``: MEM loads ``size`` bytes at ``a + b*stride``; ALU ``op(a, b)``; FWD ``a``.

    Version 1: a ``block`` MEM stream loads ``count`` (a source) consecutive elements starting at
    byte address ``a + b*size`` as one value (docs/isa.md §7.4); ``stride`` is unused then.
    """
    layer: int
    kind: StreamKind
    a: Source
    b: Source = field(default_factory=lambda: Source.imm(0))
    op: AluOp = AluOp.ADD
    size: int = 8           # MEM: element size in bytes (1, 2, 4, 8)
    signed: bool = False    # MEM: sign-extend the element
    stride: int = 0         # MEM: bytes per unit of b, signed 32-bit
    region: int = 0         # MEM: region id
    block: bool = False     # MEM, v1: a row of `count` elements
    count: Source | None = None  # MEM block, v1: element count source (descriptor word 3)


@dataclass
class Action:
    """On ``event`` of ``layer``: push ``source`` (OPERAND) or ``callback`` id (CONTROL).

    Version 1: ``pack`` p packs ``2**p`` elements of ``64 >> p`` bits per data token, ``join``
    keeps the partial token open for the next operand action of the firing (docs/isa.md §7.5).
    """
    layer: int
    event: Event
    kind: ActionKind
    source: Source | None = None
    callback: int = 0
    pack: int = 0
    join: bool = False

    @property
    def esize(self) -> int:
        """Bytes per packed element (8, 4, 2, 1)."""
        return 8 >> self.pack


# --------------------------------------------------------------------------------------------
# Unit configuration
# --------------------------------------------------------------------------------------------

_COUNT_FIELDS = ("layers", "regions", "streams", "actions", "args")


@dataclass
class Limits:
    """Resources and ISA support of one access-unit configuration.

    The RTL's ``hw.tmu.config.TmuConfig`` parameters ``layers``, ``regions``, ``streams``,
    ``actions`` and ``args`` are the first five fields; the rest say which ISA versions and
    version-1 features (docs/isa.md §7.9) the unit implements. ``configs/*.json`` hold the
    project's configurations (:meth:`from_file`, :meth:`to_file`).

    Parameters
    ----------
    layers, regions, streams, actions, args : int
        Layers (traversal units), granted regions, stream slots, marshaling action slots, 64-bit
        argument registers. Each 1 … 255.
    versions : tuple of int
        ISA versions the decoder accepts (a subset of ``VERSIONS``, must contain 0).
    lanes : int
        Most lanes of one ``LOCKSTEP`` layer, 1 … 256 (1: no vector layers).
    features : frozenset of Feature
        Version-1 features implemented; non-empty only when 1 is in ``versions``.
    streams_per_layer : int or None
        Stream slots one layer may use (None: any number of the ``streams`` pool).
    max_block : int
        Most elements of one block stream's row (0 without ``Feature.BLOCK``).
    data_bits, control_bits : int
        Output-queue token widths in bits; the ISA fixes them to 64 and 16.
    name : str
        A label (the configuration file's name).

    Raises
    ------
    ValueError
        A field out of its legal range, worded ``"<field> must be <rule>, not <value>"``.
    """
    layers: int = 4
    regions: int = 4
    streams: int = 16
    actions: int = 16
    args: int = 16
    versions: tuple = (0,)
    lanes: int = 1
    features: frozenset = frozenset()
    streams_per_layer: int | None = None
    max_block: int = 0
    data_bits: int = DATA_BITS
    control_bits: int = CONTROL_BITS
    name: str = ""

    def __post_init__(self):
        for name in _COUNT_FIELDS:
            value = getattr(self, name)
            if not isinstance(value, int) or isinstance(value, bool) or not 1 <= value <= 255:
                raise ValueError(f"{name} must be an integer in 1..255, not {value!r}")
        versions = tuple(self.versions)
        if not versions or any(v not in VERSIONS for v in versions) or 0 not in versions:
            raise ValueError(f"versions must be a list of ISA versions from {list(VERSIONS)} "
                             f"containing 0, not {self.versions!r}")
        self.versions = tuple(sorted(set(versions)))
        try:
            self.features = frozenset(Feature(f) for f in self.features)
        except ValueError:
            raise ValueError(f"features must be names from {[f.value for f in Feature]}, "
                             f"not {sorted(map(str, self.features))!r}") from None
        if self.features and 1 not in self.versions:
            raise ValueError(f"features must be empty when version 1 is not supported, "
                             f"not {sorted(f.value for f in self.features)!r}")
        if not isinstance(self.lanes, int) or not 1 <= self.lanes <= MAX_LANES:
            raise ValueError(f"lanes must be an integer in 1..{MAX_LANES}, not {self.lanes!r}")
        if self.lanes > 1 and Feature.LOCKSTEP not in self.features:
            raise ValueError(f"lanes must be 1 without the 'lockstep' feature, not {self.lanes!r}")
        if self.streams_per_layer is not None and (
                not isinstance(self.streams_per_layer, int) or not 1 <= self.streams_per_layer <= self.streams):
            raise ValueError(f"streams_per_layer must be an integer in 1..streams ({self.streams}) "
                             f"or null, not {self.streams_per_layer!r}")
        if not isinstance(self.max_block, int) or self.max_block < 0:
            raise ValueError(f"max_block must be an integer >= 0, not {self.max_block!r}")
        if (self.max_block > 0) != (Feature.BLOCK in self.features):
            raise ValueError(f"max_block must be > 0 exactly when the 'block' feature is present, "
                             f"not {self.max_block!r}")
        if self.data_bits != DATA_BITS:
            raise ValueError(f"data_bits must be {DATA_BITS} (the ISA's token width), not {self.data_bits!r}")
        if self.control_bits != CONTROL_BITS:
            raise ValueError(f"control_bits must be {CONTROL_BITS}, not {self.control_bits!r}")

    # ------------------------------------------------------------ derived
    @property
    def slots_per_layer(self) -> int:
        """Stream slots one layer may use."""
        return self.streams if self.streams_per_layer is None else self.streams_per_layer

    def supports(self, feature: Feature | str) -> bool:
        return Feature(feature) in self.features

    @classmethod
    def unlimited(cls) -> "Limits":
        """Everything the format can encode (what ``Program.validate`` checks by default)."""
        return cls(layers=255, regions=255, streams=255, actions=255, args=255, versions=VERSIONS,
                   lanes=MAX_LANES, features=frozenset(Feature), max_block=(1 << 32) - 1,
                   name="unlimited")

    # ------------------------------------------------------------ files
    def to_dict(self) -> dict:
        out = {}
        for f in fields(self):
            value = getattr(self, f.name)
            if f.name == "versions":
                value = list(value)
            elif f.name == "features":
                value = sorted(x.value for x in value)
            out[f.name] = value
        return out

    @classmethod
    def from_dict(cls, data: dict, *, where: str = "configuration") -> "Limits":
        """Build from a mapping of field names (``description`` is accepted and ignored).

        Raises
        ------
        ValueError
            An unknown key (named), or a field out of range.
        """
        if not isinstance(data, dict):
            raise ValueError(f"{where} must be a JSON object, not {type(data).__name__}")
        known = {f.name for f in fields(cls)}
        for key in data:
            if key not in known and key != "description":
                raise ValueError(f"{where}: unknown key {key!r} (known: {', '.join(sorted(known))})")
        kwargs = {k: v for k, v in data.items() if k in known}
        if "versions" in kwargs:
            kwargs["versions"] = tuple(kwargs["versions"])
        if "features" in kwargs:
            kwargs["features"] = frozenset(kwargs["features"])
        try:
            return cls(**kwargs)
        except ValueError as e:
            raise ValueError(f"{where}: {e}") from None

    @classmethod
    def from_file(cls, path: str | os.PathLike) -> "Limits":
        """Load a JSON configuration (``configs/*.json``). A bare name such as ``tmu_rtl`` is
        looked up in the project's ``configs/`` directory.

        Raises
        ------
        FileNotFoundError
            No such file.
        ValueError
            Not JSON, not a JSON object, an unknown key, or a field out of range (the message
            names the file).
        """
        path = os.fspath(path)
        if not os.path.exists(path) and os.sep not in path and not path.endswith(".json"):
            candidate = os.path.join(CONFIG_DIR, path + ".json")
            if os.path.exists(candidate):
                path = candidate
        with open(path, encoding="utf-8") as fh:
            try:
                data = json.load(fh)
            except json.JSONDecodeError as e:
                raise ValueError(f"{path}: not valid JSON: {e}") from None
            except UnicodeDecodeError as e:
                raise ValueError(f"{path}: not valid JSON: not UTF-8 text (byte "
                                 f"0x{e.object[e.start]:02x} at offset {e.start})") from None
        if isinstance(data, dict):                  # from_dict refuses anything else
            data.setdefault("name", os.path.splitext(os.path.basename(path))[0])
        return cls.from_dict(data, where=path)

    @classmethod
    def from_tmu_config(cls, config) -> "Limits":
        """The limits of the RTL built with ``config`` (a ``hw.tmu.config.TmuConfig``, read by
        attribute, so this module does not import the hardware): resources, ISA versions, v1
        features, lanes, maximum block length. ``configs/tmu_rtl.json`` is
        ``Limits.from_tmu_config(TmuConfig())``.

        Raises
        ------
        ValueError
            A field out of range for the compiler (as the constructor does).
        """
        return cls(layers=config.layers, regions=config.regions, streams=config.streams,
                   actions=config.actions, args=config.args, versions=tuple(config.versions),
                   features=frozenset(config.features), lanes=config.lanes,
                   max_block=config.max_block)

    def to_file(self, path: str | os.PathLike, description: str = "") -> None:
        """Write the configuration as JSON (``from_file`` reads it back equal)."""
        data = self.to_dict()
        if description:
            data = {"description": description, **data}
        with open(path, "w", encoding="utf-8") as fh:
            json.dump(data, fh, indent=2, ensure_ascii=False)
            fh.write("\n")


# --------------------------------------------------------------------------------------------
# Program
# --------------------------------------------------------------------------------------------

@dataclass
class Program:
    """An access program of ``version`` 0 or 1. ``encode()`` gives the binary; ``Program.decode``
    checks it."""
    layers: list[Layer] = field(default_factory=list)
    regions: list[Region] = field(default_factory=list)
    streams: list[Stream] = field(default_factory=list)
    actions: list[Action] = field(default_factory=list)
    n_args: int = 0
    version: int = 0

    # ---------------------------------------------------------------- v1 usage
    def features_used(self) -> set[Feature]:
        """The version-1 features the program uses (empty for a plain v0 program)."""
        used = set()
        for layer in self.layers:
            if layer.mode == LayerMode.LOCKSTEP:
                used.add(Feature.LOCKSTEP)
            elif layer.mode == LayerMode.BROADCAST:
                used.add(Feature.BROADCAST)
        if any(s.block for s in self.streams):
            used.add(Feature.BLOCK)
        if any(a.pack or a.join for a in self.actions):
            used.add(Feature.PACK)
        return used

    def required_version(self) -> int:
        """1 if the program uses any version-1 field (a feature, a ``COUNT``/``FIRST`` source)."""
        if self.features_used() or any(layer.lanes != 1 for layer in self.layers):
            return 1
        for src in self._all_sources():
            if src.kind in (SrcKind.COUNT, SrcKind.FIRST):
                return 1
        return 0

    def _all_sources(self) -> Iterable[Source]:
        for layer in self.layers:
            yield from (layer.lb, layer.ub, layer.step)
        for r in self.regions:
            yield from (r.base, r.size)
        for s in self.streams:
            yield from (s.a, s.b)
            if s.count is not None:
                yield s.count
        for a in self.actions:
            if a.source is not None:
                yield a.source

    # ---------------------------------------------------------------- binary
    def encode(self) -> bytes:
        """The program as little-endian 32-bit words (docs/isa.md §2, §7). Validates first."""
        self.validate()
        words = [MAGIC, pack("VersionWord", version=self.version),
                 pack("CountsWord", n_layers=len(self.layers), n_regions=len(self.regions),
                      n_streams=len(self.streams), n_actions=len(self.actions)),
                 pack("ArgsWord", n_args=self.n_args)]
        for n, layer in enumerate(self.layers):
            # a version-0 program has mode SINGLE and one lane: LayerWord0V1 is LayerWord0 then
            words += [pack("LayerWord0V1", id=n, check_order=layer.check_order, mode=layer.mode,
                           lanes_m1=layer.lanes - 1),
                      layer.lb.encode(), layer.ub.encode(), layer.step.encode()]
        for n, region in enumerate(self.regions):
            words += [pack("RegionWord0", id=n), region.base.encode(), region.size.encode(), 0]
        for n, s in enumerate(self.streams):
            if s.kind == StreamKind.MEM:
                mode = pack("MemModeV1", log2_size=s.size.bit_length() - 1, sign=s.signed, block=s.block)
                w3 = s.count.encode() if s.block else s.stride & WORD_MASK
                words += [pack("StreamWord0", id=n, layer=s.layer, kind=s.kind, mode=mode, region=s.region),
                          s.a.encode(), s.b.encode(), w3]
            elif s.kind == StreamKind.ALU:
                words += [pack("StreamWord0", id=n, layer=s.layer, kind=s.kind, mode=s.op),
                          s.a.encode(), s.b.encode(), 0]
            else:
                words += [pack("StreamWord0", id=n, layer=s.layer, kind=s.kind), s.a.encode(), 0, 0]
        for a in self.actions:
            if a.kind == ActionKind.OPERAND:
                w0 = pack("OperandWord0V1", layer=a.layer, event=a.event, kind=a.kind, pack=a.pack,
                          join=a.join)
                w1 = a.source.encode()
            else:
                w0 = pack("ActionWord0", layer=a.layer, event=a.event, kind=a.kind)
                w1 = pack("ControlWord1", callback=a.callback)
            words += [w0, w1, 0, 0]
        return struct.pack(f"<{len(words)}I", *words)

    @classmethod
    def decode(cls, data: bytes, limits: Limits | None = None) -> "Program":
        """Decode and check a binary program against a unit's ``limits`` (default ``Limits()``,
        the RTL's default configuration: version 0 only).

        Raises
        ------
        ProgramError
            With the fault code and PC the RTL decoder reports for the same bytes
            (docs/isa.md §2 "Decode order", §7.7).
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
        version = unpack("VersionWord", words[1])["version"]
        if version not in limits.versions:
            allowed = (str(limits.versions[0]) if len(limits.versions) == 1
                       else "one of " + ", ".join(map(str, limits.versions)))
            raise ProgramError(Fault.BAD_VERSION, 1, f"version must be {allowed}, not {version}")
        if words[1] & reserved_mask("VersionWord"):
            raise ProgramError(Fault.ILLEGAL_FIELD, 1, "header word 1 has reserved bits set")
        v1 = version >= 1
        counts = unpack("CountsWord", words[2])
        n_layers, n_regions, n_streams, n_actions = (counts[name] for name in
                                                     ("n_layers", "n_regions", "n_streams", "n_actions"))
        n_args = unpack("ArgsWord", words[3])["n_args"]
        if words[3] & reserved_mask("ArgsWord"):
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

        prog = cls(n_args=n_args, version=version)
        pc = HEADER_WORDS

        def src(at: int) -> Source:
            return Source.decode(words[at], at, version)

        def reserved(at: int, mask: int, what: str):
            if words[at] & mask:
                raise ProgramError(Fault.ILLEGAL_FIELD, at, f"{what} has reserved bits set: {words[at]:#010x}")

        def unsupported(at: int, feature: Feature, what: str):
            if feature not in limits.features:
                raise ProgramError(Fault.RESOURCES, at, f"{what} needs the '{feature.value}' feature, "
                                                        f"which this unit does not implement")

        layer_word0 = "LayerWord0V1" if v1 else "LayerWord0"
        for n in range(n_layers):
            w0 = unpack(layer_word0, words[pc])
            if w0["id"] != n:
                raise ProgramError(Fault.ILLEGAL_FIELD, pc, f"layer id must be {n}, not {w0['id']}")
            reserved(pc, reserved_mask(layer_word0), "layer word 0")
            layer = Layer(src(pc + 1), src(pc + 2), src(pc + 3), bool(w0["check_order"]))
            if v1:
                mode, lanes = w0["mode"], w0["lanes_m1"] + 1
                if mode > LayerMode.BROADCAST:
                    raise ProgramError(Fault.ILLEGAL_FIELD, pc, f"layer {n} mode must be 0..2, not {mode}")
                mode = LayerMode(mode)
                if lanes != 1 and mode != LayerMode.LOCKSTEP:
                    raise ProgramError(Fault.ILLEGAL_FIELD, pc,
                                       f"layer {n} lanes must be 1 in mode {mode.name}, not {lanes}")
                if mode == LayerMode.LOCKSTEP:
                    unsupported(pc, Feature.LOCKSTEP, f"layer {n} (LOCKSTEP)")
                    if lanes > limits.lanes:
                        raise ProgramError(Fault.RESOURCES, pc, f"layer {n} lanes must be at most "
                                                                f"{limits.lanes} for this unit, not {lanes}")
                elif mode == LayerMode.BROADCAST:
                    unsupported(pc, Feature.BROADCAST, f"layer {n} (BROADCAST)")
                layer.mode, layer.lanes = mode, lanes
            prog.layers.append(layer)
            pc += 4
        for n in range(n_regions):
            region_id = unpack("RegionWord0", words[pc])["id"]
            if region_id != n:
                raise ProgramError(Fault.ILLEGAL_FIELD, pc, f"region id must be {n}, not {region_id}")
            reserved(pc, reserved_mask("RegionWord0"), "region word 0")
            reserved(pc + 3, WORD_MASK, "region word 3")
            prog.regions.append(Region(src(pc + 1), src(pc + 2)))
            pc += 4
        per_layer: dict[int, int] = {}
        for n in range(n_streams):
            w0 = unpack("StreamWord0", words[pc])
            if w0["id"] != n:
                raise ProgramError(Fault.ILLEGAL_FIELD, pc, f"stream id must be {n}, not {w0['id']}")
            layer, kind, sub, region = w0["layer"], w0["kind"], w0["mode"], w0["region"]
            if kind > StreamKind.FWD:
                raise ProgramError(Fault.ILLEGAL_FIELD, pc, f"stream kind must be 0..2, not {kind}")
            kind = StreamKind(kind)
            if kind == StreamKind.MEM:
                mem = unpack("MemModeV1", sub)
                block = bool(mem["block"])
                if block and not v1:
                    raise ProgramError(Fault.ILLEGAL_FIELD, pc, "MEM stream bit 23 is reserved")
                if block:
                    stream = Stream(layer, kind, src(pc + 1), src(pc + 2), size=1 << mem["log2_size"],
                                    signed=bool(mem["sign"]), region=region, block=True, count=src(pc + 3))
                    unsupported(pc, Feature.BLOCK, f"stream {n} (BLOCK)")
                else:
                    stride = words[pc + 3]
                    stride = stride - (1 << 32) if stride >> 31 else stride
                    stream = Stream(layer, kind, src(pc + 1), src(pc + 2), size=1 << mem["log2_size"],
                                    signed=bool(mem["sign"]), stride=stride, region=region)
            elif kind == StreamKind.ALU:
                if sub > max(AluOp):
                    raise ProgramError(Fault.ILLEGAL_FIELD, pc, f"ALU op must be 0..{int(max(AluOp))}, not {sub}")
                if region:
                    raise ProgramError(Fault.ILLEGAL_FIELD, pc, "ALU stream bits [31:24] are reserved")
                reserved(pc + 3, WORD_MASK, "ALU stream word 3")
                stream = Stream(layer, kind, src(pc + 1), src(pc + 2), op=AluOp(sub))
            else:
                if sub or region:
                    raise ProgramError(Fault.ILLEGAL_FIELD, pc, "FWD stream bits [31:20] are reserved")
                reserved(pc + 2, WORD_MASK, "FWD stream word 2")
                reserved(pc + 3, WORD_MASK, "FWD stream word 3")
                stream = Stream(layer, kind, src(pc + 1))
            per_layer[layer] = per_layer.get(layer, 0) + 1
            if per_layer[layer] > limits.slots_per_layer:
                raise ProgramError(Fault.RESOURCES, pc,
                                   f"streams of layer {layer} must be at most {limits.slots_per_layer} "
                                   f"for this unit (stream slots per layer), not {per_layer[layer]}")
            prog.streams.append(stream)
            pc += 4
        for n in range(n_actions):
            w0 = unpack("OperandWord0V1", words[pc])
            layer, event, kind = w0["layer"], w0["event"], w0["kind"]
            operand_v1 = v1 and kind == ActionKind.OPERAND
            reserved(pc, reserved_mask("OperandWord0V1" if operand_v1 else "ActionWord0"), "action word 0")
            if event > Event.END:
                raise ProgramError(Fault.ILLEGAL_FIELD, pc, f"action event must be 0..2, not {event}")
            if kind > ActionKind.CONTROL:
                raise ProgramError(Fault.ILLEGAL_FIELD, pc, f"action kind must be 0..1, not {kind}")
            reserved(pc + 2, WORD_MASK, "action word 2")
            reserved(pc + 3, WORD_MASK, "action word 3")
            if kind == ActionKind.OPERAND:
                action = Action(layer, Event(event), ActionKind.OPERAND, source=src(pc + 1),
                                pack=w0["pack"], join=bool(w0["join"]))
                if action.pack or action.join:
                    unsupported(pc, Feature.PACK, f"action {n} (pack/JOIN)")
                prog.actions.append(action)
            else:
                reserved(pc + 1, reserved_mask("ControlWord1"), "control action word 1")
                cb = unpack("ControlWord1", words[pc + 1])["callback"]
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
                      stream_ok, what: str, lockstep_reader: int | None = None,
                      block_ok: bool = False) -> None:
        def bad(msg):
            raise ProgramError(Fault.ILLEGAL_FIELD, pc, f"{what}: {msg}")
        if s.kind == SrcKind.ARG and s.value >= self.n_args:
            bad(f"argument register must be below n_args={self.n_args}, not a{s.value}")
        if s.kind in _LAYER_KINDS and not s.value <= index_le:
            noun = {SrcKind.INDEX: "index", SrcKind.COUNT: "count", SrcKind.FIRST: "first index"}[s.kind]
            bad(f"{noun} {s} is not visible here (layers up to {index_le})")
        if s.kind == SrcKind.STREAM:
            if s.value >= len(self.streams):
                bad(f"stream s{s.value} does not exist ({len(self.streams)} streams)")
            if not stream_ok(s.value):
                bad(f"stream s{s.value} is not visible here")
            if self.streams[s.value].block and not block_ok:
                bad(f"block stream s{s.value} may only be pushed by an operand action")
        if lockstep_reader is not None and s.kind in (SrcKind.STREAM, *_LAYER_KINDS):
            layer = self.streams[s.value].layer if s.kind == SrcKind.STREAM else s.value
            if layer < lockstep_reader and self.layers[layer].mode != LayerMode.BROADCAST:
                bad(f"{s} of layer {layer} reaches the lanes of LOCKSTEP layer {lockstep_reader} "
                    f"only if layer {layer} is BROADCAST, not {self.layers[layer].mode.name}")

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
            if layer.mode == LayerMode.LOCKSTEP and n != n_layers - 1:
                raise ProgramError(Fault.ILLEGAL_FIELD, pc,
                                   f"layer {n} is LOCKSTEP but not the last layer ({n_layers} layers)")
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
            lockstep = self.layers[s.layer].mode == LayerMode.LOCKSTEP
            if s.block and lockstep:
                raise ProgramError(Fault.ILLEGAL_FIELD, pc,
                                   f"stream {n} is a block stream of LOCKSTEP layer {s.layer}; "
                                   f"block streams belong to SINGLE or BROADCAST layers")
            ops = [(1, s.a)] + ([] if s.kind == StreamKind.FWD else [(2, s.b)])
            if s.block:
                ops.append((3, s.count))
            for word, op in ops:
                self._check_source(op, pc + word, index_le=s.layer,
                                   stream_ok=lambda sid, n=n, L=s.layer: (self.streams[sid].layer < L
                                                                           or (self.streams[sid].layer == L and sid < n)),
                                   what=f"stream {n}", lockstep_reader=s.layer if lockstep else None)
        for n, a in enumerate(self.actions):
            pc = self._pc("actions", n)
            if a.layer >= n_layers:
                raise ProgramError(Fault.ILLEGAL_FIELD, pc,
                                   f"action {n} layer must be below n_layers={n_layers}, not {a.layer}")
            if a.kind == ActionKind.OPERAND:
                limit = a.layer if a.event == Event.ITER else a.layer - 1
                self._check_source(a.source, pc + 1, index_le=limit,
                                   stream_ok=lambda sid, limit=limit: self.streams[sid].layer <= limit,
                                   what=f"action {n} ({a.event.name})", block_ok=True)

    def _check_version_fields(self) -> None:
        """A version-0 program may not set a version-1 field (it would decode as ILLEGAL_FIELD)."""
        if self.version not in VERSIONS:
            raise ProgramError(Fault.BAD_VERSION, 1, f"version must be one of "
                                                     f"{', '.join(map(str, VERSIONS))}, not {self.version}")
        if self.version >= 1:
            return

        def v1_only(pc: int, what: str):
            raise ProgramError(Fault.ILLEGAL_FIELD, pc, f"{what} needs version 1 (the program is version 0)")
        for n, layer in enumerate(self.layers):
            if layer.mode != LayerMode.SINGLE or layer.lanes != 1:
                v1_only(self._pc("layers", n), f"layer {n} mode {layer.mode.name} lanes={layer.lanes}")
            for word, s in enumerate((layer.lb, layer.ub, layer.step), start=1):
                if s.kind > SrcKind.INDEX:
                    v1_only(self._pc("layers", n, word), f"source {s}")
        for n, s in enumerate(self.streams):
            if s.block:
                v1_only(self._pc("streams", n), f"block stream {n}")
            for word, src in ((1, s.a), (2, s.b)):
                if src.kind > SrcKind.INDEX:
                    v1_only(self._pc("streams", n, word), f"source {src}")
        for n, a in enumerate(self.actions):
            if a.pack or a.join:
                v1_only(self._pc("actions", n), f"action {n} packing (esize={a.esize}, join={a.join})")
            if a.source is not None and a.source.kind > SrcKind.INDEX:
                v1_only(self._pc("actions", n, 1), f"source {a.source}")

    def validate(self, limits: Limits | None = None) -> None:
        """Check the program against the format and, if given, a unit's resources.

        Raises ``ProgramError`` exactly where ``decode`` of the encoded program would, plus
        ``ValueError`` for fields that cannot be encoded at all (an out-of-range stride, size or id).
        """
        limits = limits or Limits.unlimited()
        self._check_version_fields()
        if self.version not in limits.versions:
            raise ProgramError(Fault.BAD_VERSION, 1, f"version must be one of "
                                                     f"{', '.join(map(str, limits.versions))} for this "
                                                     f"unit, not {self.version}")
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
        for n, layer in enumerate(self.layers):
            if not isinstance(layer.mode, LayerMode):
                raise ValueError(f"layer {n} mode must be a LayerMode, not {layer.mode!r}")
            if not 1 <= layer.lanes <= MAX_LANES:
                raise ValueError(f"layer {n} lanes must be in [1, {MAX_LANES}], not {layer.lanes!r}")
            pc = self._pc("layers", n)
            if layer.lanes != 1 and layer.mode != LayerMode.LOCKSTEP:
                raise ProgramError(Fault.ILLEGAL_FIELD, pc,
                                   f"layer {n} lanes must be 1 in mode {layer.mode.name}, not {layer.lanes}")
            if layer.mode == LayerMode.LOCKSTEP:
                if Feature.LOCKSTEP not in limits.features:
                    raise ProgramError(Fault.RESOURCES, pc, f"layer {n} (LOCKSTEP) needs the 'lockstep' "
                                                            f"feature, which this unit does not implement")
                if layer.lanes > limits.lanes:
                    raise ProgramError(Fault.RESOURCES, pc, f"layer {n} lanes must be at most "
                                                            f"{limits.lanes} for this unit, not {layer.lanes}")
            if layer.mode == LayerMode.BROADCAST and Feature.BROADCAST not in limits.features:
                raise ProgramError(Fault.RESOURCES, pc, f"layer {n} (BROADCAST) needs the 'broadcast' "
                                                        f"feature, which this unit does not implement")
        per_layer: dict[int, int] = {}
        for n, s in enumerate(self.streams):
            if s.kind == StreamKind.MEM:
                if s.size not in (1, 2, 4, 8):
                    raise ValueError(f"stream {n} size must be 1, 2, 4 or 8 bytes, not {s.size!r}")
                if not -(1 << 31) <= s.stride < (1 << 31):
                    raise ValueError(f"stream {n} stride must fit in 32 bits signed, not {s.stride!r}")
                if s.block and s.count is None:
                    raise ValueError(f"stream {n} is a block stream without a count source")
                if s.block and Feature.BLOCK not in limits.features:
                    raise ProgramError(Fault.RESOURCES, self._pc("streams", n),
                                       f"stream {n} (BLOCK) needs the 'block' feature, which this "
                                       f"unit does not implement")
            elif s.block:
                raise ValueError(f"stream {n} is a {s.kind.name} stream; only MEM streams can be block streams")
            if not 0 <= s.region <= 255 or not 0 <= s.layer <= 255:
                raise ValueError(f"stream {n} layer/region must be in [0, 255]")
            per_layer[s.layer] = per_layer.get(s.layer, 0) + 1
            if per_layer[s.layer] > limits.slots_per_layer:
                raise ProgramError(Fault.RESOURCES, self._pc("streams", n),
                                   f"streams of layer {s.layer} must be at most {limits.slots_per_layer} "
                                   f"for this unit (stream slots per layer), not {per_layer[s.layer]}")
        for n, a in enumerate(self.actions):
            if a.kind == ActionKind.CONTROL and not 0 <= a.callback <= MAX_CALLBACK_ID:
                raise ValueError(f"action {n} callback id must be in [0, {MAX_CALLBACK_ID:#x}], not {a.callback!r}")
            if a.kind == ActionKind.OPERAND and a.source is None:
                raise ValueError(f"action {n} is an OPERAND action without a source")
            if not 0 <= a.pack <= 3:
                raise ValueError(f"action {n} pack must be in [0, 3], not {a.pack!r}")
            if a.kind == ActionKind.CONTROL and (a.pack or a.join):
                raise ValueError(f"action {n} is a CONTROL action; pack/join apply to operands only")
            if (a.pack or a.join) and Feature.PACK not in limits.features:
                raise ProgramError(Fault.RESOURCES, self._pc("actions", n),
                                   f"action {n} (pack/JOIN) needs the 'pack' feature, which this "
                                   f"unit does not implement")
        self._check_semantics()

    # ---------------------------------------------------------------- assembly text
    def to_asm(self) -> str:
        """The readable form of docs/isa.md §6 and §7.10; ``Program.from_asm`` reads it back."""
        out = [f".version {self.version}", f".args {self.n_args}"]
        for n, layer in enumerate(self.layers):
            line = f"layer {n}  lb={layer.lb} ub={layer.ub} step={layer.step}"
            line += " check_order" if layer.check_order else ""
            if layer.mode != LayerMode.SINGLE:
                line += f" {layer.mode.name.lower()}"
            if layer.lanes != 1:
                line += f" lanes={layer.lanes}"
            out.append(line)
        for n, r in enumerate(self.regions):
            out.append(f"region {n} base={r.base} size={r.size}")
        for n, s in enumerate(self.streams):
            if s.kind == StreamKind.MEM and s.block:
                out.append(f"stream {n} layer={s.layer} mem  region={s.region} a={s.a} b={s.b} "
                           f"size={s.size}" + (" signed" if s.signed else "") + f" block n={s.count}")
            elif s.kind == StreamKind.MEM:
                out.append(f"stream {n} layer={s.layer} mem  region={s.region} a={s.a} b={s.b} "
                           f"stride={s.stride} size={s.size}" + (" signed" if s.signed else ""))
            elif s.kind == StreamKind.ALU:
                out.append(f"stream {n} layer={s.layer} alu  {s.op.name.lower()} a={s.a} b={s.b}")
            else:
                out.append(f"stream {n} layer={s.layer} fwd  a={s.a}")
        for a in self.actions:
            what = f"operand {a.source}" if a.kind == ActionKind.OPERAND else f"control {a.callback}"
            if a.pack:
                what += f" esize={a.esize}"
            if a.join:
                what += " join"
            out.append(f"action layer={a.layer} {a.event.name.lower()} {what}")
        return "\n".join(out) + "\n"

    @classmethod
    def from_asm(cls, text: str) -> "Program":
        """Assemble the text form. Raises ``ValueError`` naming the line number and the bad token
        (or :class:`ProgramError` for a program the decoder would reject)."""
        prog = cls()
        for lineno, raw in enumerate(text.splitlines(), start=1):
            line = _strip_comment(raw)
            if not line:
                continue
            try:
                _assemble_line(prog, line)
            except (ValueError, KeyError, IndexError) as e:
                if isinstance(e, KeyError):
                    e = f"missing field {e.args[0]}="
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


_ESIZE_TO_PACK = {8: 0, 4: 1, 2: 2, 1: 3}
_LAYER_FLAGS = {"check_order", "single", "lockstep", "broadcast"}


def _assemble_line(prog: Program, line: str) -> None:
    tokens = line.split()
    head = tokens[0]
    if head == ".version":
        version = int(tokens[1])
        if version not in VERSIONS:
            raise ValueError(f"version must be one of {', '.join(map(str, VERSIONS))}, not {tokens[1]}")
        prog.version = version
    elif head == ".args":
        prog.n_args = int(tokens[1])
    elif head == "layer":
        n = int(tokens[1])
        if n != len(prog.layers):
            raise ValueError(f"layer {len(prog.layers)} expected next, not {n}")
        kv, flags = _kv(tokens[2:])
        if set(flags) - _LAYER_FLAGS:
            raise ValueError(f"unknown layer flag {sorted(set(flags) - _LAYER_FLAGS)[0]!r}")
        modes = [f for f in flags if f in ("single", "lockstep", "broadcast")]
        if len(modes) > 1:
            raise ValueError(f"a layer has one mode, not {' and '.join(modes)}")
        prog.layers.append(Layer(Source.parse(kv["lb"]), Source.parse(kv["ub"]),
                                 Source.parse(kv.get("step", "#1")), "check_order" in flags,
                                 LayerMode[modes[0].upper()] if modes else LayerMode.SINGLE,
                                 int(kv.get("lanes", "1"))))
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
            block = "block" in flags
            if block and "stride" in kv:
                raise ValueError("a block stream has n=<source>, not stride=")
            prog.streams.append(Stream(layer, StreamKind.MEM, Source.parse(kv["a"]), Source.parse(kv["b"]),
                                       size=int(kv.get("size", "8")), signed="signed" in flags,
                                       stride=int(kv.get("stride", "0"), 0), region=int(kv.get("region", "0")),
                                       block=block, count=Source.parse(kv["n"]) if block else None))
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
            esize = int(kv.get("esize", "8"))
            if esize not in _ESIZE_TO_PACK:
                raise ValueError(f"esize must be 1, 2, 4 or 8 bytes, not {esize}")
            if set(flags[3:]) - {"join"}:
                raise ValueError(f"unknown operand flag {sorted(set(flags[3:]) - {'join'})[0]!r}")
            prog.actions.append(Action(layer, event, ActionKind.OPERAND, source=Source.parse(flags[2]),
                                       pack=_ESIZE_TO_PACK[esize], join="join" in flags[3:]))
        elif flags[1] == "control":
            prog.actions.append(Action(layer, event, ActionKind.CONTROL, callback=int(flags[2], 0)))
        else:
            raise ValueError(f"action kind must be operand or control, not {flags[1]!r}")
    else:
        raise ValueError(f"unknown directive {head!r}")
