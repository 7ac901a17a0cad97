"""No ``STREAM`` uop for an ALU stream that only popped run-ahead engines' streams read
(``docs/rtl.md`` §9.5 C, ``hw/tmu/skipped_streams.py``): the engine's fallback step evaluates
it first.

* Structure: in the compiled ``-O3`` SpMV, SpMM and EmbeddingBag, ``i + 1`` (stream 0, read
  only by ``rowptr[i + 1]`` / ``offsets[b + 1]``, whose engine is popped by the next uop) has
  no uop, and the outer body starts with the uop that pops. It keeps its uop where an action
  reads it, an ALU stream reads it, its reader is the last stream of the layer (its own uop,
  no pop), its reader has no engine (one engine only), or it is in a LOCKSTEP layer; with no
  reader at all it has none. The skipped streams of every program here and of random ones are
  those of the rule evaluated in Python on the decoded program (``expected_skipped``).
* Tokens and faults, token for token against the golden model (``sw/runtime/golden.py``) with
  random back-pressure: each hand-written variant with ``rowptr`` cut short (the engine of
  ``rowptr[i + 1]`` stops before the element past the region, the uop falls back and faults
  in program order) and whole; the compiled SpMM and EmbeddingBag with empty rows/bags and
  ``rowptr``/``offsets`` cut; and engines whose element's index ``i + c`` (the skipped stream)
  or exact address leaves the signed 64-bit range while the address's low 64 bits fall in the
  region (the engine stops, the fallback faults ``ADDR_OVERFLOW``).
"""

import dataclasses

import numpy as np
import pytest

from hw.tmu.layouts import UopKind
from sw.compiler import compile_mlir
from sw.runtime.isa import (Action, ActionKind, AluOp, Event, Fault, Layer, Limits, Program,
                            Region, Source, SrcKind, Stream, StreamKind)
from sw.workloads import WORKLOADS
from tb.golden_compare import assert_matches
from tb.programs import CSR_SKIP_VARIANTS, Case, csr_skip_case, random_case, random_v1_case
from tb.seeds import fresh_seed
from tb.tmu.amaranth_bench import run_on_amaranth
from tb.tmu.builder_bench import run_builder
from tb.tmu.test_chain import _compiled_bag
from tb.tmu.test_config_writer import reference
from tb.tmu.test_spmm_rate import CONFIG, LIMITS, _spmm_case

# rowptr[i] gets the only engine: rowptr[i + 1] has none.
ONE_ENGINE = dataclasses.replace(CONFIG, prefetchers=1)


def expected_skipped(prog, args, engines):
    """The streams without a ``STREAM`` uop by the rule of ``docs/rtl.md`` §9.5 C: a skip
    candidate (``tb/tmu/test_config_writer.reference``: an ALU/FWD stream, not invariant, that
    only affine MEM streams read, as their ``b``), not in the LOCKSTEP layer, each of whose
    readers is served by an engine (``engines``: ``[(stream, layer, offset)]``) and popped: a
    later stream of its (not LOCKSTEP) layer has a uop (not invariant, not skipped)."""
    ref = reference(prog, args)
    S = prog.streams
    served = {s for s, _, _ in engines}
    lockstep = ref["lockstep"][1]
    skipped = set()

    def has_uop(t):
        return not ref["invariant"] >> t & 1 and t not in skipped

    def popped(r):
        return (r in served and S[r].layer != lockstep
                and any(has_uop(t) for t in range(r + 1, len(S)) if S[t].layer == S[r].layer))

    for s in reversed(range(len(S))):           # a stream's readers have higher ids
        readers = [r for r, source in ref["affine_via"].items() if source == s]
        if (ref["skip_candidate"] >> s & 1 and S[s].layer != lockstep
                and all(popped(r) for r in readers)):
            skipped.add(s)
    return skipped


def evaluated_streams(uops, engines):
    """The streams some uop evaluates: a ``STREAM`` uop's own, its pops, its chained ALU
    stream."""
    out = set()
    for u in uops:
        if u.kind == UopKind.STREAM:
            out.add(u.id)
            out |= {engines[e][0] for e in range(len(engines)) if u.pop >> e & 1}
            if u.chain:
                out.add(u.id - 1)
    return out


def _microcode(case, config=CONFIG):
    """(program, uops, engines, body and exit pcs, skipped streams) the builder gives."""
    prog = Program.decode(case.program, Limits.from_tmu_config(config))
    [(fault, _, _, writes, engines, pcs)] = run_builder(config, [(case, prog, None)],
                                                       ready_probability=1.0, seed=0)
    assert fault == 0, case.name
    uops = [u for _, u in writes]
    skipped = set(range(len(prog.streams))) - evaluated_streams(uops, engines)
    assert skipped == expected_skipped(prog, case.args, engines), case.name
    return prog, uops, engines, pcs, skipped


