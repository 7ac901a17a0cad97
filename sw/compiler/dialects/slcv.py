"""The ``slcv`` dialect: the vector form of SLC (Ember, arXiv 2504.09870, §6: vectorisation and
bufferisation of the access code).

A vector ``slcv.for`` covers ``vlen`` consecutive iterations of its loop per step of the access
unit (the lanes of a lockstep layer); lanes past the upper bound are masked off. Its body has two
arguments: the lane indices (``!slcv.vstream<index, L>``) and the lane mask
(``!slcv.vstream<i1, L>``). Streams of a vector layer are vector streams (one value = ``L``
elements); scalar streams and registers of enclosing layers are broadcast to every lane.

Loop configurations (``config``), as the TMU's layer modes (``../shared/BRIEF.md`` §4):

* ``scalar``    — one lane (an ``slc.for``; the attribute exists for uniformity);
* ``broadcast`` — one lane whose values are broadcast to the lanes of the vector layer it encloses;
* ``vector``    — ``vlen`` lanes iterating consecutive iterations in lockstep, tail lanes masked.

Compound operands (one embedding row) are **buffers** (``!slcv.buffer<T>``): one value per
iteration of the enclosing layer that holds a whole row of runtime length, pushed as one operand:

* ``slcv.buf_stream %m[%i, .., %k] len %n`` loads ``n`` consecutive elements starting at
  ``m[i, .., k]`` (a block load);
* ``slcv.to_buffer %v`` terminates a ``slcv.for`` and collects the values of ``%v`` over one
  traversal of that loop (active lanes, in iteration order) into the loop's buffer result, which is
  available to callbacks on the loop's ``end``. Several values are valid SLCV, but their
  traversal pushes them interleaved (one element or vector of each per firing), so
  ``convert-slc-to-dlc`` lowers one value only and ``bufferize`` never collects more (at
  ``-O3`` ``simplify-streams`` loads rows as ``slcv.buf_stream`` s instead);
* ``slcv.from_buffer %b`` gives a callback the buffer as a 1-D memref.

Example (a bufferised EmbeddingBag row at ``-O2``, collected over a vector layer; at ``-O3``
``simplify-streams`` replaces the loop by ``slcv.buf_stream %table[%row, %c0] len %dim``)::

    %row_buf = slcv.for %d, %m = %c0 to %dim step 1 vlen 8 config vector : index, index -> !slcv.buffer<f32> {
      %v = slcv.mem_stream %table[%row, %d] : memref<?x?xf32>, !slc.stream<index>, !slcv.vstream<index, 8> -> !slcv.vstream<f32, 8>
      slcv.to_buffer %v : !slcv.vstream<f32, 8>
    }
    slc.callback end {
      %r = slcv.from_buffer %row_buf : !slcv.buffer<f32>
      ...
    }
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import ClassVar

from xdsl.dialects.builtin import (
    DYNAMIC_INDEX,
    IndexType,
    IntAttr,
    IntegerAttr,
    MemRefType,
    StringAttr,
    UnitAttr,
    VectorType,
    i1,
    i64,
)
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
    var_operand_def,
    var_result_def,
)
from xdsl.parser import Parser
from xdsl.printer import Printer
from xdsl.traits import HasAncestor, HasParent, IsTerminator, Pure
from xdsl.utils.exceptions import VerifyException

from . import slc
from ._syntax import (
    AluStreamSyntaxOp,
    ImplicitTerminatorOp,
    LanesTypeSyntax,
    OneOperandOp,
    as_region,
    parse_bounds,
    parse_nonempty_type_list,
    parse_operand_list,
    parse_result_type,
    parse_subscript,
    parse_type_list,
    print_body,
    print_bounds,
    print_result_type,
    print_subscript,
    print_types,
    resolve,
)

__all__ = [
    "VStreamType", "BufferType", "ForOp", "MemStreamOp", "AluStreamOp", "BufStreamOp",
    "ToBufferOp", "FirstLaneOp", "FromStreamOp", "FromBufferOp", "YieldOp", "SLCV", "CONFIGS",
    "lanes_of", "element_of", "is_vector_stream",
]

#: Loop configurations (layer modes of the access unit).
CONFIGS = ("scalar", "broadcast", "vector")


@irdl_attr_definition
class VStreamType(LanesTypeSyntax, ParametrizedAttribute, TypeAttribute):
    """``!slcv.vstream<T, L>``: ``L`` lanes of ``T`` per iteration of a vector ``slcv.for``."""

    name = "slcv.vstream"

    element_type: Attribute = param_def()
    lanes: IntAttr = param_def()

    def verify(self) -> None:
        if self.lanes.data < 1:
            raise VerifyException(f"Expected lanes >= 1, got {self.lanes.data}. A vector stream "
                                  "has at least one lane.")


@irdl_attr_definition
class BufferType(ParametrizedAttribute, TypeAttribute):
    """``!slcv.buffer<T>``: one row of ``T`` (runtime length) per iteration of its layer."""

    name = "slcv.buffer"

    element_type: Attribute = param_def()

    def __init__(self, element_type: Attribute):
        super().__init__(element_type)


def lanes_of(t: Attribute) -> int:
    """Lanes of a stream type (1 for scalar streams and registers)."""
    return t.lanes.data if isinstance(t, VStreamType) else 1


def element_of(t: Attribute) -> Attribute:
    """The element type of a (vector) stream or buffer, or the type itself for a register."""
    if isinstance(t, VStreamType | BufferType | slc.StreamType):
        return t.element_type
    return t


def is_vector_stream(t: Attribute) -> bool:
    return isinstance(t, VStreamType)


def _is_index_source(t: Attribute) -> bool:
    return slc.is_index_operand(t) or (isinstance(t, VStreamType) and slc.is_int_like(t.element_type))


def check_config(config: str) -> None:
    """Raise VerifyException unless ``config`` is a loop configuration (:data:`CONFIGS`)."""
    if config not in CONFIGS:
        raise VerifyException(f"Expected a config in scalar, broadcast, vector, got {config!r}. "
                              "These are the layer modes of the access unit.")


def _body_arg_types(config: str, vlen: int) -> list[Attribute]:
    """Body arguments of an ``slcv.for``: lane indices and lane mask of a vector loop, else one
    index stream."""
    if config == "vector":
        return [VStreamType(IndexType(), vlen), VStreamType(i1, vlen)]
    return [slc.StreamType(IndexType())]


def _check_lanes(op: IRDLOperation, values: Sequence[SSAValue], result: Attribute) -> None:
    """All vector operands and the result have the same number of lanes."""
    lanes = {lanes_of(v.type) for v in values if isinstance(v.type, VStreamType)}
    lanes.add(lanes_of(result))
    if len(lanes) != 1:
        raise VerifyException(f"Expected one lane count among the operands and result of {op.name}, "
                              f"got {sorted(lanes)}. Lanes of a layer iterate in lockstep.")


@irdl_op_definition
class YieldOp(ImplicitTerminatorOp):
    """Implicit terminator of a ``slcv.for`` without buffer results."""

    name = "slcv.yield"
    traits = lazy_traits_def(lambda: (IsTerminator(), HasParent(ForOp)))


@irdl_op_definition
class ToBufferOp(IRDLOperation):
    """Terminator of a bufferised ``slcv.for``: collect the values of each operand over one
    traversal of the loop (active lanes, in iteration order) into the loop's buffer results.

    Example::

        slcv.to_buffer %v : !slcv.vstream<f32, 8>
    """

    name = "slcv.to_buffer"

    values = var_operand_def(AnyAttr())
    traits = lazy_traits_def(lambda: (IsTerminator(), HasParent(ForOp)))

    def __init__(self, values: Sequence[SSAValue]):
        super().__init__(operands=[values])

    def verify_(self) -> None:
        loop = self.parent_op()
        assert isinstance(loop, ForOp)
        if len(self.values) != len(loop.results):
            raise VerifyException(f"Expected {len(loop.results)} values (one per buffer result of "
                                  f"the slcv.for), got {len(self.values)}.")
        for v, r in zip(self.values, loop.results):
            if not isinstance(v.type, VStreamType | slc.StreamType) or \
                    BufferType(element_of(v.type)) != r.type:
                raise VerifyException(f"Expected a stream of {element_of(r.type)} for buffer "
                                      f"{r.type}, got {v.type}. A buffer collects a stream's values.")

    def print(self, printer: Printer) -> None:
        printer.print_string(" ")
        printer.print_list(self.values, printer.print_ssa_value)
        printer.print_string(" : ")
        print_types(printer, self.values)

    @classmethod
    def parse(cls, parser: Parser) -> "ToBufferOp":
        values = parse_operand_list(parser)
        parser.parse_punctuation(":")
        return cls(resolve(parser, values, parse_type_list(parser, len(values))))


@irdl_op_definition
class ForOp(IRDLOperation):
    """A loop of the access unit in vector form: ``vlen`` lanes and a loop configuration.

    ``config`` is ``scalar``, ``broadcast`` or ``vector`` (module docstring). A vector loop's body
    arguments are the lane indices and the lane mask; a scalar or broadcast loop has one index
    argument of type ``!slc.stream<index>``. Results are buffers filled by ``slcv.to_buffer``.

    Example::

        slcv.for %d, %m = %c0 to %dim step 1 vlen 8 config vector : index, index {
          ...
        }
    """

    name = "slcv.for"

    lb = operand_def(AnyAttr())
    ub = operand_def(AnyAttr())
    step = prop_def(IntegerAttr)
    vlen = prop_def(IntegerAttr)
    config = prop_def(StringAttr)
    check_order = opt_prop_def(UnitAttr)
    body = region_def("single_block")
    buffers = var_result_def(BufferType)

    def __init__(self, lb: SSAValue, ub: SSAValue, step: int, vlen: int, config: str,
                 body: Region | Block | None = None, check_order: bool = False,
                 buffer_types: Sequence[Attribute] = ()):
        body = as_region(body, _body_arg_types(config, vlen))
        props: dict[str, Attribute] = {"step": IntegerAttr(step, i64), "vlen": IntegerAttr(vlen, i64),
                                       "config": StringAttr(config)}
        if check_order:
            props["check_order"] = UnitAttr()
        super().__init__(operands=[lb, ub], properties=props, regions=[body],
                         result_types=[list(buffer_types)])
        block = self.body.block
        if not block.ops or not block.last_op.has_trait(IsTerminator):  # type: ignore[union-attr]
            block.add_op(YieldOp())

    @property
    def index(self) -> SSAValue:
        return self.body.block.args[0]

    @property
    def mask(self) -> SSAValue | None:
        args = self.body.block.args
        return args[1] if len(args) > 1 else None

    @property
    def lanes(self) -> int:
        return self.vlen.value.data

    def verify_(self) -> None:
        slc._check_index_operands(self, (self.lb, self.ub), "a bound")
        slc.check_step(self.step)
        config, vlen = self.config.data, self.vlen.value.data
        check_config(config)
        if vlen < 1 or (config == "scalar" and vlen != 1):
            raise VerifyException(f"Expected vlen 1 for a scalar loop and vlen >= 1 otherwise, got "
                                  f"vlen {vlen} with config {config}.")
        args = [a.type for a in self.body.block.args]
        want = _body_arg_types(config, vlen)
        if args != want:
            raise VerifyException(f"Expected body arguments {[str(t) for t in want]}, got "
                                  f"{[str(t) for t in args]}. A vector loop has lane indices and a "
                                  "lane mask; other loops one index stream.")
        term = self.body.block.last_op
        if self.buffers and not isinstance(term, ToBufferOp):
            raise VerifyException("Expected an slcv.to_buffer terminator in an slcv.for with buffer "
                                  "results.")
        if not isinstance(term, ToBufferOp | YieldOp):
            raise VerifyException("Expected slcv.yield or slcv.to_buffer as the terminator.")

    def print(self, printer: Printer) -> None:
        printer.print_string(" ")
        printer.print_list(self.body.block.args, printer.print_ssa_value)
        printer.print_string(" =")
        print_bounds(printer, self.lb, self.ub, self.step)
        printer.print_string(f" vlen {self.vlen.value.data} config {self.config.data}")
        if self.check_order is not None:
            printer.print_string(" check_order")
        printer.print_string(" : ")
        print_types(printer, (self.lb, self.ub))
        if self.buffers:
            printer.print_string(" -> ")
            printer.print_list([r.type for r in self.buffers], printer.print_attribute)
        print_body(printer, self.body, terminators=bool(self.buffers))

    @classmethod
    def parse(cls, parser: Parser) -> "ForOp":
        index = parser.parse_argument(expect_type=False)
        mask = None
        if parser.parse_optional_punctuation(","):
            mask = parser.parse_argument(expect_type=False)
        parser.parse_punctuation("=")
        lb, ub, step = parse_bounds(parser)
        parser.parse_keyword("vlen")
        vlen = parser.parse_integer()
        parser.parse_keyword("config")
        config = parser.parse_identifier()
        check_order = parser.parse_optional_keyword("check_order") is not None
        parser.parse_punctuation(":")
        lb_v, ub_v = resolve(parser, (lb, ub), parse_type_list(parser, 2))
        buffer_types: list[Attribute] = []
        if parser.parse_optional_punctuation("->"):
            buffer_types = parse_nonempty_type_list(parser)
        if mask is not None:
            args = (index.resolve(VStreamType(IndexType(), vlen)), mask.resolve(VStreamType(i1, vlen)))
        else:
            args = (index.resolve(slc.StreamType(IndexType())),)
        body = parser.parse_region(args)
        return cls(lb_v, ub_v, step, vlen, config, body, check_order, buffer_types)


def _stream_result(elem: Attribute, lanes: int) -> Attribute:
    return VStreamType(elem, lanes) if lanes > 1 else slc.StreamType(elem)


@irdl_op_definition
class MemStreamOp(IRDLOperation):
    """A vector memory stream: per lane, ``memref[indices]`` (masked-off lanes do not load).

    With the lane indices as the last index it loads ``L`` consecutive elements (a vector load);
    otherwise it gathers one element per lane.

    Example::

        %v = slcv.mem_stream %table[%row, %d] : memref<?x?xf32>, !slc.stream<index>, !slcv.vstream<index, 8> -> !slcv.vstream<f32, 8>
    """

    name = "slcv.mem_stream"

    memref = operand_def(MemRefType)
    indices = var_operand_def(AnyAttr())
    result = result_def(VStreamType)

    traits = traits_def(Pure())

    def __init__(self, memref: SSAValue, indices: Sequence[SSAValue], lanes: int):
        assert isinstance(memref.type, MemRefType)
        super().__init__(operands=[memref, indices],
                         result_types=[VStreamType(memref.type.element_type, lanes)])

    def verify_(self) -> None:
        mtype = self.memref.type
        assert isinstance(mtype, MemRefType)
        slc.check_index_count(mtype, self.indices)
        for i in self.indices:
            if not _is_index_source(i.type):
                raise VerifyException(f"Expected an integer (vector) stream or register as an index "
                                      f"of {self.name}, got {i.type}.")
        _check_lanes(self, self.indices, self.result.type)
        if element_of(self.result.type) != mtype.element_type:
            raise VerifyException(f"Expected elements of {mtype.element_type}, got "
                                  f"{self.result.type}. A memory stream carries the memref's elements.")

    def print(self, printer: Printer) -> None:
        print_subscript(printer, self.memref, self.indices)
        printer.print_string(" : ")
        print_types(printer, (self.memref, *self.indices))
        print_result_type(printer, self.result.type)

    @classmethod
    def parse(cls, parser: Parser) -> "MemStreamOp":
        memref, indices = parse_subscript(parser)
        parser.parse_punctuation(":")
        types = parse_type_list(parser, 1 + len(indices))
        values = resolve(parser, (memref, *indices), types)
        return cls(values[0], values[1:], lanes_of(parse_result_type(parser)))


@irdl_op_definition
class AluStreamOp(AluStreamSyntaxOp):
    """A vector ALU stream: ``op(lhs, rhs)`` per lane on 64-bit integers (scalars broadcast).

    Example::

        %a = slcv.alu_stream add %d, %base : !slcv.vstream<index, 8>, index -> !slcv.vstream<index, 8>
    """

    name = "slcv.alu_stream"

    op = prop_def(StringAttr)
    lhs = operand_def(AnyAttr())
    rhs = operand_def(AnyAttr())
    result = result_def(VStreamType)

    traits = traits_def(Pure())

    def __init__(self, op: str, lhs: SSAValue, rhs: SSAValue, result_type: Attribute):
        super().__init__(operands=[lhs, rhs], result_types=[result_type],
                         properties={"op": StringAttr(op)})

    def verify_(self) -> None:
        slc.check_alu_op(self.op)
        for v in (self.lhs, self.rhs, self.result):
            if not _is_index_source(v.type):
                raise VerifyException(f"Expected integer (vector) streams or registers, got {v.type}. "
                                      "ALU streams compute on 64-bit integers.")
        _check_lanes(self, (self.lhs, self.rhs), self.result.type)


@irdl_op_definition
class BufStreamOp(IRDLOperation):
    """A buffer (block) memory stream: per iteration, ``len`` consecutive elements of ``memref``
    starting at ``memref[indices]`` (along the last dimension), as one buffer operand.

    Example::

        %r = slcv.buf_stream %table[%row, %c0] len %dim : memref<?x?xf32>, !slc.stream<index>, index, index -> !slcv.buffer<f32>
    """

    name = "slcv.buf_stream"

    memref = operand_def(MemRefType)
    indices = var_operand_def(AnyAttr())
    length = operand_def(AnyAttr())
    result = result_def(BufferType)

    traits = traits_def(Pure())

    def __init__(self, memref: SSAValue, indices: Sequence[SSAValue], length: SSAValue):
        assert isinstance(memref.type, MemRefType)
        super().__init__(operands=[memref, indices, length],
                         result_types=[BufferType(memref.type.element_type)])

    def verify_(self) -> None:
        mtype = self.memref.type
        assert isinstance(mtype, MemRefType)
        slc.check_index_count(mtype, self.indices)
        slc._check_index_operands(self, (*self.indices, self.length), "an index or length")
        if self.result.type != BufferType(mtype.element_type):
            raise VerifyException(f"Expected result type !slcv.buffer<{mtype.element_type}>, got "
                                  f"{self.result.type}.")

    def print(self, printer: Printer) -> None:
        print_subscript(printer, self.memref, self.indices)
        printer.print_string(" len ")
        printer.print_ssa_value(self.length)
        printer.print_string(" : ")
        print_types(printer, (self.memref, *self.indices, self.length))
        print_result_type(printer, self.result.type)

    @classmethod
    def parse(cls, parser: Parser) -> "BufStreamOp":
        memref, indices = parse_subscript(parser)
        parser.parse_keyword("len")
        length = parser.parse_unresolved_operand()
        parser.parse_punctuation(":")
        types = parse_type_list(parser, 2 + len(indices))
        values = resolve(parser, (memref, *indices, length), types)
        parse_result_type(parser)
        return cls(values[0], values[1:-1], values[-1])


@irdl_op_definition
class FromStreamOp(OneOperandOp):
    """The current value of a vector stream inside a callback, as an MLIR vector (``vector<Lxi1>``
    for a lane mask).

    Example::

        %v = slcv.from_stream %s : !slcv.vstream<f32, 8> -> vector<8xf32>
    """

    name = "slcv.from_stream"
    ARROW: ClassVar[bool] = True

    stream = operand_def(VStreamType)
    result = result_def(VectorType)

    traits = traits_def(Pure(), HasAncestor(slc.CallbackOp))

    def __init__(self, stream: SSAValue):
        t = stream.type
        assert isinstance(t, VStreamType)
        super().__init__(operands=[stream], result_types=[VectorType(t.element_type, [t.lanes.data])])

    def verify_(self) -> None:
        t = self.stream.type
        assert isinstance(t, VStreamType)
        if self.result.type != VectorType(t.element_type, [t.lanes.data]):
            raise VerifyException(f"Expected result type vector<{t.lanes.data}x{t.element_type}>, got "
                                  f"{self.result.type}.")


@irdl_op_definition
class FromBufferOp(OneOperandOp):
    """A buffer operand inside a callback, as a 1-D memref of its elements.

    Example::

        %r = slcv.from_buffer %b : !slcv.buffer<f32> -> memref<?xf32>
    """

    name = "slcv.from_buffer"
    ARROW: ClassVar[bool] = True

    buffer = operand_def(BufferType)
    result = result_def(MemRefType)

    traits = traits_def(Pure(), HasAncestor(slc.CallbackOp))

    def __init__(self, buffer: SSAValue):
        t = buffer.type
        assert isinstance(t, BufferType)
        super().__init__(operands=[buffer], result_types=[MemRefType(t.element_type, [DYNAMIC_INDEX])])


@irdl_op_definition
class FirstLaneOp(OneOperandOp):
    """Lane 0 of a vector stream, as a scalar stream of the same layer (lane 0 is active on every
    step of a vector layer). Used for a vector loop's index: its lanes are ``i0 + l * step``, so a
    callback needs only ``i0``.

    Example::

        %d0 = slcv.first_lane %d : !slcv.vstream<index, 8> -> !slc.stream<index>
    """

    name = "slcv.first_lane"
    ARROW: ClassVar[bool] = True

    value = operand_def(VStreamType)
    result = result_def(slc.StreamType)

    traits = traits_def(Pure())

    def __init__(self, value: SSAValue):
        t = value.type
        assert isinstance(t, VStreamType)
        super().__init__(operands=[value], result_types=[slc.StreamType(t.element_type)])


SLCV = Dialect(
    "slcv",
    [FirstLaneOp, ForOp, MemStreamOp, AluStreamOp, BufStreamOp, ToBufferOp, FromStreamOp, FromBufferOp, YieldOp],
    [VStreamType, BufferType],
)
