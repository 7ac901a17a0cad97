"""segment-callbacks: one callback per segment of the innermost layer instead of one per lookup.

At ``-O3`` the innermost layer of an EmbeddingBag (the lookups ``j`` of bag ``b``), an SpMM or an
SpMV (the nonzeros of row ``i``) fires its callback on every iteration: one control token per
lookup, and the operands that do not change during the segment (the bag ``b``) pushed with every
lookup. A hand-written program pushes the segment's length once and lets the core count
(``sw/runtime/handwritten/suite.py``; Ember, arXiv 2504.09870, §6.3, hoisting loop-invariant
operands and callbacks). This pass does the same on the DLC. For the innermost layer ``k >= 1``,
a scalar layer of step 1 whose ``iter`` event has exactly one callback ``C`` (its operands
registered right before it, all on ``k``'s ``iter``):

1. ``%n = dlc.alu_stream layer k-1 sub %ub, %lb`` (the trip count of layer ``k``: ``ub - lb``,
   non-positive for an empty segment) is registered on layer ``k``'s ``begin`` — which the unit
   fires once per iteration of layer ``k - 1``, after its ``iter`` and before layer ``k``'s
   traversal, also when the traversal is empty (docs/isa.md, "Execution order");
2. ``C``'s operands that are invariant during layer ``k`` (registers, streams of layers ``< k``:
   the bag ``b``) move to ``begin`` too (hoisted: pushed once per segment), the others stay on
   ``iter`` (pushed per lookup, without a control token);
3. ``C`` is registered on ``begin``; its ``dlc.case`` pops ``%n`` and the hoisted operands, then
   runs its former body — the per-lookup pops and the work — in ``scf.for %_ = 0 to %n``.

4. a callback of layer ``k``'s ``begin`` registered right before ``C``'s operands (max's start of
   the running maximum) runs at the top of ``C``'s case; a callback of layer ``k``'s ``end``
   registered right after ``C`` whose operands are invariant during layer ``k`` (mean's division
   by the bag length, max's zero for an empty bag) runs after the loop, its operands registered
   on ``begin`` (the same values: streams of outer layers or registers) and popped before the
   loop — or, for an ALU stream of the segment length and registers (mean's ``max(len, 1)``),
   computed on the core from the popped length (``arith``), not pushed; and max's empty-bag
   test ``lb == ub`` (``!=``), when the bounds are popped for nothing else, is tested on the
   popped length (``n == 0``: exact, a 64-bit ``ub - lb`` is 0 only when ``ub == lb``), so the
   bounds are not pushed. The segment length is the
   kernel's own ``ub - lb`` stream when it has one. One control token per segment instead of two or three; the registrations stay in the
   order of the pops.

The core pops the same operands in the same order and does the same arithmetic in the same order,
so results are unchanged bit for bit; the data queue carries one more token per segment (``n``)
and the hoisted operands once per segment, the control queue one token per segment instead of one
per lookup. ``count-segment-index``, which runs next, counts the segment's own index ``j`` on
the core when a per-lookup operand is an ALU expression of it (``transforms/count_segment_index.py``);
``replace-to-val-ops`` then counts ``b`` on the core from this ``begin`` callback (increment
first), and ``align-queues`` packs the per-lookup operands as before.

Left alone: a layer with another callback on its ``iter`` (or none), operands registered apart
from their callback, a vector or broadcast layer, a step other than 1, a ``begin`` action of
layer ``k`` registered after ``C`` (the core would run it after ``C``'s work instead of before),
a ``dlc.case`` whose pops do not match the registrations one for one, and a kernel of one layer
(TransE: one callback per triple already).
"""

from __future__ import annotations

from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects import arith, func, scf
from xdsl.dialects.builtin import IndexType, IntegerAttr, IntegerType, ModuleOp, StringAttr
from xdsl.ir import Block, Operation, Region
from xdsl.passes import ModulePass

from ..dialects import dlc
from ._util import dlc_access_and_compute, functions
from .hoist_streams import _layer_of

__all__ = ["SegmentCallbacks", "segment_callbacks"]

_POPS = (dlc.PopOperandOp, dlc.PopBufferOp, dlc.PopPackedOp)


def _key(op: Operation) -> tuple[int, str] | None:
    if isinstance(op, dlc.RegisterOperandOp | dlc.RegisterCallbackOp):
        return op.layer.value.data, op.event.data
    return None


