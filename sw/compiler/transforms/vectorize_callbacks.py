"""Callback vectorisation: the per-lane loop of a vectorised callback becomes vector operations.

After ``vectorize-access`` an ``iter`` callback of a vector layer runs its scalar body once per
active lane (an ``scf.for`` marked ``slcv.lane_loop``). This pass (Ember, arXiv 2504.09870,
§6.1, "callback vectorisation") replaces that loop by MLIR ``vector`` operations when every
operation of the body has a lane-wise form:

* lane values (``vector.extract %v[%lane]``) become the vector ``%v``; the lane index
  ``i0 + lane`` (step 1 only) is the contiguous index of a vector access;
* ``memref.load``/``memref.store`` whose last index is the lane index and whose other indices
  are lane-invariant become ``vector.maskedload``/``vector.maskedstore`` under the lane mask
  (``vector.create_mask (ub - i0)`` when the bound is a register, else the mask operand);
* float arithmetic (``addf subf mulf divf maximumf minimumf maxnumf minnumf negf``, ``math.fma``)
  on lane values becomes the same op on vectors (lane-invariant operands ``vector.broadcast``);
* lane-invariant pure ops (constants, integer arithmetic, loads from memrefs the body does not
  store to) are computed once.

Anything else (another access pattern, a reduction into one address, integer arithmetic on lane
values, nested regions) leaves the lane loop in place: it is correct, only slower. Two lanes
never touch the same address through a store: every store and load of a stored memref must use
the same index list, whose last index is the lane index.
"""

from __future__ import annotations

from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects import arith, func, math, memref, scf, vector
from xdsl.dialects.builtin import (BFloat16Type, FloatAttr, IndexType, IntegerAttr, IntegerType, ModuleOp,
                                   VectorType, i1)
from xdsl.ir import Operation, SSAValue
from xdsl.passes import ModulePass

from ..dialects import slc, slcv
from ._util import functions
from .vectorize_access import LANE_LOOP_ATTR

__all__ = ["VectorizeCallbacks", "vectorize_callbacks"]

_FLOAT_OPS = (arith.AddfOp, arith.SubfOp, arith.MulfOp, arith.DivfOp, arith.MaximumfOp,
              arith.MinimumfOp, arith.MaxnumfOp, arith.MinnumfOp)
_UNIFORM_OK = (arith.ConstantOp, arith.AddiOp, arith.SubiOp, arith.MuliOp, arith.IndexCastOp,
               arith.SIToFPOp, arith.ExtFOp, arith.TruncFOp, arith.ExtSIOp, arith.CmpiOp,
               arith.SelectOp, arith.MaxSIOp, arith.MinSIOp, *_FLOAT_OPS, arith.NegfOp,
               memref.LoadOp, memref.DimOp)


class _Bail(Exception):
    pass


def _vectorize(cb: slc.CallbackOp, lane_loop: scf.ForOp, loop: slcv.ForOp) -> None:
    lane_body = lane_loop.body.block
    lane = lane_body.args[0]
    ops = list(lane_body.ops)
    idx_op, active_op, if_op = ops[0], ops[1], ops[2]
    if loop.step.value.data != 1 or not isinstance(idx_op, arith.AddiOp) \
            or not isinstance(if_op, scf.IfOp):
        raise _Bail
    base = idx_op.lhs
    idx = idx_op.result
    lanes = loop.lanes
    body = [o for o in if_op.true_region.block.ops if not isinstance(o, scf.YieldOp)]
    # bf16 has no NumPy vector type (its memrefs hold bit patterns): keep the lane loop.
    if any(isinstance(getattr(v.type, "element_type", v.type), BFloat16Type)
           for o in if_op.walk() for v in (*o.operands, *o.results)):
        raise _Bail
    stored = {o.memref for o in body if isinstance(o, memref.StoreOp)}
    # Stores and loads of a stored memref: one index list, last index the lane index.
    pattern: dict[SSAValue, tuple] = {}
    for o in body:
        if isinstance(o, memref.LoadOp | memref.StoreOp) and o.memref in stored:
            key = tuple(o.indices)
            if pattern.setdefault(o.memref, key) != key or not key or key[-1] is not idx:
                raise _Bail
    # Classify and build.
    block = cb.body.block
    anchor = lane_loop
    vec: dict[SSAValue, SSAValue] = {}     # lane value -> vector
    uni: dict[SSAValue, SSAValue] = {}     # lane-invariant value -> new value
    new_ops: list[Operation] = []
    mask: SSAValue | None = None

    def emit(op: Operation) -> Operation:
        new_ops.append(op)
        return op

    def u(v: SSAValue) -> SSAValue:
        return uni.get(v, v)

    def as_vec(v: SSAValue) -> SSAValue:
        if v in vec:
            return vec[v]
        b = emit(vector.BroadcastOp(u(v), VectorType(v.type, [lanes])))
        vec[v] = b.results[0]
        return b.results[0]

    def varying(v: SSAValue) -> bool:
        return v in vec or v is idx or v is lane

    def get_mask() -> SSAValue:
        nonlocal mask
        if mask is None:
            if isinstance(active_op, vector.ExtractOp):
                mask = active_op.vector
            else:
                n = emit(arith.SubiOp(active_op.rhs, base))
                n.results[0].name_hint = "live"
                m = emit(vector.CreateMaskOp([n.results[0]], VectorType(i1, [lanes])))
                mask = m.results[0]
            mask.name_hint = mask.name_hint or "mask"
        return mask

    try:
        _build(body, lane, idx, base, lanes, stored, vec, uni, emit, as_vec, varying, get_mask, u)
    except _Bail:
        for op in reversed(new_ops):
            op.erase(safe_erase=False)
        raise
    for op in new_ops:
        block.insert_op_before(op, anchor)
    lane_loop.detach()
    lane_loop.erase(safe_erase=False)
    # Drop what the lane loop alone used (its constants, unused vector/mask operands).
    for op in reversed(list(block.ops)):
        if isinstance(op, arith.ConstantOp | slcv.FromStreamOp | slc.FromStreamOp) \
                and not op.results[0].uses:
            op.detach()
            op.erase()


