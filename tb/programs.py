"""Access programs and memory images for the hardware tests (built with ``sw.runtime.isa``).

Every generator returns a :class:`Case`: program bytes, memory image, argument registers and a
name. The expected result is always the golden model's (``sw.runtime.golden.run_golden``).
"""

from __future__ import annotations

import random
import struct
from dataclasses import dataclass
from typing import Sequence

import numpy as np

from sw.runtime.handwritten import embedding_bag_memory, embedding_bag_program
from sw.runtime.isa import (MAGIC, Action, ActionKind, AluOp, Event, Layer, Limits, Program,
                            ProgramError, Region, Source, Stream, StreamKind)


__all__ = ["Case", "embedding_bag_case", "alu_case", "mul_constants_case", "random_case",
           "fault_cases", "mutated_cases", "watchdog_case", "pack_case", "random_v1_case",
           "v1_decode_cases", "block_case", "block_cases", "block_after_immediate_case",
           "block_row_after_load_case",
           "lockstep_case", "lockstep_cases", "address_overflow_cases", "csr_skip_case",
           "CSR_SKIP_VARIANTS"]


@dataclass
class Case:
    name: str
    program: bytes
    memory: bytes
    args: Sequence[int]


def embedding_bag_case(name, rows, dim, lengths, *, seed=0, elem_size=4, indices=None):
    """Hand-written embedding-bag program (3 layers) over a random table."""
    rng = np.random.default_rng(seed)
    dtype = np.float32 if elem_size == 4 else np.float64
    table = rng.standard_normal((rows, dim)).astype(dtype)
    lengths = np.asarray(lengths, dtype=np.int64)
    if indices is None:
        indices = rng.integers(0, rows, int(lengths.sum()))
    indices = np.asarray(indices, dtype=np.int64)
    offsets = np.concatenate([[0], np.cumsum(lengths)]).astype(np.int64)
    memory, args = embedding_bag_memory(table, indices, offsets)
    return Case(name, embedding_bag_program(elem_size).encode(), memory, args)


def _data_image(rng, words=64):
    """Memory: 64 random words, then 64 bytes of small values 0..7 (bounds/indices)."""
    data = [rng.getrandbits(64) for _ in range(words)]
    small = bytes(rng.randrange(8) for _ in range(64))
    mem = struct.pack(f"<{words}Q", *data) + small
    return mem, 0, 8 * words, 8 * words, 64


def alu_case(seed=0):
    """One layer over 16 words: loads of every size/sign, every ALU op, FWD; all pushed."""
    rng = random.Random(seed)
    mem, dbase, dbytes, sbase, sbytes = _data_image(rng)
    S, I, R, imm = Source.stream, Source.index, Source.arg, Source.imm
    streams = [
        Stream(0, StreamKind.MEM, R(0), I(0), size=8, stride=8, region=0),            # s0
        Stream(0, StreamKind.MEM, R(0), I(0), size=4, stride=8, signed=True, region=0),
        Stream(0, StreamKind.MEM, R(0), I(0), size=2, stride=6, signed=True, region=0),
        Stream(0, StreamKind.MEM, R(0), I(0), size=1, stride=3, region=0),             # s3
        Stream(0, StreamKind.ALU, S(0), R(2), op=AluOp.ADD),                            # s4 (blocking s0)
    ]
    ops = rng.sample(list(AluOp), 10)    # 16 stream slots; seeds together cover every op
    pushes = [S(0), S(1), S(2), S(3), S(4)]
    operand_choices = [S(0), S(1), S(2), S(3), S(4), I(0), R(2), R(3), imm(-5), imm(63), imm(7)]
    for op in ops:
        a, b = rng.choice(operand_choices), rng.choice(operand_choices)
        streams.append(Stream(0, StreamKind.ALU, a, b, op=op))
        pushes.append(S(len(streams) - 1))
    streams.append(Stream(0, StreamKind.FWD, R(3)))
    pushes.append(S(len(streams) - 1))
    # Only 16 actions fit the default configuration: push a selection, plus control ids.
    rng.shuffle(pushes)
    actions = [Action(0, Event.BEGIN, ActionKind.CONTROL, callback=0x1234),
               Action(0, Event.BEGIN, ActionKind.OPERAND, source=R(3))]
    actions += [Action(0, Event.ITER, ActionKind.OPERAND, source=p) for p in pushes[:12]]
    actions += [Action(0, Event.ITER, ActionKind.CONTROL, callback=7),
                Action(0, Event.END, ActionKind.CONTROL, callback=0xFFFE)]
    prog = Program(n_args=4,
                   layers=[Layer(imm(0), imm(16), imm(1))],
                   regions=[Region(R(0), R(1))],
                   streams=streams[:16], actions=actions)
    args = [dbase, dbytes, rng.getrandbits(64), -rng.getrandbits(40)]
    return Case(f"alu_{seed}", prog.encode(), mem, args)


def mul_constants_case(seed=0, *, huge=False):
    """One layer over 8 words: ALU ``MUL``s of a loaded value or the index by constants (IMM
    8, ARG ``2**40``, ARG 3 either order, IMM -4, IMM 1) and of two streams, all pushed, and a
    load whose index is ``value * 8``. The decoder writes the multiplies by a positive power
    of two as ``SHL``s (docs/rtl.md §2.2, "Multiplies"); the tokens must not change. With
    ``huge`` the loaded values are ``2**61`` and up, so ``value * 8`` wraps and the load faults
    ``ADDR_OVERFLOW`` on the first iteration (the ``SHL``'s wrapped bit is ``MUL``'s)."""
    rng = random.Random(seed)
    words = [(1 << 61) + rng.getrandbits(40) if huge else rng.randrange(8) for _ in range(8)]
    mem = struct.pack("<8Q", *words)
    S, I, R, imm = Source.stream, Source.index, Source.arg, Source.imm
    streams = [
        Stream(0, StreamKind.MEM, R(0), I(0), size=8, stride=8, region=0),          # s0
        Stream(0, StreamKind.ALU, S(0), imm(8), op=AluOp.MUL),                      # SHL 3
        Stream(0, StreamKind.ALU, R(2), I(0), op=AluOp.MUL),                        # SHL 40
        Stream(0, StreamKind.ALU, S(0), R(3), op=AluOp.MUL),                        # x 3
        Stream(0, StreamKind.ALU, imm(-4), S(0), op=AluOp.MUL),                     # x -4
        Stream(0, StreamKind.ALU, S(0), S(3), op=AluOp.MUL),                        # stream x stream
        Stream(0, StreamKind.ALU, I(0), imm(1), op=AluOp.MUL),                      # SHL 0
        Stream(0, StreamKind.MEM, R(0), S(1), size=1, stride=1, region=0),          # data[8 v]
    ]
    actions = [Action(0, Event.ITER, ActionKind.OPERAND, source=S(i)) for i in range(8)]
    prog = Program(n_args=4, layers=[Layer(imm(0), imm(8), imm(1))],
                   regions=[Region(R(0), R(1))], streams=streams, actions=actions)
    return Case(f"mul_constants_{seed}{'_huge' if huge else ''}", prog.encode(), mem,
                [0, 64, 1 << 40, 3])


