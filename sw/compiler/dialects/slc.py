"""The ``slc`` dialect: structured lookup-compute (Ember, arXiv 2504.09870, §4).

SLC splits a loop nest into its *access* part — loops that traverse index streams, memory
streams that load, ALU streams that compute addresses — and its *execute* part, the
**callbacks**, which run on the core and receive stream values through ``slc.from_stream``.

Values of type ``!slc.stream<T>`` live on the access unit and produce one value of ``T`` per
iteration of the ``slc.for`` they are defined in. Plain ``index``/integer values defined at
function level (constants, ``memref.dim``, scalar arguments, arithmetic on them) are
*registers*: both sides can use them directly.

Example::

    slc.for %b = %c0 to %nbags step 1 : index, index {
      %b1 = slc.alu_stream add %b, %c1 : !slc.stream<index>, index -> !slc.stream<index>
      %start = slc.mem_stream %offsets[%b] : memref<?xindex>, !slc.stream<index>
      %end = slc.mem_stream %offsets[%b1] : memref<?xindex>, !slc.stream<index>
      slc.for %j = %start to %end step 1 check_order : !slc.stream<index>, !slc.stream<index> {
        %row = slc.mem_stream %indices[%j] : memref<?xindex>, !slc.stream<index>
        slc.for %d = %c0 to %dim step 1 : index, index {
          %v = slc.mem_stream %table[%row, %d] : memref<?x?xf32>, !slc.stream<index>, !slc.stream<index>
          slc.callback iter {
            %0 = slc.from_stream %v : !slc.stream<f32>
            ...
          }
        }
      }
    }

Callback placement (Ember's begin/iter/end): a callback in the body of a loop that has a child
``slc.for`` fires on the child's ``begin`` (placed before the child) or ``end`` (placed after
it); in the innermost loop it fires on ``iter``.
"""

from __future__ import annotations

from collections.abc import Sequence

from xdsl.dialects.builtin import (
    IndexType,
    IntegerAttr,
    IntegerType,
    MemRefType,
    StringAttr,
    UnitAttr,
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
)
from xdsl.parser import Parser
from xdsl.printer import Printer
from xdsl.traits import HasAncestor, HasParent, IsTerminator, Pure, SingleBlockImplicitTerminator, ensure_terminator
from xdsl.utils.exceptions import VerifyException

from ._syntax import (
    AluStreamSyntaxOp,
    ImplicitTerminatorOp,
    OneOperandOp,
    as_region,
    parse_bounds,
    parse_subscript,
    parse_type_list,
    parse_typed_operand,
    print_body,
    print_bounds,
    print_subscript,
    print_typed_operand,
    print_types,
    resolve,
)

__all__ = [
    "StreamType", "ForOp", "MemStreamOp", "AluStreamOp", "ToStreamOp", "CastOp",
    "CallbackOp", "FromStreamOp", "YieldOp", "SLC", "ALU_OPS", "EVENTS", "LOOP_OPS",
]

#: ALU stream operations, named as in docs/isa.md (lower case).
ALU_OPS = ("add", "sub", "mul", "shl", "shr", "sra", "and", "or", "xor", "min", "max", "lt", "eq")
#: Layer events a callback can fire on.
EVENTS = ("begin", "iter", "end")
#: Loop ops of the access side (``slc.for`` and its vector form ``slcv.for``).
LOOP_OPS = ("slc.for", "slcv.for")


@irdl_attr_definition
class StreamType(ParametrizedAttribute, TypeAttribute):
    """``!slc.stream<T>``: one value of ``T`` per iteration of the enclosing ``slc.for``."""

    name = "slc.stream"

    element_type: Attribute = param_def()

    def __init__(self, element_type: Attribute):
        super().__init__(element_type)


def is_int_like(t: Attribute) -> bool:
    return isinstance(t, IndexType | IntegerType)


def is_index_operand(t: Attribute) -> bool:
    """A stream of integers or an integer register: what addresses and bounds are built from."""
    return is_int_like(t) or (isinstance(t, StreamType) and is_int_like(t.element_type))