def _build(body, lane, idx, base, lanes, stored, vec, uni, emit, as_vec, varying, get_mask, u):
    for o in body:
        if isinstance(o, vector.ExtractOp) and o.vector.owner is not None \
                and list(o.dynamic_position) == [lane]:
            vec[o.result] = o.vector
            continue
        if any(r is lane for r in o.operands):
            raise _Bail
        if o.regions:
            raise _Bail
        is_varying = any(varying(v) for v in o.operands)
        if isinstance(o, memref.LoadOp) and o.indices and o.indices[-1] is idx \
                and not any(varying(i) for i in o.indices[:-1]):
            t = VectorType(o.res.type, [lanes])
            zero = emit(arith.ConstantOp(_zero_attr(o.res.type, t)))
            ld = emit(vector.MaskedLoadOp(u(o.memref), [*(u(i) for i in o.indices[:-1]), base],
                                          get_mask(), zero.results[0], t))
            ld.results[0].name_hint = o.res.name_hint
            vec[o.res] = ld.results[0]
        elif isinstance(o, memref.StoreOp):
            if not (o.indices and o.indices[-1] is idx
                    and not any(varying(i) for i in o.indices[:-1])):
                raise _Bail
            emit(vector.MaskedStoreOp(u(o.memref), [*(u(i) for i in o.indices[:-1]), base],
                                      get_mask(), as_vec(o.value)))
        elif is_varying and isinstance(o, (*_FLOAT_OPS, math.FmaOp, arith.NegfOp)):
            args = [as_vec(v) for v in o.operands]
            n = emit(type(o).create(operands=args, result_types=[VectorType(o.results[0].type, [lanes])],
                                    properties=dict(o.properties), attributes=dict(o.attributes)))
            n.results[0].name_hint = o.results[0].name_hint
            vec[o.results[0]] = n.results[0]
        elif not is_varying and isinstance(o, _UNIFORM_OK) and \
                not (isinstance(o, memref.LoadOp) and o.memref in stored):
            n = emit(o.clone(value_mapper=dict(uni)))
            for a, b in zip(o.results, n.results):
                uni[a] = b
        else:
            raise _Bail


def _zero_attr(elem, t: VectorType):
    from xdsl.dialects.builtin import DenseIntOrFPElementsAttr
    if isinstance(elem, IndexType | IntegerType):
        return DenseIntOrFPElementsAttr.from_list(t, [0] * t.get_shape()[0])
    return DenseIntOrFPElementsAttr.from_list(t, [0.0] * t.get_shape()[0])


def vectorize_callbacks(fn: func.FuncOp) -> None:
    """Vectorise every lane loop of ``fn`` that has a lane-wise form (module docstring)."""
    for cb in [o for o in fn.walk() if isinstance(o, slc.CallbackOp)]:
        loop = cb.parent_op()
        if not isinstance(loop, slcv.ForOp) or loop.config.data != "vector":
            continue
        lane_loops = [o for o in cb.body.block.ops
                      if isinstance(o, scf.ForOp) and LANE_LOOP_ATTR in o.attributes]
        for lane_loop in lane_loops:
            try:
                _vectorize(cb, lane_loop, loop)
            except _Bail:
                pass


@dataclass(frozen=True)
class VectorizeCallbacks(ModulePass):
    """Turn per-lane callback loops into vector dialect operations (-O1)."""

    name = "vectorize-callbacks"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        for fn in functions(op):
            vectorize_callbacks(fn)
