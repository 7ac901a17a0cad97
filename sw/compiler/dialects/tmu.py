"""The ``tmu`` dialect: an access program mapped onto one TMU configuration, before encoding.

The last IR level of the compiler (issue 4; ``docs/backend.md``). Where ``dlc.configure_access``
is target-independent, a ``tmu.program`` names physical resources of one configuration
(``sw.runtime.isa.Limits``, ``configs/*.json``): layers with their mode (``single``,
``lockstep``, ``broadcast``) and lanes, granted regions, stream **slots** (stream ``id`` is the
global slot of the ``streams`` pool, ``slot`` its place among the ``streams_per_layer`` slots of its
layer), marshaling actions with their packing, and argument registers with how the runtime fills
them. ``sw.compiler.backend.resources`` builds it from DLC and checks it fits; ``to_program``
in the same module encodes it (docs/isa.md). Every field prints as ``key value``; sources are
strings in the assembler's syntax (``#imm``, ``a<n>``, ``s<n>``, ``i<k>``, ``c<k>``, ``f<k>``).

Example::

    tmu.program version 1 n_args 8 config "tmu_vector" {
      tmu.arg 0 spec "dim arg3[0]"
      tmu.layer 0 mode "broadcast" lanes 1 lb "#0" ub "a0" step 1
      tmu.layer 1 mode "lockstep" lanes 8 lb "#0" ub "a5" step 1
      tmu.region 0 base "a1" size "a2"
      tmu.stream 0 layer 0 slot 0 kind "mem" a "a1" b "i0" region 0 size 8 stride 8
      tmu.action 0 layer 1 event "iter" kind "operand" source "s3" esize 4 join
      tmu.action 1 layer 1 event "iter" kind "control" callback 0
    }
"""

from __future__ import annotations

from typing import ClassVar

from xdsl.dialects.builtin import IntegerAttr, StringAttr, UnitAttr, i64
from xdsl.ir import Attribute, Block, Dialect, Region
from xdsl.irdl import (
    IRDLOperation,
    irdl_op_definition,
    lazy_traits_def,
    opt_prop_def,
    prop_def,
    region_def,
    traits_def,
)
from xdsl.parser import Parser
from xdsl.printer import Printer
from xdsl.traits import HasParent, NoTerminator
from xdsl.utils.exceptions import VerifyException

__all__ = ["ProgramOp", "ArgOp", "LayerOp", "RegionOp", "StreamOp", "ActionOp", "TMU",
           "MODES", "STREAM_KINDS", "EVENTS", "ACTION_KINDS"]

MODES = ("single", "lockstep", "broadcast")
STREAM_KINDS = ("mem", "alu", "fwd")
EVENTS = ("begin", "iter", "end")
ACTION_KINDS = ("operand", "control")


class _FieldsOp(IRDLOperation):
    """An op whose properties print as ``<first> key value key value ... flag``.

    ``FIELDS`` lists ``(name, kind)`` with kind ``int``, ``str``, ``flag`` (a UnitAttr printed
    as its name when present) or ``opt_int``/``opt_str`` (printed when present); the first field
    is printed without its key.
    """

    FIELDS: ClassVar[tuple] = ()

    @classmethod
    def build(cls, **values) -> "_FieldsOp":
        props: dict[str, Attribute] = {}
        for name, kind in cls.FIELDS:
            value = values.pop(name, None)
            if value is None or value is False:
                if kind in ("int", "str"):
                    raise ValueError(f"{cls.name} needs field {name!r}")
                continue
            if kind in ("int", "opt_int"):
                props[name] = IntegerAttr(int(value), i64)
            elif kind in ("str", "opt_str"):
                props[name] = StringAttr(str(value))
            else:
                props[name] = UnitAttr()
        if values:
            raise ValueError(f"{cls.name} has no field {sorted(values)[0]!r}")
        return cls.create(properties=props)

    def get(self, name: str):
        attr = self.properties.get(name)
        if attr is None:
            return None
        if isinstance(attr, IntegerAttr):
            return attr.value.data
        if isinstance(attr, StringAttr):
            return attr.data
        return True

    def print(self, printer: Printer) -> None:
        for n, (name, kind) in enumerate(self.FIELDS):
            value = self.get(name)
            if value is None:
                continue
            if kind == "flag":
                printer.print_string(f" {name}")
                continue
            printer.print_string(" " if n == 0 else f" {name} ")
            if isinstance(value, str):
                printer.print_string_literal(value)
            else:
                printer.print_string(str(value))

    @classmethod
    def parse(cls, parser: Parser):
        values: dict[str, object] = {}
        first, first_kind = cls.FIELDS[0]
        values[first] = parser.parse_integer() if "int" in first_kind else parser.parse_str_literal()
        for key, kind in cls.FIELDS[1:]:          # printed in FIELDS order, optional ones omitted
            if parser.parse_optional_keyword(key) is None:
                continue
            if kind == "flag":
                values[key] = True
            elif "int" in kind:
                values[key] = parser.parse_integer()
            else:
                values[key] = parser.parse_str_literal()
        return cls.build(**values)

    def _check_choice(self, name: str, choices: tuple[str, ...]) -> None:
        value = self.get(name)
        if value is not None and value not in choices:
            raise VerifyException(f"Expected {name} in {', '.join(choices)}, got {value!r}. "
                                  "These are the ISA's values (docs/isa.md).")


