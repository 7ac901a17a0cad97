"""The program checker (``hw/tmu/program_checker.py``) alone in the Amaranth simulator, with
random stalls on both of its handshakes (``descriptor``, ``result``), against the Python loader
``sw.runtime.isa.Program.decode`` (the reference of ``docs/isa.md``'s checks and their order):
the fault code and PC of every malformed program, and for every program the descriptors handed
on — in program order, each once, none from the faulting descriptor on — and what the checker
learned from the header and phase 1."""

import dataclasses
import random
import struct

import pytest
from amaranth.hdl import Module
from amaranth.lib import memory, wiring

from hw.tmu import TmuConfig
from hw.tmu.program_checker import ProgramChecker
from hw.tmu.signatures import ProgramLine, program_lines, program_memory_depth
from sw.runtime.isa import Limits, Program, ProgramError
from sw.runtime.isa import Source
from tb.programs import (Case, embedding_bag_case, fault_cases, mutated_cases, random_case,
                         random_v1_case, v1_decode_cases)
from tb.seeds import fresh_seed
from tb.sim_helpers import run_sim


SMALL = TmuConfig.small()
V0_ONLY = dataclasses.replace(SMALL, versions=(0,), features=(), lanes=1, max_block=0)


class _Bench(wiring.Elaboratable):
    """The checker reading a program memory that the testbench writes."""

    def __init__(self, config):
        self.checker = ProgramChecker(config)
        self.program = memory.Memory(shape=ProgramLine, depth=program_lines(config), init=[])
        self.write = self.program.write_port(granularity=1)

    def elaborate(self, platform):
        m = Module()
        m.submodules.checker = self.checker
        m.submodules.program = self.program
        wiring.connect(m, self.checker.program, self.program.read_port())
        return m


def _words(program):
    """The program's 32-bit words (a trailing partial word zero-padded)."""
    padded = bytes(program) + bytes(-len(program) % 4)
    return list(struct.unpack(f"<{len(padded) // 4}I", padded))


def _expected(program, config):
    """``(fault code or 0, PC, decoded Program or None)`` from the Python loader."""
    try:
        return 0, 0, Program.decode(bytes(program), Limits.from_tmu_config(config))
    except ProgramError as e:
        return int(e.code), e.pc, None


def _descriptors(program):
    """Every descriptor of a program whose header parses: ``(section, number, words)`` in
    program order (the order phase 2 hands them on)."""
    words = _words(program)
    counts = [words[2] & 0xFF, (words[2] >> 8) & 0xFF, (words[2] >> 16) & 0xFF,
              (words[2] >> 24) & 0xFF]
    out, base = [], 4
    for section, n in enumerate(counts):
        for number in range(n):
            out.append((section, number, tuple(words[base:base + 4])))
            base += 4
    return out


