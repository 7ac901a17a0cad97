"""affine-streams: a memory stream indexed by ``a·i + c`` becomes an affine MEM stream of ``i``.

A stream-simplification rule of Ember's (arXiv 2504.09870, §6.3, "stream simplification"): the
access unit's run-ahead engines (``hw/tmu/prefetch.py``, docs/rtl.md) serve a MEM stream whose
address is ``a + (i + c)·stride`` with ``i`` its layer's index and ``a`` invariant during the
layer's traversal. TransE reads ``triples[3t + k]``: linearised, that is the ALU streams
``t·3``, ``+1``, ``+1`` feeding three MEM streams of stride 8, which no engine serves, so each
id load waits a full memory latency. This pass folds the factor into the stride and the constant
into a byte offset of the base (``dlc.mem_stream``'s ``offset``)::

    %th = dlc.alu_stream layer 0 mul %t, %c3            %h = dlc.mem_stream layer 0
    %tr = dlc.alu_stream layer 0 add %th, %c1     ->         %triples[%t] stride 24
    %h  = dlc.mem_stream layer 0 %triples[%th] stride 8  %r = dlc.mem_stream layer 0
    %r  = dlc.mem_stream layer 0 %triples[%tr] stride 8      %triples[%t] stride 24 offset 8

The address is the same for every ``t`` (``base + (3t + 1)·8 = (base + 8) + t·24``); the backend
emits ``base + offset`` as an ALU stream of invariant operands (the unit evaluates it once per
layer entry), as the hand-written TransE program does (``sw/runtime/handwritten/suite.py``).

The rule: the index of a scalar ``dlc.mem_stream`` is, through ``add``/``sub``/``mul``/``shl``
ALU streams of scalar type whose other operand is an ``arith.constant``, ``a·i + c`` over the index
``i`` of a scalar (not vector or broadcast) ``dlc.tu``, with ``a ≥ 2`` and ``c ≥ 0``. The stream then reads ``%memref[i]`` with stride ``a·stride`` and offset ``c·stride``
(bytes; stride within 32 bits signed, offset within a 28-bit immediate). ALU streams left without
uses are erased. Not folded (left as they are): ``i + c`` (``a = 1``: the unit already serves an
index ``INDEX + c`` ahead, ``offsets[b + 1]``), a factor or constant that is a register computed at
run time (``memref.dim``, a scalar argument: the stride is a constant of the program), a negative
factor or offset, an index that depends on a loaded value or on two different indices, vector
streams, and block (``dlc.buf_stream``) streams.

It runs on the DLC at ``-O3``, right after ``convert-slc-to-dlc`` (before ``hoist-streams``).
"""

from __future__ import annotations

from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects import func
from xdsl.dialects.builtin import IntegerAttr, ModuleOp, i64
from xdsl.ir import OpResult, SSAValue
from xdsl.passes import ModulePass

from ...runtime.isa import IMM_MAX
from ..dialects import dlc
from ._util import constant_int, functions

__all__ = ["AffineStreams", "affine_streams", "affine_form"]

_STRIDE_MAX = (1 << 31) - 1


def affine_form(value: SSAValue) -> tuple[SSAValue, int, int] | None:
    """``(i, a, c)`` if the DLC stream ``value`` is ``a·i + c`` with ``i`` a scalar layer's index
    and ``a``, ``c`` integers, built from constants by ``add``/``sub``/``mul``/``shl`` ALU streams;
    else None."""
    if not isinstance(value, OpResult) or dlc.stream_lanes(value.type) != 1:
        return None
    owner = value.op
    if isinstance(owner, dlc.TuOp):
        return (value, 1, 0) if owner.config_name == "scalar" else None
    if not isinstance(owner, dlc.AluStreamOp):
        return None
    op = owner.op.data
    lhs, rhs = owner.lhs, owner.rhs
    fl, fr = affine_form(lhs), affine_form(rhs)
    kl, kr = constant_int(lhs), constant_int(rhs)
    if op == "add":
        if fl is not None and kr is not None:
            return fl[0], fl[1], fl[2] + kr
        if fr is not None and kl is not None:
            return fr[0], fr[1], fr[2] + kl
        if fl is not None and fr is not None and fl[0] is fr[0]:
            return fl[0], fl[1] + fr[1], fl[2] + fr[2]
    elif op == "sub":
        if fl is not None and kr is not None:
            return fl[0], fl[1], fl[2] - kr
        if fl is not None and fr is not None and fl[0] is fr[0]:
            return fl[0], fl[1] - fr[1], fl[2] - fr[2]
    elif op == "mul":
        if fl is not None and kr is not None:
            return fl[0], fl[1] * kr, fl[2] * kr
        if fr is not None and kl is not None:
            return fr[0], fr[1] * kl, fr[2] * kl
    elif op == "shl" and fl is not None and kr is not None and 0 <= kr < 32:
        return fl[0], fl[1] << kr, fl[2] << kr
    return None


def _erase_if_dead(value: SSAValue) -> None:
    """Erase the ALU stream defining ``value`` if nothing uses it, then its operands' likewise."""
    if not isinstance(value, OpResult) or not isinstance(value.op, dlc.AluStreamOp) or value.uses:
        return
    op = value.op
    operands = list(op.operands)
    op.detach()
    op.erase()
    for v in operands:
        _erase_if_dead(v)


def affine_streams(fn: func.FuncOp) -> int:
    """Fold affine indices into the stride and offset of ``fn``'s memory streams (module
    docstring); returns how many streams changed."""
    access = next((o for o in fn.body.block.ops if isinstance(o, dlc.ConfigureAccessOp)), None)
    if access is None:
        return 0
    changed = 0
    for op in list(access.body.block.ops):
        if not isinstance(op, dlc.MemStreamOp) or dlc.stream_lanes(op.index.type) != 1:
            continue
        form = affine_form(op.index)
        if form is None:
            continue
        index, a, c = form
        if a < 2 or c < 0:
            continue
        stride = op.stride.value.data * a
        offset = op.byte_offset + op.stride.value.data * c
        if not (0 < stride <= _STRIDE_MAX and 0 <= offset <= IMM_MAX):
            continue
        old = op.index
        op.operands = [op.memref, index]
        op.properties["stride"] = IntegerAttr(stride, i64)
        if offset:
            op.properties["offset"] = IntegerAttr(offset, i64)
        else:
            op.properties.pop("offset", None)
        _erase_if_dead(old)
        changed += 1
    return changed


@dataclass(frozen=True)
class AffineStreams(ModulePass):
    """Memory streams indexed by ``a·i + c`` -> affine streams of ``i`` (-O3, module docstring)."""

    name = "affine-streams"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        for fn in functions(op):
            affine_streams(fn)