def _defined_outside(value, case: dlc.CaseOp) -> bool:
    owner = value.owner
    op = owner.parent_op() if isinstance(owner, Block) else owner
    while op is not None:
        if op is case:
            return False
        op = op.parent_op()
    return True


def segment_callbacks(fn: func.FuncOp) -> int | None:
    """Apply the module docstring's rewrite to a DLC function in place; the callback id moved to
    the segment, or None if the function was left alone."""
    found = dlc_access_and_compute(fn)
    if found is None:
        return None
    access, compute, tus = found
    ops = list(access.body.block.ops)
    if len(tus) < 2:
        return None
    k = max(tus)
    tu = tus[k]
    if tu.lanes != 1 or tu.config_name != "scalar" or tu.step.value.data != 1:
        return None
    iter_cbs = [o for o in ops if isinstance(o, dlc.RegisterCallbackOp) and _key(o) == (k, "iter")]
    if len(iter_cbs) != 1:
        return None
    reg_cb = iter_cbs[0]
    at = ops.index(reg_cb)
    start = at
    while start > 0 and isinstance(ops[start - 1], dlc.RegisterOperandOp):
        start -= 1
    operands = ops[start:at]
    if any(_key(r) != (k, "iter") for r in operands) or any(
            r.packed is not None or r.join is not None for r in operands):
        return None
    if any(_key(o) == (k, "iter") for o in ops[:start] + ops[at + 1:]):
        return None                      # an operand of layer k's iter apart from its callback
    if any(_key(o) == (k, "begin") for o in ops[at + 1:]):
        return None                      # a begin action after C: would run after C's work
    cid = reg_cb.id.value.data
    case = next((c for c in compute.body.block.ops
                 if isinstance(c, dlc.CaseOp) and c.id.value.data == cid), None)
    if case is None:
        return None
    top = [o for o in case.body.block.ops if not isinstance(o, dlc.YieldOp)]
    pops = [o for o in case.walk() if isinstance(o, _POPS)]
    if len(pops) != len(operands) or any(isinstance(p, dlc.PopPackedOp) for p in pops) \
            or any(p not in top for p in pops) \
            or any(not _defined_outside(v, case) for p in pops for v in p.operands):
        return None

    # access side: %n on layer k's begin, hoisted operands there too, the callback on begin
    count = next((o for o in ops if isinstance(o, dlc.AluStreamOp) and o.op.data == "sub"
                  and o.lhs is tu.ub and o.rhs is tu.lb and o.layer.value.data == k - 1
                  and dlc.stream_lanes(o.result.type) == 1), None)   # the kernel's own ub - lb
    if count is None:
        count = dlc.AluStreamOp(k - 1, "sub", tu.ub, tu.lb, dlc.stream_type(IndexType(), 1))
        count.result.name_hint = "seg_len"
        access.body.block.insert_op_before(count, tu)
    hoisted = [(r, p) for r, p in zip(operands, pops) if _layer_of(r.value) < k]
    per_lookup = [(r, p) for r, p in zip(operands, pops) if _layer_of(r.value) >= k]
    for r in operands:
        r.detach()
    for r, _ in hoisted:
        r.event = StringAttr("begin")
    for r in [dlc.RegisterOperandOp(k, "begin", count.result)] + [r for r, _ in hoisted + per_lookup]:
        access.body.block.insert_op_before(r, reg_cb)
    reg_cb.event = StringAttr("begin")

    # execute side: pop n and the hoisted operands, then the old body n times
    body = case.body.block
    n_pop = dlc.PopOperandOp(IndexType())
    n_pop.result.name_hint = "seg_len"
    c0 = arith.ConstantOp(IntegerAttr(0, IndexType()))
    c1 = arith.ConstantOp(IntegerAttr(1, IndexType()))
    c0.result.name_hint, c1.result.name_hint = "c0", "c1"
    loop_block = Block(arg_types=[IndexType()])
    loop_block.args[0].name_hint = "lookup"
    loop = scf.ForOp(c0.result, n_pop.result, c1.result, [], Region(loop_block))
    for op in top:
        op.detach()
    term = body.last_op if isinstance(body.last_op, dlc.YieldOp) else None
    for op in [n_pop] + [p for _, p in hoisted] + [c0, c1, loop]:
        if term is not None:
            body.insert_op_before(op, term)
        else:
            body.add_op(op)
    for op in top:
        if not any(op is p for _, p in hoisted):
            loop_block.add_op(op)
    loop_block.add_op(scf.YieldOp())
    _merge_begin(access, compute, k, reg_cb, case)
    _merge_end(access, compute, k, reg_cb, case, loop, count.result, n_pop.result)
    return cid


