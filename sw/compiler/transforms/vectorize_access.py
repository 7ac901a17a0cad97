"""Access vectorisation (SLC -> SLCV): the innermost loop becomes a vector layer of ``vlen`` lanes.

Ember (arXiv 2504.09870, §6.1) vectorises the access code so that one step of the access unit
covers ``vlen`` consecutive iterations of the innermost loop. This pass rewrites each innermost
``slc.for`` (or scalar ``slcv.for``) into ``slcv.for ... vlen L config vector``:

* streams that depend on the loop index become vector streams (``slcv.mem_stream``,
  ``slcv.alu_stream``); streams that do not stay scalar (their value is broadcast to the lanes);
* the enclosing loop becomes ``config broadcast`` (its values are broadcast to the vector layer);
* an ``iter`` callback receives vectors (``slcv.from_stream``) and the index of the step's first
  lane (``slcv.first_lane``), and runs its original scalar body once per active lane inside an
  ``scf.for`` over the lanes (marked ``slcv.lane_loop``): lane ``l`` has index
  ``i0 + l * step`` and is active when that is below the upper bound (computed on the core when
  the bound is a register, else read from the lane mask). ``vectorize-callbacks`` then turns
  that loop into vector operations where it can; where it cannot, the lane loop is the (correct)
  scalar fallback.

A loop is left scalar when it contains a ``slc.cast`` of a lane-dependent stream, a callback
that uses the loop's index stream in a non-``from_stream`` way, or a block stream
(``slcv.buf_stream``, from ``simplify-streams``: its rows are already one operand per iteration).
"""

from __future__ import annotations

from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects import arith, func, scf, vector
from xdsl.dialects.builtin import IndexType, IntegerAttr, ModuleOp, UnitAttr, VectorType, i1
from xdsl.ir import Block, Operation, Region, SSAValue
from xdsl.passes import ModulePass

from ..dialects import slc, slcv
from ._util import child_loop, functions, innermost_loops, is_register, parent_loop

__all__ = ["VectorizeAccess", "vectorize_access", "LANE_LOOP_ATTR"]

#: Attribute marking the per-lane ``scf.for`` of a vectorised callback.
LANE_LOOP_ATTR = "slcv.lane_loop"


def _vectorizable(loop: Operation) -> bool:
    block = loop.regions[0].block
    dep: set[SSAValue] = {block.args[0]}
    for op in block.ops:
        if isinstance(op, slc.CastOp) and op.value in dep:
            return False
        if isinstance(op, slc.MemStreamOp | slc.AluStreamOp) and any(o in dep for o in op.operands):
            dep.add(op.results[0])
        if isinstance(op, slc.CallbackOp) and op.event.data != "iter":
            return False
        if isinstance(op, slcv.BufStreamOp):     # a block operand per lane is no ISA form
            return False
    if isinstance(loop, slcv.ForOp) and loop.config.data != "scalar":
        return False
    return True


def _to_broadcast(loop: Operation, lanes: int) -> None:
    """Turn an enclosing ``slc.for`` into ``slcv.for ... config broadcast`` (same body)."""
    if isinstance(loop, slcv.ForOp):
        return
    assert isinstance(loop, slc.ForOp)
    body = loop.detach_region(loop.body)
    term = body.block.last_op
    assert isinstance(term, slc.YieldOp)
    term.detach()
    term.erase()
    body.block.add_op(slcv.YieldOp())
    new = slcv.ForOp(loop.lb, loop.ub, loop.step.value.data, lanes, "broadcast", body,
                     loop.check_order is not None)
    new.location = loop.location
    block = loop.parent_block()
    assert block is not None
    block.insert_op_before(new, loop)
    loop.detach()
    loop.erase(safe_erase=False)


