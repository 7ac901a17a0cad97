"""The configuration writer (``hw/tmu/config_writer.py``) alone in the Amaranth simulator: checked
descriptors in program order with random gaps (``descriptor.valid`` low; the writer is always
ready), against the definitions of ``docs/rtl.md`` §2.1 step 3 evaluated in Python on the
program as ``sw.runtime.isa.Program.decode`` reads it: layer and region registers (regions
resolved from the arguments), one configuration-memory write per stream and action at its id
(an operand action's copy of its stream's kind and mode included), and the classes the
microcode builder and the traversal use (blocking, invariant, affine and its offset, MEM,
global base, operand-read, action flags, packer flush)."""

import random
import struct

import pytest

from hw.tmu import TmuConfig
from hw.tmu.config_writer import ConfigWriter
from sw.runtime.isa import (ActionKind, AluOp, Event, Limits, LayerMode, Program, SrcKind,
                            StreamKind)
from sw.runtime.isa_fields import unpack
from tb.programs import (block_cases, embedding_bag_case, lockstep_cases, mul_constants_case,
                         random_case, random_v1_case)
from tb.seeds import fresh_seed
from tb.sim_helpers import run_sim


SMALL = TmuConfig.small()


def set_checker_facts(ctx, checked, prog):
    """Drive ``checked`` (what the program checker learned from the header and phase 1:
    ``hw/tmu/signatures.py``) from the decoded program ``prog``, as the checker would."""
    ctx.set(checked.counts, {"layers": len(prog.layers), "regions": len(prog.regions),
                             "streams": len(prog.streams), "actions": len(prog.actions),
                             "args": prog.n_args})
    ctx.set(checked.version1, prog.version == 1)
    for i, layer in enumerate(prog.layers):
        ctx.set(checked.layer_mode[i], int(layer.mode))
    for i, st in enumerate(prog.streams):
        ctx.set(checked.stream_layer[i], st.layer)
    ctx.set(checked.stream_block, _bits(i for i, st in enumerate(prog.streams) if st.block))


def _bits(indices):
    return sum(1 << i for i in set(indices))


def _signed(value, bits):
    return value - (1 << bits) if value >> (bits - 1) & 1 else value