@irdl_op_definition
class ProgramOp(IRDLOperation):
    """One access program for configuration ``config``: its ``tmu.arg``, ``tmu.layer``,
    ``tmu.region``, ``tmu.stream`` and ``tmu.action`` ops in program order.

    Example::

        tmu.program version 0 n_args 1 config "tmu_rtl" {
          tmu.layer 0 mode "single" lanes 1 lb "#0" ub "a0" step 1
        }
    """

    name = "tmu.program"
    version = prop_def(IntegerAttr)
    n_args = prop_def(IntegerAttr)
    config = prop_def(StringAttr)
    body = region_def("single_block")
    traits = traits_def(NoTerminator())

    def __init__(self, version: int, n_args: int, config: str, body: Block | None = None):
        super().__init__(regions=[Region(body or Block())],
                         properties={"version": IntegerAttr(version, i64),
                                     "n_args": IntegerAttr(n_args, i64),
                                     "config": StringAttr(config)})

    def print(self, printer: Printer) -> None:
        printer.print_string(f" version {self.version.value.data} n_args {self.n_args.value.data} config ")
        printer.print_string_literal(self.config.data)
        printer.print_string(" ")
        printer.print_region(self.body, print_entry_block_args=False, print_block_terminators=False)

    @classmethod
    def parse(cls, parser: Parser) -> "ProgramOp":
        parser.parse_keyword("version")
        version = parser.parse_integer()
        parser.parse_keyword("n_args")
        n_args = parser.parse_integer()
        parser.parse_keyword("config")
        config = parser.parse_str_literal()
        region = parser.parse_region()
        op = cls(version, n_args, config)
        block = region.detach_block(0)
        op.body.detach_block(0)
        op.body.add_block(block)
        return op

    def verify_(self) -> None:
        if self.version.value.data not in (0, 1):
            raise VerifyException(f"Expected version 0 or 1, got {self.version.value.data}. "
                                  "These are the ISA versions (docs/isa.md).")


_IN_PROGRAM = lazy_traits_def(lambda: (HasParent(ProgramOp),))


@irdl_op_definition
class ArgOp(_FieldsOp):
    """Argument register ``reg`` and how the runtime fills it (``sw.runtime.kernel.ArgSpec``).

    Example::

        tmu.arg 3 spec "bytes arg1"
    """

    name = "tmu.arg"
    FIELDS: ClassVar[tuple] = (("reg", "int"), ("spec", "str"))
    reg = prop_def(IntegerAttr)
    spec = prop_def(StringAttr)
    traits = _IN_PROGRAM


@irdl_op_definition
class LayerOp(_FieldsOp):
    """Layer ``id`` (traversal unit(s)): mode, lanes, bound sources, step.

    Example::

        tmu.layer 2 mode "lockstep" lanes 8 lb "#0" ub "a5" step 1
    """

    name = "tmu.layer"
    FIELDS: ClassVar[tuple] = (("id", "int"), ("mode", "str"), ("lanes", "int"), ("lb", "str"), ("ub", "str"),
              ("step", "int"), ("check_order", "flag"))
    id = prop_def(IntegerAttr)
    mode = prop_def(StringAttr)
    lanes = prop_def(IntegerAttr)
    lb = prop_def(StringAttr)
    ub = prop_def(StringAttr)
    step = prop_def(IntegerAttr)
    check_order = opt_prop_def(UnitAttr)
    traits = _IN_PROGRAM

    def verify_(self) -> None:
        self._check_choice("mode", MODES)
        if self.get("lanes") != 1 and self.get("mode") != "lockstep":
            raise VerifyException(f"Expected lanes 1 for a {self.get('mode')} layer, got "
                                  f"{self.get('lanes')}. Only lockstep layers have lanes.")


