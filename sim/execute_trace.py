"""The execute side's instruction stream: a kernel's DLC compute loop run over the access unit's
tokens, for the out-of-order core model (``sim.core_only``).

The DAE system's core runs only the compute loop (Ember's DLC ``compute_loop``, arXiv 2504.09870
§5; ``docs/isa.md`` §4): it pops a control token, runs the ``dlc.case`` it names, and that case
pops its operands from the data queue. ``trace_execute(module, args, data_tokens,
control_tokens)`` interprets the DLC module the compiler produced (its ``func.func`` with the
``dlc.configure_access`` region skipped: the access unit runs it) over the tokens the golden
model or the RTL pushed, and records the instructions a compiled core program would execute, in
the form of ``sim.core_trace`` so that :func:`sim.core_only.run_core` runs the execute side on
the *same* core model as the core-only baseline (Golden Cove: width, reorder buffer, load ports,
caches, latencies):

* a **queue pop** is a ``LOAD`` that touches no memory line (it completes ``l1_latency`` cycles
  after issue and takes a load port, as an L1D hit; ``Trace.array`` names the queue): one per
  control token, and one per 64 bytes of data tokens popped at once (``dlc.pop_packed``,
  ``dlc.pop_buffer``: a 512-bit vector load of up to 8 tokens), one per token of
  ``dlc.pop_operand``. Pops depend on nothing:
  the access unit is assumed to be ahead (this gives the execute side's own bound; the coupled
  simulation adds the waits);
* a buffered operand (``dlc.pop_buffer``) is stored into a scratch buffer (one ``STORE`` per
  64 bytes, after its pop), whose later loads are served by store-to-load forwarding;
* ``dlc.get_var``/``set_var`` are register moves (free), ``dlc.increment_var`` an integer add;
* the dispatch on the control token is a branch, predicted perfectly, as every branch of the
  core-only trace: a case's instructions do not depend on the pop of its token;
* everything else (``scf``, ``arith``, ``math``, ``memref``: the case bodies' arithmetic, the
  loads and stores of the results) as ``sim.core_trace`` records it, innermost loops vectorised
  by the same rule (a loop that pops counts its pops as 8-byte elements, so a chunk pops at
  most one 64-byte vector of tokens per pop operation).

Tokens are decoded as the compiler's Python backend does (``sw.compiler.backend.python``:
``_pop_packed``, ``_pop_buf``; ``docs/compiler.md`` "Queue alignment"), so ``Trace.results``
are the kernel's results: tests compare them with the workload's reference, and with the
tokens consumed exactly.

Every level's compute loop of the workloads in ``sw.workloads`` is supported: scalar and vector
pops (``dlc.pop_operand``, ``dlc.pop_packed``), row buffers (``dlc.pop_buffer``) and ``-O1``'s
``vector`` operations (``sim.vector_ops``); an operation outside them raises ``ValueError``
naming it.
"""

from __future__ import annotations

from typing import Sequence

import numpy as np
from xdsl.dialects.builtin import IndexType

from .core_only import CoreConfig, CoreResult, run_core
from .core_trace import (ALU, LOAD, STORE, OpLatency, Trace, _bind, _check_vector_bytes, _Mem,
                         _Tracer, element_type_name)
from .vector_ops import VectorOps, is_vector

__all__ = ["trace_execute", "run_execute_side", "callback_pace", "replay_parameters", "DONE_TOKEN"]

DONE_TOKEN = 0xFFFF
_VECTOR_TOKENS = 8            # 64-bit tokens per 512-bit queue pop
_MASK64 = (1 << 64) - 1


class _Queue:
    """What a pop reads (``Trace.array`` of its instruction: ``control queue``, ``data queue``)."""
    def __init__(self, name: str):
        self.name = name


CONTROL_QUEUE, DATA_QUEUE = _Queue("control queue"), _Queue("data queue")


def _scalar_kind(t) -> tuple[str, int]:
    """NumPy dtype name and byte size of a scalar result type of a pop."""
    if isinstance(t, IndexType):
        return "int64", 8
    name = element_type_name(t)
    if name is None:
        raise ValueError(f"a popped value must be a scalar integer, index or float, not {t}")
    return name, np.dtype(name).itemsize


def _element(raw: int, dtype: str, size: int):
    """One element at its natural size from the low bytes of ``raw``."""
    if dtype == "bool":
        return bool(raw & 1)
    value = np.frombuffer((raw & ((1 << (8 * size)) - 1)).to_bytes(size, "little"), dtype)[0]
    return int(value) if dtype.startswith("int") else value