def _lane_loop(cb: slc.CallbackOp, new_cb: slc.CallbackOp, loop: slcv.ForOp, old_index: SSAValue,
               vmap: dict[SSAValue, SSAValue], first: SSAValue, fn: func.FuncOp) -> None:
    """Fill ``new_cb``: from_streams, then the original body once per active lane."""
    block = new_cb.body.block
    term = block.last_op
    lanes, step = loop.lanes, loop.step.value.data

    def put(op: Operation) -> Operation:
        block.insert_op_before(op, term)
        return op

    mapper: dict[SSAValue, SSAValue] = {}
    lane_values: list[tuple[SSAValue, SSAValue]] = []   # (old from_stream result, vector)
    index_gets: list[SSAValue] = []
    mask_vec: SSAValue | None = None
    base: SSAValue | None = None
    body_ops = []
    for op in cb.body.block.ops:
        if isinstance(op, slc.YieldOp):
            continue
        if isinstance(op, slc.FromStreamOp) and op.stream is old_index:
            if base is None:
                get = put(slc.FromStreamOp(first))
                get.results[0].name_hint = f"{op.result.name_hint or 'i'}0"
                get.location = op.location
                base = get.results[0]
            index_gets.append(op.result)
        elif isinstance(op, slc.FromStreamOp) and op.stream in vmap:
            new_stream = vmap[op.stream]
            if isinstance(new_stream.type, slcv.VStreamType):
                get = put(slcv.FromStreamOp(new_stream))
                get.location = op.location
                get.results[0].name_hint = f"{op.result.name_hint or 'v'}_vec"
                lane_values.append((op.result, get.results[0]))
            else:
                get = put(slc.FromStreamOp(new_stream))
                get.location = op.location
                get.results[0].name_hint = op.result.name_hint
                mapper[op.result] = get.results[0]
        elif isinstance(op, slc.FromStreamOp):
            get = put(slc.FromStreamOp(op.stream))
            get.location = op.location
            get.results[0].name_hint = op.result.name_hint
            mapper[op.result] = get.results[0]
        else:
            body_ops.append(op)
    if base is None:   # the body does not use the index, but the lanes still need it
        get = put(slc.FromStreamOp(first))
        get.results[0].name_hint = "i0"
        base = get.results[0]
    ub_register = is_register(loop.ub, fn)
    if not ub_register:
        assert loop.mask is not None
        get = put(slcv.FromStreamOp(loop.mask))
        get.results[0].name_hint = "mask"
        mask_vec = get.results[0]
    c0 = put(arith.ConstantOp(IntegerAttr(0, IndexType()))).results[0]
    cl = put(arith.ConstantOp(IntegerAttr(lanes, IndexType()))).results[0]
    c1 = put(arith.ConstantOp(IntegerAttr(1, IndexType()))).results[0]
    c0.name_hint, cl.name_hint, c1.name_hint = "c0", f"c{lanes}", "c1"
    lane_body = Block(arg_types=[IndexType()])
    lane_body.args[0].name_hint = "lane"
    lane_loop = put(scf.ForOp(c0, cl, c1, [], Region(lane_body)))
    lane_loop.attributes[LANE_LOOP_ATTR] = UnitAttr()
    lane = lane_body.args[0]
    # lane index: i0 + lane * step
    if step == 1:
        idx_op = arith.AddiOp(base, lane)
    else:
        cs = arith.ConstantOp(IntegerAttr(step, IndexType()))
        lane_body.add_op(cs)
        off = arith.MuliOp(lane, cs.result)
        lane_body.add_op(off)
        idx_op = arith.AddiOp(base, off.result)
    lane_body.add_op(idx_op)
    idx = idx_op.result
    idx.name_hint = index_gets[0].name_hint if index_gets else "i"
    if ub_register:
        active = arith.CmpiOp(idx, loop.ub, "slt")
    else:
        assert mask_vec is not None
        active = vector.ExtractOp(mask_vec, [lane], i1)
    lane_body.add_op(active)
    active.results[0].name_hint = "active"
    then = Block()
    lane_body.add_op(scf.IfOp(active.results[0], [], Region(then)))
    lane_body.add_op(scf.YieldOp())
    for old in index_gets:
        mapper[old] = idx
    for old, vec in lane_values:
        ext = vector.ExtractOp(vec, [lane], old.type)
        ext.results[0].name_hint = old.name_hint
        then.add_op(ext)
        mapper[old] = ext.results[0]
    for op in body_ops:
        then.add_op(op.clone(value_mapper=mapper))
    then.add_op(scf.YieldOp())