def random_case(seed, *, layers=3, streams=8, actions=8, regions=2, args=8):
    """A random valid program over a small image: dense and range layers, MEM/ALU/FWD streams
    with visible sources, actions on every event. Loops are short; loads may fault (the golden
    model says how)."""
    rng = random.Random(seed)
    mem, dbase, dbytes, sbase, sbytes = _data_image(rng)
    S, I, R, imm = Source.stream, Source.index, Source.arg, Source.imm
    n_layers = rng.randint(1, layers)
    n_args = args
    argv = [dbase, dbytes, sbase, sbytes] + [rng.randrange(1, 5) for _ in range(n_args - 4)]
    prog = Program(n_args=n_args)
    prog.regions = [Region(R(0), R(1)), Region(R(2), R(3))][:regions]
    stream_layer = []

    def visible_streams(k, strictly_below=False):
        return [sid for sid, L in enumerate(stream_layer) if (L < k if strictly_below else L <= k)]

    def operand(k, for_stream=True):
        choices = [imm(rng.randrange(-3, 9)), R(rng.randrange(n_args))]
        choices += [I(rng.randrange(k + 1))]
        vis = visible_streams(k)
        if vis:
            choices += [S(rng.choice(vis))] * 2
        return rng.choice(choices)

    # Layers first (bounds may use streams of the layer above, created below in order).
    budget = streams
    for k in range(n_layers):
        kind = rng.choice(["dense", "range"]) if k > 0 else "dense"
        if kind == "range" and budget >= 2:
            # lb = small[x], ub = small[x] + t  (non-decreasing usually; check_order on)
            lo = len(stream_layer)
            stream_layer.append(k - 1)
            prog.streams.append(Stream(k - 1, StreamKind.MEM, R(2), I(k - 1), size=1, stride=1,
                                       region=1 if regions > 1 else 0))
            stream_layer.append(k - 1)
            prog.streams.append(Stream(k - 1, StreamKind.ALU, S(lo), imm(rng.randrange(-1, 4)),
                                       op=AluOp.ADD))
            budget -= 2
            prog.layers.append(Layer(S(lo), S(lo + 1), imm(rng.choice([1, 1, 2])),
                                     check_order=rng.random() < 0.8))
        else:
            prog.layers.append(Layer(imm(rng.randrange(0, 2)), imm(rng.randrange(1, 5)),
                                     imm(rng.choice([1, 1, 2]))))
        # A few streams of this layer.
        for _ in range(rng.randrange(0, 3)):
            if budget == 0:
                break
            sid = len(stream_layer)
            kind = rng.choice(["mem", "mem", "alu", "fwd"])
            if kind == "mem":
                size = rng.choice([1, 2, 4, 8])
                idx = rng.choice([I(rng.randrange(k + 1)), imm(rng.randrange(8))]
                                 + [S(s) for s in visible_streams(k)])
                s = Stream(k, StreamKind.MEM, R(0), idx, size=size,
                           stride=size * rng.choice([1, 1, 2, -1]), signed=rng.random() < 0.5,
                           region=0)
            elif kind == "alu":
                s = Stream(k, StreamKind.ALU, operand(k), operand(k), op=rng.choice(list(AluOp)))
            else:
                s = Stream(k, StreamKind.FWD, operand(k))
            stream_layer.append(k)
            prog.streams.append(s)
            budget -= 1
    # Actions.
    for _ in range(rng.randrange(1, actions + 1)):
        k = rng.randrange(n_layers)
        event = rng.choice(list(Event))
        if rng.random() < 0.35:
            prog.actions.append(Action(k, event, ActionKind.CONTROL, callback=rng.randrange(0xFFFF)))
        else:
            lim = k if event == Event.ITER else k - 1
            choices = [imm(rng.randrange(-100, 100)), R(rng.randrange(n_args))]
            if lim >= 0:
                choices += [I(rng.randrange(lim + 1))]
                vis = visible_streams(lim)
                choices += [S(rng.choice(vis))] * 3 if vis else []
            prog.actions.append(Action(k, event, ActionKind.OPERAND, source=rng.choice(choices)))
    return Case(f"random_{seed}", prog.encode(), mem, argv)


def _words(program):
    return list(struct.unpack(f"<{len(program) // 4}I", program))


def _pack(words):
    return struct.pack(f"<{len(words)}I", *words)


def fault_cases(config):
    """Named programs that fault, one per fault code the golden model can produce."""
    base = embedding_bag_case("eb", rows=4, dim=3, lengths=[2, 0, 1], indices=[1, 3, 0])
    words = _words(base.program)
    cases = []

    w = list(words); w[0] ^= 1
    cases.append(Case("bad_magic", _pack(w), base.memory, base.args))
    w = list(words); w[1] = 2
    cases.append(Case("bad_version", _pack(w), base.memory, base.args))
    w = list(words); w[1] = 1 << 16
    cases.append(Case("version_reserved", _pack(w), base.memory, base.args))
    # Too many layers: the header announces config.layers + 1 layers (length consistent).
    n = config.layers + 1
    hdr = [MAGIC, 0, n, 0] + sum(([k, Source.imm(0).encode(), Source.imm(1).encode(),
                                   Source.imm(1).encode()] for k in range(n)), [])
    cases.append(Case("too_many_layers", _pack(hdr), base.memory, base.args))
    w = list(words); w[3] = config.args + 1
    cases.append(Case("too_many_args", _pack(w), base.memory, base.args))
    # Illegal field: stream 1 kind = 3.
    stream1 = 4 + 4 * (3 + 3) + 4
    w = list(words); w[stream1] = (w[stream1] & ~(0xF << 16)) | (3 << 16)
    cases.append(Case("illegal_stream_kind", _pack(w), base.memory, base.args))
    w = list(words); w[4] |= 1 << 31
    cases.append(Case("layer_reserved_bit", _pack(w), base.memory, base.args))
    # Not visible: layer 1 lb reads stream 3 (layer 1).
    w = list(words); w[4 + 4 + 1] = Source.stream(3).encode()
    cases.append(Case("source_not_visible", _pack(w), base.memory, base.args))
    # Truncated / too long / not a multiple of 4.
    cases.append(Case("truncated", _pack(words[:-1]), base.memory, base.args))
    cases.append(Case("too_long", _pack(words + [0]), base.memory, base.args))
    cases.append(Case("odd_length", base.program + b"\x00\x00", base.memory, base.args))
    cases.append(Case("header_only_2_words", _pack(words[:2]), base.memory, base.args))
    cases.append(Case("empty", b"", base.memory, base.args))
    # Run-time: an index past the table (ADDR_RANGE), decreasing offsets (RANGE_ORDER),
    # misaligned load, a load beyond the memory image.
    c = embedding_bag_case("addr_range", rows=4, dim=3, lengths=[2, 1], indices=[1, 4, 0])
    cases.append(c)
    c = embedding_bag_case("range_order", rows=4, dim=2, lengths=[2, -1, 1], indices=[1, 2, 3])
    cases.append(c)
    c = embedding_bag_case("misaligned", rows=4, dim=2, lengths=[1, 1], indices=[0, 1])
    args = list(c.args); args[2] += 4     # table base off by 4 bytes, f32 elements fine ...
    prog = embedding_bag_program(8)       # ... but 8-byte elements are misaligned
    cases.append(Case("misaligned", prog.encode(), c.memory, args))
    # The table region (granted) extends past the memory image, and a row lies beyond it.
    c = embedding_bag_case("beyond_image", rows=4, dim=2, lengths=[1, 1], indices=[0, 1])
    args = list(c.args); args[7] += 4096; args[2] = len(c.memory) - 8
    cases.append(Case("beyond_image", c.program, c.memory, args))
    return cases