def _run(config, programs, *, ready_probability, seed):
    """Check each program; returns ``[(fault, code, pc, descriptors, checked), ...]``."""
    bench = _Bench(config)
    chk = bench.checker
    rng = random.Random(seed)
    results = []

    async def testbench(ctx):
        for program in programs:
            for i, word in enumerate(_words(program)):
                ctx.set(bench.write.addr, i // 4)            # a word lane of a 4-word line
                ctx.set(bench.write.data, [word] * 4)
                ctx.set(bench.write.en, 1 << (i % 4))
                await ctx.tick()
            ctx.set(bench.write.en, 0)
            ctx.set(chk.prog_len, len(program))
            ctx.set(chk.start, 1)
            await ctx.tick()
            ctx.set(chk.start, 0)
            descriptors = []
            for _ in range(20_000):
                d_ready = rng.random() < ready_probability
                r_ready = rng.random() < ready_probability
                ctx.set(chk.descriptor.ready, d_ready)
                ctx.set(chk.result.ready, r_ready)
                assert ctx.get(chk.busy)
                if d_ready and ctx.get(chk.descriptor.valid):
                    p = ctx.get(chk.descriptor.payload)
                    descriptors.append((p.section, p.number,
                                        tuple(p.words[i] for i in range(4))))
                if r_ready and ctx.get(chk.result.valid):
                    r = ctx.get(chk.result.payload)
                    code = r.code.value if hasattr(r.code, "value") else int(r.code)
                    k = chk.checked
                    checked = dict(
                        counts=[ctx.get(getattr(k.counts, f)) for f in
                                ("layers", "regions", "streams", "actions", "args")],
                        version1=ctx.get(k.version1),
                        layer_mode=[ctx.get(k.layer_mode[i]) for i in range(config.layers)],
                        stream_layer=[ctx.get(k.stream_layer[i]) for i in range(config.streams)],
                        stream_block=ctx.get(k.stream_block))
                    results.append((r.fault, code, r.pc, descriptors, checked))
                    await ctx.tick()
                    assert not ctx.get(chk.busy)
                    break
                await ctx.tick()
            else:
                raise TimeoutError(f"no result for program {len(results)}")

    run_sim(bench, testbench)
    return results


def _mutate(rng, word):
    """One random change of a word: a bit, a 4-bit field, the low byte, a small immediate,
    zero, or a random word."""
    r = rng.random()
    if r < 0.3:
        return word ^ (1 << rng.randrange(32))
    if r < 0.5:
        field = rng.choice([0, 8, 9, 12, 16, 20, 23, 24, 28])
        return (word & ~(0xF << field)) | (rng.randrange(16) << field)
    if r < 0.65:
        return (word & 0xFFFFFF00) | rng.randrange(256)
    if r < 0.8:
        return Source.imm(rng.randint(-2, 2)).encode()
    if r < 0.9:
        return 0
    return rng.getrandbits(32)


def _double_mutations(seed, count, bases):
    """Programs with two words of one descriptor changed: which of two failing checks of a
    descriptor comes first is the loader's order (``docs/isa.md`` §2 "Decode order")."""
    rng = random.Random(seed)
    out = []
    for n in range(count):
        base = rng.choice(bases)
        w = _words(base.program)
        d = rng.randrange((len(w) - 4) // 4)
        for pc in rng.sample(range(4 + 4 * d, 8 + 4 * d), 2):
            w[pc] = _mutate(rng, w[pc])
        out.append(Case(f"double_{seed}_{n}", struct.pack(f"<{len(w)}I", *w), b"", []))
    return out


def _edge_cases(seed, count, bases):
    """Programs with one descriptor word set to an edge value (zero, immediates -1/0/1, all
    ones), and every layer's ``step`` set to 0 and to -1 (``docs/isa.md``: ``step`` an IMM > 0)."""
    rng = random.Random(seed)
    edges = [0, Source.imm(-1).encode(), Source.imm(1).encode(), 0xFFFFFFFF]
    out = []
    for base in bases:
        w = _words(base.program)
        for layer in range(w[2] & 0xFF):
            for step in (0, -1):
                v = list(w)
                v[4 + 4 * layer + 3] = Source.imm(step).encode()
                out.append(Case(f"step_{step}", struct.pack(f"<{len(v)}I", *v), b"", []))
    for n in range(count):
        w = _words(rng.choice(bases).program)
        w[rng.randrange(4, len(w))] = rng.choice(edges)
        out.append(Case(f"edge_{seed}_{n}", struct.pack(f"<{len(w)}I", *w), b"", []))
    return out


def _cases(config, seed):
    base = embedding_bag_case("eb", rows=4, dim=3, lengths=[2, 0, 1], indices=[1, 3, 0])
    valid = [base] + [random_case(seed + i, layers=min(3, config.layers),
                                  streams=config.streams, actions=config.actions, regions=2,
                                  args=config.args) for i in range(3)]
    valid += [random_v1_case(seed + i, SMALL, block_prob=0.3, lockstep_prob=0.3)
              for i in range(3)]
    cases = valid + fault_cases(config) + v1_decode_cases(config)
    cases += mutated_cases(seed, 60, config)
    cases += _double_mutations(seed, 120, valid)
    cases += _edge_cases(seed, 60, valid)
    depth = program_memory_depth(config)
    return [c for c in cases if len(c.program) <= 4 * depth]


@pytest.mark.parametrize("config,ready_probability", [(SMALL, 1.0), (SMALL, 0.4), (V0_ONLY, 0.4)],
                         ids=["small-no_stalls", "small-stalls", "v0_only-stalls"])
def test_faults_and_descriptors_match_the_loader(config, ready_probability):
    seed = fresh_seed("program checker")
    cases = _cases(config, seed)
    results = _run(config, [c.program for c in cases], ready_probability=ready_probability,
                   seed=seed)
    faults = 0
    for case, (fault, code, pc, descriptors, checked) in zip(cases, results):
        exp_code, exp_pc, decoded = _expected(case.program, config)
        assert (code, pc) == (exp_code, exp_pc), (case.name, code, pc, exp_code, exp_pc)
        assert fault == (exp_code != 0), case.name
        faults += exp_code != 0
        if decoded is not None:
            assert descriptors == _descriptors(case.program), case.name
            assert checked["counts"] == [len(decoded.layers), len(decoded.regions),
                                         len(decoded.streams), len(decoded.actions),
                                         decoded.n_args], case.name
            assert checked["version1"] == (decoded.version == 1), case.name
            assert checked["layer_mode"][:len(decoded.layers)] == \
                [int(getattr(layer, "mode", 0)) for layer in decoded.layers], case.name
            assert checked["stream_layer"][:len(decoded.streams)] == \
                [s.layer for s in decoded.streams], case.name
            assert checked["stream_block"] == sum(bool(getattr(s, "block", False)) << i
                                                  for i, s in enumerate(decoded.streams)), \
                case.name
        else:
            # A prefix of the program-order descriptors, none at or after the faulting one.
            if descriptors:
                assert descriptors == _descriptors(case.program)[:len(descriptors)], case.name
                assert 4 + 4 * len(descriptors) <= pc, case.name
    assert faults >= len(cases) // 3          # the mix exercises the fault paths

