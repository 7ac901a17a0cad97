"""Golden functional model of the access unit: runs a binary access program, cycle-free.

It executes ``docs/isa.md`` §1 literally (the normative pseudo-code) over a flat memory image and
produces the exact data-queue and control-queue token streams. The RTL is compared with it token
by token (``tb/``), and the execute side consumes its tokens when the target is ``golden``.

Run-time faults stop the run: the tokens produced before the fault are kept, no ``DONE`` token is
pushed, and :class:`GoldenResult` records the fault code and address (``run_golden``), or
:class:`AccessFault` is raised (``run_golden(..., raise_on_fault=True)``).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Sequence

from .isa import (DONE_TOKEN, MASK64, ActionKind, AluOp, Event, Fault, Limits, Program, SrcKind,
                  StreamKind, _to_signed64)

__all__ = ["AccessFault", "GoldenResult", "run_golden"]


class AccessFault(RuntimeError):
    """A run-time fault of the access unit (docs/isa.md §5): ``code`` and ``addr`` as the RTL sets them."""

    def __init__(self, code: Fault, addr: int, message: str):
        self.code = Fault(code)
        self.addr = addr
        super().__init__(f"{message} (fault {self.code.name}, address {addr:#x})")


@dataclass
class GoldenResult:
    data_tokens: list[int] = field(default_factory=list)     # raw unsigned 64-bit operands
    control_tokens: list[int] = field(default_factory=list)  # callback ids, DONE last
    fault_code: int = 0
    fault_addr: int = 0
    fault_message: str = ""
    loads: int = 0             # memory-stream loads evaluated
    bytes_loaded: int = 0      # bytes, the sum of the element sizes of those loads
    iterations: list[int] = field(default_factory=list)   # per layer

    @property
    def faulted(self) -> bool:
        return self.fault_code != Fault.NONE


def _alu(op: AluOp, a: int, b: int) -> int:
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
    return _to_signed64(r)


class _Machine:
    def __init__(self, prog: Program, memory: bytes, args: Sequence[int], result: GoldenResult):
        self.prog = prog
        self.mem = memory
        self.args = [_to_signed64(int(a)) for a in args]
        self.out = result
        n = len(prog.layers)
        self.index = [0] * n
        self.value = [0] * len(prog.streams)
        self.by_layer = [[sid for sid, s in enumerate(prog.streams) if s.layer == k] for k in range(n)]
        self.actions = {(k, e): [a for a in prog.actions if a.layer == k and a.event == e]
                        for k in range(n) for e in Event}
        self.regions = [(self.src(r.base), self.src(r.size)) for r in prog.regions]
        result.iterations = [0] * n

    def src(self, s) -> int:
        if s.kind == SrcKind.IMM:
            return s.value
        if s.kind == SrcKind.ARG:
            return self.args[s.value]
        if s.kind == SrcKind.STREAM:
            return self.value[s.value]
        return self.index[s.value]

    def load(self, sid: int) -> int:
        s = self.prog.streams[sid]
        addr = _to_signed64(self.src(s.a) + self.src(s.b) * s.stride)
        base, size = self.regions[s.region]
        uaddr = addr & MASK64
        if addr % s.size:
            raise AccessFault(Fault.MISALIGNED, uaddr,
                              f"stream {sid} loads {s.size} bytes at misaligned address {uaddr:#x}")
        if not (base <= addr and addr + s.size <= base + size):
            raise AccessFault(Fault.ADDR_RANGE, uaddr,
                              f"stream {sid} loads address {uaddr:#x}, outside region {s.region} "
                              f"[{base:#x}, {base + size:#x})")
        if addr + s.size > len(self.mem):
            raise AccessFault(Fault.ADDR_RANGE, uaddr,
                              f"stream {sid} loads address {uaddr:#x}, beyond the memory image "
                              f"({len(self.mem)} bytes)")
        raw = int.from_bytes(self.mem[addr:addr + s.size], "little")
        if s.signed and raw >> (8 * s.size - 1):
            raw -= 1 << (8 * s.size)
        self.out.loads += 1
        self.out.bytes_loaded += s.size
        return _to_signed64(raw)

    def fire(self, layer: int, event: Event) -> None:
        for a in self.actions[(layer, event)]:
            if a.kind == ActionKind.OPERAND:
                self.out.data_tokens.append(self.src(a.source) & MASK64)
            else:
                self.out.control_tokens.append(a.callback)

    def traverse(self, k: int) -> None:
        layer = self.prog.layers[k]
        lb, ub, step = self.src(layer.lb), self.src(layer.ub), self.src(layer.step)
        if layer.check_order and ub < lb:
            raise AccessFault(Fault.RANGE_ORDER, k, f"layer {k} has ub={ub} < lb={lb}")
        streams = self.prog.streams
        last = k + 1 == len(self.prog.layers)
        for i in range(lb, ub, step):
            self.index[k] = i
            self.out.iterations[k] += 1
            for sid in self.by_layer[k]:
                s = streams[sid]
                if s.kind == StreamKind.MEM:
                    self.value[sid] = self.load(sid)
                elif s.kind == StreamKind.ALU:
                    self.value[sid] = _alu(s.op, self.src(s.a), self.src(s.b))
                else:
                    self.value[sid] = self.src(s.a)
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


def run_golden(program: bytes | Program, memory: bytes, args: Sequence[int], *,
               limits: Limits | None = None, raise_on_fault: bool = False) -> GoldenResult:
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
        The unit's resources; a program exceeding them fails to decode (``RESOURCES``).
    raise_on_fault : bool
        Raise :class:`AccessFault` on a run-time fault instead of returning it in the result.

    Raises
    ------
    ProgramError
        A malformed program (decode fault: code and PC as the RTL reports them).
    AccessFault
        Only with ``raise_on_fault``: a run-time fault.
    """
    if isinstance(program, Program):
        program = program.encode()
    prog = Program.decode(bytes(program), limits)
    args = list(args) + [0] * max(0, prog.n_args - len(args))
    result = GoldenResult()
    machine = _Machine(prog, bytes(memory), args, result)
    try:
        machine.run()
    except AccessFault as fault:
        result.fault_code, result.fault_addr, result.fault_message = int(fault.code), fault.addr, str(fault)
        if raise_on_fault:
            raise
    return result
