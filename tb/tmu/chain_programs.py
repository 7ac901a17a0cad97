"""Programs with a *chain*: a blocking load whose index is an affine stream of its layer
through up to two ALU operations (``hw/tmu/chain_detect.py``), for the unit with a chain
engine. Checked against the golden model token by token like every case of ``tb.programs``.

One or two layers. The chained layer ``i`` (``[0, n)``, or CSR-like ``[ptr[g], ptr[g + 1])``
inside a layer ``g`` of groups, so that the engine is started at every entry and continues
across contiguous ranges) evaluates::

    s_v = ids[i]                      (8-byte elements, region "ids")
    s_1 = op0(s_v, K0)                (VARIANTS; constants are arguments or immediates)
    s_2 = op1(s_1, K1)
    s_m = remap[s_2]                  (8-byte elements, region "remap"; read by the next stream)
    s_r = s_m + 1
    ITER: OPERAND s_r (, OPERAND s_v); CONTROL 0

Fault variants cut a region short (the chained load or the root's leaves it at some element),
or make ``s_2`` wrap (``SHL`` by 62 of an index >= 2: ``ADDR_OVERFLOW`` at the chained load).
"""

from __future__ import annotations

import numpy as np

from sw.runtime.isa import (Action, ActionKind, AluOp, Event, Layer, Program, Region, Source,
                            Stream, StreamKind)
from tb.programs import Case


__all__ = ["VARIANTS", "chain_case"]

#: variant -> (operations (op, constant) applied to ids[i], ids' value range, remap entries)
VARIANTS = {
    "hash":       ([(AluOp.MUL, -7046029254386353131), (AluOp.SHR, 61)], 1 << 40, 8),
    "mask":       ([(AluOp.AND, 7), (AluOp.ADD, 1)], 1 << 30, 9),
    "one_op":     ([(AluOp.XOR, 3)], 6, 8),
    "no_op":      ([], 8, 8),
    "region":     ([(AluOp.AND, 15)], 1 << 20, 16),     # remap's region holds 9 of its 16
    "root_cut":   ([(AluOp.AND, 7)], 1 << 20, 8),       # ids' region holds 5 of its ids
    "wrap":       ([(AluOp.SHL, 62), (AluOp.ADD, 0)], 4, 8),
    "const_first": ([(AluOp.SUB, 7)], 8, 8),            # 7 - id (constant as a)
    "mul_last":   ([(AluOp.MUL, 3)], 3, 9),             # no engine: the MUL's wrap matters
}


def chain_case(name: str, variant: str, *, n: int = 14, groups: tuple[int, ...] | None = None,
               push_root: bool = False, seed: int = 0) -> Case:
    """A chain program (module docstring). ``groups``: the lengths of the ranges of a
    two-layer program (``None``: one layer of ``n`` iterations); ``push_root``: the root's
    value is pushed too (``V`` is then also an operand the traversal pops)."""
    if variant not in VARIANTS:
        raise ValueError(f"variant must be one of {sorted(VARIANTS)}, not {variant!r}")
    ops, id_range, entries = VARIANTS[variant]
    rng = np.random.default_rng(seed)
    if groups is not None:
        n = int(sum(groups))
    ids = rng.integers(0, id_range, n).astype(np.int64)
    remap = rng.integers(0, 1 << 50, entries).astype(np.int64)
    ptr = np.concatenate([[0], np.cumsum(groups if groups is not None else [n])]).astype(np.int64)
    # memory: ids, remap, ptr
    ids_base, remap_base = 0, 8 * n
    ptr_base = remap_base + 8 * entries
    memory = ids.tobytes() + remap.tobytes() + ptr.tobytes()
    ids_size = 8 * (5 if variant == "root_cut" else n)
    remap_size = 8 * (9 if variant == "region" else entries)
    S, I, R, imm = Source.stream, Source.index, Source.arg, Source.imm
    # args: 0 n / groups, 1-2 ids, 3-4 remap, 5-6 ptr, 7 the first constant
    args = [n if groups is None else len(groups), ids_base, ids_size, remap_base, remap_size,
            ptr_base, 8 * len(ptr)]
    regions = [Region(R(1), R(2)), Region(R(3), R(4)), Region(R(5), R(6))]
    inner = 0 if groups is None else 1
    streams = []
    if groups is not None:
        streams += [Stream(0, StreamKind.ALU, I(0), imm(1)),
                    Stream(0, StreamKind.MEM, R(5), I(0), size=8, stride=8, region=2),
                    Stream(0, StreamKind.MEM, R(5), S(0), size=8, stride=8, region=2)]
    v = len(streams)
    streams.append(Stream(inner, StreamKind.MEM, R(1), I(inner), size=8, stride=8, region=0))
    x = S(v)
    for k, (op, const) in enumerate(ops):
        if -(1 << 27) <= const < 1 << 27:
            c = imm(const)
        else:
            args.append(const & ((1 << 64) - 1))
            c = R(len(args) - 1)
        a, b = (c, x) if variant == "const_first" else (x, c)
        streams.append(Stream(inner, StreamKind.ALU, a, b, op=op))
        x = S(len(streams) - 1)
    m = len(streams)
    streams.append(Stream(inner, StreamKind.MEM, R(3), x, size=8, stride=8, region=1))
    streams.append(Stream(inner, StreamKind.ALU, S(m), imm(1)))
    actions = [Action(inner, Event.ITER, ActionKind.OPERAND, source=S(m + 1))]
    if push_root:
        actions.append(Action(inner, Event.ITER, ActionKind.OPERAND, source=S(v)))
    actions.append(Action(inner, Event.ITER, ActionKind.CONTROL, callback=0))
    layers = [Layer(imm(0), R(0))]
    if groups is not None:
        layers.append(Layer(S(1), S(2), check_order=True))
    prog = Program(n_args=len(args), layers=layers, regions=regions, streams=streams,
                   actions=actions)
    return Case(name, prog.encode(), memory, args)