def _bound_fingerprint(prog):
    """The layer bounds and every stream they (transitively) read: what decides trip counts."""
    from sw.runtime.isa import SrcKind
    deps, todo = set(), []
    for layer in prog.layers:
        todo += [s.value for s in (layer.lb, layer.ub) if s.kind == SrcKind.STREAM]
    while todo:
        sid = todo.pop()
        if sid in deps:
            continue
        deps.add(sid)
        st = prog.streams[sid]
        todo += [s.value for s in (st.a, st.b) if s.kind == SrcKind.STREAM]
    return ([(layer.lb, layer.ub) for layer in prog.layers],
            sorted((sid, repr(prog.streams[sid])) for sid in deps))


def mutated_cases(seed, count, config, *, bases=None):
    """Valid programs with one random word or bit changed: exercises every decoder check
    against the golden loader (code and PC). Mutations that still decode but change what a loop
    bound depends on are redrawn (they could make a loop run for 2**60 iterations)."""
    rng = random.Random(seed)
    if bases is None:
        bases = [embedding_bag_case("eb", rows=4, dim=3, lengths=[2, 0, 1], indices=[1, 3, 0]),
                 alu_case(seed)] + [random_case(seed * 1000 + i, layers=min(3, config.layers))
                                    for i in range(4)]
    limits = Limits.from_tmu_config(config)
    fingerprints = [_bound_fingerprint(Program.decode(b.program, Limits.unlimited()))
                    for b in bases]
    out = []
    while len(out) < count:
        which = rng.randrange(len(bases))
        base = bases[which]
        w = _words(base.program)
        pc = rng.randrange(len(w))
        r = rng.random()
        if r < 0.5:
            w[pc] ^= 1 << rng.randrange(32)
        elif r < 0.7:
            w[pc] = rng.getrandbits(32)
        elif r < 0.85:
            field = rng.choice([0, 8, 16, 20, 24, 28])
            w[pc] = (w[pc] & ~(0xF << field)) | (rng.randrange(16) << field)
        else:
            w[pc] = (w[pc] & 0xFFFFFF00) | rng.randrange(256)
        program = _pack(w)
        try:
            decoded = Program.decode(program, limits)
        except ProgramError:
            decoded = None
        if decoded is not None and _bound_fingerprint(decoded) != fingerprints[which]:
            continue
        out.append(Case(f"mutated_{seed}_{len(out)}", program, base.memory, base.args))
    return out


def watchdog_case(iterations=1 << 26):
    """A long loop that marshals nothing and loads nothing: only the watchdog stops it (at
    least ``iterations`` cycles without a token, then one control token)."""
    prog = Program(layers=[Layer(Source.imm(0), Source.imm(iterations))],
                   actions=[Action(0, Event.END, ActionKind.CONTROL, callback=1)])
    return Case("watchdog", prog.encode(), bytes(64), [])


# ------------------------------------------------------------------------------------------------
# ISA version 1 (docs/isa.md §7)
# ------------------------------------------------------------------------------------------------

def pack_case(name="pack", *, n=5, seed=0):
    """Operand packing by hand: 4-byte, 2-byte and 1-byte elements, JOIN across actions (an
    alignment gap, a token overflow), a JOIN on the last operand action of a firing, a control
    action between joined operands, packing in BEGIN/END firings."""
    rng = random.Random(seed)
    mem, dbase, dbytes, sbase, sbytes = _data_image(rng)
    S, I, R, imm = Source.stream, Source.index, Source.arg, Source.imm
    op = lambda src, pack=0, join=False, event=Event.ITER, layer=0: Action(
        layer, event, ActionKind.OPERAND, source=src, pack=pack, join=join)
    prog = Program(n_args=3, version=1,
                   layers=[Layer(imm(0), imm(n), imm(1))],
                   regions=[Region(R(0), R(1))],
                   streams=[Stream(0, StreamKind.MEM, R(0), I(0), size=4, stride=4, signed=True),
                            Stream(0, StreamKind.ALU, I(0), imm(-3), op=AluOp.MUL),
                            Stream(0, StreamKind.MEM, R(0), I(0), size=1, stride=3)],
                   actions=[op(R(2), 2, True, Event.BEGIN), op(imm(-2), 3, True, Event.BEGIN),
                            Action(0, Event.BEGIN, ActionKind.CONTROL, callback=9),
                            op(S(0), 1, True), op(S(1), 1),           # two 4-byte: one token
                            op(I(0), 2, True), op(S(2), 3, True),     # 2 + 1 bytes ...
                            op(S(0), 1, True),                        # ... gap to 4, + 4
                            op(S(1), 2, True), op(S(2), 3, True),     # overflow: new token
                            Action(0, Event.ITER, ActionKind.CONTROL, callback=1),
                            op(S(0), 0, True),                        # 8 bytes after a partial
                            op(S(2), 1, True),                        # JOIN on the last: flushed
                            op(R(2), 3, False, Event.END), op(imm(7), 1, True, Event.END)])
    return Case(name, prog.encode(), mem, [dbase, dbytes, rng.getrandbits(64)])