class _ExecuteTracer(VectorOps, _Tracer):
    def __init__(self, vector_bytes, latency, promote, data_tokens, control_tokens):
        super().__init__(vector_bytes, latency, promote)
        self.data = [int(t) & _MASK64 for t in data_tokens]
        self.control = [int(t) for t in control_tokens]
        self.pos = 0                         # next data token
        self.vars: dict = {}                 # core variable -> (value, producer)
        self.scratch: dict = {}              # pop_buffer op -> (base, capacity in bytes)
        self.scalar_ops: dict = {}           # id(op) -> VectorOps.vector_op never runs it
        self.done = False

    # -- the queues -----------------------------------------------------------------------------

    def take(self, n: int, what) -> list[int]:
        if self.pos + n > len(self.data):
            raise ValueError(f"data_tokens must hold every operand the compute loop pops: "
                             f"{what} needs {n} at token {self.pos}, {len(self.data)} pushed")
        out = self.data[self.pos:self.pos + n]
        self.pos += n
        return out

    def pop_instructions(self, op, ntok: int) -> list[int]:
        """The queue pops of ``ntok`` tokens popped together (one per 64 bytes)."""
        return [self.emit(op, LOAD, [], mem=DATA_QUEUE, size=8 * min(_VECTOR_TOKENS, ntok - k))
                for k in range(0, max(ntok, 1), _VECTOR_TOKENS)]

    # -- interpretation -------------------------------------------------------------------------

    def run_op(self, op):
        name = op.name
        if name in ("dlc.configure_access", "dlc.yield"):
            return None
        if name == "dlc.compute_loop":
            self.compute_loop(op)
            return None
        if name == "dlc.set_var":
            self.vars[op.var.value.data] = (self.env[op.value], self.prod.get(op.value))
            return None
        if name == "dlc.get_var":
            value, producer = self.vars.get(op.var.value.data, (0, None))
            self.env[op.result], self.prod[op.result] = value, producer
            return None
        if name == "dlc.increment_var":
            k = op.var.value.data
            value, producer = self.vars.get(k, (0, None))
            i = self.emit(op, ALU, [producer], latency=self.lat.integer)
            self.vars[k] = (value + op.step.value.data, i)
            return None
        if name == "dlc.pop_operand":
            t = op.result.type
            if is_vector(t):
                value, ntok = self.pop_vector(op, t)
            else:
                dtype, size = _scalar_kind(t)
                (raw,) = self.take(1, op.name)
                value, ntok = _element(raw, dtype, size), 1
            self.env[op.result] = value
            self.prod[op.result] = self.pop_instructions(op, ntok)[-1]
            return None
        if name == "dlc.pop_packed":
            self.pop_packed(op)
            return None
        if name == "dlc.pop_buffer":
            self.pop_buffer(op)
            return None
        scalar = self.scalar_ops.get(id(op))
        if scalar is None:
            scalar = self.scalar_ops[id(op)] = not self.may_be_vector(op)
        if not scalar and self.vector_op(op):
            return None
        if name.startswith(("dlc.", "vector.")):
            raise ValueError(f"module must use the compiler's execute-side operations, "
                             f"not {name!r}")
        return super().run_op(op)

    def pop_vector(self, op, t) -> tuple:
        """A vector operand, one token per lane, or a mask pushed as its count of active lanes
        (``docs/compiler.md`` "Operands in the data queue"): ``(value, tokens popped)``."""
        lanes = t.get_shape()[0]
        dtype = element_type_name(t.element_type)
        if dtype == "bool":
            (count,) = self.take(1, op.name)
            return np.arange(lanes) < count, 1
        dtype, size = _scalar_kind(t.element_type)
        raw = self.take(lanes, op.name)
        return np.array([_element(x, dtype, size) for x in raw], dtype=dtype), lanes

    def compute_loop(self, op) -> None:
        cases = {c.id.value.data: c for c in op.body.block.ops if c.name == "dlc.case"}
        for n, token in enumerate(self.control):
            self.emit(op, LOAD, [], mem=CONTROL_QUEUE, size=8)     # the control token's pop
            if token == DONE_TOKEN:
                self.done = True
                return
            if token not in cases:
                raise ValueError(f"control_tokens[{n}] must name a dlc.case "
                                 f"({sorted(cases)} or DONE), not {token}")
            self.run_block(cases[token].body.block)
        raise ValueError("control_tokens must end with DONE (0xFFFF)")

    def pop_packed(self, op) -> None:
        """Scalars, vectors (lanes at their natural size) and masks (an 8-byte count) at their
        natural alignment, the group padded to a token boundary (``_pop_packed``)."""
        layout, off = [], 0
        for r in op.values:
            if is_vector(r.type):
                lanes = r.type.get_shape()[0]
                if element_type_name(r.type.element_type) == "bool":
                    kind, dtype, size, n = "mask", "int64", 8, 1
                else:
                    (dtype, size), kind, n = _scalar_kind(r.type.element_type), "vector", lanes
            else:
                (dtype, size), kind, n = _scalar_kind(r.type), "scalar", 1
            off = -(-off // size) * size
            layout.append((r, kind, dtype, size, n, off))
            off += size * n
        ntok = -(-off // 8)
        data = b"".join(t.to_bytes(8, "little") for t in self.take(ntok, op.name))
        last = self.pop_instructions(op, ntok)[-1]
        for r, kind, dtype, size, n, at in layout:
            raw = [int.from_bytes(data[at + k * size:at + (k + 1) * size], "little")
                   for k in range(n)]
            if kind == "mask":
                value = np.arange(r.type.get_shape()[0]) < raw[0]
            elif kind == "vector":
                value = np.array([_element(x, dtype, size) for x in raw], dtype=dtype)
            else:
                value = _element(raw[0], dtype, size)
            self.env[r], self.prod[r] = value, last

    def pop_buffer(self, op) -> None:
        """``n`` elements (rows of ``lanes`` lanes from a token boundary each, one token per
        element unless packed) stored into a scratch buffer."""
        t = op.result.type
        dtype = element_type_name(t.get_element_type())
        if dtype is None or dtype == "bool":
            raise ValueError(f"a popped buffer must have a numeric element type, not {t}")
        size = np.dtype(dtype).itemsize
        n = int(self.env[op.length])
        lanes = op.lane_count
        packed = op.packed is not None
        chunks = [lanes] * (-(-n // lanes)) if lanes > 1 else ([n] if n else [])
        values, ntok = [], 0
        for c in chunks:
            k = -(-c * size // 8) if packed else c
            toks = self.take(k, op.name)
            ntok += k
            if packed:
                raw = b"".join(x.to_bytes(8, "little") for x in toks)[:c * size]
                values.append(np.frombuffer(raw, dtype))
            else:
                values.append(np.array([_element(x, dtype, size) for x in toks], dtype=dtype))
        row = (np.concatenate(values) if values else np.zeros(0, dtype))[:n].copy()
        base, capacity = self.scratch.get(op, (None, 0))
        if row.nbytes > capacity:
            base = self.place(f"scratch{len(self.t.bases)}", row).base
            self.scratch[op] = (base, row.nbytes)
        mem = _Mem(f"scratch:{op.result.name_hint or 'buffer'}", row, base)
        pops = self.pop_instructions(op, ntok)
        for k, pop in enumerate(pops):
            lo = k * 64
            if lo >= row.nbytes:
                break
            s = self.emit(op, STORE, [pop], mem=mem, addr=base + lo, size=min(64, row.nbytes - lo))
            for a in range(base + lo, base + min(lo + 64, row.nbytes), size):
                self.record_store(s, a, pop)
        self.env[op.result], self.prod[op.result] = mem, None

    def _stops_vectorising(self, inner) -> bool:
        return (super()._stops_vectorising(inner) or inner.name == "dlc.pop_buffer"
                or inner.name.startswith("vector."))

    def _element_bytes(self, inner) -> int:
        # a pop moves 8-byte tokens: a chunk pops at most one 64-byte vector per pop operation
        return 8 if inner.name.startswith("dlc.pop") else super()._element_bytes(inner)


def trace_execute(module, args: Sequence, data_tokens: Sequence[int],
                  control_tokens: Sequence[int], *, vector_bytes: int = 64,
                  latency: OpLatency | None = None, promote: bool = False) -> Trace:
    """Run the DLC compute loop of ``module`` over the access unit's tokens and return the
    execute side's instruction stream (module docstring).

    Parameters
    ----------
    module : xdsl ModuleOp or func.FuncOp
        The compiler's DLC stage of one kernel (``sw.compiler.pipelines.run_pipeline(text,
        until="dlc", opt_level=...)``, or ``Compilation.dlc``).
    args : sequence
        The kernel's arguments, as for :func:`sim.core_trace.trace_kernel` (copied).
    data_tokens, control_tokens : sequence of int
        What the access unit pushed (64-bit data tokens; 16-bit control tokens ending with
        ``DONE`` = 0xFFFF), e.g. ``run_kernel(kernel, args, "golden").access``.
    vector_bytes : int
        Vector register bytes of innermost loops (64: AVX-512, as the core-only trace; 0: scalar).
    latency : OpLatency, optional

    Returns
    -------
    Trace
        ``results`` are the kernel's results.

    Raises
    ------
    ValueError
        ``module`` not one function, the wrong number of ``args``, an operation the trace does
        not model, a control token naming no case, the tokens running out or left over (the message names
        which), ``vector_bytes`` negative.
    """
    _check_vector_bytes(vector_bytes)
    tr = _ExecuteTracer(vector_bytes, latency or OpLatency(), promote, data_tokens, control_tokens)
    block, bound = _bind(tr, module, args)
    with np.errstate(all="ignore"):       # IEEE results (inf, nan), as the kernel computes them
        out = tr.run_block(block, bound)
    if not tr.done:
        raise ValueError("module must have a dlc.compute_loop (the execute side)")
    if tr.pos != len(tr.data):
        raise ValueError(f"data_tokens must be consumed exactly: the compute loop popped {tr.pos} "
                         f"of {len(tr.data)}")
    tr.finish()
    tr.t.results = tuple(v.array if isinstance(v, _Mem) else v for v, _ in out)
    return tr.t


def run_execute_side(module, args: Sequence, data_tokens: Sequence[int],
                     control_tokens: Sequence[int], preset,
                     config: CoreConfig | None = None) -> tuple[Trace, CoreResult]:
    """The execute side on the core-only baseline's core: :func:`trace_execute` with
    accumulators in registers (``promote``, as the baseline's trace in the benchmarks and
    ``make sim``), run by :func:`sim.core_only.run_core` on ``preset`` (a
    ``hw.hbm_model.presets`` preset) with ``config`` (default Golden Cove) and every token
    ready. Returns the trace (its ``results`` are the kernel's, for the caller to check) and the
    core's result (``cycles``: memory cycles). Raises what :func:`trace_execute` raises."""
    trace = trace_execute(module, args, data_tokens, control_tokens, promote=True)
    return trace, run_core(trace, preset, config or CoreConfig(), record_retire=True)


def _control_pops(trace: Trace) -> list[int]:
    """The trace's control-token pops, by instruction number (one per control token)."""
    return [i for i, name in enumerate(trace.array) if name == CONTROL_QUEUE.name]


def callback_pace(trace: Trace, result: CoreResult, clock_ratio: int = 1) -> tuple[int, ...]:
    """Per control token, the memory cycles from the retirement of its pop to the retirement of
    the next control token's pop (0 for the last, ``DONE``): how long each callback took on the
    core, overlapped with its neighbours as the out-of-order core overlapped them.

    ``trace`` and ``result`` are :func:`run_execute_side`'s (``result.retire_cycles`` recorded),
    ``clock_ratio`` core cycles per memory cycle (``CoreConfig.clock_ratio``). Raises
    ``ValueError`` if ``result`` has no retirement cycles for ``trace``'s instructions."""
    retire = result.retire_cycles
    if len(retire) != len(trace.kind):
        raise ValueError(f"result must have the retirement cycle of each of the trace's "
                         f"{len(trace.kind)} instructions (run_core(..., record_retire=True)), "
                         f"not {len(retire)}")
    pops = [retire[i] // clock_ratio for i in _control_pops(trace)]
    return tuple(b - a for a, b in zip(pops, pops[1:])) + (0,)


def replay_parameters(trace: Trace, result: CoreResult,
                      config: CoreConfig | None = None) -> dict:
    """The execute side of :func:`run_execute_side` as the keyword arguments of the coupled
    simulation's replayed core (``sw.runtime.execute.CoreReplay(**replay_parameters(...))``;
    ``sim.main_job`` and ``scripts/bench_compiler.py`` build it):

    * ``pace``: each callback's pace (:func:`callback_pace`);
    * ``instructions``: each callback's instructions in the trace, from its control-token pop
      to the next one (``DONE``: its pop, 1);
    * ``window``: the reorder buffer's entries (``config.rob_entries``);
    * ``tokens_per_cycle``: the rate that run popped operands at, ``config.load_ports`` vector
      pops of 8 tokens per core cycle (16: two 512-bit loads, Golden Cove's), times
      ``config.clock_ratio`` per memory cycle.

    ``config`` is the core ``result`` ran on (default ``CoreConfig()``). Raises what
    :func:`callback_pace` raises."""
    cfg = config or CoreConfig()
    pops = _control_pops(trace)
    instructions = tuple(b - a for a, b in zip(pops, pops[1:])) + (1,)
    return dict(pace=callback_pace(trace, result, cfg.clock_ratio), instructions=instructions,
                window=cfg.rob_entries,
                tokens_per_cycle=cfg.load_ports * _VECTOR_TOKENS * cfg.clock_ratio)
