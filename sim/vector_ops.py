"""Vector values in the execute side's instruction stream (``sim.execute_trace``): the ``vector``
dialect operations and vector-typed ``arith``/``math`` of ``-O1``'s compute loops.

A vector value is a NumPy array of its element type (a mask: of ``bool``); each operation is one
instruction (an AVX-512 instruction on up to 16 lanes), as in ``sim.core_trace``'s vector form:

* ``vector.maskedload`` / ``vector.maskedstore``: a ``LOAD`` / ``STORE`` of the active lanes'
  addresses (``base[*lead, last + l]`` for lane ``l``); with ``promote`` a masked load whose
  active lanes were all written by one store is that store's value (scalar replacement of a
  vector accumulator), no instruction, and a masked store whose every lane is stored again
  before any load reads it is dropped (``sim.core_trace``'s store sinking); a masked load that
  does read stored lanes from memory keeps those stores;
* ``vector.create_mask``, ``vector.broadcast``, ``vector.extract`` and vector-typed ``arith`` /
  ``math`` (add, sub, mul, div, maximum, minimum, fma, sqrt, neg): an ``ALU`` instruction with
  ``OpLatency``'s latency; a vector ``arith.constant`` is free.

Semantics follow the compiler's Python backend (``sw.compiler.backend.python``: ``_mload``,
``_mstore``, masks as ``arange(lanes) < n``); f32 ``math.fma`` is computed in float64 and then
rounded to f32, as ``sim.core_trace`` does for scalars (the float64 sum is itself rounded, so the
last bit can differ from the backend's single rounding: results are compared within a bound).
"""

from __future__ import annotations

import numpy as np
from xdsl.dialects.builtin import VectorType

from .core_trace import ALU, LOAD, STORE, element_type_name

__all__ = ["VectorOps", "is_vector"]

_UNARY = {"arith.negf": np.negative, "math.sqrt": np.sqrt}
_BINARY = {
    "arith.addf": np.add, "arith.subf": np.subtract, "arith.mulf": np.multiply,
    "arith.divf": np.divide, "arith.maximumf": np.maximum, "arith.minimumf": np.minimum,
    "arith.maxnumf": np.fmax, "arith.minnumf": np.fmin,
    "arith.addi": np.add, "arith.subi": np.subtract, "arith.muli": np.multiply,
    "arith.andi": np.bitwise_and, "arith.ori": np.bitwise_or, "arith.xori": np.bitwise_xor,
    "arith.maxsi": np.maximum, "arith.minsi": np.minimum,
}


def is_vector(t) -> bool:
    """Whether ``t`` is a ``vector`` type."""
    return isinstance(t, VectorType)


def _dtype(t: VectorType) -> str:
    name = element_type_name(t.element_type)
    if name is None:
        raise ValueError(f"a vector must have a NumPy element type, not {t}")
    return name


class VectorOps:
    """Mixin of a ``sim.core_trace._Tracer`` subclass: :meth:`vector_op` runs one operation that
    is a vector operation or has a vector result, and says whether it did."""

    @staticmethod
    def may_be_vector(op) -> bool:
        """Whether :meth:`vector_op` may run ``op`` (a ``vector`` operation, or a result of a
        vector type): ``False`` for an operation it always declines, so that a caller can skip it
        (the answer depends only on the operation, not on values)."""
        if op.name.startswith("vector."):
            return True
        return bool(op.results) and is_vector(op.results[0].type)

    def vector_op(self, op) -> bool:
        name = op.name
        env, prod = self.env, self.prod
        result = op.results[0] if op.results else None
        if name == "vector.maskedload":
            self._masked_load(op)
            return True
        if name == "vector.maskedstore":
            self._masked_store(op)
            return True
        if result is None or not is_vector(result.type) and name != "vector.extract":
            return False
        if name == "arith.constant":
            env[result] = np.array(op.value.get_values(), dtype=_dtype(result.type))
            prod[result] = None
            return True
        operands = list(op.operands)
        ins = [env[v] for v in operands]
        if name == "vector.create_mask":
            value = np.arange(result.type.get_shape()[0]) < int(ins[0])
        elif name == "vector.broadcast":
            value = np.full(result.type.get_shape()[0], ins[0], dtype=_dtype(result.type))
        elif name == "vector.extract":
            dynamic = [int(env[v]) for v in op.dynamic_position]
            position = dynamic or list(op.static_position.get_values())
            value = ins[0][tuple(position)]
            value = int(value) if np.issubdtype(np.asarray(value).dtype, np.integer) else value
        elif name == "math.fma":
            a, b, c = (np.asarray(x, dtype=np.float64) for x in ins)
            value = (a * b + c).astype(_dtype(result.type))
        elif name in _BINARY or name in _UNARY:
            with np.errstate(all="ignore"):
                f = _BINARY.get(name) or _UNARY[name]
                value = np.asarray(f(*ins)).astype(_dtype(result.type))
        else:
            raise ValueError(f"module must use the vector operations of the compiler's -O1 "
                             f"execute side, not {name!r} on {result.type}")
        env[result] = value
        prod[result] = self.emit(op, ALU, self.deps_of(operands), latency=self.lat.of(name))
        return True

    def _lanes(self, op, mask):
        """The memref, and the byte addresses and indices of ``op``'s active lanes."""
        m = self.env[op.base]
        lead = [int(self.env[v]) for v in op.indices[:-1]]
        last = int(self.env[op.indices[-1]])
        lanes = []
        for lane in np.flatnonzero(mask):
            idx = (*lead, last + int(lane))
            addr = m.base + int(np.ravel_multi_index(idx, m.array.shape)) * m.itemsize
            lanes.append((int(lane), idx, addr))
        return m, lanes

    def _masked_load(self, op) -> None:
        env, prod = self.env, self.prod
        mask, passthru = env[op.mask], env[op.pass_thru]
        m, lanes = self._lanes(op, mask)
        value = np.array(passthru, copy=True)
        for lane, idx, _ in lanes:
            value[lane] = m.array[idx]
        env[op.result] = value
        addrs = [a for _, _, a in lanes]
        stores = {self.last_store.get(a) for a in addrs}
        sources = {self.stored.get(a) for a in addrs}
        if self.promote and addrs and None not in stores and len(stores) == 1 and len(sources) == 1:
            prod[op.result] = sources.pop()          # the stored vector, still in its register
            return
        store = max(stores) if addrs and None not in stores else None
        self.read_stores |= stores - {None}           # read from memory: they stay
        deps = self.deps_of([*op.indices, op.mask, op.pass_thru]) + list(stores - {None})
        i = self.emit(op, LOAD, deps, mem=m, addr=addrs[0] if addrs else None,
                      size=m.itemsize, store=store)
        self.t.addrs[i].extend(addrs[1:])
        prod[op.result] = i

    def _masked_store(self, op) -> None:
        env = self.env
        m, lanes = self._lanes(op, env[op.mask])
        value = env[op.value_to_store]
        addrs = [a for _, _, a in lanes]
        i = self.emit(op, STORE, self.deps_of([op.value_to_store, *op.indices, op.mask]), mem=m,
                      addr=addrs[0] if addrs else None, size=m.itemsize)
        self.t.addrs[i].extend(addrs[1:])
        source = self.prod.get(op.value_to_store)
        for lane, idx, addr in lanes:
            m.array[idx] = value[lane]
            self.record_store(i, addr, source)
