"""count-segment-index: the core counts the index of a CSR segment layer instead of receiving it.

After ``segment-callbacks`` (-O3) the inner layer ``j = ptr[q] .. ptr[q+1]`` of a CSR nest fires
one callback per segment on layer 1's ``begin``: the segment length ``n = ptr[q+1] - ptr[q]`` is
pushed once, the per-lookup operands with every ``j``, and the core runs the callback's body in
``scf.for %lookup = 0 to %n``. An operand that is an affine function of ``j`` itself (the
block-sparse gather's output block ``j * bs``) then costs a data token per lookup, although the
core can reconstruct ``j``: in a CSR nest the inner ranges of consecutive outer iterations are
contiguous (the lower bound of ``q + 1`` is the very load ``ptr[q + 1]`` that was the upper bound
of ``q``), so ``j`` is ``ptr[lb0]`` plus the number of inner iterations so far, and the core sees
every inner iteration (one trip of its ``scf.for``). This is induction-variable reconstruction on
the execute side; the hand-written programs do the same (``sw/runtime/handwritten/suite.py``,
``_execute_spattn``, with ``ptr[0]`` assumed 0).

For a two-layer program (layer 0 the outer loop ``q``, layer 1 the segment layer ``j``), the pass
rewrites only when every condition below holds (read off the IR), else leaves the function alone:

* layer 0: scalar, step 1, lower bound ``lb0`` a register (the unit runs ``q = lb0, lb0 + 1, ...``
  and fires layer 1's ``begin`` once per ``q``, in order, also for an empty segment: docs/isa.md
  "Execution order");
* layer 1: scalar, step 1, ``check_order`` (a decreasing segment ``ptr[q+1] < ptr[q]`` faults
  ``RANGE_ORDER`` before any of its lookups, so every segment that the core runs to the end has
  ``max(0, n) = n`` lookups and ends where the next one starts);
* contiguity: layer 1's lower bound is ``dlc.mem_stream layer 0 %A[%q]`` and its upper bound
  ``%A[%q + 1]`` (``dlc.alu_stream add %q, 1`` or ``%A[%q]`` with byte offset = stride) of the
  same one-dimensional 64-bit memref ``A``, stride = the element size, no offset on the lower
  bound: ``ub(q) = lb(q + 1)`` for every ``q``;
* the segment's shape as ``segment-callbacks`` leaves it: one callback ``C`` on layer 1's
  ``begin`` (registered once, no callback on layer 1's ``iter``), whose first operand is ``ub -
  lb`` of layer 0, popped as the upper bound of an ``scf.for %lookup = 0 to %n step 1`` at the
  top level of ``C``'s case; the operands registered on layer 1's ``iter`` are exactly ``C``'s
  and are popped, in order, at the top level of that loop's body (unpacked, unjoined);
* at least one of those per-lookup operands is *reconstructible*: ``j`` itself or an ALU stream
  (add, sub, mul, max, min) of reconstructible values and 64-bit registers, popped as a scalar
  integer.

The rewrite: a core variable ``N`` (``dlc.set_var``) starts at ``A[lb0]``, which the **core loads
itself** once before the compute loop (guarded by ``lb0 <u dim(A, 0)``: it is the element the
unit loads first; out of range, the unit faults and the variable is never read). It is neither
pushed (an action of layer 0's ``begin``, the only event that fires once, may use only registers
and immediates: docs/isa.md §1) nor assumed 0 (a caller may hand over a slice of a larger
``ptr``). In ``C``'s loop, ``%j = dlc.get_var N`` at the top, ``dlc.increment_var N by 1`` at
the bottom; each reconstructible operand's pop becomes the same ALU expression in ``arith`` on
``%j`` (64-bit wrapping, as the unit's ALU), its registration and the ALU streams left unused
are removed. One data token less per lookup per such operand; the core does one add per lookup.
An empty segment runs no trip of the loop and leaves ``N`` unchanged, as ``ptr[q+1] = ptr[q]``.
"""

from __future__ import annotations

from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects import arith, func, memref, scf
from xdsl.dialects.builtin import IndexType, IntegerType, MemRefType, ModuleOp
from xdsl.ir import Block, Operation, SSAValue
from xdsl.passes import ModulePass

from ..dialects import dlc
from ._util import constant_int, dlc_access_and_compute, functions, index_constant, is_register
from .segment_callbacks import _ON_CORE

__all__ = ["CountSegmentIndex", "count_segment_index"]

_POPS = (dlc.PopOperandOp, dlc.PopBufferOp, dlc.PopPackedOp)


def _is_64(t) -> bool:
    return isinstance(t, IndexType) or isinstance(t, IntegerType) and t.width.data == 64