def random_v1_case(seed, config, *, block_prob=0.0, lockstep_prob=0.0, data_counts=0.35):
    """A random version-1 program: ``random_case`` with some layers BROADCAST (if ``config`` has
    ``"broadcast"``), random ``pack``/``JOIN`` on its operand
    actions (if ``config`` has ``"pack"``) and, with probability ``block_prob`` per MEM stream
    that only operand actions read, the stream turned into a BLOCK row of a random count
    (``"block"``; counts up to ``config.max_block + 1``, so some fault ``BLOCK_LENGTH``; rows
    may run past their region; with probability ``data_counts`` a count reads an argument
    register or an earlier scalar stream instead of an immediate or an index; 0 gives the
    programs of the seeds found before this option). With probability ``lockstep_prob`` (and ``"lockstep"``) the
    last layer becomes LOCKSTEP with 1..``config.lanes`` lanes and every outer layer BROADCAST,
    so the loads of its streams become per-lane vector loads and gathers with tail masks."""
    from sw.runtime.isa import SrcKind
    rng = random.Random(seed * 7919 + 1)
    extra = random.Random(seed * 104729 + 3)
    base = random_case(seed, layers=min(3, config.layers), streams=config.streams,
                       actions=config.actions, regions=min(2, config.regions), args=config.args)
    prog = Program.decode(base.program, Limits.unlimited())
    prog.version = 1
    if "broadcast" in config.features:
        from sw.runtime.isa import LayerMode
        for layer in prog.layers:
            if rng.random() < 0.3:
                layer.mode = LayerMode.BROADCAST
    lockstep = None
    if "lockstep" in config.features and rng.random() < lockstep_prob:
        from sw.runtime.isa import LayerMode
        lockstep = len(prog.layers) - 1
        for layer in prog.layers[:-1]:
            layer.mode = LayerMode.BROADCAST
        prog.layers[-1].mode = LayerMode.LOCKSTEP
        prog.layers[-1].lanes = rng.randint(1, config.lanes)
        for a in prog.actions:                 # vector iterations also push COUNT and FIRST
            if a.kind == ActionKind.OPERAND and a.layer == lockstep \
                    and a.event == Event.ITER and rng.random() < 0.3:
                a.source = rng.choice([Source.count(lockstep), Source.first(lockstep)])
    if "pack" in config.features:
        for a in prog.actions:
            if a.kind == ActionKind.OPERAND:
                a.pack = rng.choice([0, 0, 1, 2, 3])
                a.join = rng.random() < 0.4
    if "block" in config.features and block_prob:
        readers = set()
        for layer in prog.layers:
            readers |= {s.value for s in (layer.lb, layer.ub) if s.kind == SrcKind.STREAM}
        for s in prog.streams:
            readers |= {x.value for x in (s.a, s.b) if x.kind == SrcKind.STREAM}
        for sid, s in enumerate(prog.streams):
            if s.kind == StreamKind.MEM and sid not in readers and s.layer != lockstep \
                    and rng.random() < block_prob:
                s.block = True
                choices = [Source.imm(rng.randrange(0, 12)), Source.imm(config.max_block),
                           Source.imm(config.max_block + 1), Source.imm(-1),
                           Source.index(rng.randrange(s.layer + 1))]
                s.count = rng.choice(choices)
                s.stride = 0
                # A count from an argument register or a visible scalar stream (the compiled
                # bags' shapes: a data-dependent count, the row after a lazy load), drawn
                # from a second generator so the programs of older seeds stay the same.
                if extra.random() < data_counts:
                    visible = [t for t, o in enumerate(prog.streams)
                               if t != sid and not o.block and o.layer != lockstep
                               and (o.layer < s.layer or (o.layer == s.layer and t < sid))]
                    if visible and extra.random() < 0.5:
                        t = extra.choice(visible)
                        s.count = Source.stream(t)
                        readers.add(t)
                    elif prog.n_args > 4:
                        s.count = Source.arg(extra.randrange(4, prog.n_args))
    return Case(f"random_v1_{seed}", prog.encode(), base.memory, base.args)


def v1_decode_cases(config):
    """Version-1 programs with one error each (or none), decoded by the RTL and the golden loader:
    features the unit lacks (``RESOURCES``), v1 fields in a v0 program, v1 visibility rules."""
    S, I, R, imm, C, F = (Source.stream, Source.index, Source.arg, Source.imm, Source.count,
                          Source.first)
    from sw.runtime.isa import LayerMode

    def prog(**kw):
        p = Program(n_args=2, version=1,
                    layers=[Layer(imm(0), imm(3)), Layer(imm(0), imm(5))],
                    regions=[Region(R(0), R(1))],
                    streams=[Stream(1, StreamKind.MEM, R(0), I(1), size=4, stride=4)],
                    actions=[Action(1, Event.ITER, ActionKind.OPERAND, source=S(0))])
        for k, v in kw.items():
            setattr(p, k, v)
        return p

    mem = bytes(range(256)) * 2
    args = [0, 256]
    out = []

    def add(name, p, patch=None):
        words = _words(_encode_unchecked(p))
        if patch:
            patch(words)
        out.append(Case(f"v1_{name}", _pack(words), mem, args))

    add("plain", prog())
    add("pack3_join", prog(actions=[Action(1, Event.ITER, ActionKind.OPERAND, source=S(0), pack=3,
                                           join=True)]))
    add("lockstep", prog(layers=[Layer(imm(0), imm(3)),
                                 Layer(imm(0), imm(5), mode=LayerMode.LOCKSTEP, lanes=2)]))
    add("lockstep_too_many_lanes",
        prog(layers=[Layer(imm(0), imm(3)),
                     Layer(imm(0), imm(5), mode=LayerMode.LOCKSTEP, lanes=min(256, config.lanes + 1))]))
    add("broadcast", prog(layers=[Layer(imm(0), imm(3), mode=LayerMode.BROADCAST),
                                  Layer(imm(0), imm(5))]))
    add("block", prog(streams=[Stream(1, StreamKind.MEM, R(0), I(1), size=4, block=True,
                                      count=imm(3))]))
    add("count_first", prog(actions=[Action(1, Event.ITER, ActionKind.OPERAND, source=C(1)),
                                     Action(1, Event.END, ActionKind.OPERAND, source=F(0))]))
    add("count_not_visible", prog(actions=[Action(1, Event.BEGIN, ActionKind.OPERAND, source=C(1))]))
    add("mode_3", prog(), lambda w: w.__setitem__(4, w[4] | 3 << 9))
    add("lanes_single", prog(), lambda w: w.__setitem__(4, w[4] | 1 << 16))
    add("layer_reserved_v1", prog(), lambda w: w.__setitem__(4, w[4] | 1 << 12))
    add("operand_reserved_v1", prog(), lambda w: w.__setitem__(16, w[16] | 1 << 15))
    add("control_pack_bits", prog(actions=[Action(1, Event.ITER, ActionKind.CONTROL, callback=3)]),
        lambda w: w.__setitem__(16, w[16] | 1 << 12))
    add("source_kind_6", prog(), lambda w: w.__setitem__(17, 6 << 28))
    add("block_count_kind_7", prog(streams=[Stream(1, StreamKind.MEM, R(0), I(1), size=4,
                                                   block=True, count=imm(3))]),
        lambda w: w.__setitem__(15, 7 << 28))
    add("block_as_bound", prog(layers=[Layer(imm(0), imm(3)), Layer(imm(0), S(0))],
                               streams=[Stream(0, StreamKind.MEM, R(0), I(0), size=4, block=True,
                                               count=imm(2))]))
    add("lockstep_not_last", prog(layers=[Layer(imm(0), imm(3), mode=LayerMode.LOCKSTEP, lanes=2),
                                          Layer(imm(0), imm(5))]))
    add("lockstep_reads_single",
        prog(layers=[Layer(imm(0), imm(3)), Layer(imm(0), imm(5), mode=LayerMode.LOCKSTEP, lanes=2)],
             streams=[Stream(1, StreamKind.MEM, R(0), I(0), size=4, stride=4)]))
    # v0 programs with v1 fields.
    v0 = prog(version=0)
    add("v0_count_source", v0, lambda w: w.__setitem__(17, 4 << 28))
    add("v0_pack", v0, lambda w: w.__setitem__(16, w[16] | 1 << 12))
    add("v0_block_bit", v0, lambda w: w.__setitem__(12, w[12] | 1 << 23))
    add("v0_mode", v0, lambda w: w.__setitem__(4, w[4] | 1 << 9))
    return out