def _group(access: dlc.ConfigureAccessOp, reg_cb: dlc.RegisterCallbackOp) -> list:
    """The operand registrations right before ``reg_cb`` (its operands)."""
    ops = list(access.body.block.ops)
    at = ops.index(reg_cb)
    start = at
    while start > 0 and isinstance(ops[start - 1], dlc.RegisterOperandOp):
        start -= 1
    return ops[start:at]


def _case_of(compute: dlc.ComputeLoopOp, cid: int) -> dlc.CaseOp | None:
    return next((c for c in compute.body.block.ops
                 if isinstance(c, dlc.CaseOp) and c.id.value.data == cid), None)


def _simple(case: dlc.CaseOp, operands: list) -> list | None:
    """``case``'s top-level pops if they match ``operands`` one for one and read nothing defined
    in the case, else None."""
    top = [o for o in case.body.block.ops if not isinstance(o, dlc.YieldOp)]
    pops = [o for o in case.walk() if isinstance(o, _POPS)]
    if len(pops) != len(operands) or any(isinstance(p, dlc.PopPackedOp) or p not in top for p in pops) \
            or any(not _defined_outside(v, case) for p in pops for v in p.operands):
        return None
    return pops


def _merge_begin(access, compute, k: int, reg_cb, case) -> None:
    """A callback B on layer k's begin registered right before the segment's operands runs, with
    its pops, at the top of the segment's case (its operands stay where they are, before the
    segment's on begin): one control token per segment instead of two."""
    ops = list(access.body.block.ops)
    first = _group(access, reg_cb)
    first = first[0] if first else reg_cb
    at = ops.index(first)
    if at == 0 or not isinstance(ops[at - 1], dlc.RegisterCallbackOp) or _key(ops[at - 1]) != (k, "begin"):
        return
    b_cb = ops[at - 1]
    b_case = _case_of(compute, b_cb.id.value.data)
    if b_case is None or b_case is case or _simple(b_case, _group(access, b_cb)) is None:
        return
    body = case.body.block
    for op in reversed([o for o in b_case.body.block.ops if not isinstance(o, dlc.YieldOp)]):
        op.detach()
        body.insert_op_before(op, body.first_op)
    b_cb.detach(); b_cb.erase()
    b_case.detach(); b_case.erase()


#: ALU streams of the segment length and registers the core recomputes instead of receiving.
_ON_CORE = {"add": arith.AddiOp, "sub": arith.SubiOp, "mul": arith.MuliOp, "max": arith.MaxSIOp,
            "min": arith.MinSIOp}


def _merge_end(access, compute, k: int, reg_cb, case, loop, count, n) -> None:
    """A callback E on layer k's end registered right after the segment's callback, whose
    operands are invariant during layer k, runs after the segment's loop: its operands move to
    layer k's begin (the same values: streams of outer layers), its pops before the loop. An
    operand that is an ALU stream of the segment length and registers (mean's ``max(len, 1)``)
    is computed on the core from the popped length instead of pushed."""
    ops = list(access.body.block.ops)
    at = ops.index(reg_cb) + 1
    nxt = at
    while nxt < len(ops) and isinstance(ops[nxt], dlc.RegisterOperandOp):
        nxt += 1
    if nxt >= len(ops) or not isinstance(ops[nxt], dlc.RegisterCallbackOp) or _key(ops[nxt]) != (k, "end"):
        return
    e_cb, e_operands = ops[nxt], ops[at:nxt]
    if any(_key(r) != (k, "end") or _layer_of(r.value) >= k for r in e_operands):
        return
    e_case = _case_of(compute, e_cb.id.value.data)
    if e_case is None or e_case is case:
        return
    e_pops = _simple(e_case, e_operands)
    if e_pops is None:
        return
    # registered before the per-lookup operands: registrations stay in the order of the pops
    before = next((r for r in _group(access, reg_cb) if _key(r) == (k, "iter")), reg_cb)
    for r in e_operands:
        r.detach()
        r.event = StringAttr("begin")
        access.body.block.insert_op_before(r, before)
    body = case.body.block
    for r, p in zip(e_operands, e_pops):
        v = r.value.owner
        if isinstance(v, dlc.AluStreamOp) and v.op.data in _ON_CORE and isinstance(p, dlc.PopOperandOp) \
                and all(x is count or _layer_of(x) == -1 for x in (v.lhs, v.rhs)) \
                and isinstance(p.result.type, IndexType | IntegerType):
            new = _ON_CORE[v.op.data](*(n if x is count else x for x in (v.lhs, v.rhs)))
            body.insert_op_before(new, loop)
            value = new.result
            if p.result.type != value.type:
                cast = arith.IndexCastOp(value, p.result.type)
                body.insert_op_before(cast, loop)
                value = cast.result
            value.name_hint = p.result.name_hint
            p.result.replace_all_uses_with(value)
            p.detach(); p.erase()
            r.detach(); r.erase()
            if not v.result.uses:
                v.detach(); v.erase()
            continue
        p.detach()
        body.insert_op_before(p, loop)
    term = body.last_op if isinstance(body.last_op, dlc.YieldOp) else None
    for op in [o for o in e_case.body.block.ops if not isinstance(o, dlc.YieldOp)]:
        op.detach()
        if term is not None:
            body.insert_op_before(op, term)
        else:
            body.add_op(op)
    e_cb.detach(); e_cb.erase()
    e_case.detach(); e_case.erase()
    _empty_test_from_length(access, body, loop, count, n)