def _contiguous(tu0: dlc.TuOp, tu1: dlc.TuOp) -> dlc.MemStreamOp | None:
    """The stream ``A[q]`` of layer 1's lower bound if layer 1's bounds are ``A[q]`` and
    ``A[q + 1]`` of one 1-D 64-bit memref (module docstring), else None."""
    lb, ub = tu1.lb.owner, tu1.ub.owner
    if not (isinstance(lb, dlc.MemStreamOp) and isinstance(ub, dlc.MemStreamOp)):
        return None
    m = lb.memref.type
    if ub.memref is not lb.memref or not isinstance(m, MemRefType) or len(m.get_shape()) != 1 \
            or not _is_64(m.element_type):
        return None
    stride = lb.stride.value.data
    if stride != 8 or ub.stride.value.data != stride or lb.byte_offset != 0 \
            or lb.index is not tu0.index or lb.layer.value.data != 0 or ub.layer.value.data != 0:
        return None
    if ub.index is tu0.index:
        return lb if ub.byte_offset == stride else None          # A[q] offset 8 = A[q + 1]
    add = ub.index.owner                                          # A[q + 1]
    if ub.byte_offset == 0 and isinstance(add, dlc.AluStreamOp) and add.op.data == "add":
        other = add.rhs if add.lhs is tu0.index else add.lhs if add.rhs is tu0.index else None
        if other is not None and constant_int(other) == 1:
            return lb
    return None


def _reconstructible(fn: func.FuncOp, v: SSAValue, j: SSAValue) -> bool:
    """``v`` is ``j`` or an ALU expression (``_ON_CORE`` ops) of ``j`` and 64-bit registers."""
    if v is j:
        return True
    owner = v.owner
    if isinstance(owner, dlc.AluStreamOp):
        return owner.op.data in _ON_CORE and all(
            _reconstructible(fn, x, j) or is_register(x, fn) and _is_64(x.type)
            for x in (owner.lhs, owner.rhs))
    return False


def _uses_j(v: SSAValue, j: SSAValue) -> bool:
    owner = v.owner
    return v is j or isinstance(owner, dlc.AluStreamOp) and (_uses_j(owner.lhs, j) or _uses_j(owner.rhs, j))


def _on_core(fn, v: SSAValue, j: SSAValue, j_core: SSAValue, before: Operation) -> SSAValue:
    """``v`` computed on the core from ``j_core`` (index), the ops inserted before ``before``."""
    if v is j:
        return j_core
    if is_register(v, fn):
        if isinstance(v.type, IndexType):
            return v
        cast = arith.IndexCastOp(v, IndexType())
        before.parent_block().insert_op_before(cast, before)
        return cast.result
    owner = v.owner
    assert isinstance(owner, dlc.AluStreamOp)
    lhs = _on_core(fn, owner.lhs, j, j_core, before)
    rhs = _on_core(fn, owner.rhs, j, j_core, before)
    new = _ON_CORE[owner.op.data](lhs, rhs)
    new.result.name_hint = v.name_hint
    before.parent_block().insert_op_before(new, before)
    return new.result


def _erase_unused(v: SSAValue) -> None:
    owner = v.owner
    if isinstance(owner, dlc.AluStreamOp) and not v.uses:
        operands = (owner.lhs, owner.rhs)
        owner.detach(); owner.erase()
        for x in operands:
            _erase_unused(x)