def _encode_unchecked(prog):
    """``prog.encode()`` without ``validate`` (to build programs the decoder must reject)."""
    saved = Program.validate
    Program.validate = lambda self, limits=None: None
    try:
        return prog.encode()
    finally:
        Program.validate = saved


def bag_frame():
    """The frame of an embedding-bag program (what ``-O3`` emits): layers, regions and the first
    four streams, for programs that differ only in their lookup streams and actions.

    Layer 0 runs over the bags (``arg 0``), layer 1 over ``offsets[b] .. offsets[b+1]``
    (``RANGE_ORDER`` checked). Regions: 0 the offsets (``args 1, 2``: base, bytes), 1 the
    indices (``args 3, 4``), 2 the table (``args 5, 6``). Streams: 0 ``b + 1``, 1
    ``offsets[b]``, 2 ``offsets[b + 1]``, 3 ``indices[j]`` (8-byte elements). Returns
    ``(layers, regions, streams)``, lists of ``sw.runtime.isa`` descriptors.
    """
    S, I, R, imm = Source.stream, Source.index, Source.arg, Source.imm
    layers = [Layer(imm(0), R(0)), Layer(S(1), S(2), check_order=True)]
    regions = [Region(R(1), R(2)), Region(R(3), R(4)), Region(R(5), R(6))]
    streams = [Stream(0, StreamKind.ALU, I(0), imm(1)),
               Stream(0, StreamKind.MEM, R(1), I(0), size=8, stride=8, region=0),
               Stream(0, StreamKind.MEM, R(1), S(0), size=8, stride=8, region=0),
               Stream(1, StreamKind.MEM, R(3), I(1), size=8, stride=8, region=1)]
    return layers, regions, streams


def block_case(name, *, rows=6, dim=5, lengths=(2, 0, 3), col0=0, ncols=None, size=4, pack=1,
               join=False, signed=False, seed=0, indices=None, region_rows=None, base_off=0):
    """An embedding bag whose lookups push BLOCK rows (ISA v1, docs/isa.md §7.4; what -O3
    emits): per lookup the ``ncols`` elements of ``size`` bytes of ``table[idx, col0:]`` as
    one operand packed ``pack``, then the bag number (joined to the row if ``join``), then a
    control token. ``col0`` > 0 starts rows inside a 64-bit word; a row past the table's region
    (``region_rows`` < ``rows``, or ``col0 + ncols > dim``) faults ``ADDR_RANGE``; ``ncols`` above
    the unit's ``max_block`` faults ``BLOCK_LENGTH``; ``base_off`` bytes added to the table's
    base misalign rows (``MISALIGNED``)."""
    rng = np.random.default_rng(seed)
    ncols = dim - col0 if ncols is None else ncols
    lengths = np.asarray(lengths, dtype=np.int64)
    if indices is None:
        indices = rng.integers(0, rows, int(lengths.sum()))
    indices = np.asarray(indices, dtype=np.int64)
    offsets = np.concatenate([[0], np.cumsum(lengths)]).astype(np.int64)
    table = rng.integers(-2**62, 2**62, rows * dim).astype(np.int64).view(np.uint64)
    table_bytes = table.tobytes()[:rows * dim * size] if size < 8 else table.tobytes()
    table_bytes = np.frombuffer(table.tobytes(), dtype=np.uint8)[:rows * dim * size].tobytes()
    pad = lambda b: b + bytes(-len(b) % 8)
    t_off = 0
    o_off = len(pad(table_bytes))
    i_off = o_off + 8 * len(offsets)
    memory = pad(table_bytes) + offsets.tobytes() + indices.tobytes() + bytes(8)
    region_rows = rows if region_rows is None else region_rows
    S, I, R, imm = Source.stream, Source.index, Source.arg, Source.imm
    layers, regions, bag_streams = bag_frame()
    prog = Program(n_args=8, version=1, layers=layers, regions=regions,
                   streams=[*bag_streams,
                            Stream(1, StreamKind.ALU, S(3), R(7), op=AluOp.MUL),
                            Stream(1, StreamKind.ALU, S(4), imm(col0)),
                            Stream(1, StreamKind.MEM, R(5), S(5), size=size, signed=signed,
                                   region=2, block=True, count=imm(ncols))],
                   actions=[Action(1, Event.ITER, ActionKind.OPERAND, source=S(6), pack=pack,
                                   join=join),
                            Action(1, Event.ITER, ActionKind.OPERAND, source=I(0), pack=pack),
                            Action(1, Event.ITER, ActionKind.CONTROL, callback=0),
                            Action(0, Event.END, ActionKind.CONTROL, callback=1)])
    args = [len(lengths), o_off, 8 * len(offsets), i_off, 8 * len(indices) + 8, t_off + base_off,
            region_rows * dim * size, dim]
    return Case(name, prog.encode(), memory, args)


def block_after_immediate_case(name="block_after_immediate", *, rows=4, ncols=2, size=2):
    """An immediate operand, then a BLOCK row of ``ncols`` elements of ``size`` bytes, per
    iteration over ``rows`` rows (issue 8 item 1: the RTL fused the immediate action into the
    row stream's evaluation and then lost the row's count, delivering ``[38]`` for
    ``[38, row...]``)."""
    S, I, R, imm = Source.stream, Source.index, Source.arg, Source.imm
    memory = bytes(range(256)) * 2
    prog = Program(n_args=3, version=1,
                   layers=[Layer(imm(0), R(0))],
                   regions=[Region(R(1), R(2))],
                   streams=[Stream(0, StreamKind.ALU, I(0), imm(ncols), op=AluOp.MUL),
                            Stream(0, StreamKind.MEM, R(1), S(0), size=size, region=0,
                                   block=True, count=imm(ncols))],
                   actions=[Action(0, Event.ITER, ActionKind.OPERAND, source=imm(38)),
                            Action(0, Event.ITER, ActionKind.OPERAND, source=S(1)),
                            Action(0, Event.ITER, ActionKind.CONTROL, callback=2)])
    return Case(name, prog.encode(), memory, [rows, 0, rows * ncols * size])