def _empty_test_from_length(access, body: Block, loop, count, n) -> None:
    """max's empty-bag test ``lb == ub`` (or ``!=``) on the core, when the bounds ``lb``, ``ub``
    of layer k are popped for nothing else, becomes ``n == 0`` on the popped segment length
    ``n = ub - lb``: exact, since a 64-bit ``ub - lb`` wraps to 0 only when ``ub == lb``. The two
    bounds are then not pushed (the hand-written program's tokens)."""
    k = count.owner.layer.value.data + 1
    bound_of = {count.owner.rhs: "lb", count.owner.lhs: "ub"}
    # the case's pops before the loop are layer k's begin registrations, one for one, in order
    popped = []
    for op in body.ops:
        if op is loop:
            break
        if isinstance(op, _POPS):
            popped.append(op)
    registered = [r for r in access.body.block.ops
                  if isinstance(r, dlc.RegisterOperandOp) and _key(r) == (k, "begin")]
    if len(registered) != len(popped):
        return
    found = {}
    for r, p in zip(registered, popped):
        if r.value in bound_of and bound_of[r.value] not in found:
            found[bound_of[r.value]] = (r, p)
    if len(found) != 2 or not all(isinstance(p, dlc.PopOperandOp) for _, p in found.values()):
        return
    (r_lb, p_lb), (r_ub, p_ub) = found["lb"], found["ub"]
    kind = p_lb.result.type
    if p_ub.result.type != kind or not isinstance(kind, IndexType | IntegerType):
        return
    tests = []
    for p, other in ((p_lb, p_ub), (p_ub, p_lb)):
        for use in p.result.uses:
            cmp = use.operation
            if not (isinstance(cmp, arith.CmpiOp) and cmp.predicate.value.data in (0, 1)
                    and {cmp.lhs, cmp.rhs} == {p.result, other.result}):
                return                   # a bound used for more than the empty test
            if cmp not in tests:
                tests.append(cmp)
    length = n
    if length.type != kind:
        cast = arith.IndexCastOp(n, kind)
        body.insert_op_before(cast, loop)
        length = cast.result
    for cmp in tests:                    # predicate 0: eq, 1: ne
        zero = arith.ConstantOp(IntegerAttr(0, kind))
        zero.result.name_hint = "c0"
        new = arith.CmpiOp(length, zero.result, cmp.predicate.value.data)
        cmp.parent_block().insert_ops_before([zero, new], cmp)
        new.result.name_hint = cmp.result.name_hint
        cmp.result.replace_all_uses_with(new.result)
        cmp.detach(); cmp.erase()
    for r, p in ((r_lb, p_lb), (r_ub, p_ub)):
        p.detach(); p.erase()
        r.detach(); r.erase()


@dataclass(frozen=True)
class SegmentCallbacks(ModulePass):
    """One callback per segment of the innermost layer, its invariant operands hoisted (-O3)."""

    name = "segment-callbacks"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        for fn in functions(op):
            segment_callbacks(fn)