def _check_index_operands(op: IRDLOperation, values: Sequence[SSAValue], what: str) -> None:
    for v in values:
        if not is_index_operand(v.type):
            raise VerifyException(
                f"Expected an integer stream or register as {what} of {op.name}, got {v.type}. "
                "Addresses and bounds are integer values.")


def check_step(step: IntegerAttr) -> None:
    """Raise VerifyException unless a loop's (traversal unit's) ``step`` is positive."""
    if step.value.data <= 0:
        raise VerifyException(f"Expected a step > 0, got {step.value.data}. "
                              "Traversal units count upwards.")


def check_alu_op(op: StringAttr) -> None:
    """Raise VerifyException unless ``op`` names an ALU operation (:data:`ALU_OPS`)."""
    if op.data not in ALU_OPS:
        raise VerifyException(f"Expected an ALU op in {', '.join(ALU_OPS)}, got {op.data!r}. "
                              "These are the access unit's ALU operations.")


def check_event(event: str) -> None:
    """Raise VerifyException unless ``event`` is a layer event (:data:`EVENTS`)."""
    if event not in EVENTS:
        raise VerifyException(f"Expected an event in begin, iter, end, got {event!r}. "
                              "These are the layer events of the access unit.")


def check_index_count(mtype: MemRefType, indices: Sequence[SSAValue]) -> None:
    """Raise VerifyException unless there is one index per dimension of ``mtype``."""
    if len(indices) != mtype.get_num_dims():
        raise VerifyException(f"Expected {mtype.get_num_dims()} indices for {mtype}, got "
                              f"{len(indices)}. One index per dimension.")


@irdl_op_definition
class YieldOp(ImplicitTerminatorOp):
    """Terminator of ``slc.for`` and ``slc.callback`` bodies (implicit in the custom syntax)."""

    name = "slc.yield"
    traits = lazy_traits_def(lambda: (IsTerminator(), HasParent(ForOp, CallbackOp)))


@irdl_op_definition
class ForOp(IRDLOperation):
    """A loop the access unit runs (a traversal unit, one layer of the program).

    ``lb`` and ``ub`` are registers (``index``) or index streams of an enclosing loop; ``step`` is a
    positive constant. The body's argument is the loop's index stream. ``check_order`` makes the
    unit fault when ``ub < lb`` (set on loops whose bounds come from an offsets array).

    Example::

        slc.for %j = %start to %end step 1 check_order : !slc.stream<index>, !slc.stream<index> {
          ...
        }
    """

    name = "slc.for"

    lb = operand_def(AnyAttr())
    ub = operand_def(AnyAttr())
    step = prop_def(IntegerAttr)
    check_order = opt_prop_def(UnitAttr)
    body = region_def("single_block")

    traits = traits_def(SingleBlockImplicitTerminator(YieldOp))

    def __init__(self, lb: SSAValue, ub: SSAValue, step: int, body: Region | Block | None = None,
                 check_order: bool = False):
        props: dict[str, Attribute] = {"step": IntegerAttr(step, i64)}
        if check_order:
            props["check_order"] = UnitAttr()
        super().__init__(operands=[lb, ub], properties=props,
                         regions=[as_region(body, [StreamType(IndexType())])])
        ensure_terminator(self, SingleBlockImplicitTerminator(YieldOp))

    @property
    def index(self) -> SSAValue:
        return self.body.block.args[0]

    def verify_(self) -> None:
        _check_index_operands(self, (self.lb, self.ub), "a bound")
        check_step(self.step)
        args = self.body.block.args
        if len(args) != 1 or args[0].type != StreamType(IndexType()):
            raise VerifyException(
                f"Expected one body argument of type !slc.stream<index>, got "
                f"{[str(a.type) for a in args]}. The argument is the loop's index stream.")

    def print(self, printer: Printer) -> None:
        printer.print_string(" ")
        printer.print_ssa_value(self.index)
        printer.print_string(" =")
        print_bounds(printer, self.lb, self.ub, self.step)
        if self.check_order is not None:
            printer.print_string(" check_order")
        printer.print_string(" : ")
        print_types(printer, (self.lb, self.ub))
        print_body(printer, self.body)

    @classmethod
    def parse(cls, parser: Parser) -> "ForOp":
        index = parser.parse_argument(expect_type=False)
        parser.parse_punctuation("=")
        lb, ub, step = parse_bounds(parser)
        check_order = parser.parse_optional_keyword("check_order") is not None
        parser.parse_punctuation(":")
        lb_v, ub_v = resolve(parser, (lb, ub), parse_type_list(parser, 2))
        body = parser.parse_region((index.resolve(StreamType(IndexType())),))
        return cls(lb_v, ub_v, step, body, check_order)


