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
from hw.tmu.tmu import program_memory_depth
from sw.runtime.isa import Limits, Program, ProgramError
from tb.programs import (embedding_bag_case, fault_cases, mutated_cases, random_case,
                         random_v1_case, v1_decode_cases)
from tb.seeds import fresh_seed
from tb.sim_helpers import run_sim


SMALL = TmuConfig.small()
V0_ONLY = dataclasses.replace(SMALL, versions=(0,), features=(), lanes=1, max_block=0)


class _Bench(wiring.Elaboratable):
    """The checker reading a program memory that the testbench writes."""

    def __init__(self, config):
        self.checker = ProgramChecker(config)
        self.program = memory.Memory(shape=32, depth=program_memory_depth(config), init=[])
        self.write = self.program.write_port()

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
                ctx.set(bench.write.addr, i)
                ctx.set(bench.write.data, word)
                ctx.set(bench.write.en, 1)
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


def _cases(config, seed):
    base = embedding_bag_case("eb", rows=4, dim=3, lengths=[2, 0, 1], indices=[1, 3, 0])
    cases = [base] + fault_cases(config) + v1_decode_cases(config)
    cases += [random_case(seed + i, layers=min(3, config.layers), streams=config.streams,
                          actions=config.actions, regions=2, args=config.args) for i in range(3)]
    cases += [random_v1_case(seed + i, SMALL, block_prob=0.3, lockstep_prob=0.3)
              for i in range(3)]
    cases += mutated_cases(seed, 60, config)
    depth = program_memory_depth(config)
    return [c for c in cases if len(c.program) <= 4 * depth]


@pytest.mark.parametrize("config", [SMALL, V0_ONLY], ids=["small", "v0_only"])
@pytest.mark.parametrize("ready_probability", [1.0, 0.4])
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