def reference(prog: Program, args):
    """The writer's outputs for ``prog`` by the definitions of ``docs/rtl.md`` §2.1."""
    S, A = prog.streams, prog.actions

    def is_(src, kind):
        return src is not None and src.kind == kind

    def layer_of(sid):
        return S[sid].layer

    blocking = [s.value for layer in prog.layers for s in (layer.lb, layer.ub)
                if is_(s, SrcKind.STREAM)]
    blocking += [s.value for st in S
                 for s in (st.a, st.b) + ((st.count,) if st.block else ())
                 if is_(s, SrcKind.STREAM)]
    invariant = set()

    def src_invariant(src, layer):
        return (src.kind in (SrcKind.IMM, SrcKind.ARG)
                or (src.kind == SrcKind.INDEX and src.value < layer)
                or (src.kind == SrcKind.STREAM
                    and (layer_of(src.value) < layer
                         or (layer_of(src.value) == layer and src.value in invariant))))

    index_plus, affine = {}, {}
    for i, st in enumerate(S):            # sources of a stream's layer have lower ids
        own = (lambda s: is_(s, SrcKind.INDEX) and s.value == st.layer)
        if st.kind == StreamKind.FWD:
            if src_invariant(st.a, st.layer):
                invariant.add(i)
            if own(st.a):
                index_plus[i] = 0
        elif st.kind == StreamKind.ALU:
            if src_invariant(st.a, st.layer) and src_invariant(st.b, st.layer):
                invariant.add(i)
            if st.op == AluOp.ADD and own(st.a) and is_(st.b, SrcKind.IMM):
                index_plus[i] = st.b.value
            elif st.op == AluOp.ADD and own(st.b) and is_(st.a, SrcKind.IMM):
                index_plus[i] = st.a.value
        elif src_invariant(st.a, st.layer):
            if own(st.b):
                affine[i] = 0
            elif (is_(st.b, SrcKind.STREAM) and st.b.value in index_plus
                  and layer_of(st.b.value) == st.layer):
                affine[i] = index_plus[st.b.value]
    # Affine MEM streams whose b is an ``INDEX own + c`` stream of their layer (not BLOCK), and
    # the skip candidates: ALU/FWD streams, not invariant, read only as such a b (§9.5 C).
    affine_via = {i: st.b.value for i, st in enumerate(S)
                  if i in affine and is_(st.b, SrcKind.STREAM) and not st.block}
    # Streams a layer bound or an OPERAND action reads.
    read_outside = [s.value for layer in prog.layers for s in (layer.lb, layer.ub)
                    if is_(s, SrcKind.STREAM)]
    read_outside += [a.source.value for a in A
                     if a.kind == ActionKind.OPERAND and is_(a.source, SrcKind.STREAM)]
    read_other = read_outside + [s.value for i, st in enumerate(S)
                                 for s in ((st.a,) + (() if i in affine_via else (st.b,))
                                           + ((st.count,) if st.block else ()))
                                 if is_(s, SrcKind.STREAM)]
    skip_candidate = [i for i, st in enumerate(S) if st.kind in (StreamKind.ALU, StreamKind.FWD)
                      and i not in invariant and i not in read_other]
    # The same, read by nothing but the stream with the next id (a chain engine's operation
    # streams, §9.5 C).
    read_past_next = read_outside + [st.count.value for st in S
                                     if st.block and is_(st.count, SrcKind.STREAM)]
    read_past_next += [s.value for i, st in enumerate(S) for s in (st.a, st.b)
                       if is_(s, SrcKind.STREAM) and s.value != i - 1]
    chain_op_candidate = [i for i, st in enumerate(S)
                          if st.kind in (StreamKind.ALU, StreamKind.FWD)
                          and i not in invariant and i not in read_past_next]
    # docs/rtl.md §9.5 E: ALU/FWD streams whose a, b are the next layer's (lb, ub), or (ub, lb)
    enter_bounds, enter_swap = [], []
    for i, st in enumerate(S):
        k = st.layer + 1
        if (st.kind == StreamKind.MEM or k >= len(prog.layers)
                or any(is_(s, SrcKind.STREAM) and s.value == i for s in (st.a, st.b))):
            continue
        bounds = (prog.layers[k].lb, prog.layers[k].ub)
        if (st.a, st.b) == bounds:
            enter_bounds.append(i)
        elif (st.b, st.a) == bounds:
            enter_bounds.append(i)
            enter_swap.append(i)
    lockstep = [k for k, layer in enumerate(prog.layers) if layer.mode == LayerMode.LOCKSTEP]
    operand = [a.kind == ActionKind.OPERAND for a in A]
    last = [operand[i] and not any(operand[j] and (A[j].layer, A[j].event) == (a.layer, a.event)
                                   for j in range(i + 1, len(A)))
            for i, a in enumerate(A)]

    def resolve(src):
        return _signed(args[src.value] & (2**64 - 1), 64) if src.kind == SrcKind.ARG else src.value

    return dict(
        layers=[(layer.step.value, int(layer.check_order), int(layer.mode), layer.lanes - 1)
                for layer in prog.layers],
        regions=[(resolve(r.base), resolve(r.size)) for r in prog.regions],
        blocking=_bits(blocking),
        invariant=_bits(invariant),
        affine=_bits(affine),
        affine_offset={i: c for i, c in affine.items()},
        affine_via=affine_via,
        skip_candidate=_bits(skip_candidate),
        chain_op_candidate=_bits(chain_op_candidate),
        enter_bounds=_bits(enter_bounds),
        enter_swap=_bits(enter_swap),
        memory_stream=_bits(i for i, st in enumerate(S) if st.kind == StreamKind.MEM),
        global_base=_bits(i for i, st in enumerate(S) if st.a.kind in (SrcKind.IMM, SrcKind.ARG)),
        operand_read=_bits(a.source.value for a in A
                           if a.kind == ActionKind.OPERAND and is_(a.source, SrcKind.STREAM)),
        act_reads=_bits(i for i, a in enumerate(A)
                        if a.kind == ActionKind.OPERAND and is_(a.source, SrcKind.STREAM)),
        act_control=_bits(i for i, a in enumerate(A) if a.kind == ActionKind.CONTROL),
        act_vec=_bits(i for i, a in enumerate(A)
                      if operand[i] and a.event == Event.ITER and a.layer in lockstep
                      and ((is_(a.source, SrcKind.INDEX) and a.source.value == a.layer)
                           or (is_(a.source, SrcKind.STREAM)
                               and layer_of(a.source.value) == a.layer))),
        act_flush=_bits(i for i, a in enumerate(A) if not (operand[i] and a.join) or last[i]),
        lockstep=(1, lockstep[0]) if lockstep else (0, None),
    )