@irdl_op_definition
class MemStreamOp(IRDLOperation):
    """A memory stream: ``memref[indices]`` loaded once per iteration of the enclosing loop.

    The memref must be read-only in the function. Indices are index streams or registers.

    Example::

        %v = slc.mem_stream %table[%row, %d] : memref<?x?xf32>, !slc.stream<index>, !slc.stream<index>
    """

    name = "slc.mem_stream"

    memref = operand_def(MemRefType)
    indices = var_operand_def(AnyAttr())
    result = result_def(StreamType)

    traits = traits_def(Pure())

    def __init__(self, memref: SSAValue, indices: Sequence[SSAValue]):
        assert isinstance(memref.type, MemRefType)
        super().__init__(operands=[memref, indices],
                         result_types=[StreamType(memref.type.element_type)])

    def verify_(self) -> None:
        mtype = self.memref.type
        assert isinstance(mtype, MemRefType)
        check_index_count(mtype, self.indices)
        _check_index_operands(self, self.indices, "an index")
        if self.result.type != StreamType(mtype.element_type):
            raise VerifyException(f"Expected result type !slc.stream<{mtype.element_type}>, got "
                                  f"{self.result.type}. A memory stream carries the memref's elements.")

    def print(self, printer: Printer) -> None:
        print_subscript(printer, self.memref, self.indices)
        printer.print_string(" : ")
        print_types(printer, (self.memref, *self.indices))

    @classmethod
    def parse(cls, parser: Parser) -> "MemStreamOp":
        memref, indices = parse_subscript(parser)
        parser.parse_punctuation(":")
        types = parse_type_list(parser, 1 + len(indices))
        values = resolve(parser, (memref, *indices), types)
        return cls(values[0], values[1:])


@irdl_op_definition
class AluStreamOp(AluStreamSyntaxOp):
    """An ALU stream: ``op(lhs, rhs)`` on 64-bit integers, once per iteration.

    ``op`` is one of ``add sub mul shl shr sra and or xor min max lt eq`` (docs/isa.md).

    Example::

        %b1 = slc.alu_stream add %b, %c1 : !slc.stream<index>, index -> !slc.stream<index>
    """

    name = "slc.alu_stream"

    op = prop_def(StringAttr)
    lhs = operand_def(AnyAttr())
    rhs = operand_def(AnyAttr())
    result = result_def(StreamType)

    traits = traits_def(Pure())

    def __init__(self, op: str, lhs: SSAValue, rhs: SSAValue, result_type: Attribute):
        super().__init__(operands=[lhs, rhs], result_types=[result_type],
                         properties={"op": StringAttr(op)})

    def verify_(self) -> None:
        check_alu_op(self.op)
        _check_index_operands(self, (self.lhs, self.rhs), "an operand")
        if not is_index_operand(self.result.type):
            raise VerifyException(f"Expected an integer stream result, got {self.result.type}. "
                                  "ALU streams compute on 64-bit integers.")


@irdl_op_definition
class ToStreamOp(OneOperandOp):
    """A forward stream: a register (or constant) brought into the loop as a stream.

    Example::

        %s = slc.to_stream %n : index
    """

    name = "slc.to_stream"

    value = operand_def(AnyAttr())
    result = result_def(StreamType)

    traits = traits_def(Pure())

    def __init__(self, value: SSAValue):
        super().__init__(operands=[value], result_types=[StreamType(value.type)])