def _compiled(name):
    w = WORKLOADS[name]
    k = compile_mlir(w.path.read_text(), filename=w.example, opt_level=3, limits=LIMITS)
    return Case(f"{name}_O3", k.program.encode(), b"", [0] * CONFIG.args)


def test_compiled_kernels_skip_i_plus_1():
    seed = fresh_seed("fused skip compiled structure")
    rng = np.random.default_rng(seed)
    for case in (_compiled("spmv_csr"), _spmm_case(seed, rows=3)[0],
                 _compiled_bag(rng, bags=3)[0]):
        prog, uops, engines, pcs, skipped = _microcode(case)
        i_plus_1 = prog.streams[0]
        assert (i_plus_1.kind, i_plus_1.op, i_plus_1.a.kind, i_plus_1.a.value,
                i_plus_1.b.kind, i_plus_1.b.value) == (StreamKind.ALU, AluOp.ADD, SrcKind.INDEX,
                                                      0, SrcKind.IMM, 1), case.name
        assert skipped == {0}, (case.name, skipped)
        # rowptr[i + 1] (offsets[b + 1]) reads it; its engine is popped by body_0's first uop.
        reader = prog.streams[2]
        assert (reader.b.kind, reader.b.value) == (SrcKind.STREAM, 0), case.name
        engine = next(e for e, (s, _, _) in enumerate(engines) if s == 2)
        first = uops[pcs[0][0]]
        assert first.kind == UopKind.STREAM and first.pop >> engine & 1, (case.name, first)
        assert not any(u.kind == UopKind.STREAM and u.id == 0 for u in uops), case.name


def test_left_alone_where_the_value_is_read():
    seed = fresh_seed("fused skip structure")
    for variant, want in CSR_SKIP_VARIANTS.items():
        *_, skipped = _microcode(csr_skip_case(variant, variant, seed=seed))
        assert skipped == want, (variant, skipped)
    # With one engine (rowptr[i]'s), rowptr[i + 1] is evaluated by its own uop: i + 1 stays.
    *_, skipped = _microcode(csr_skip_case("one_engine", "popped", seed=seed), ONE_ENGINE)
    assert skipped == set(), skipped
    # Random programs (LOCKSTEP, BLOCK streams): the rule, checked in _microcode.
    for i in range(8):
        _microcode(random_case(seed + i, layers=CONFIG.layers, streams=CONFIG.streams,
                               actions=CONFIG.actions, regions=2, args=CONFIG.args))
        _microcode(random_v1_case(seed + i, CONFIG, block_prob=0.5, lockstep_prob=0.3))


def _run(case, config, rng, seed):
    r = run_on_amaranth(case.program, case.memory, case.args, config=config,
                        backpressure=float(rng.choice([0.0, 0.3, 0.6])), seed=seed)
    assert_matches(case, r, config)
    return r


def test_fallback_evaluates_the_skipped_stream_first():
    """Each variant, ``rowptr`` whole and cut short (empty rows among them), random
    back-pressure: the tokens and the fault are the golden model's."""
    seed = fresh_seed("fused skip golden")
    rng = np.random.default_rng(seed)
    for variant in [*CSR_SKIP_VARIANTS, "one_engine"]:
        lengths = rng.integers(0, 4, 6)
        lengths[[0, 3]] = 0
        for cut in (None, int(rng.integers(1, len(lengths)))):    # rowptr[cut] faults
            config = ONE_ENGINE if variant == "one_engine" else CONFIG
            case = csr_skip_case(f"{variant}_cut_{cut}_{seed}",
                                 "popped" if variant == "one_engine" else variant,
                                 lengths=lengths, rowptr_cut=cut, seed=seed)
            r = _run(case, config, rng, seed)
            assert (r.fault_code != 0) == (cut is not None), (case.name, r.fault_code)


def _cut_rowptr(case, rng, limit):
    """``case`` with the region of stream 2 (``rowptr[i + 1]``, ``offsets[b + 1]``) holding
    only ``1 .. limit`` elements."""
    prog = Program.decode(case.program, LIMITS)
    size = prog.regions[prog.streams[2].region].size
    assert size.kind == SrcKind.ARG and prog.streams[2].size == 8, case.name
    args = list(case.args)
    args[size.value] = 8 * int(rng.integers(1, limit + 1))
    return Case(f"{case.name}_cut", case.program, case.memory, args)


