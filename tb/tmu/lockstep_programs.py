"""Random ISA v1 programs whose LOCKSTEP layer runs in the RTL's *vector mode*
(``docs/rtl.md`` §9.3): lane-affine ALU/FWD streams and contiguous vector loads.

The cases are checked against the golden model (``sw.runtime.golden``), token by token, like
every other case of ``tb.programs``; the generator only makes sure that the unit's fast path is
exercised thoroughly: rows that start anywhere in a 64-bit word, every element size, signed
loads, tails of every length, descending ``b`` (``SUB(x, INDEX)`` with a negative stride),
``COUNT``/``FIRST``/``INDEX`` vectors and scalars, vector ALU operands with lane coefficients
-1/0/+1, every ``pack`` and ``JOIN``, and regions or images that end inside a vector (faults in
an active lane, masked lanes past the end), plus a few programs that fall back to lane-by-lane
evaluation (a gather, a step of 2, ``MUL`` of the index).
"""

from __future__ import annotations

import random

from sw.runtime.isa import (Action, ActionKind, AluOp, Event, Layer, LayerMode, Program, Region,
                            Source, Stream, StreamKind)
from tb.programs import Case, lockstep_case


__all__ = ["vector_mode_case", "lane_fault_order_case"]


def lane_fault_order_case(lanes: int) -> Case:
    """A gather (run lane by lane) whose lane 0 faults in the row load (stream 5: row 9 of a
    4-row table) and whose lane 1 faults in the index load (stream 3: the index region holds
    one index). The golden model evaluates stream by stream, so the reported fault is stream
    3's, at the second index's address (``args[3] + 8``); ``lanes`` >= 2."""
    if lanes < 2:
        raise ValueError(f"lanes must be >= 2, not {lanes!r}")
    base = lockstep_case("order", lanes=lanes, rows=4, gather=True, indices=[9, 0, 1],
                         lengths=(3,))
    args = list(base.args)
    args[4] = 8                           # the index region holds indices[0] only
    return Case("lane_fault_order", base.program, base.memory, args)