def _vectorize_loop(loop: Operation, lanes: int, fn: func.FuncOp) -> None:
    old_block = loop.regions[0].block
    buffer_types = [r.type for r in loop.results]
    new = slcv.ForOp(loop.lb, loop.ub, loop.step.value.data, lanes, "vector", None,
                     loop.check_order is not None, buffer_types)
    new.location = loop.location
    new.index.name_hint = old_block.args[0].name_hint
    assert new.mask is not None
    new.mask.name_hint = "mask"
    block = new.body.block
    term = block.last_op
    vmap: dict[SSAValue, SSAValue] = {old_block.args[0]: new.index}
    first: SSAValue | None = None

    def put(op: Operation) -> Operation:
        block.insert_op_before(op, term)
        return op

    def mapped(v: SSAValue) -> SSAValue:
        return vmap.get(v, v)

    for op in old_block.ops:
        vec = any(isinstance(mapped(o).type, slcv.VStreamType) for o in op.operands)
        if isinstance(op, slc.MemStreamOp) and vec:
            n = put(slcv.MemStreamOp(op.memref, [mapped(i) for i in op.indices], lanes))
        elif isinstance(op, slc.AluStreamOp) and vec:
            t = op.result.type
            assert isinstance(t, slc.StreamType)
            n = put(slcv.AluStreamOp(op.op.data, mapped(op.lhs), mapped(op.rhs),
                                     slcv.VStreamType(t.element_type, lanes)))
        elif isinstance(op, slc.CallbackOp):
            if first is None:
                f = put(slcv.FirstLaneOp(new.index))
                f.results[0].name_hint = f"{new.index.name_hint or 'i'}0"
                first = f.results[0]
            n = put(slc.CallbackOp(op.event.data))
            _lane_loop(op, n, new, old_block.args[0], vmap, first, fn)
        elif isinstance(op, slc.YieldOp | slcv.YieldOp):
            continue
        elif isinstance(op, slcv.ToBufferOp):
            term.detach()
            term.erase()
            term = None
            block.add_op(slcv.ToBufferOp([mapped(v) for v in op.values]))
            continue
        else:
            n = put(op.clone(value_mapper=dict(vmap)))
        n.location = op.location
        for a, b in zip(op.results, n.results):
            b.name_hint = a.name_hint
            vmap[a] = b
    parent_block = loop.parent_block()
    assert parent_block is not None
    parent_block.insert_op_before(new, loop)
    for a, b in zip(loop.results, new.results):
        b.name_hint = a.name_hint
        a.replace_all_uses_with(b)
    loop.detach()
    loop.erase(safe_erase=False)
    parent = parent_loop(new)
    if parent is not None:
        _to_broadcast(parent, lanes)


def vectorize_access(fn: func.FuncOp, vlen: int = 8) -> None:
    """Vectorise the innermost loop(s) of an SLC function in place (see module docstring)."""
    if vlen < 2:
        return
    for loop in innermost_loops(fn):
        if child_loop(loop) is None and _vectorizable(loop):
            _vectorize_loop(loop, vlen, fn)


@dataclass(frozen=True)
class VectorizeAccess(ModulePass):
    """Vectorise innermost slc.for loops into slcv.for ... config vector (vlen lanes; -O1)."""

    name = "vectorize-access"
    vlen: int = 8

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        if self.vlen < 1:
            raise ValueError(f"vlen must be >= 1, not {self.vlen!r}")
        for fn in functions(op):
            vectorize_access(fn, self.vlen)