def block_row_after_load_case(name="block_row_after_load", *, indices=(4, 2, 0, 2, 5), dim=3):
    """The access program of an ``-O3`` ``nn.EmbeddingBag(mode="mean", padding_idx=...)``
    lookup layer, minimised: per lookup ``i`` a lazy load of ``indices[i]`` pushed as an operand,
    a control token, the BLOCK row ``table[indices[i], 0:dim]`` of 4-byte elements (count: an
    argument register, pack 1), the index again JOINed to the lookup position, a control token.
    The first action (the lazy load's operand) is fused into the row stream's evaluation uop;
    before commit 255afd0 the RTL then kept no row count and every row came out empty (the
    frontend's ``test_half_bags_on_rtl`` lost 320 of 445 data tokens, f32 as well as f16)."""
    S, I, R, imm = Source.stream, Source.index, Source.arg, Source.imm
    rows = max(indices) + 1
    table = b"".join(((r << 8) | c).to_bytes(4, "little") for r in range(rows) for c in range(dim))
    table += bytes(-len(table) % 8)
    idx = b"".join(int(v).to_bytes(8, "little") for v in indices)
    memory = idx + table
    prog = Program(n_args=5, version=1,
                   layers=[Layer(imm(0), R(0))],
                   regions=[Region(imm(0), imm(len(idx))), Region(R(1), R(2))],
                   streams=[Stream(0, StreamKind.MEM, imm(0), I(0), size=8, stride=8, region=0),
                            Stream(0, StreamKind.ALU, S(0), R(3), op=AluOp.MUL),
                            Stream(0, StreamKind.MEM, R(1), S(1), size=4, region=1,
                                   block=True, count=R(3))],
                   actions=[Action(0, Event.ITER, ActionKind.OPERAND, source=S(0)),
                            Action(0, Event.ITER, ActionKind.CONTROL, callback=1),
                            Action(0, Event.ITER, ActionKind.OPERAND, source=S(2), pack=1),
                            Action(0, Event.ITER, ActionKind.OPERAND, source=S(0), join=True),
                            Action(0, Event.ITER, ActionKind.OPERAND, source=I(0)),
                            Action(0, Event.ITER, ActionKind.CONTROL, callback=2)])
    return Case(name, prog.encode(), memory + bytes(64),
                [len(indices), len(idx), len(table), dim, 0])


def block_cases():
    """Hand-written BLOCK-row programs: aligned and unaligned row starts, every packing, a row
    narrower/wider than its packed width, JOIN of a row with a scalar, empty rows, and the
    faults (a row past its region, BLOCK_LENGTH)."""
    return [
        block_case("block_aligned", rows=6, dim=4, col0=0),
        block_case("block_unaligned", rows=6, dim=7, col0=1, lengths=(3, 1, 0, 2)),
        block_case("block_f64", rows=5, dim=3, size=8, pack=0),
        block_case("block_bytes_pack3", rows=7, dim=13, size=1, pack=3, col0=3, join=True),
        block_case("block_u16_pack2", rows=4, dim=9, size=2, pack=2, col0=1, join=True),
        block_case("block_i16_to_u32", rows=4, dim=5, size=2, pack=1, signed=True),
        block_case("block_u32_to_u8", rows=4, dim=5, size=4, pack=3, join=True),
        block_case("block_join_scalar", rows=5, dim=3, size=4, pack=1, join=True),
        block_case("block_empty_rows", rows=5, dim=3, ncols=0, join=True),
        block_case("block_past_region", rows=6, dim=4, region_rows=3, indices=[0, 1, 4, 2, 2]),
        block_case("block_past_row", rows=6, dim=4, col0=2, ncols=3),
        block_case("block_too_long", rows=3, dim=2, ncols=100000),
        block_case("block_negative", rows=3, dim=2, ncols=-1),
        block_case("block_misaligned", rows=3, dim=4, base_off=2),
        block_after_immediate_case(),
        block_row_after_load_case(),
        block_row_after_load_case("block_row_after_load_wide", dim=9),
    ]


def lockstep_case(name, *, lanes=4, rows=9, dim=6, lengths=(3, 0, 2), gather=False, seed=0,
                  size=4, pack=1, indices=None, table_bytes=None):
    """What -O1 emits for an embedding bag (ISA v1, docs/isa.md §7.2-7.4): bags (SINGLE),
    lookups (BROADCAST), and the row's columns as a LOCKSTEP layer of ``lanes`` lanes with a
    tail mask (``dim`` not a multiple of ``lanes``): per vector iteration COUNT and FIRST
    (joined into one token) and the contiguous vector load of the row's elements, packed
    ``pack``. With ``gather`` the LOCKSTEP layer runs over the lookups of a bag instead and
    gathers column 0 of each looked-up row (a vector stream of indices feeding a vector load).
    ``table_bytes`` shrinks the table's region (lanes past it fault ``ADDR_RANGE``)."""
    from sw.runtime.isa import LayerMode
    rng = np.random.default_rng(seed)
    lengths = np.asarray(lengths, dtype=np.int64)
    if indices is None:
        indices = rng.integers(0, rows, int(lengths.sum()))
    indices = np.asarray(indices, dtype=np.int64)
    offsets = np.concatenate([[0], np.cumsum(lengths)]).astype(np.int64)
    table = rng.integers(0, 2**63, rows * dim, dtype=np.int64).view(np.uint64)
    tb = np.frombuffer(table.tobytes(), dtype=np.uint8)[:rows * dim * size].tobytes()
    tb += bytes(-len(tb) % 8)
    o_off = len(tb)
    i_off = o_off + 8 * len(offsets)
    memory = tb + offsets.tobytes() + indices.tobytes() + bytes(8)
    S, I, R, imm, C, F = (Source.stream, Source.index, Source.arg, Source.imm, Source.count,
                          Source.first)
    tbytes = rows * dim * size if table_bytes is None else table_bytes
    args = [len(lengths), o_off, 8 * len(offsets), i_off, 8 * len(indices) + 8, 0, tbytes, dim]
    streams = [Stream(0, StreamKind.ALU, I(0), imm(1)),
               Stream(0, StreamKind.MEM, R(1), I(0), size=8, stride=8, region=0),
               Stream(0, StreamKind.MEM, R(1), S(0), size=8, stride=8, region=0)]
    if not gather:
        layers = [Layer(imm(0), R(0)),
                  Layer(S(1), S(2), check_order=True, mode=LayerMode.BROADCAST),
                  Layer(imm(0), R(7), mode=LayerMode.LOCKSTEP, lanes=lanes)]
        streams += [Stream(1, StreamKind.MEM, R(3), I(1), size=8, stride=8, region=1),
                    Stream(1, StreamKind.ALU, S(3), R(7), op=AluOp.MUL),
                    Stream(2, StreamKind.ALU, S(4), I(2)),
                    Stream(2, StreamKind.MEM, R(5), S(5), size=size, stride=size, region=2)]
        actions = [Action(2, Event.ITER, ActionKind.OPERAND, source=C(2), pack=1, join=True),
                   Action(2, Event.ITER, ActionKind.OPERAND, source=F(2), pack=1),
                   Action(2, Event.ITER, ActionKind.OPERAND, source=S(6), pack=pack),
                   Action(2, Event.ITER, ActionKind.CONTROL, callback=2),
                   Action(2, Event.END, ActionKind.OPERAND, source=I(1)),
                   Action(1, Event.END, ActionKind.CONTROL, callback=1)]
    else:
        layers = [Layer(imm(0), R(0), mode=LayerMode.BROADCAST),
                  Layer(S(1), S(2), check_order=True, mode=LayerMode.LOCKSTEP, lanes=lanes)]
        streams += [Stream(1, StreamKind.MEM, R(3), I(1), size=8, stride=8, region=1),
                    Stream(1, StreamKind.ALU, S(3), R(7), op=AluOp.MUL),
                    Stream(1, StreamKind.MEM, R(5), S(4), size=size, stride=size, region=2)]
        actions = [Action(1, Event.ITER, ActionKind.OPERAND, source=C(1)),
                   Action(1, Event.ITER, ActionKind.OPERAND, source=S(5), pack=pack),
                   Action(1, Event.ITER, ActionKind.OPERAND, source=I(1), pack=2),
                   Action(1, Event.ITER, ActionKind.CONTROL, callback=3),
                   Action(0, Event.ITER, ActionKind.OPERAND, source=I(0))]
    prog = Program(n_args=8, version=1, layers=layers,
                   regions=[Region(R(1), R(2)), Region(R(3), R(4)), Region(R(5), R(6))],
                   streams=streams, actions=actions)
    return Case(name, prog.encode(), memory, args)


