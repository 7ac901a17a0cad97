"""Golden functional model of the access unit: runs a binary access program, cycle-free.

It executes ``docs/isa.md`` §1 (version 0) and §7 (version 1: lockstep layers lane by lane with
tail masks, block streams, the operand packer) literally (the normative pseudo-code) over a flat memory image and
produces the exact data-queue and control-queue token streams. The RTL is compared with it token
by token (``tb/``), and the execute side consumes its tokens when the target is ``golden``.

Run-time faults stop the run: the tokens produced before the fault are kept, no ``DONE`` token is
pushed, and :class:`GoldenResult` records the fault code and address (``run_golden``), or
:class:`AccessFault` is raised (``run_golden(..., raise_on_fault=True)``). Addresses are computed
exactly: one that leaves the signed 64-bit range faults ``ADDR_OVERFLOW`` (docs/isa.md §1). A run
longer than ``max_iterations`` loop iterations stops with ``WATCHDOG``, as the RTL's watchdog
stops a unit that makes no progress.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Sequence

from .isa import (DONE_TOKEN, MASK64, ActionKind, AluOp, Event, Fault, LayerMode, Limits, Program,
                  SrcKind, StreamKind, _to_signed64)

__all__ = ["AccessFault", "GoldenResult", "MAX_ITERATIONS", "run_golden"]


class AccessFault(RuntimeError):
    """A run-time fault of the access unit (docs/isa.md §5): ``code`` and ``addr`` as the RTL sets them."""

    def __init__(self, code: Fault, addr: int, message: str, stream: int | None = None):
        self.code = Fault(code)
        self.addr = addr
        # The stream whose evaluation raised the fault (MISALIGNED, ADDR_RANGE, ADDR_OVERFLOW,
        # BLOCK_LENGTH; the RTL's STATUS.FAULT_STREAM), None for the others.
        self.stream = stream
        super().__init__(f"{message} (fault {self.code.name}, address {addr:#x})")


@dataclass
class GoldenResult:
    data_tokens: list[int] = field(default_factory=list)     # raw unsigned 64-bit operands
    control_tokens: list[int] = field(default_factory=list)  # callback ids, DONE last
    fault_code: int = 0
    fault_addr: int = 0
    fault_message: str = ""
    fault_stream: int | None = None     # the stream that faulted (AccessFault.stream)
    loads: int = 0             # memory-stream loads evaluated
    bytes_loaded: int = 0      # bytes, the sum of the element sizes of those loads
    iterations: list[int] = field(default_factory=list)   # per layer

    @property
    def faulted(self) -> bool:
        return self.fault_code != Fault.NONE


#: The ALU ops address arithmetic is made of: their exact result can leave the signed 64-bit
#: range, and they carry a wrapped operand's mark (docs/isa.md §1 "Address overflow").
_ARITHMETIC = frozenset({AluOp.ADD, AluOp.SUB, AluOp.MUL, AluOp.SHL})


def _alu(op: AluOp, a: int, b: int) -> tuple[int, bool]:
    """``op(a, b)`` on signed 64-bit values: (the result's low 64 bits as a signed value, whether
    the exact result lies outside [-2**63, 2**63), i.e. wrapped; only ADD, SUB, MUL, SHL can)."""
    if op == AluOp.ADD:
        r = a + b
    elif op == AluOp.SUB:
        r = a - b
    elif op == AluOp.MUL:
        r = a * b
    elif op == AluOp.SHL:
        r = a << (b & 63)
    elif op == AluOp.SHR:
        r = (a & MASK64) >> (b & 63)
    elif op == AluOp.SRA:
        r = a >> (b & 63)
    elif op == AluOp.AND:
        r = a & b
    elif op == AluOp.OR:
        r = a | b
    elif op == AluOp.XOR:
        r = a ^ b
    elif op == AluOp.MIN:
        r = min(a, b)
    elif op == AluOp.MAX:
        r = max(a, b)
    elif op == AluOp.LT:
        r = int(a < b)
    elif op == AluOp.EQ:
        r = int(a == b)
    else:  # decode() rejects other ops
        raise AssertionError(op)
    value = _to_signed64(r)
    return value, op in _ARITHMETIC and value != r


def _outside_int64(x: int) -> bool:
    return not -(1 << 63) <= x < 1 << 63


class _Packer:
    """The data-queue packer of docs/isa.md §7.5: one partial 64-bit token and a byte offset."""

    def __init__(self, out: list[int]):
        self.out = out
        self.token = 0
        self.offset = 0          # bytes used in the partial token

    def put(self, value: int, width: int) -> None:
        at = -(-self.offset // width) * width          # round_up(offset, width)
        if at + width > 8:
            self.flush()
            at = 0
        self.token |= (value & ((1 << (8 * width)) - 1)) << (8 * at)
        self.offset = at + width
        if self.offset == 8:
            self.flush()

    def flush(self) -> None:
        if self.offset:
            self.out.append(self.token)
        self.token, self.offset = 0, 0


class _Machine:
    def __init__(self, prog: Program, memory: bytes, args: Sequence[int], result: GoldenResult,
                 limits: Limits, max_iterations: int):
        self.prog = prog
        self.max_iterations = max_iterations
        self.budget = max_iterations      # loop iterations left before WATCHDOG
        self.mem = memory
        self.args = [_to_signed64(int(a)) for a in args]
        self.out = result
        self.limits = limits
        n = len(prog.layers)
        self.index: list = [0] * n        # int, or a list of lane indices for a LOCKSTEP layer
        self.first = [0] * n
        self.count = [1] * n
        self.value: list = [0] * len(prog.streams)   # int, list of lanes, or list of block elements
        # Whether a stream's value (any active lane of a vector) wrapped past 64 bits: an ADD,
        # SUB, MUL, SHL outside the signed range, or of a value that wrapped (FWD: its operand's)
        # (docs/isa.md §1, "Address overflow").
        self.wrapped = [False] * len(prog.streams)
        self.by_layer = [[sid for sid, s in enumerate(prog.streams) if s.layer == k] for k in range(n)]
        self.actions = {(k, e): [a for a in prog.actions if a.layer == k and a.event == e]
                        for k in range(n) for e in Event}
        self.regions = [(self.src(r.base), self.src(r.size)) for r in prog.regions]
        self.packer = _Packer(result.data_tokens)
        result.iterations = [0] * n

    def src(self, s):
        """The value of a source: an int, or a list (the lanes of a vector, a block's elements)."""
        if s.kind == SrcKind.IMM:
            return s.value
        if s.kind == SrcKind.ARG:
            return self.args[s.value]
        if s.kind == SrcKind.STREAM:
            return self.value[s.value]
        if s.kind == SrcKind.INDEX:
            return self.index[s.value]
        if s.kind == SrcKind.COUNT:
            return self.count[s.value]
        return self.first[s.value]

    def wraps(self, s) -> bool:
        """The source is a stream whose value wrapped (an ALU result outside 64 bits)."""
        return s.kind == SrcKind.STREAM and self.wrapped[s.value]

    def overflow(self, sid: int, addresses) -> None:
        """``ADDR_OVERFLOW`` before any other check of a load (docs/isa.md §1): an address operand
        that wrapped, or an exact address (one per active lane) outside the signed 64-bit range."""
        s = self.prog.streams[sid]
        if self.wraps(s.a) or self.wraps(s.b) or any(_outside_int64(x) for x in addresses):
            raise AccessFault(Fault.ADDR_OVERFLOW, sid,
                              f"stream {sid}: its address computation overflows 64 bits "
                              f"(an index too large for its table?)", stream=sid)

    def lane(self, s, lane: int) -> int:
        v = self.src(s)
        return v[lane] if isinstance(v, list) else v

    def check(self, sid: int, addr: int, nbytes: int, size: int) -> None:
        """Alignment, region and memory-size checks of docs/isa.md §1 for ``nbytes`` at ``addr``."""
        s = self.prog.streams[sid]
        base, rsize = self.regions[s.region]
        uaddr = addr & MASK64
        if addr % size:
            raise AccessFault(Fault.MISALIGNED, uaddr,
                              f"stream {sid} loads {size} bytes at misaligned address {uaddr:#x}",
                              stream=sid)
        if not base <= addr:
            raise AccessFault(Fault.ADDR_RANGE, uaddr,
                              f"stream {sid} loads address {uaddr:#x}, outside region {s.region} "
                              f"[{base:#x}, {base + rsize:#x})", stream=sid)
        if addr + nbytes > base + rsize:
            bad = addr + max(0, (base + rsize - addr) // size) * size   # first element outside
            raise AccessFault(Fault.ADDR_RANGE, bad & MASK64,
                              f"stream {sid} loads address {bad & MASK64:#x}, outside region {s.region} "
                              f"[{base:#x}, {base + rsize:#x})", stream=sid)
        if addr + nbytes > len(self.mem):
            bad = addr + max(0, (len(self.mem) - addr) // size) * size
            raise AccessFault(Fault.ADDR_RANGE, bad & MASK64,
                              f"stream {sid} loads address {bad & MASK64:#x}, beyond the memory image "
                              f"({len(self.mem)} bytes)", stream=sid)

    def read(self, s, addr: int) -> int:
        raw = int.from_bytes(self.mem[addr:addr + s.size], "little")
        if s.signed and raw >> (8 * s.size - 1):
            raw -= 1 << (8 * s.size)
        self.out.loads += 1
        self.out.bytes_loaded += s.size
        return _to_signed64(raw)

    def load(self, sid: int, addr: int) -> int:
        """The element at the exact address ``addr`` (``overflow`` has checked its range)."""
        s = self.prog.streams[sid]
        self.check(sid, addr, s.size, s.size)
        return self.read(s, addr)

    def load_block(self, sid: int) -> list[int]:
        s = self.prog.streams[sid]
        n = self.src(s.count)
        if n < 0 or n > self.limits.max_block:
            raise AccessFault(Fault.BLOCK_LENGTH, sid,
                              f"block stream {sid} has count {n}, must be in [0, {self.limits.max_block}]",
                              stream=sid)
        if n == 0:
            return []
        start = self.src(s.a) + self.src(s.b) * s.size
        self.overflow(sid, [start])
        self.check(sid, start, n * s.size, s.size)
        return [self.read(s, start + e * s.size) for e in range(n)]

    def evaluate(self, sid: int, lanes: int | None) -> None:
        """One stream's value: scalar (``lanes`` None) or lane by lane (masked lanes 0)."""
        s = self.prog.streams[sid]
        if s.block:
            self.value[sid] = self.load_block(sid)
            return
        if lanes is None:
            operands = [(self.src(s.a), self.src(s.b))]
        else:                             # the active lanes (masked lanes compute nothing)
            operands = [(self.lane(s.a, lane), self.lane(s.b, lane))
                        for lane in range(self.count[s.layer])]
        if s.kind == StreamKind.MEM:
            addresses = [a + b * s.stride for a, b in operands]   # exact
            self.overflow(sid, addresses)
            values = [self.load(sid, addr) for addr in addresses]
            wrapped = False
        elif s.kind == StreamKind.ALU:
            results = [_alu(s.op, a, b) for a, b in operands]
            values = [v for v, _ in results]
            # Only the address arithmetic ops carry the mark: the others reduce a value on
            # purpose (a multiplicative hash is MUL then SHR) and give a fresh one.
            wrapped = s.op in _ARITHMETIC and (self.wraps(s.a) or self.wraps(s.b)
                                               or any(w for _, w in results))
        else:
            values = [a for a, _ in operands]
            wrapped = self.wraps(s.a)
        self.wrapped[sid] = wrapped
        if lanes is None:
            self.value[sid] = values[0]
        else:
            self.value[sid] = values + [0] * (lanes - len(values))

    def fire(self, layer: int, event: Event) -> None:
        for a in self.actions[(layer, event)]:
            if a.kind == ActionKind.OPERAND:
                value = self.src(a.source)
                width = a.esize
                for element in (value if isinstance(value, list) else (value,)):
                    self.packer.put(element, width)
                if not a.join:
                    self.packer.flush()
            else:
                self.out.control_tokens.append(a.callback)
        self.packer.flush()

    def iterate(self, k: int, count: int) -> None:
        """Count ``count`` iterations of layer ``k`` (a vector iteration's active lanes) against
        ``max_iterations`` before they run."""
        self.budget -= count
        if self.budget < 0:
            raise AccessFault(Fault.WATCHDOG, 0,
                              f"the run exceeds max_iterations={self.max_iterations} loop "
                              f"iterations (in layer {k}); is a loop bound wrong?")
        self.out.iterations[k] += count

    def traverse(self, k: int) -> None:
        layer = self.prog.layers[k]
        lb, ub, step = self.src(layer.lb), self.src(layer.ub), self.src(layer.step)
        if layer.check_order and ub < lb:
            raise AccessFault(Fault.RANGE_ORDER, k, f"layer {k} has ub={ub} < lb={lb}")
        last = k + 1 == len(self.prog.layers)
        if layer.mode == LayerMode.LOCKSTEP:
            lanes = layer.lanes
            for i in range(lb, ub, lanes * step):
                count = min(lanes, -(-(ub - i) // step))
                self.first[k], self.count[k] = i, count
                self.index[k] = [i + l * step if l < count else 0 for l in range(lanes)]
                self.iterate(k, count)
                for sid in self.by_layer[k]:
                    self.evaluate(sid, lanes)
                self.fire(k, Event.ITER)
            return                       # a LOCKSTEP layer is the last layer (docs/isa.md §7.2)
        for i in range(lb, ub, step):
            self.iterate(k, 1)
            self.index[k] = self.first[k] = i
            for sid in self.by_layer[k]:
                self.evaluate(sid, None)
            self.fire(k, Event.ITER)
            if not last:
                self.fire(k + 1, Event.BEGIN)
                self.traverse(k + 1)
                self.fire(k + 1, Event.END)

    def run(self) -> None:
        self.fire(0, Event.BEGIN)
        self.traverse(0)
        self.fire(0, Event.END)
        self.out.control_tokens.append(DONE_TOKEN)


#: Default of ``run_golden``'s ``max_iterations``: 2**24 loop iterations, about 25 times the
#: largest run in the project (Cora at dim 64, -O0: about 0.7 million) and a minute or two of
#: this model's time; what the RTL's watchdog is to a loop that never ends.
MAX_ITERATIONS = 1 << 24


def run_golden(program: bytes | Program, memory: bytes, args: Sequence[int], *,
               limits: Limits | None = None, raise_on_fault: bool = False,
               max_iterations: int = MAX_ITERATIONS) -> GoldenResult:
    """Execute an access program and return its output-queue token streams.

    Parameters
    ----------
    program : bytes or Program
        The binary program (docs/isa.md); a ``Program`` is encoded first.
    memory : bytes
        The flat memory image, byte address 0 first.
    args : sequence of int
        Argument registers (64-bit; signed or unsigned Python ints). Missing registers read 0.
    limits : Limits, optional
        The unit's configuration (default ``Limits()``: the RTL's, version 0 only); a program
        exceeding its resources or using a version/feature it lacks fails to decode
        (``RESOURCES``/``BAD_VERSION``). A version-1 program needs e.g.
        ``Limits.from_file("configs/tmu_vector.json")``.
    raise_on_fault : bool
        Raise :class:`AccessFault` on a run-time fault instead of returning it in the result.
    max_iterations : int
        Stop with fault ``WATCHDOG`` (address 0, the RTL watchdog's fault, docs/isa.md §5)
        before the loop iteration that would exceed this many iterations of all layers together
        (a LOCKSTEP vector iteration counts its active lanes, as ``GoldenResult.iterations``);
        the tokens produced until then are kept. The model has no cycles to time out on, so it
        bounds the work instead (a wrong loop bound would otherwise run for hours). Default
        ``MAX_ITERATIONS`` = 2**24. Must be >= 0 (``ValueError``).

    Raises
    ------
    ProgramError
        A malformed program (decode fault: code and PC as the RTL reports them).
    AccessFault
        Only with ``raise_on_fault``: a run-time fault.
    ValueError
        ``max_iterations`` is not an int >= 0.
    """
    if isinstance(max_iterations, bool) or not isinstance(max_iterations, int) \
            or max_iterations < 0:
        raise ValueError(f"max_iterations must be an int >= 0, not {max_iterations!r}")
    if isinstance(program, Program):
        program = program.encode()
    limits = limits or Limits()
    prog = Program.decode(bytes(program), limits)
    args = list(args) + [0] * max(0, prog.n_args - len(args))
    result = GoldenResult()
    machine = _Machine(prog, bytes(memory), args, result, limits, max_iterations)
    try:
        machine.run()
    except AccessFault as fault:
        result.fault_code, result.fault_addr, result.fault_message = int(fault.code), fault.addr, str(fault)
        result.fault_stream = fault.stream
        if raise_on_fault:
            raise
    return result