def count_segment_index(fn: func.FuncOp) -> int | None:
    """Apply the module docstring's rewrite to a DLC function in place; the core variable made,
    or None if the function was left alone."""
    found = dlc_access_and_compute(fn)
    if found is None:
        return None
    access, compute, tus = found
    ops = list(access.body.block.ops)
    if sorted(tus) != [0, 1]:
        return None
    tu0, tu1 = tus[0], tus[1]
    for tu in (tu0, tu1):
        if tu.lanes != 1 or tu.config_name != "scalar" or tu.step.value.data != 1:
            return None
    if tu1.check_order is None or not is_register(tu0.lb, fn) or not _is_64(tu0.lb.type):
        return None
    lb_stream = _contiguous(tu0, tu1)
    if lb_stream is None:
        return None

    # the segment callback as segment-callbacks leaves it
    callbacks = [o for o in ops if isinstance(o, dlc.RegisterCallbackOp)]
    begin = [c for c in callbacks if (c.layer.value.data, c.event.data) == (1, "begin")]
    if any((c.layer.value.data, c.event.data) == (1, "iter") for c in callbacks):
        return None
    for reg_cb in begin:
        cid = reg_cb.id.value.data
        if sum(c.id.value.data == cid for c in callbacks) != 1:
            continue
        at = ops.index(reg_cb)
        start = at
        while start > 0 and isinstance(ops[start - 1], dlc.RegisterOperandOp):
            start -= 1
        group = ops[start:at]
        iter_regs = [r for r in ops if isinstance(r, dlc.RegisterOperandOp)
                     and (r.layer.value.data, r.event.data) == (1, "iter")]
        if not group or any(r not in group for r in iter_regs) or any(
                r.packed is not None or r.join is not None for r in group):
            continue
        count = group[0].value.owner
        if not (isinstance(count, dlc.AluStreamOp) and count.op.data == "sub" and count.lhs is tu1.ub
                and count.rhs is tu1.lb and (group[0].layer.value.data, group[0].event.data) == (1, "begin")):
            continue
        case = next((c for c in compute.body.block.ops
                     if isinstance(c, dlc.CaseOp) and c.id.value.data == cid), None)
        if case is None:
            continue
        pops = [o for o in case.walk() if isinstance(o, _POPS)]
        if len(pops) != len(group) or not isinstance(pops[0], dlc.PopOperandOp) \
                or pops[0].parent_block() is not case.body.block:
            continue
        n = pops[0].result
        loop = next((o for o in case.body.block.ops if isinstance(o, scf.ForOp) and o.ub is n), None)
        if loop is None or constant_int(loop.lb) != 0 or constant_int(loop.step) != 1 or loop.iter_args:
            continue
        body = loop.body.block
        pairs = [(r, p) for r, p in zip(group, pops) if (r.layer.value.data, r.event.data) == (1, "iter")]
        if [r for r, _ in pairs] != iter_regs or any(p.parent_block() is not body for _, p in pairs) \
                or any(p.parent_block() is body for r, p in zip(group, pops) if r not in iter_regs):
            continue
        chosen = [(r, p) for r, p in pairs
                  if isinstance(p, dlc.PopOperandOp) and isinstance(p.result.type, IndexType | IntegerType)
                  and _uses_j(r.value, tu1.index) and _reconstructible(fn, r.value, tu1.index)]
        if not chosen:
            continue
        return _rewrite(fn, compute, lb_stream, tu0, tu1, body, chosen)
    return None


def _rewrite(fn, compute, lb_stream, tu0, tu1, body: Block, chosen) -> int:
    block = fn.body.block
    var = 1 + max((o.var.value.data for o in fn.walk()
                   if isinstance(o, dlc.SetVarOp | dlc.GetVarOp | dlc.IncrementVarOp)), default=-1)
    # the start: A[lb0], loaded by the core once (guarded: lb0 inside A)
    A = lb_stream.memref
    lb0 = tu0.lb
    prologue: list[Operation] = []
    if not isinstance(lb0.type, IndexType):
        cast = arith.IndexCastOp(lb0, IndexType())
        prologue.append(cast)
        lb0 = cast.result
    c0 = index_constant(fn, 0)
    size = memref.DimOp(A, c0)
    size.result.name_hint = f"{A.name_hint or 'ptr'}_len"
    inside = arith.CmpiOp(lb0, size.result, "ult")
    inside.result.name_hint = "first_inside"
    then = Block()
    load = memref.LoadOp.get(A, [lb0])
    load.res.name_hint = "first_start"
    then.add_op(load)
    first = load.res
    if not isinstance(first.type, IndexType):
        cast = arith.IndexCastOp(first, IndexType())
        cast.result.name_hint = "first_start_index"
        then.add_op(cast)
        first = cast.result
    then.add_op(scf.YieldOp(first))
    other = Block()
    other.add_op(scf.YieldOp(c0))
    guard = scf.IfOp(inside.result, [IndexType()], [then], [other])
    guard.results[0].name_hint = f"var{var}_init"
    prologue += [size, inside, guard, dlc.SetVarOp(var, guard.results[0])]
    block.insert_ops_before(prologue, compute)

    # the loop: j on the core, counted
    get = dlc.GetVarOp(var, IndexType())
    get.result.name_hint = tu1.index.name_hint or "j"
    body.insert_op_before(get, body.first_op)
    term = body.last_op
    inc = dlc.IncrementVarOp(var, 1)
    if isinstance(term, scf.YieldOp):
        body.insert_op_before(inc, term)
    else:
        body.add_op(inc)
    for reg, pop in chosen:
        value = _on_core(fn, reg.value, tu1.index, get.result, pop)
        if value.type != pop.result.type:
            cast = arith.IndexCastOp(value, pop.result.type)
            body.insert_op_before(cast, pop)
            value = cast.result
        if value is not get.result and value.owner.parent_block() is body:
            value.name_hint = pop.result.name_hint
        pop.result.replace_all_uses_with(value)
        pop.detach(); pop.erase()
        stream = reg.value
        reg.detach(); reg.erase()
        _erase_unused(stream)
    return var


@dataclass(frozen=True)
class CountSegmentIndex(ModulePass):
    """The core counts a CSR segment layer's index; operands affine in it are not pushed (-O3)."""

    name = "count-segment-index"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        for fn in functions(op):
            count_segment_index(fn)