@irdl_op_definition
class CastOp(IRDLOperation):
    """Reinterpret an integer stream at another 64-bit-compatible integer type (no hardware).

    Streams carry sign-extended 64-bit values, so ``index``/``i64`` casts and sign extension of
    a sign-extended load are free.

    Example::

        %r = slc.cast %row_i64 : !slc.stream<i64> to !slc.stream<index>
    """

    name = "slc.cast"

    value = operand_def(StreamType)
    result = result_def(StreamType)

    traits = traits_def(Pure())

    def __init__(self, value: SSAValue, result_type: Attribute):
        super().__init__(operands=[value], result_types=[result_type])

    def verify_(self) -> None:
        for t in (self.value.type, self.result.type):
            assert isinstance(t, StreamType)
            if not is_int_like(t.element_type):
                raise VerifyException(f"Expected an integer stream, got {t}. Only integer streams "
                                      "can be reinterpreted.")

    def print(self, printer: Printer) -> None:
        print_typed_operand(printer, self.value)
        printer.print_string(" to ")
        printer.print_attribute(self.result.type)

    @classmethod
    def parse(cls, parser: Parser) -> "CastOp":
        v = parse_typed_operand(parser)
        parser.parse_keyword("to")
        return cls(v, parser.parse_type())


@irdl_op_definition
class CallbackOp(IRDLOperation):
    """Code that runs on the core when the enclosing layer's ``event`` happens.

    The body may use registers, constants and memrefs of the function directly; values of the
    access side enter only through ``slc.from_stream``.

    Example::

        slc.callback iter {
          %v = slc.from_stream %s : !slc.stream<f32>
          ...
        }
    """

    name = "slc.callback"

    event = prop_def(StringAttr)
    body = region_def("single_block")

    traits = traits_def(SingleBlockImplicitTerminator(YieldOp))

    def __init__(self, event: str, body: Region | Block | None = None):
        super().__init__(properties={"event": StringAttr(event)}, regions=[as_region(body)])
        ensure_terminator(self, SingleBlockImplicitTerminator(YieldOp))

    def verify_(self) -> None:
        event = self.event.data
        check_event(event)
        parent = self.parent_op()
        if parent is None or parent.name not in LOOP_OPS:
            return
        siblings = list(parent.regions[0].block.ops)
        loops = [i for i, op in enumerate(siblings) if op.name in LOOP_OPS]
        here = siblings.index(self)
        if not loops:
            if event != "iter":
                raise VerifyException(f"Expected event iter, got {event}. A callback in the "
                                      "innermost loop fires on its iterations.")
        elif event == "iter":
            raise VerifyException("Expected event begin or end, got iter. A callback beside a "
                                  "nested slc.for fires on that loop's begin or end.")
        elif (event == "begin") != (here < loops[0]):
            raise VerifyException(f"Expected event {'begin' if here < loops[0] else 'end'}, got "
                                  f"{event}. A callback before the nested slc.for fires on its "
                                  "begin, after it on its end.")

    def print(self, printer: Printer) -> None:
        printer.print_string(f" {self.event.data}")
        print_body(printer, self.body)

    @classmethod
    def parse(cls, parser: Parser) -> "CallbackOp":
        event = parser.parse_identifier()
        return cls(event, parser.parse_region())


@irdl_op_definition
class FromStreamOp(OneOperandOp):
    """The current value of an access-side stream, inside a callback.

    Example::

        %v = slc.from_stream %s : !slc.stream<f32>
    """

    name = "slc.from_stream"

    stream = operand_def(StreamType)
    result = result_def(AnyAttr())

    traits = traits_def(Pure(), HasAncestor(CallbackOp))

    def __init__(self, stream: SSAValue):
        assert isinstance(stream.type, StreamType)
        super().__init__(operands=[stream], result_types=[stream.type.element_type])

    def verify_(self) -> None:
        assert isinstance(self.stream.type, StreamType)
        if self.result.type != self.stream.type.element_type:
            raise VerifyException(f"Expected result type {self.stream.type.element_type}, got "
                                  f"{self.result.type}. from_stream yields the stream's element.")


SLC = Dialect(
    "slc",
    [ForOp, MemStreamOp, AluStreamOp, ToStreamOp, CastOp, CallbackOp, FromStreamOp, YieldOp],
    [StreamType],
)