def test_compiled_spmm_and_bag_with_rowptr_cut_match_golden():
    seed = fresh_seed("fused skip compiled golden")
    rng = np.random.default_rng(seed)
    spmm, _ = _spmm_case(seed, rows=8)          # rows of 0..7 nonzeros
    lengths = rng.integers(0, 4, 6)
    lengths[[0, 2]] = 0
    bag, _ = _compiled_bag(rng, bags=6, lengths=lengths)
    for case, rows in ((spmm, 8), (bag, 6)):
        _microcode(case)
        r = _run(_cut_rowptr(case, rng, rows), CONFIG, rng, seed)
        assert r.fault_code != 0, (case.name, seed)


def _overflow_case(name, lb, *, c, stride):
    """``i in [lb, lb + 2)`` pushing ``x[i + c]`` (``x`` at address 0, 4 elements; ``c`` 0:
    ``b = INDEX 0``, else ``b`` = the stream ``i + c``, skipped), read through an ALU stream so
    that an engine serves it: ``i + c`` or the exact address ``(i + c) * stride`` leaves the
    signed 64-bit range while the address's low 64 bits fall inside ``x``."""
    S, I, R, imm = Source.stream, Source.index, Source.arg, Source.imm
    streams = [Stream(0, StreamKind.ALU, I(0), imm(c))] if c else []
    x = len(streams)
    streams += [Stream(0, StreamKind.MEM, R(2), S(0) if c else I(0), size=8, stride=stride),
                Stream(0, StreamKind.ALU, S(x), imm(0))]
    prog = Program(n_args=4, layers=[Layer(R(0), R(1))], regions=[Region(R(2), R(3))],
                   streams=streams,
                   actions=[Action(0, Event.ITER, ActionKind.OPERAND, source=S(x + 1))])
    memory = np.arange(4, dtype=np.int64).tobytes()
    return Case(name, prog.encode(), memory, [lb, lb + 2, 0, len(memory)])


def test_engine_stops_before_an_address_overflow():
    """A run-ahead engine stops before an element whose index ``i + c`` wraps (the skipped
    stream's ``wrapped`` bit, written by the fallback step, faults its reader) or whose exact
    address leaves the signed 64-bit range (its low 64 bits inside the region): the traversal
    faults ``ADDR_OVERFLOW`` in program order, as the golden model does."""
    seed = fresh_seed("fused skip overflow")
    rng = np.random.default_rng(seed)
    cases = [_overflow_case("index_plus_c_wraps", (1 << 63) - 3, c=2, stride=0),
             _overflow_case("address_wraps", (1 << 61) - 1, c=1, stride=8),      # 2**64
             _overflow_case("index_address_wraps", 1 << 61, c=0, stride=8)]
    for case in cases:
        prog, _, engines, _, skipped = _microcode(case)
        reader = len(prog.streams) - 2
        assert [s for s, _, _ in engines] == [reader], (case.name, engines)
        assert skipped == ({0} if reader else set()), (case.name, skipped)
        r = _run(case, CONFIG, rng, seed)
        assert (r.fault_code, r.fault_addr) == (int(Fault.ADDR_OVERFLOW), reader), case.name


def test_engine_with_a_wrapped_base_faults():
    """An engine started by a ``PREFETCH`` whose base, an outer stream, wrapped (``2**62 * 4``):
    the golden model faults ``ADDR_OVERFLOW`` at the first element, and so does the unit (the
    engine gets the base's ``wrapped`` bit, ``p_base_wrapped``, and stops before the element;
    without it the engine loaded at the wrapped base, 0)."""
    S, I, R, imm = Source.stream, Source.index, Source.arg, Source.imm
    memory = np.arange(4, dtype=np.int64).tobytes()
    prog = Program(n_args=4, layers=[Layer(imm(0), imm(1)), Layer(imm(0), imm(2))],
                   regions=[Region(R(0), R(1))],
                   streams=[Stream(0, StreamKind.ALU, R(2), R(3), op=AluOp.MUL),
                            Stream(1, StreamKind.MEM, S(0), I(1), size=8, stride=8),
                            Stream(1, StreamKind.ALU, S(1), imm(0))],
                   actions=[Action(1, Event.ITER, ActionKind.OPERAND, source=S(2))])
    case = Case("wrapped_base", prog.encode(), memory, [0, len(memory), 1 << 62, 4])
    _, uops, engines, _, _ = _microcode(case)
    assert [s for s, _, _ in engines] == [1]
    assert any(u.kind == UopKind.PREFETCH and not u.arm for u in uops)
    r = run_on_amaranth(case.program, case.memory, case.args, config=CONFIG)
    assert_matches(case, r, CONFIG)
