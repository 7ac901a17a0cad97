"""The instruction stream of a kernel's sequential form, with its data dependences, for a core model.

``trace_kernel(module, args)`` runs the SCF-level MLIR function (the frontend's ``func`` +
``scf`` + ``arith`` + ``memref`` form: the xDSL module ``sw.compiler.frontends.mlir.parse_mlir``
returns, which the caller passes in: the simulator does not import the compiler) on real inputs
and records, in program order, one instruction per executed operation that a compiled core
program would execute:

* ``LOAD``: a ``memref.load`` — its byte address(es), the 64-byte lines they touch, its useful
  bytes, and the earlier instructions its address depends on (the producers of its indices, e.g.
  ``table[row]`` depends on the load of ``indices[j]``, which depends on the load of
  ``offsets[b]`` through the loop's induction variable) plus the last store to the same address
  (a memory dependence, as with perfect memory-dependence prediction);
* ``STORE``: a ``memref.store`` (its address and lines; depends on the value and the indices);
* ``ALU``: an ``arith``/``math`` operation (latency from :class:`OpLatency`), and one per loop
  iteration for the induction-variable increment (``lb + k * step``: a chain of adds from the
  producer of ``lb``).

Free (no instruction, as a compiler folds them): constants, ``memref.dim``, integer casts
(``index_cast``, ``extsi``, ``extui``, ``trunci``), the multiply-add of a multi-dimensional
subscript (an addressing mode), branches (``scf.for`` exits and ``scf.if``: perfect branch
prediction — generous to the core).

Vector form (``vector_bytes > 0``): an innermost ``scf.for`` (no nested loop or ``if``) runs in
chunks of ``V = vector_bytes // widest element`` iterations, and every operation of its body
becomes one instruction per chunk (what a loop vectoriser emits; AVX-512 is 64 bytes): a load of
consecutive addresses is one vector load, a load of one repeated address a broadcast, any other a
gather (one instruction that touches all its lines). Dependences inside a chunk are dropped
(lanes are independent; a reduction through memory becomes a vector reduction). With
``vector_bytes = 0`` every operation is a scalar instruction.

Memory layout: every memref argument (and ``memref.alloc``) is placed at the next 64-byte-aligned
address from 0 in parameter order (``sw.runtime.image.MemoryImage``'s rule), C order.

Values are computed with NumPy scalars of the MLIR types (f32 as ``numpy.float32``; ``math.fma``
rounded once from float64), so ``Trace.results`` are the kernel's outputs (tests compare them
with the workload's reference).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Sequence

import numpy as np
from xdsl.dialects import arith, func, memref, scf
from xdsl.dialects.builtin import FloatAttr, IntegerAttr, MemRefType, ModuleOp
from xdsl.ir import Attribute, Operation

__all__ = ["ALU", "LOAD", "STORE", "OpLatency", "Trace", "trace_kernel", "LINE_BYTES"]

ALU, LOAD, STORE = 0, 1, 2
LINE_BYTES = 64
_ALIGN = 64
_FREE = {"arith.constant", "memref.dim", "arith.index_cast", "arith.extsi", "arith.extui",
         "arith.trunci", "memref.dealloc"}


@dataclass(frozen=True)
class OpLatency:
    """Execution latency (core cycles) of the non-memory operations.

    Defaults from Intel's Golden Cove (Sapphire Rapids' core; Intel Architecture Day 2021 and
    uops.info measurements as summarised by Chips and Cheese, "Popping the Hood on Golden Cove",
    2021): integer ALU 1, FP add/multiply/FMA 4, FP divide and square root 12 (approximate).
    """
    integer: int = 1
    fp: int = 4
    fp_long: int = 12

    def of(self, name: str) -> int:
        if name in ("arith.divf", "math.sqrt"):
            return self.fp_long
        if name.endswith("f") or name.startswith("math.") or name in (
                "arith.sitofp", "arith.uitofp", "arith.fptosi", "arith.fptoui"):
            return self.fp
        return self.integer


@dataclass
class Trace:
    """The dynamic instruction stream (program order) of one kernel run.

    Per instruction ``i``: ``kind[i]`` (ALU, LOAD, STORE), ``latency[i]`` (ALU cycles), ``deps[i]``
    (tuple of earlier instruction numbers it waits for), ``lines[i]`` (tuple of 64-byte line
    addresses a LOAD/STORE touches, ascending), ``nbytes[i]`` (useful bytes a LOAD/STORE moves),
    ``array[i]`` (name of the memref it accesses, '' for ALU), ``addrs[i]`` (its element byte
    addresses in lane order), ``forwarded[i]`` (a LOAD all of whose addresses an earlier STORE
    wrote: served by store-to-load forwarding, not by the caches). ``bases``: array name ->
    base byte address. ``results``: the function's returned values.
    """
    kind: list = field(default_factory=list)
    latency: list = field(default_factory=list)
    deps: list = field(default_factory=list)
    lines: list = field(default_factory=list)
    nbytes: list = field(default_factory=list)
    array: list = field(default_factory=list)
    addrs: list = field(default_factory=list)
    forwarded: list = field(default_factory=list)
    bases: dict = field(default_factory=dict)
    results: tuple = ()

    def __len__(self) -> int:
        return len(self.kind)

    @property
    def loads(self) -> int:
        """Number of LOAD instructions."""
        return sum(1 for k in self.kind if k == LOAD)

    @property
    def load_bytes(self) -> int:
        """Useful bytes of all LOAD instructions."""
        return sum(n for k, n in zip(self.kind, self.nbytes) if k == LOAD)


_DTYPES = {"f16": "float16", "f32": "float32", "f64": "float64", "i1": "bool", "i8": "int8",
           "i16": "int16", "i32": "int32", "i64": "int64", "index": "int64"}


_TYPE_NAMES: dict = {}


def element_type_name(t: Attribute) -> str | None:
    """NumPy dtype name of an MLIR scalar type (the frontend's mapping without bf16), else None."""
    try:
        return _TYPE_NAMES[t]
    except KeyError:
        name = _TYPE_NAMES[t] = _DTYPES.get(str(t))
        return name
    except TypeError:                                   # an unhashable attribute
        return _DTYPES.get(str(t))


class _Mem:
    __slots__ = ("name", "array", "base", "itemsize")

    def __init__(self, name, array, base):
        self.name, self.array, self.base, self.itemsize = name, array, base, array.itemsize


class _Tracer:
    def __init__(self, vector_bytes: int, latency: OpLatency, promote: bool = False):
        self.t = Trace()
        self.vector_bytes = vector_bytes
        self.lat = latency
        self.promote = promote
        self.env: dict = {}        # SSAValue -> value
        self.prod: dict = {}       # SSAValue -> producing instruction or None
        self.last_store: dict = {}   # byte address -> STORE instruction
        self.stored: dict = {}     # byte address -> producer of the value last stored there
        # promote: per STORE instruction, how many addresses it is still the last store of; one
        # with none left (every address written again, none read from memory) is dropped
        self.live_addresses: dict = {}   # STORE instruction -> int
        self.read_stores: set = set()    # STOREs a LOAD reads from memory (never dropped)
        self.top = 0
        self.chunk: dict | None = None   # op -> instruction number while a vector chunk runs
        self.decoded: dict = {}    # id(op) -> _Decoded (xDSL accessors read once per op, not per run)
        self.block_ops: dict = {}  # id(block) -> its operations (xDSL's iterator walks a linked list)

    # -- layout ---------------------------------------------------------------------------------

    def place(self, name: str, array: np.ndarray) -> _Mem:
        base = -(-self.top // _ALIGN) * _ALIGN
        self.top = base + max(array.nbytes, 1)
        self.t.bases[name] = base
        return _Mem(name, array, base)

    # -- emission -------------------------------------------------------------------------------

    def emit(self, op, kind, deps, latency=0, mem=None, addr=None, size=0, store=None) -> int:
        t = self.t
        deps = {d for d in deps if d is not None}
        if self.chunk is not None and op in self.chunk:
            i = self.chunk[op]
            t.deps[i] = t.deps[i] | {d for d in deps if d < i}
            if addr is not None:
                t.addrs[i].append(addr)
                t.forwarded[i] = t.forwarded[i] and store is not None and store < i
            return i
        i = len(t.kind)
        t.forwarded.append(kind == LOAD and store is not None and store < i)
        t.kind.append(kind)
        t.latency.append(latency)
        t.deps.append({d for d in deps if d < i})
        t.array.append(mem.name if mem is not None else "")
        t.addrs.append([addr] if addr is not None else [])
        t.nbytes.append(size)
        t.lines.append(())
        if self.chunk is not None:
            self.chunk[op] = i
        return i

    def record_store(self, i: int, addr: int, producer) -> None:
        """Store instruction ``i`` writes the byte address ``addr`` with the value of instruction
        ``producer`` (or None): later loads of ``addr`` are forwarded from it, or, with
        ``promote``, read that value's register. The store that wrote ``addr`` before is then
        the last store of one address fewer; with ``promote``, one left with none (and read by
        no load from memory, ``read_stores``) is dropped at :meth:`finish`."""
        before = self.last_store.get(addr)
        if before != i:
            if before is not None:
                self.live_addresses[before] -= 1
            self.live_addresses[i] = self.live_addresses.get(i, 0) + 1
        self.last_store[addr] = i
        self.stored[addr] = producer

    def _sink_stores(self) -> None:
        """With ``promote``: drop every STORE all of whose addresses were stored again before
        any load read them from memory. Scalar replacement keeps a stored value in its register
        for every later load of its address (``memref.load``); a compiler doing that (LLVM's
        LICM scalar promotion) also sinks the store, so that only the last value of each
        address is written (here: the last store stays, where it was). Renumbers the trace."""
        t = self.t
        dead = {i for i, n in self.live_addresses.items() if n == 0 and i not in self.read_stores}
        if not dead:
            return
        new, keep = {}, []
        for i in range(len(t.kind)):
            if i not in dead:
                new[i] = len(keep)
                keep.append(i)
        for i in keep:
            if any(d in dead for d in t.deps[i]):
                raise AssertionError(f"instruction {i} depends on a dropped store")
        for name in ("kind", "latency", "array", "addrs", "nbytes", "lines", "forwarded"):
            old = getattr(t, name)
            setattr(t, name, [old[i] for i in keep])
        t.deps = [{new[d] for d in t.deps[i]} for i in keep]

    def finish(self):
        t = self.t
        if self.promote:
            self._sink_stores()
        for i, k in enumerate(t.kind):
            t.deps[i] = tuple(sorted(t.deps[i]))
            if k == ALU:
                continue
            a = t.addrs[i]
            size = t.nbytes[i]
            if len(set(a)) == 1:                                   # scalar or broadcast
                t.nbytes[i] = size
            else:
                t.nbytes[i] = size * len(a)
            t.lines[i] = tuple(sorted({x // LINE_BYTES * LINE_BYTES for x in a}
                                      | {(x + size - 1) // LINE_BYTES * LINE_BYTES for x in a}))

    # -- interpretation -------------------------------------------------------------------------

    def val(self, v):
        return self.env[v]

    def deps_of(self, values):
        return [self.prod.get(v) for v in values]

    def run_block(self, block, args=()) -> list:
        for a, (value, producer) in zip(block.args, args):
            self.env[a] = value
            self.prod[a] = producer
        ops = self.block_ops.get(id(block))
        if ops is None:
            ops = self.block_ops[id(block)] = tuple(block.ops)
        for op in ops:
            out = self.run_op(op)
            if out is not None:
                return out
        return []

    def decode(self, op: Operation) -> "_Decoded":
        d = self.decoded.get(id(op))
        if d is None:
            d = self.decoded[id(op)] = _Decoded(op)
            d.free = d.name in _FREE
            d.latency = self.lat.of(d.name)
        return d

    def run_op(self, op: Operation):
        """Execute one operation; returns the yielded/returned (value, producer) pairs of a
        terminator, else None."""
        d = self.decode(op)
        env, prod = self.env, self.prod
        if d.compute is not None:
            # arithmetic: values and (unless free) one instruction
            operands = d.operands
            r = d.result
            env[r] = d.compute([env[v] for v in operands])
            if d.free:
                prod[r] = prod.get(operands[0]) if operands and d.name != "memref.dim" else None
            else:
                prod[r] = self.emit(op, ALU, [prod.get(v) for v in operands], latency=d.latency)
            return None
        name = d.name
        if name in ("scf.yield", "func.return"):
            return [(env[v], prod.get(v)) for v in d.operands]
        if name == "scf.for":
            return self.run_for(op)
        if name == "scf.if":
            branch = op.true_region if env[op.cond] else op.false_region
            out = self.run_block(branch.block) if branch.blocks else []
            for r, (value, producer) in zip(op.results, out):
                env[r], prod[r] = value, producer
            return None
        if name == "memref.load":
            m = env[d.memref]
            idx = tuple(int(env[v]) for v in d.indices)
            addr = m.base + int(np.ravel_multi_index(idx, m.array.shape)) * m.itemsize if idx \
                else m.base
            store = self.last_store.get(addr)
            if store is not None and self.promote:
                # scalar replacement: the value is still in the register it was stored from
                env[d.result] = m.array[idx] if idx else m.array[()]
                prod[d.result] = self.stored.get(addr)
                return None
            i = self.emit(op, LOAD, self.deps_of(d.indices) + [store], mem=m, addr=addr,
                          size=m.itemsize, store=store)
            env[d.result] = m.array[idx] if idx else m.array[()]
            prod[d.result] = i
            return None
        if name == "memref.store":
            m = env[d.memref]
            idx = tuple(int(env[v]) for v in d.indices)
            addr = m.base + int(np.ravel_multi_index(idx, m.array.shape)) * m.itemsize if idx \
                else m.base
            i = self.emit(op, STORE, self.deps_of(d.operands_of_store), mem=m, addr=addr,
                          size=m.itemsize)
            m.array[idx] = env[d.value]
            self.record_store(i, addr, prod.get(d.value))
            return None
        if name == "memref.alloc":
            t = op.memref.type
            shape = [int(env[v]) for v in op.dynamic_sizes]
            full, k = [], 0
            for s in t.get_shape():
                if s < 0:
                    full.append(shape[k])
                    k += 1
                else:
                    full.append(s)
            dtype = element_type_name(t.get_element_type())
            env[op.memref] = self.place(f"alloc{len(self.t.bases)}", np.zeros(full, dtype))
            prod[op.memref] = None
            return None
        if d.free:                  # memref.dealloc: no value, no instruction
            return None
        raise ValueError(f"module must stay within the frontend's subset, not {name!r}")

    def run_for(self, op: scf.ForOp):
        env, prod = self.env, self.prod
        lb, ub, step = int(env[op.lb]), int(env[op.ub]), int(env[op.step])
        iv_prod = prod.get(op.lb)
        carried = [(env[v], prod.get(v)) for v in op.iter_args]
        body = op.body.block
        width = self._vector_width(op)
        ivs = range(lb, ub, step)
        if width <= 1 or self.chunk is not None:
            for k in ivs:
                iv_prod = self.emit(op, ALU, [iv_prod], latency=self.lat.integer)
                carried = self.run_block(body, [(k, iv_prod), *carried])
        else:
            ivs = list(ivs)
            for c in range(0, len(ivs), width):
                self.chunk = {}
                try:
                    iv_prod = self.emit(op, ALU, [iv_prod], latency=self.lat.integer)
                    for k in ivs[c:c + width]:
                        carried = self.run_block(body, [(k, iv_prod), *carried])
                finally:
                    self.chunk = None
        for r, (value, producer) in zip(op.results, carried):
            env[r], prod[r] = value, producer
        return None

    def _vector_width(self, op: scf.ForOp) -> int:
        if not self.vector_bytes:
            return 1
        widest = 0
        for inner in op.body.walk():
            if inner is op:
                continue
            if self._stops_vectorising(inner):
                return 1
            widest = max(widest, self._element_bytes(inner))
        return max(1, self.vector_bytes // widest) if widest else 1

    def _stops_vectorising(self, inner: Operation) -> bool:
        """Whether a loop holding ``inner`` stays scalar (it is not an innermost loop)."""
        return isinstance(inner, (scf.ForOp, scf.IfOp))

    def _element_bytes(self, inner: Operation) -> int:
        """Bytes of the element ``inner`` moves per iteration (0: none)."""
        if isinstance(inner, (memref.LoadOp, memref.StoreOp)):
            return self.env[inner.memref].itemsize
        return 0


class _Decoded:
    """What ``_Tracer.run_op`` reads of one operation, read once: xDSL's operand and attribute
    accessors cost more than the interpretation itself when an op runs 10^5 times."""
    __slots__ = ("name", "operands", "result", "memref", "indices", "value", "operands_of_store",
                 "compute", "free", "latency")

    def __init__(self, op: Operation):
        self.name = name = op.name
        self.operands = tuple(op.operands)
        self.result = op.results[0] if op.results else None
        self.memref = self.indices = self.value = self.operands_of_store = self.compute = None
        if name in ("memref.load", "memref.store"):
            self.memref, self.indices = op.memref, tuple(op.indices)
            if name == "memref.store":
                self.value = op.value
                self.operands_of_store = (op.value, *self.indices)
        elif name == "arith.constant":
            constant = _compute(op, [])
            self.compute = lambda ins: constant
        elif name.startswith(("arith.", "math.")) or name == "memref.dim":
            self.compute = _compute_function(op)


def _compute_function(op: Operation):
    """``ins -> _compute(op, ins)`` with the op's name, types and predicate looked up once."""
    name = op.name
    if name in _INT_OPS:
        return lambda ins, f=_INT_OPS[name]: f(*ins)
    if name == "arith.cmpi":
        f = _CMPI[op.predicate.value.data]
        return lambda ins: f(int(ins[0]), int(ins[1]))
    if name == "arith.cmpf":
        f = _CMPF[op.predicate.value.data]
        return lambda ins: f(ins[0], ins[1])
    if name == "arith.select":
        return lambda ins: ins[1] if ins[0] else ins[2]
    if name in _FP_OPS and element_type_name(op.results[0].type):
        ft, f = np.dtype(element_type_name(op.results[0].type)).type, _FP_OPS[name]

        return lambda ins: ft(f(*ins))        # (NumPy's warnings: off for the whole trace)
    return lambda ins: _compute(op, ins)


def _compute(op: Operation, ins: list):
    name = op.name
    if name == "arith.constant":
        v = op.value
        if isinstance(v, IntegerAttr):
            return int(v.value.data)
        if isinstance(v, FloatAttr):
            return np.dtype(element_type_name(v.type)).type(v.value.data)
        raise ValueError(f"op must be a scalar integer or float constant, not {op}")
    if name == "memref.dim":
        return int(ins[0].array.shape[int(ins[1])])
    out_t = op.results[0].type
    if name in _INT_OPS:
        return _INT_OPS[name](*ins)
    if name in ("arith.index_cast", "arith.extsi", "arith.extui", "arith.trunci"):
        v = int(ins[0])
        if name == "arith.trunci":
            w = out_t.width.data
            v &= (1 << w) - 1
            v = v - (1 << w) if v >> (w - 1) and w > 1 else v
        return v
    if name == "arith.cmpi":
        a, b = int(ins[0]), int(ins[1])
        return _CMPI[op.predicate.value.data](a, b)
    if name == "arith.cmpf":
        return _CMPF[op.predicate.value.data](ins[0], ins[1])
    if name == "arith.select":
        return ins[1] if ins[0] else ins[2]
    ft = np.dtype(element_type_name(out_t)).type if element_type_name(out_t) else None
    if name == "math.fma":
        return ft(np.float64(ins[0]) * np.float64(ins[1]) + np.float64(ins[2]))
    if name in _FP_OPS:
        with np.errstate(all="ignore"):
            return ft(_FP_OPS[name](*ins))
    if name in ("arith.sitofp", "arith.uitofp", "arith.extf", "arith.truncf"):
        return ft(ins[0])
    if name in ("arith.fptosi", "arith.fptoui"):
        return int(ins[0])
    raise ValueError(f"op must be one of the frontend's supported operations, not {name!r}")


def _div_trunc(a, b):
    q = abs(a) // abs(b)
    return q if (a >= 0) == (b >= 0) else -q


_INT_OPS = {
    "arith.addi": lambda a, b: a + b, "arith.subi": lambda a, b: a - b,
    "arith.muli": lambda a, b: a * b, "arith.divsi": _div_trunc, "arith.divui": lambda a, b: a // b,
    "arith.remsi": lambda a, b: a - _div_trunc(a, b) * b, "arith.remui": lambda a, b: a % b,
    "arith.floordivsi": lambda a, b: a // b, "arith.ceildivsi": lambda a, b: -((-a) // b),
    "arith.andi": lambda a, b: a & b, "arith.ori": lambda a, b: a | b,
    "arith.xori": lambda a, b: a ^ b, "arith.shli": lambda a, b: a << b,
    "arith.shrsi": lambda a, b: a >> b, "arith.shrui": lambda a, b: a >> b,
    "arith.maxsi": max, "arith.minsi": min, "arith.maxui": max, "arith.minui": min,
}
_CMPI = {0: lambda a, b: a == b, 1: lambda a, b: a != b, 2: lambda a, b: a < b,
         3: lambda a, b: a <= b, 4: lambda a, b: a > b, 5: lambda a, b: a >= b,
         6: lambda a, b: a < b, 7: lambda a, b: a <= b, 8: lambda a, b: a > b,
         9: lambda a, b: a >= b}
_CMPF = {0: lambda a, b: False, 1: lambda a, b: a == b, 2: lambda a, b: a > b,
         3: lambda a, b: a >= b, 4: lambda a, b: a < b, 5: lambda a, b: a <= b,
         6: lambda a, b: a < b or a > b, 7: lambda a, b: not (math.isnan(a) or math.isnan(b)),
         8: lambda a, b: a == b or math.isnan(a) or math.isnan(b),
         9: lambda a, b: not a <= b, 10: lambda a, b: not a < b, 11: lambda a, b: not a >= b,
         12: lambda a, b: not a > b, 13: lambda a, b: not a == b,
         14: lambda a, b: math.isnan(a) or math.isnan(b), 15: lambda a, b: True}


def _maxnum(a, b):
    return b if np.isnan(a) else a if np.isnan(b) else max(a, b)


def _minnum(a, b):
    return b if np.isnan(a) else a if np.isnan(b) else min(a, b)


_FP_OPS = {
    "arith.addf": lambda a, b: a + b, "arith.subf": lambda a, b: a - b,
    "arith.mulf": lambda a, b: a * b, "arith.divf": lambda a, b: a / b,
    "arith.negf": lambda a: -a, "math.sqrt": np.sqrt,
    "arith.maximumf": np.maximum, "arith.minimumf": np.minimum,
    "arith.maxnumf": _maxnum, "arith.minnumf": _minnum,
}


def trace_kernel(module, args: Sequence, *, vector_bytes: int = 64,
                 latency: OpLatency | None = None, promote: bool = False) -> Trace:
    """Run the single ``func.func`` of ``module`` on ``args`` and return its instruction stream.

    Parameters
    ----------
    module : xdsl ModuleOp or func.FuncOp
        Of the frontend's supported subset: ``sw.compiler.frontends.mlir.parse_mlir(text)``
        (bf16 memrefs are not supported here).
    args : sequence
        Positional arguments: NumPy arrays for memrefs (copied: the caller's arrays are not
        modified), Python/NumPy scalars otherwise (the workload's ``make``).
    vector_bytes : int
        Vector register bytes for innermost loops (64: AVX-512; 0: scalar code), >= 0.
    latency : OpLatency, optional
    promote : bool
        Scalar promotion, as LLVM's LICM does for a location it proves unaliased: a value that
        is stored and loaded again stays in a register (the load is no instruction; its
        consumers depend on the stored value's producer), and a store whose every address is
        stored again before any load reads it from memory is dropped, so that each address is
        written once, with its last value (an accumulator ``out[b, d] += ...``: one load before
        the bag, one store after it). The results do not change.

    Returns
    -------
    Trace

    Raises
    ------
    ValueError
        ``vector_bytes`` negative or not an int, ``module`` not one function, the wrong number
        of ``args``, an element type without a NumPy dtype, or an operation outside the
        frontend's subset.
    """
    _check_vector_bytes(vector_bytes)
    tr = _Tracer(vector_bytes, latency or OpLatency(), promote)
    block, bound = _bind(tr, module, args)
    with np.errstate(all="ignore"):       # IEEE results (inf, nan), as the kernel computes them
        out = tr.run_block(block, bound)
    tr.finish()
    tr.t.results = tuple(v.array if isinstance(v, _Mem) else v for v, _ in out)
    return tr.t


def _check_vector_bytes(vector_bytes) -> None:
    if not isinstance(vector_bytes, int) or isinstance(vector_bytes, bool) or vector_bytes < 0:
        raise ValueError(f"vector_bytes must be a non-negative integer, not {vector_bytes!r}")


def _bind(tr: _Tracer, module, args: Sequence) -> tuple:
    """The single function of ``module`` and its parameters bound to ``args`` (memrefs placed in
    ``tr``'s layout as copies): ``(block, [(value, None), ...])``. Raises ``ValueError`` (module
    not one function, the wrong number of args, an element type without a NumPy dtype)."""
    if isinstance(module, func.FuncOp):
        funcs = [module]
    elif isinstance(module, ModuleOp):
        funcs = [op for op in module.ops if isinstance(op, func.FuncOp)]
    else:
        funcs = []
    if len(funcs) != 1:
        raise ValueError(f"module must be a func.FuncOp or a ModuleOp holding exactly one, "
                         f"not {module!r:.80}")
    block = funcs[0].body.block
    if len(args) != len(block.args):
        raise ValueError(f"args must have {len(block.args)} entries (the function's parameters), "
                         f"not {len(args)}")
    bound = []
    for n, (a, value) in enumerate(zip(block.args, args)):
        if isinstance(a.type, MemRefType):
            dtype = element_type_name(a.type.get_element_type())
            if dtype is None:
                raise ValueError(f"args[{n}] must be a memref of {', '.join(_DTYPES)}, "
                                 f"not {a.type}")
            arr = np.array(value, dtype=dtype, copy=True)
            bound.append((tr.place(a.name_hint or f"arg{n}", arr), None))
        else:
            bound.append((np.asarray(value).item(), None))
    return block, bound