def _run(config, cases, *, valid_probability, seed):
    """Feed each program's descriptors; returns per program (writes, tables) as dicts."""
    dut = ConfigWriter(config)
    rng = random.Random(seed)
    out = []

    async def testbench(ctx):
        for case, prog in cases:
            words = list(struct.unpack(f"<{len(case.program) // 4}I", case.program))
            set_checker_facts(ctx, dut.checked, prog)
            for i in range(config.args):
                ctx.set(dut.args[i], (case.args[i] if i < len(case.args) else 0) & (2**64 - 1))
            ctx.set(dut.start, 1)
            await ctx.tick()
            ctx.set(dut.start, 0)
            counts = [len(prog.layers), len(prog.regions), len(prog.streams), len(prog.actions)]
            descriptors = [(sec, n) for sec, c in enumerate(counts) for n in range(c)]
            writes = {"stream": [], "action": []}
            base = 4
            for section, number in descriptors:
                while rng.random() >= valid_probability:
                    await ctx.tick()            # a gap: no descriptor this cycle
                ctx.set(dut.descriptor.valid, 1)
                ctx.set(dut.descriptor.payload, {"section": section, "number": number,
                                                 "words": words[base:base + 4]})
                assert ctx.get(dut.descriptor.ready)
                for name, port in (("stream", dut.stream_table), ("action", dut.action_table)):
                    if ctx.get(port.en):
                        writes[name].append((ctx.get(port.addr), ctx.get(port.data)))
                await ctx.tick()
                ctx.set(dut.descriptor.valid, 0)
                base += 4
            await ctx.tick()
            t = dut.tables
            got = {name: ctx.get(getattr(t, name)) for name in
                   ("blocking", "invariant", "affine", "memory_stream", "global_base",
                    "operand_read", "act_reads", "act_control", "act_vec", "act_flush")}
            got["layers"] = [(ctx.get(t.layers[i].step), ctx.get(t.layers[i].check_order),
                              int(ctx.get(t.layers[i].mode).value), ctx.get(t.layers[i].lanes_m1))
                             for i in range(len(prog.layers))]
            got["regions"] = [(ctx.get(t.regions[i].base), ctx.get(t.regions[i].size))
                              for i in range(len(prog.regions))]
            got["affine_offset"] = {i: ctx.get(t.affine_offset[i])
                                    for i in range(len(prog.streams)) if got["affine"] >> i & 1}
            got["affine_via"] = {i: ctx.get(t.affine_via_stream[i])
                                 for i in range(len(prog.streams)) if ctx.get(t.affine_via) >> i & 1}
            got["skip_candidate"] = ctx.get(t.skip_candidate) & ((1 << len(prog.streams)) - 1)
            if config.chain_engines:
                got["chain_op_candidate"] = (ctx.get(t.chain_op_candidate)
                                             & ((1 << len(prog.streams)) - 1))
            got["enter_bounds"] = ctx.get(t.enter_bounds) & ((1 << len(prog.streams)) - 1)
            got["enter_swap"] = ctx.get(t.enter_swap) & got["enter_bounds"]
            got["lockstep"] = ((1, ctx.get(t.lockstep_layer)) if ctx.get(t.lockstep_valid)
                               else (0, None))
            for name in ("blocking", "invariant", "affine", "memory_stream", "global_base",
                         "operand_read"):
                got[name] &= (1 << len(prog.streams)) - 1
            for name in ("act_reads", "act_control", "act_vec", "act_flush"):
                got[name] &= (1 << len(prog.actions)) - 1
            out.append((words, writes, got))

    run_sim(dut, testbench)
    return out


def _mul_as_shift(f, a_word, b_word, args):
    """The stream word's ``(mode, a, b)`` as the writer stores it: an ALU ``MUL`` of a
    non-constant source by an IMM/ARG that is a positive power of two ``2**k`` becomes
    ``SHL`` of that source by ``IMM k`` (docs/rtl.md §2.2, "Multiplies")."""
    def constant(word):
        kind, value = word >> 28, word & ((1 << 28) - 1)
        if kind == int(SrcKind.IMM):
            return value - (1 << 28) if value >> 27 else value
        if kind == int(SrcKind.ARG):
            v = int(args[value]) & ((1 << 64) - 1)
            return v - (1 << 64) if v >> 63 else v
        return None
    ca, cb = constant(a_word), constant(b_word)
    if f["kind"] != int(StreamKind.ALU) or f["mode"] != int(AluOp.MUL) or \
            (ca is None) == (cb is None):
        return f["mode"], a_word, b_word
    factor, other = (ca, b_word) if ca is not None else (cb, a_word)
    if factor <= 0 or factor & (factor - 1):
        return f["mode"], a_word, b_word
    return int(AluOp.SHL), other, (int(SrcKind.IMM) << 28) | (factor.bit_length() - 1)