def vector_mode_case(seed: int, config, *, fallback_prob: float = 0.15) -> Case:
    """A random program: bags (layer 0, SINGLE or BROADCAST), optionally a BROADCAST layer of
    rows, and a LOCKSTEP layer of 1..``config.lanes`` lanes over a row's columns.

    Parameters
    ----------
    seed : int
        Seed of ``random.Random``; the same seed gives the same case.
    config : hw.tmu.TmuConfig
        Unit the case is for (lanes, streams, actions, regions, args are respected).
    fallback_prob : float
        Probability that one LOCKSTEP stream is not lane-affine (lane-by-lane evaluation).
    """
    if config.streams < 6 or config.actions < 6 or config.regions < 2 or config.args < 8:
        raise ValueError(f"config is too small for vector_mode_case: {config!r}")
    rng = random.Random(seed * 104729 + 17)
    S, I, R, imm, C, F = (Source.stream, Source.index, Source.arg, Source.imm, Source.count,
                          Source.first)
    lanes = rng.randint(1, config.lanes)
    nbags = rng.randint(1, 3)
    dim = rng.choice([rng.randint(1, 2 * lanes + 1), lanes, 2 * lanes])
    table = bytes(rng.getrandbits(8) for _ in range(1024))
    small = bytes(rng.randrange(4) for _ in range(64))          # row numbers 0..3
    memory = table + small
    mis = rng.choice([0] * 10 + [1, 2, 4])                       # table base offset, bytes
    tbytes = rng.choice([len(table) - mis, len(table) - mis, rng.randrange(8, 96)])
    # Arguments: 0 table base, 1 table bytes, 2 small base, 3 small bytes, 4 bags, 5 dim,
    # 6 lb of the columns, 7 a constant.
    args = [mis, tbytes, len(table), len(small), nbags, dim, rng.randrange(0, 3),
            rng.randrange(-4, 5)]
    if rng.random() < 0.1:
        args[1] = 1 << 20                                       # region past the image's end
    two = rng.random() < 0.5
    # Layer 0: bags; s0 = small[bag] (a row number). With ``two``, layer 1 runs over 1..2
    # rows per bag (s1 = s0 + i1) and layer 0 may be SINGLE (the LOCKSTEP streams do not read
    # it); the layer just above the LOCKSTEP one is BROADCAST (its streams are read).
    layers = [Layer(imm(0), R(4), mode=rng.choice([LayerMode.SINGLE, LayerMode.BROADCAST])
                    if two else LayerMode.BROADCAST)]
    streams = [Stream(0, StreamKind.MEM, R(2), I(0), size=1, stride=1, region=1)]
    if two:
        layers.append(Layer(imm(0), imm(rng.randint(1, 2)), mode=LayerMode.BROADCAST))
        streams.append(Stream(1, StreamKind.ALU, S(0), I(1), op=AluOp.ADD))
    row = len(streams) - 1
    lk = len(layers)
    lb = rng.choice([imm(0), R(6)])
    streams.append(Stream(lk - 1, StreamKind.ALU, R(5), lb, op=AluOp.ADD))      # ub = dim + lb
    ub_sid = len(streams) - 1
    streams.append(Stream(lk - 1, StreamKind.ALU, S(row), R(5), op=AluOp.MUL))  # row * dim
    rowbase = len(streams) - 1
    x = rng.randrange(8, 40)
    size = rng.choice([1, 2, 4, 8])
    # Base of a descending b (b = x - i, stride -size): table base + x * size.
    streams.append(Stream(lk - 1, StreamKind.ALU, R(0), imm(x * size), op=AluOp.ADD))
    dbase = len(streams) - 1
    step = 2 if rng.random() < fallback_prob / 3 else 1
    layers.append(Layer(lb, S(ub_sid), imm(step), mode=LayerMode.LOCKSTEP, lanes=lanes))
    vec = []                                        # LOCKSTEP streams (vector sources)
    fallback = rng.random() < fallback_prob

    def room(n):
        return len(streams) + n <= config.streams

    for n in range(rng.randint(1, 4)):
        alus = [s for s in vec if streams[s].kind != StreamKind.MEM]
        kind = rng.choice(["mem", "mem", "alu"]) if n else "mem"
        if kind == "mem" and room(2 + (fallback and n == 0)):
            if rng.random() < 0.25:
                streams.append(Stream(lk, StreamKind.ALU, imm(x), I(lk), op=AluOp.SUB))
                a_src, esize, stride = S(dbase), size, -size
            else:
                esize = rng.choice([size, 1, 2, 4, 8])
                streams.append(rng.choice([
                    Stream(lk, StreamKind.ALU, S(rowbase), I(lk), op=AluOp.ADD),
                    Stream(lk, StreamKind.ALU, I(lk), S(rowbase), op=AluOp.ADD),
                    Stream(lk, StreamKind.FWD, I(lk))]))
                a_src, stride = R(0), esize
            b = S(len(streams) - 1)
            if fallback and n == 0:
                # A gather: the index goes through a load (lane-by-lane evaluation).
                streams.append(Stream(lk, StreamKind.MEM, R(2), b, size=1, stride=1, region=1))
                b = S(len(streams) - 1)
            streams.append(Stream(lk, StreamKind.MEM, a_src, b, size=esize, stride=stride,
                                  signed=rng.random() < 0.4, region=0))
            vec.append(len(streams) - 1)
        elif kind == "alu" and room(1):
            src = rng.choice([I(lk)] + [S(s) for s in alus])
            op, other = rng.choice([(AluOp.ADD, R(7)), (AluOp.SUB, imm(rng.randrange(-9, 9))),
                                    (AluOp.ADD, S(rowbase)), (AluOp.MUL, C(lk)),
                                    (AluOp.XOR, F(lk))])
            if op in (AluOp.MUL, AluOp.XOR) and not fallback:
                streams.append(Stream(lk, StreamKind.ALU, other, R(7), op=op))   # lane-uniform
            elif op == AluOp.SUB and rng.random() < 0.5:
                streams.append(Stream(lk, StreamKind.ALU, other, src, op=op))    # coefficient -1
            else:
                streams.append(Stream(lk, StreamKind.ALU, src, other, op=op))
            vec.append(len(streams) - 1)
    # Actions: the ITER firing of the LOCKSTEP layer pushes vectors and scalars.
    acts = []
    srcs = [S(s) for s in vec] * 2 + [I(lk), C(lk), F(lk), I(0)]
    for _ in range(rng.randint(1, config.actions - 3)):
        src = rng.choice(srcs)
        acts.append(Action(lk, Event.ITER, ActionKind.OPERAND, source=src,
                           pack=rng.choice([0, 0, 1, 2, 3]), join=rng.random() < 0.3))
    acts.insert(rng.randrange(len(acts) + 1), Action(lk, Event.ITER, ActionKind.CONTROL,
                                                      callback=rng.randrange(0xFFFF)))
    acts.append(Action(lk, Event.END, ActionKind.OPERAND, source=I(0), pack=rng.choice([0, 2])))
    acts.append(Action(0, Event.END, ActionKind.CONTROL, callback=7))
    prog = Program(n_args=8, version=1, layers=layers,
                   regions=[Region(R(0), R(1)), Region(R(2), R(3))],
                   streams=streams, actions=acts)
    return Case(f"vector_mode_{seed}", prog.encode(), memory, args)