@irdl_op_definition
class RegionOp(_FieldsOp):
    """Granted region ``id``: ``[base, base + size)`` bytes.

    Example::

        tmu.region 0 base "a1" size "a2"
    """

    name = "tmu.region"
    FIELDS: ClassVar[tuple] = (("id", "int"), ("base", "str"), ("size", "str"))
    id = prop_def(IntegerAttr)
    base = prop_def(StringAttr)
    size = prop_def(StringAttr)
    traits = _IN_PROGRAM


@irdl_op_definition
class StreamOp(_FieldsOp):
    """Stream slot ``id`` of the pool (``slot`` within its layer): a memory, ALU or forward stream.

    Example::

        tmu.stream 6 layer 2 slot 2 kind "mem" a "a6" b "s5" region 2 size 4 stride 4
        tmu.stream 7 layer 1 slot 0 kind "mem" a "a6" b "s3" region 2 size 4 block "a5"
        tmu.stream 4 layer 2 slot 0 kind "alu" a "s3" b "a5" op "mul"
    """

    name = "tmu.stream"
    FIELDS: ClassVar[tuple] = (("id", "int"), ("layer", "int"), ("slot", "int"), ("kind", "str"), ("a", "str"),
              ("b", "opt_str"), ("op", "opt_str"), ("region", "opt_int"), ("size", "opt_int"),
              ("stride", "opt_int"), ("block", "opt_str"), ("signed", "flag"))
    id = prop_def(IntegerAttr)
    layer = prop_def(IntegerAttr)
    slot = prop_def(IntegerAttr)
    kind = prop_def(StringAttr)
    a = prop_def(StringAttr)
    b = opt_prop_def(StringAttr)
    op = opt_prop_def(StringAttr)
    region = opt_prop_def(IntegerAttr)
    size = opt_prop_def(IntegerAttr)
    stride = opt_prop_def(IntegerAttr)
    block = opt_prop_def(StringAttr)
    signed = opt_prop_def(UnitAttr)
    traits = _IN_PROGRAM

    def verify_(self) -> None:
        self._check_choice("kind", STREAM_KINDS)
        kind = self.get("kind")
        if kind == "mem" and (self.get("region") is None or self.get("size") is None):
            raise VerifyException("Expected region and size on a mem stream. A memory stream "
                                  "loads elements of a region.")
        if kind == "alu" and self.get("op") is None:
            raise VerifyException("Expected op on an alu stream.")


@irdl_op_definition
class ActionOp(_FieldsOp):
    """Marshaling action ``id``: on ``event`` of ``layer`` push an operand (packed ``esize`` bytes
    per element, ``join``: share the token with the next operand) or a control token.

    Example::

        tmu.action 3 layer 2 event "iter" kind "operand" source "s6" esize 4
        tmu.action 4 layer 2 event "iter" kind "control" callback 0
    """

    name = "tmu.action"
    FIELDS: ClassVar[tuple] = (("id", "int"), ("layer", "int"), ("event", "str"), ("kind", "str"),
              ("source", "opt_str"), ("callback", "opt_int"), ("esize", "opt_int"), ("join", "flag"))
    id = prop_def(IntegerAttr)
    layer = prop_def(IntegerAttr)
    event = prop_def(StringAttr)
    kind = prop_def(StringAttr)
    source = opt_prop_def(StringAttr)
    callback = opt_prop_def(IntegerAttr)
    esize = opt_prop_def(IntegerAttr)
    join = opt_prop_def(UnitAttr)
    traits = _IN_PROGRAM

    def verify_(self) -> None:
        self._check_choice("event", EVENTS)
        self._check_choice("kind", ACTION_KINDS)
        if (self.get("kind") == "operand") != (self.get("source") is not None):
            raise VerifyException("Expected a source exactly on operand actions.")
        if self.get("esize") not in (None, 1, 2, 4, 8):
            raise VerifyException(f"Expected esize 1, 2, 4 or 8, got {self.get('esize')}.")


TMU = Dialect("tmu", [ProgramOp, ArgOp, LayerOp, RegionOp, StreamOp, ActionOp], [])