@pytest.mark.parametrize("valid_probability", [1.0, 0.5], ids=["back_to_back", "gaps"])
def test_tables_match_the_definitions(valid_probability):
    seed = fresh_seed("config writer")
    limits = Limits.from_tmu_config(SMALL)
    cases = [embedding_bag_case("eb", rows=4, dim=3, lengths=[2, 0, 1], indices=[1, 3, 0])]
    cases += [random_case(seed + i, layers=SMALL.layers, streams=SMALL.streams,
                          actions=SMALL.actions, regions=2, args=SMALL.args) for i in range(4)]
    cases += [random_v1_case(seed + i, SMALL, block_prob=0.7, lockstep_prob=0.3,
                             data_counts=0.7) for i in range(10)]
    cases += lockstep_cases(SMALL.lanes)[:3] + block_cases()
    cases += [mul_constants_case(seed)]
    decoded = [(c, Program.decode(c.program, limits)) for c in cases]
    results = _run(SMALL, decoded, valid_probability=valid_probability, seed=seed)
    rewritten = 0
    for (case, prog), (words, writes, got) in zip(decoded, results):
        ref = reference(prog, case.args)
        del ref["chain_op_candidate"]       # (SMALL has no chain engine: below)
        for name, value in ref.items():
            assert got[name] == value, (case.name, name, got[name], value)
        # One write per stream / action, at its id, with its descriptor's fields.
        n_l, n_r = len(prog.layers), len(prog.regions)
        assert [a for a, _ in writes["stream"]] == list(range(len(prog.streams))), case.name
        assert [a for a, _ in writes["action"]] == list(range(len(prog.actions))), case.name
        for sid, (_, cfg) in enumerate(writes["stream"]):
            w = words[4 + 4 * (n_l + n_r + sid):][:4]
            f = unpack("StreamWord0", w[0])
            mode, a, b = _mul_as_shift(f, w[1], w[2], case.args)
            rewritten += (mode != f["mode"])
            assert (int(cfg.kind.value), cfg.mode, cfg.region, cfg.layer) == \
                (f["kind"], mode, f["region"], f["layer"]), (case.name, sid)
            assert (cfg.a.as_bits(), cfg.b.as_bits(), cfg.stride & 0xFFFFFFFF) == \
                (a, b, w[3]), (case.name, sid)
        for aid, (_, cfg) in enumerate(writes["action"]):
            w = words[4 + 4 * (n_l + n_r + len(prog.streams) + aid):][:4]
            a = prog.actions[aid]
            assert int(cfg.kind.value) == int(a.kind), (case.name, aid)
            assert cfg.src.as_bits() == w[1], (case.name, aid)
            assert cfg.pack == (a.pack if prog.version == 1 and a.kind == ActionKind.OPERAND
                                else 0), (case.name, aid)
            # An OPERAND action reading a stream carries that stream's kind (MEM or not) and
            # mode, as written into the stream configuration memory (the traversal reads them
            # from the action word, not from ``scfg``); any other action 0.
            if a.kind == ActionKind.OPERAND and a.source.kind == SrcKind.STREAM:
                scfg = writes["stream"][a.source.value][1]
                want = (int(scfg.kind.value) == int(StreamKind.MEM), scfg.mode)
            else:
                want = (0, 0)
            assert (cfg.operand_mem, cfg.operand_mode) == want, (case.name, aid)
    assert rewritten >= 3          # mul_constants_case's three, and any the random cases have


def test_chain_op_candidates_match_the_definition():
    """With a chain engine the writer also marks the ALU/FWD streams that only the next stream
    reads (``chain_op_candidate``, ``docs/rtl.md`` §9.5 C): the chain programs of
    ``tb/tmu/chain_programs.py`` (an ``OPERAND`` action reading an operation stream or not) and
    random programs; every other table as without the engine."""
    from tb.tmu.test_chain_skip import CHAINED, _cases
    seed = fresh_seed("config writer, chain operation candidates")
    cases = [case for _, case in _cases(seed)]
    cases += [random_case(seed + i, layers=CHAINED.layers, streams=CHAINED.streams,
                          actions=CHAINED.actions, regions=2, args=CHAINED.args)
              for i in range(3)]
    cases += [random_v1_case(seed + i, CHAINED, block_prob=0.7, lockstep_prob=0.3,
                             data_counts=0.7) for i in range(3)]
    limits = Limits.from_tmu_config(CHAINED)
    decoded = [(c, Program.decode(c.program, limits)) for c in cases]
    marked = 0
    for (case, prog), (_, _, got) in zip(decoded, _run(CHAINED, decoded, valid_probability=0.7,
                                                       seed=seed)):
        for name, value in reference(prog, case.args).items():
            assert got[name] == value, (case.name, name, got[name], value)
        marked += bin(got["chain_op_candidate"]).count("1")
    assert marked > 0