def lockstep_cases(lanes):
    """Hand-written LOCKSTEP programs for a unit of ``lanes`` lanes: masked tails, full vectors,
    one lane, gathers, and lane faults (a masked lane past the region does not fault, an
    active one does)."""
    return [
        lockstep_case("lockstep_tail", lanes=lanes, dim=lanes + max(1, lanes // 2)),
        lockstep_case("lockstep_full", lanes=lanes, dim=2 * lanes, pack=0, size=8),
        lockstep_case("lockstep_one_lane", lanes=1, dim=3),
        lockstep_case("lockstep_short_row", lanes=lanes, dim=max(1, lanes - 1), pack=2, size=2),
        lockstep_case("lockstep_gather", lanes=lanes, gather=True, lengths=(lanes + 1, 0, 2, 1)),
        lockstep_case("lockstep_gather_u8", lanes=lanes, gather=True, size=1, pack=3,
                      lengths=(2 * lanes, 3)),
        # The last row ends exactly at the region's end: the tail's masked lanes lie beyond it.
        lockstep_case("lockstep_masked_past_region", lanes=lanes, rows=3, dim=lanes + 1,
                      indices=[2, 2, 2, 2, 2], lengths=(3, 2)),
        lockstep_case("lockstep_lane_fault", lanes=lanes, rows=4, dim=lanes + 1,
                      table_bytes=4 * (3 * (lanes + 1) + 1), indices=[0, 3, 1], lengths=(3,)),
        lockstep_case("lockstep_gather_fault", lanes=lanes, rows=4, gather=True,
                      indices=[0, 1, 7, 2], lengths=(4,)),
    ]


def address_overflow_cases(config):
    """Loads whose address computation leaves the signed 64-bit range (``ADDR_OVERFLOW``,
    docs/isa.md §1 "Address overflow", issue 8 item 2), and neighbours that must not fault:
    embedding-bag indices whose byte offset wraps (2**59, -2**59, 2**61 + 5 and 2**58 into an
    8-wide f32 table), an address ``a + b * stride`` past 2**63 or below -2**63, each ALU op that
    can wrap (ADD, SUB, MUL, SHL) feeding an address directly and through FWD and SUB, a wrapped
    value that is only pushed or hashed by a SHR (no fault), a BLOCK row whose start wraps (and an empty one, which
    is not checked), and LOCKSTEP layers (lane by lane and in vector mode) where a later lane
    wraps and lane 0 faults ``ADDR_RANGE``: the overflow is checked first."""
    from sw.runtime.isa import LayerMode
    S, I, R, imm = Source.stream, Source.index, Source.arg, Source.imm
    out = []
    for name, bad in (("2p59", 1 << 59), ("m2p59", -(1 << 59)), ("2p61p5", (1 << 61) + 5),
                      ("2p58", 1 << 58), ("2p57", 1 << 57)):
        out.append(embedding_bag_case(f"overflow_eb_{name}", rows=6, dim=8, lengths=[2, 1],
                                      indices=[1, bad, 0]))
    mem = bytes(range(256))

    def one(name, streams, args, actions=None, n=2, version=0, layers=None):
        acts = actions or [Action(0, Event.ITER, ActionKind.OPERAND, source=S(len(streams) - 1))]
        prog = Program(n_args=4, version=version,
                       layers=layers or [Layer(imm(0), imm(n))],
                       regions=[Region(R(0), R(1))], streams=streams, actions=acts)
        out.append(Case(f"overflow_{name}", prog.encode(), mem, list(args) + [0] * (4 - len(args))))

    big = (1 << 63) - 8
    # a + b*stride: 2**63 - 8 + i*8 (i = 1 wraps); below -2**63.
    one("addr_up", [Stream(0, StreamKind.MEM, R(2), I(0), size=8, stride=8)], [0, 256, big],
        layers=[Layer(imm(1), imm(3))])
    one("addr_down", [Stream(0, StreamKind.MEM, R(2), I(0), size=8, stride=-8)],
        [0, 256, -(1 << 63) + 8], layers=[Layer(imm(2), imm(4))])
    one("addr_stride", [Stream(0, StreamKind.MEM, imm(0), R(2), size=8, stride=-(1 << 31))],
        [0, 256, 1 << 33])
    for op, x, y in ((AluOp.ADD, big, 16), (AluOp.SUB, -big, 16), (AluOp.MUL, 1 << 62, 4),
                     (AluOp.SHL, 3, 62)):
        alu = Stream(0, StreamKind.ALU, R(2), R(3), op=op)
        mem_s = Stream(0, StreamKind.MEM, imm(0), S(0), size=1, stride=1)
        one(f"alu_{op.name.lower()}", [alu, mem_s], [0, 256, x, y])
        one(f"alu_{op.name.lower()}_pushed", [alu], [0, 256, x, y])      # no load: no fault
        # Through FWD and a SUB that brings the value back into range (x - x): still wrapped.
        one(f"alu_{op.name.lower()}_chain", [alu, Stream(0, StreamKind.FWD, S(0)),
                                             Stream(0, StreamKind.ALU, S(1), S(1), op=AluOp.SUB),
                                             Stream(0, StreamKind.MEM, imm(0), S(2), size=1,
                                                    stride=1)],
            [0, 256, x, y])
        # A hash (the ALU's modular arithmetic on purpose): SHR gives a fresh value, no fault.
        one(f"alu_{op.name.lower()}_hash", [alu, Stream(0, StreamKind.ALU, S(0), imm(60),
                                                        op=AluOp.SHR),
                                            Stream(0, StreamKind.MEM, imm(0), S(1), size=1,
                                                   stride=1)],
            [0, 256, x, y])
    # Exactly representable neighbours: no overflow.
    one("alu_mul_fits", [Stream(0, StreamKind.ALU, R(2), R(3), op=AluOp.MUL),
                         Stream(0, StreamKind.MEM, imm(0), S(0), size=1, stride=1)],
        [0, 256, -(1 << 62), 2])
    # The value wraps in iteration 2 only (i * 2**62), after two loads.
    one("alu_mul_later", [Stream(0, StreamKind.ALU, I(0), R(2), op=AluOp.MUL),
                          Stream(0, StreamKind.ALU, S(0), S(0), op=AluOp.SUB),
                          Stream(0, StreamKind.MEM, imm(0), S(1), size=1, stride=1)],
        [0, 256, 1 << 62], n=3)
    if "block" in config.features:
        for name, count in (("block", 2), ("block_empty", 0)):
            one(name, [Stream(0, StreamKind.MEM, R(2), imm(2), size=4, block=True,
                              count=imm(count))],
                [0, 256, (1 << 63) - 8], version=1)
    if "lockstep" in config.features and config.lanes >= 4:
        lanes = min(8, config.lanes)
        # Lane by lane (a MUL of the index): lane 0 reads below the region (ADDR_RANGE),
        # lane 2 wraps (ADDR_OVERFLOW, reported: the overflow is checked first).
        one("lanes", [Stream(0, StreamKind.ALU, I(0), R(2), op=AluOp.MUL),
                      Stream(0, StreamKind.MEM, R(3), S(0), size=1, stride=1)],
            [16, 64, 1 << 62, 0], version=1,
            layers=[Layer(imm(0), imm(lanes), mode=LayerMode.LOCKSTEP, lanes=lanes)])
        # Vector mode: a contiguous load from 2**63 - 12, 4-byte lanes: lane 3 wraps.
        one("vector_load", [Stream(0, StreamKind.MEM, R(2), I(0), size=4, stride=4)],
            [0, 256, (1 << 63) - 12], version=1,
            layers=[Layer(imm(0), imm(lanes), mode=LayerMode.LOCKSTEP, lanes=lanes)])
        # Vector mode: an index-affine ADD wraps in lane 3, a SUB brings it back into range.
        one("vector_affine", [Stream(0, StreamKind.ALU, I(0), R(2)),
                              Stream(0, StreamKind.ALU, S(0), R(2), op=AluOp.SUB),
                              Stream(0, StreamKind.MEM, imm(0), S(1), size=1, stride=1)],
            [0, 256, (1 << 63) - 3], version=1,
            layers=[Layer(imm(0), imm(lanes), mode=LayerMode.LOCKSTEP, lanes=lanes)])
        # ... and the same with 3 lanes: no lane wraps, no fault.
        one("vector_affine_fits", [Stream(0, StreamKind.ALU, I(0), R(2)),
                                   Stream(0, StreamKind.ALU, S(0), R(2), op=AluOp.SUB),
                                   Stream(0, StreamKind.MEM, imm(0), S(1), size=1, stride=1)],
            [0, 256, (1 << 63) - 3], version=1,
            layers=[Layer(imm(0), imm(3), mode=LayerMode.LOCKSTEP, lanes=lanes)])
    return out


#: ``csr_skip_case`` variants: where ``i + 1`` (stream 0) has no STREAM uop (docs/rtl.md §9.5 C).
CSR_SKIP_VARIANTS = {
    "popped": {0},          # only rowptr[i + 1] reads it, popped by the length's uop
    "action": set(),        # an action pushes it too
    "alu_reader": set(),    # the length is rowptr[i + 1] - (i + 1): an ALU stream reads it
    "last": set(),          # rowptr[i + 1] is the layer's last stream: its own uop
    "unread": {0},          # one layer, nothing reads it
    "unread_lockstep": set(),   # the same in a LOCKSTEP layer (left alone)
}


def csr_skip_case(name, variant, *, lengths=(2, 0, 3, 1), rowptr_cut=None, seed=0):
    """A CSR traversal whose outer layer computes ``i + 1`` (stream 0, ``ADD(INDEX 0, IMM 1)``)
    for ``rowptr[i + 1]`` (stream 2), as SpMV does (``CSR_SKIP_VARIANTS``: how it is read).

    Two layers (``"unread*"``: one): ``i < rows``; ``j in [rowptr[i], rowptr[i + 1])``. Streams
    ``i + 1``, ``rowptr[i]``, ``rowptr[i + 1]``, the row's length ``rowptr[i + 1] - rowptr[i]``
    (``"alu_reader"``: ``rowptr[i + 1] - (i + 1)``; ``"last"``: none), ``col[j]``. Actions: the
    length (``"last"``: ``i``) at the inner layer's BEGIN (``"action"``: then ``i + 1``),
    ``col[j]`` each nonzero, a callback at its END. ``"unread"``: one layer pushing
    ``rowptr[i]``; ``"unread_lockstep"``: that layer is LOCKSTEP (4 lanes, ISA v1).
    ``rowptr_cut``: ``rowptr``'s region holds only that many elements (the first past it
    faults ``ADDR_RANGE``; its run-ahead engine stops before it)."""
    from sw.runtime.isa import LayerMode
    if variant not in CSR_SKIP_VARIANTS:
        raise ValueError(f"variant must be one of {sorted(CSR_SKIP_VARIANTS)}, not {variant!r}")
    rng = np.random.default_rng(seed)
    lengths = np.asarray(lengths, dtype=np.int64)
    rowptr = np.concatenate([[0], np.cumsum(lengths)]).astype(np.int64)
    col = rng.integers(0, 1 << 40, max(1, int(rowptr[-1]))).astype(np.int64)
    memory = rowptr.tobytes() + col.tobytes()
    rows = len(lengths)
    kept = len(rowptr) if rowptr_cut is None else rowptr_cut
    args = [rows, 0, 8 * kept, 8 * len(rowptr), 8 * len(col)]
    S, I, R, imm = Source.stream, Source.index, Source.arg, Source.imm
    regions = [Region(R(1), R(2)), Region(R(3), R(4))]
    streams = [Stream(0, StreamKind.ALU, I(0), imm(1)),
               Stream(0, StreamKind.MEM, R(1), I(0), size=8, stride=8, region=0)]
    if variant.startswith("unread"):
        lockstep = variant == "unread_lockstep"
        prog = Program(n_args=5, version=1 if lockstep else 0,
                       layers=[Layer(imm(0), R(0), mode=LayerMode.LOCKSTEP, lanes=4)
                               if lockstep else Layer(imm(0), R(0))],
                       regions=regions, streams=streams,
                       actions=[Action(0, Event.ITER, ActionKind.OPERAND, source=S(1))])
        return Case(name, prog.encode(), memory, args)
    streams.append(Stream(0, StreamKind.MEM, R(1), S(0), size=8, stride=8, region=0))
    if variant == "alu_reader":
        streams.append(Stream(0, StreamKind.ALU, S(2), S(0), op=AluOp.SUB))
    elif variant != "last":
        streams.append(Stream(0, StreamKind.ALU, S(2), S(1), op=AluOp.SUB))
    col_stream = len(streams)
    streams.append(Stream(1, StreamKind.MEM, R(3), I(1), size=8, stride=8, region=1))
    actions = [Action(1, Event.BEGIN, ActionKind.OPERAND,
                      source=I(0) if variant == "last" else S(3))]
    if variant == "action":
        actions.append(Action(1, Event.BEGIN, ActionKind.OPERAND, source=S(0)))
    actions += [Action(1, Event.ITER, ActionKind.OPERAND, source=S(col_stream)),
                Action(1, Event.END, ActionKind.CONTROL, callback=1)]
    prog = Program(n_args=5, layers=[Layer(imm(0), R(0)), Layer(S(1), S(2), check_order=True)],
                   regions=regions, streams=streams, actions=actions)
    return Case(name, prog.encode(), memory, args)
