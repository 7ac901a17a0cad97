"""The two-stage traversal uop (``TmuConfig.uop_stages = 2``, ``hw/tmu/evaluate_stage.py``): the
evaluation's results registered, the uop executed from them a cycle later. Token for token and
fault for fault against the golden model, and against the one-stage unit's own tokens, in the
Amaranth simulator with random back-pressure (fresh seeds, printed): bags with empty and short
loops and a two-entry reorder buffer, every fault case, LOCKSTEP layers (lane by lane, vector
mode, lane faults), BLOCK rows, engine-pop fallback steps, random v0/v1 programs and the
compiled ``-O3`` workloads. Two stages are the default since session 28; the one-stage unit stays
a parameter, checked here as the twin of each case (the fast suite's random shares of the
overflow, BLOCK and random programs on two stages only). The differential fuzz campaign's generators
(``tb/fuzz.py``) run on the Verilator build of the default unit (``test_two_stage_fuzz``) and,
``slow``, of its one-stage twin (``test_one_stage_fuzz``)."""

import dataclasses
import random

import pytest

from hw.tmu import TmuConfig
from hw.tmu.isa import FaultCode
from hw.tmu.signatures import program_memory_depth
from sw.compiler import compile_mlir
from sw.runtime.image import bind_arguments, build_image
from sw.runtime.isa import (Action, ActionKind, AluOp, Event, Layer, Limits, Program, Region,
                            Source, Stream, StreamKind)
from sw.workloads import WORKLOADS
from tb.fuzz import generators, mismatches, programs_per_generator
from tb.golden_compare import assert_matches
from tb.programs import (Case, address_overflow_cases, block_cases, csr_skip_case,
                         embedding_bag_case, fault_cases, mutated_cases, random_case,
                         random_v1_case)
from tb.seeds import fresh_seed, seed_range
from tb.tmu.amaranth_bench import run_on_amaranth
from tb.tmu.lockstep_programs import lane_fault_order_case, vector_mode_case

TWO = TmuConfig.small()
ONE = dataclasses.replace(TWO, uop_stages=1)
TINY_ROB = dataclasses.replace(TWO, max_inflight=2, prefetchers=1, prefetch_depth=2)


def _check(case, config, backpressure, seed, twin=True):
    """Run ``case`` on ``config`` and (``twin``) on its one-stage twin: both the golden model's
    tokens and fault, and the same tokens as each other; returns both results (``None`` for the
    twin not run)."""
    two = run_on_amaranth(case.program, case.memory, case.args, config=config,
                          backpressure=backpressure, seed=seed)
    assert_matches(case, two, config)
    if not twin:
        return None, two
    one_config = dataclasses.replace(config, uop_stages=1)
    one = run_on_amaranth(case.program, case.memory, case.args, config=one_config,
                          backpressure=backpressure, seed=seed)
    assert (two.data_tokens, two.control_tokens, two.fault_code, two.fault_addr) == \
        (one.data_tokens, one.control_tokens, one.fault_code, one.fault_addr), case.name
    return one, two


def _uop_rate(case, backpressure, seed, config=TWO):
    """``_check`` ``case`` on the two-stage unit ``config``; returns its uops and the run cycles
    (cycles after decoding, the unit's own counters) with two stages and with one, printed.

    Checks the ``evaluate_cycles`` counter (``docs/rtl.md`` §2.7): 0 with one stage; with two,
    disjoint from the cycles that complete a uop, fetch bubbles and the reorder buffer's and
    request port's waits, and without back-pressure, with the blocking-wait cycles two stages
    add (a uop waiting for an engine's value is evaluated again in its waiting cycles), at
    least the cycles two stages add."""
    one, two = _check(case, config, backpressure, seed)
    run = lambda r: r.stats["cycles"] - r.stats["decode_cycles"]
    evaluate = two.stats["evaluate_cycles"]
    print(f"two stages: {two.stats['uops']} uops and {evaluate} evaluate cycles in {run(two)} "
          f"run cycles; one stage: {one.stats['uops']} uops in {run(one)}")
    assert one.stats["evaluate_cycles"] == 0
    assert sum(two.stats[k] for k in ("uops", "evaluate_cycles", "fetch_bubble_cycles",
                                      "rob_full_cycles", "issue_wait_cycles")) <= run(two)
    if backpressure == 0.0:
        more_waits = max(0, two.stats["block_wait_cycles"] - one.stats["block_wait_cycles"])
        assert run(two) - run(one) <= evaluate + more_waits
    return two.stats["uops"], run(two), run(one)


def test_uop_stages_is_a_parameter():
    """Two stages by default; only the traversal with two builds its held evaluation."""
    assert TmuConfig().uop_stages == 2 and TWO.uop_stages == 2
    from hw.tmu.traversal import Traversal
    from amaranth.back import rtlil
    assert "held_s_result" not in rtlil.convert(Traversal(ONE))
    assert "held_s_result" in rtlil.convert(Traversal(TWO))


@pytest.mark.parametrize("config", [TWO, TINY_ROB], ids=["small", "tiny_rob"])
def test_bags_with_short_loops_and_stalls(config):
    """Bags of 0..3 lookups (empty layers, loop exits, refetch bubbles) with back-pressure and
    a full reorder buffer (``tiny_rob``: with one engine, some of its bound and index loads
    are blocking loads without an engine, whose next uop is evaluated while they wait):
    tokens as the golden model's and one stage's, and the cycles the counters attribute
    (completed uops, evaluate cycles, fetch bubbles, a full reorder buffer, the request port's
    waits) disjoint, so never fewer run cycles than uops. (Until session 30 two stages took
    strictly more cycles here; with the uop after a blocking load overlapped they can take one
    stage's.)"""
    seed = fresh_seed("two-stage bags back-pressure")
    rng = random.Random(seed)
    lengths = [rng.randint(0, 3) for _ in range(8)]
    case = embedding_bag_case("two_stage_bags", rows=6, dim=2, lengths=lengths,
                              indices=[rng.randrange(6) for _ in range(sum(lengths))],
                              seed=seed % 1000)
    one, two = _check(case, config, 0.5, seed)
    run = lambda r: r.stats["cycles"] - r.stats["decode_cycles"]
    assert one.stats["evaluate_cycles"] == 0, seed
    assert sum(two.stats[k] for k in ("uops", "evaluate_cycles", "fetch_bubble_cycles",
                                      "rob_full_cycles", "issue_wait_cycles")) <= run(two), seed


@pytest.mark.parametrize("name", [c.name for c in fault_cases(TWO)])
def test_faults(name):
    """Every fault case of ``tb.programs``: the fault is decided in the execute stage from
    the registered checks, with every token before it."""
    seed = fresh_seed(f"two-stage fault {name} back-pressure")
    case = next(c for c in fault_cases(TWO) if c.name == name)
    _check(case, TWO, 0.4, seed)


# The fast suite runs a fresh random share of the longer case lists on two stages only;
# ``make test-all`` all of them, each also on its one-stage twin.
SHARES = [pytest.param(0.3, id="sample"), pytest.param(1.0, id="all", marks=pytest.mark.slow)]


def _share(cases, share, rng):
    """A random ``share`` of ``cases`` (at least one), in their order; all for 1.0."""
    if share >= 1.0:
        return list(cases)
    keep = sorted(rng.sample(range(len(cases)), max(1, round(share * len(cases)))))
    return [cases[i] for i in keep]


@pytest.mark.parametrize("share", [pytest.param(0.15, id="sample"), *SHARES[1:]])
def test_address_overflow_and_block_rows(share):
    """Address overflow in every position (the registered ``wrapped`` bits) and BLOCK rows
    pushed chunk by chunk (two cycles per chunk); the fast sample 7 of the 49 cases (each run
    draws its own)."""
    seed = fresh_seed(f"two-stage overflow and block rows back-pressure {share}")
    cases = _share(address_overflow_cases(TWO) + block_cases(), share, random.Random(seed))
    for k, case in enumerate(cases):
        _check(case, TWO, 0.3, seed + k, twin=share >= 1.0)


def test_lockstep_lanes():
    """A LOCKSTEP layer lane by lane with a lane fault in the golden model's order, and
    vector-mode layers (contiguous vector loads, masked lanes)."""
    seed = fresh_seed("two-stage lockstep")
    _check(lane_fault_order_case(TWO.lanes), TWO, 0.3, seed)
    for s in seed_range(seed, 4):
        _check(vector_mode_case(s, TWO), TWO, 0.3, s)


@pytest.mark.parametrize("variant", ["lengths", "rowptr_cut"])
def test_skipped_streams_and_engine_fallback(variant):
    """CSR with a skipped ALU stream (fusion C) and a ``rowptr`` cut short: the run-ahead engine
    stops, the uop falls back to evaluating its pops one per step (``pops.stopped`` and
    ``wait`` held), the fault in program order."""
    seed = fresh_seed(f"two-stage csr {variant}")
    case = csr_skip_case(f"csr_{variant}", "popped",
                         rowptr_cut=(3 if variant == "rowptr_cut" else None), seed=seed % 1000)
    _check(case, TWO, 0.3, seed)


@pytest.mark.parametrize("share", SHARES)
def test_random_programs(share):
    """Random v0 and v1 programs (BLOCK, LOCKSTEP, packing) and one-word mutants of them."""
    seed = fresh_seed(f"two-stage random programs {share}")
    n = 6 if share >= 1.0 else 3
    cases = [random_case(s) for s in seed_range(seed, n)]
    cases += [random_v1_case(s, TWO, block_prob=0.6, lockstep_prob=0.5)
              for s in seed_range(seed + 6, n)]
    cases += mutated_cases(seed + 12, n, TWO)
    # (a program longer than the small unit's program memory faults PROGRAM_SIZE in both)
    cases = [c for c in cases if len(c.program) <= 4 * program_memory_depth(TWO)]
    for k, case in enumerate(cases):
        _check(case, TWO, random.Random(seed + k).choice([0.0, 0.3, 0.7]), seed + k,
               twin=share >= 1.0)


#: The compiled workloads' configuration: the small unit with the default's streams, actions,
#: regions, arguments and engines.
COMPILED = dataclasses.replace(TWO, streams=16, actions=16, regions=4, args=16, prefetchers=4,
                               max_inflight=32)


def _compiled_case(workload, opt_level, seed, bad_entity=False):
    """The workload compiled at ``opt_level`` for ``COMPILED`` on its small inputs (TransE with
    ``bad_entity``: one head or tail index past the entity table, its row faults
    ``ADDR_RANGE``)."""
    w = WORKLOADS[workload]
    args = w.make("small", seed)
    if bad_entity:
        rng = random.Random(seed)
        triples = args[0].reshape(-1, 3)
        triples[rng.randrange(len(triples)), rng.choice([0, 2])] = \
            args[1].shape[0] + rng.randrange(3)
    kernel = compile_mlir(w.path.read_text(), filename=w.example, opt_level=opt_level,
                          limits=Limits.from_tmu_config(COMPILED))
    image = build_image(kernel, args)
    regs = bind_arguments(kernel, args, image)
    return Case(f"{workload}_O{opt_level}_{seed}", kernel.program.encode(), image.data, regs)


@pytest.mark.parametrize("opt_level", [pytest.param(0, marks=pytest.mark.slow), 1])
def test_blocking_loads_without_an_engine_overlap_the_next_uop(opt_level):
    """TransE at ``-O0`` and ``-O1`` (``-O2``'s program is ``-O1``'s): each triple's index
    loads (``triples[3i + k]``) are blocking loads without an engine (``BWAIT``), and the uops
    after them read the loaded indices. E evaluates the uop after such a load while it waits,
    with the element forwarded in the cycle after its line arrives (the line is registered), so
    the two-stage unit takes at
    most 1 % more run cycles than one stage (4.9 % at ``-O1`` when that uop had an E cycle of
    its own: 1,557 against 1,484). Tokens as the golden
    model's and the one-stage unit's; with a head or tail index past the entity table and
    back-pressure, the row's fault (found by the overlapped evaluation, from the forwarded
    element) and the tokens before it as the golden model's."""
    seed = fresh_seed(f"two-stage transe -O{opt_level} blocking loads")
    _, run, run_one_stage = _uop_rate(_compiled_case("kg_transe", opt_level, seed), 0.0, seed,
                                      COMPILED)
    assert 100 * run <= 101 * run_one_stage
    case = _compiled_case("kg_transe", opt_level, seed, bad_entity=True)
    _, two = _check(case, COMPILED, 0.3, seed, twin=False)
    assert two.fault_code == FaultCode.ADDR_RANGE.value, (seed, two.fault_code)


@pytest.mark.parametrize("workload", ["eb_weighted", "spmm_cora", "spmv_csr", "kg_transe",
                                      "spattn_gather"])
def test_compiled_workloads(workload):
    """The compiled ``-O3`` workloads (engine pops riding in uops, fused actions, loads as a
    second action, fused ``NEXT``/``ENTER``) on their small inputs."""
    seed = fresh_seed(f"two-stage {workload}")
    _check(_compiled_case(workload, 3, seed), COMPILED, 0.2, seed)


@pytest.mark.parametrize("opt_level,percent", [
    pytest.param(0, 5, marks=pytest.mark.slow),   # -O0's forwarding: also the chain test above
    (2, 5)])
def test_compiled_levels_with_forwarding(opt_level, percent):
    """The bags compiled at ``-O0`` (scalar: chains of dependent ALU streams, the loop's index
    read by its body's first uop) and ``-O2`` (the dimension loop a LOCKSTEP layer in vector
    mode, each vector iteration's first uop reading the index and lanes its ``NEXT`` writes),
    on their small inputs without back-pressure: with the values forwarded, the blocking index
    loads and ``ENTER`` uops evaluated ahead, and the uop after a fetch bubble (the dimension
    loop's exit) executed at once with the ahead words of the one after it, the two-stage unit
    takes fewer than ``percent`` more run cycles than one stage (about 1 % each; without the
    bubble's ahead words 1 % and 9 %; with the blocking loads and ``ENTER`` uops evaluated
    after the previous uop's execution 9 % and 28 %; without forwarding and with LOCKSTEP
    programs not overlapped, 68 % and 84 %; ``docs/performance.md``). Tokens as the golden
    model's and the one-stage unit's; counted by the unit's own counters."""
    seed = fresh_seed(f"two-stage eb_sum -O{opt_level}")
    _, run, run_one_stage = _uop_rate(_compiled_case("eb_sum", opt_level, seed), 0.0, seed,
                                      COMPILED)
    assert 100 * run < (100 + percent) * run_one_stage


def _fuzz(config, label):
    """The differential fuzz campaign's generators (``tb/fuzz.py``) on the Verilator build of
    ``config``: ``EMBER_FUZZ_PROGRAMS`` programs per generator (default 100 here), each against
    the golden model."""
    n = programs_per_generator(100)
    base = fresh_seed(f"{label} fuzz: {n} programs per generator")
    rng = random.Random(base)
    cases = [case for k, generate in enumerate(generators(config).values())
             for case in generate(base + k * n, n)]
    failures = mismatches(cases, config, rng)
    assert not failures, (f"{len(failures)} of {len(cases)} programs differ from the golden "
                          f"model (EMBER_SEED={base}):\n" + "\n".join(failures[:20]))


@pytest.mark.rtl
def test_two_stage_fuzz():
    """The fuzz generators on the default unit (two stages)."""
    _fuzz(TmuConfig(), "two-stage")


@pytest.mark.rtl
@pytest.mark.slow
def test_one_stage_fuzz():
    """The fuzz generators on the default unit with one stage (its own Verilator build, so
    ``slow``; the Amaranth tests above check one stage as every case's twin)."""
    _fuzz(dataclasses.replace(TmuConfig(), uop_stages=1), "one-stage")


def _self_loop_case(name, seed, streams, pushes, n=9):
    """One layer of ``n`` iterations whose body is the given streams, each iteration pushing
    ``pushes`` (with the loop's ``NEXT`` fused into the last uop, a one-stream body is a uop
    that loops on itself)."""
    rng = random.Random(seed)
    words = 64
    memory = b"".join(rng.getrandbits(64).to_bytes(8, "little") for _ in range(words))
    R, imm = Source.arg, Source.imm
    actions = [Action(0, Event.ITER, ActionKind.OPERAND, source=p) for p in pushes]
    actions.append(Action(0, Event.END, ActionKind.CONTROL, callback=0x77))
    prog = Program(n_args=4, layers=[Layer(imm(0), imm(n), imm(1))],
                   regions=[Region(R(0), R(1))], streams=streams, actions=actions)
    args = [0, 8 * words, rng.getrandbits(40), -rng.getrandbits(30)]
    return Case(f"{name}_{seed}", prog.encode(), memory, args)


def _self_loop_cases(seed):
    """Loops of one uop whose evaluation reads what the execution writes (the layer's index,
    forwarded from the loop control; a stream cannot read its own value, the ISA's visibility
    rule) and ones that read arguments only."""
    S, I, R, imm = Source.stream, Source.index, Source.arg, Source.imm
    return [
        # The address reads the index NEXT increments (forwarded).
        _self_loop_case("index_load", seed, [
            Stream(0, StreamKind.MEM, R(0), I(0), size=8, stride=8, region=0)], [S(0)]),
        # The stream reads arguments only: its iterations overlap.
        _self_loop_case("arguments_only", seed, [
            Stream(0, StreamKind.ALU, R(2), R(3), op=AluOp.SUB)], [S(0), I(0)]),
        # The index reaches the address through an ALU stream (two uops, no self-loop) ...
        _self_loop_case("index_then_load", seed, [
            Stream(0, StreamKind.ALU, I(0), imm(1), op=AluOp.SHL),
            Stream(0, StreamKind.MEM, R(0), S(0), size=4, stride=8, signed=True, region=0)],
            [S(1), S(0)]),
    ]


@pytest.mark.parametrize("backpressure", [0.0, 0.5])
def test_self_loops_with_and_without_hazards(backpressure):
    """A uop that loops on itself has its next iteration evaluated during this one's execution,
    a uop reading the layer's index with the index the execution writes (forwarded). Tokens as
    the golden model's and the one-stage unit's."""
    seed = fresh_seed(f"two-stage self loops {backpressure}")
    for case in _self_loop_cases(seed):
        _check(case, TWO, backpressure, seed)


def test_self_loop_overlaps_its_iterations():
    """A uop that loops on itself with an engine pop (``s1 = s0 + arg``, ``s0`` a load affine in
    the index, fetched by a run-ahead engine and popped into ``s1``'s uop; ``s1`` pushed as an
    immediate, the loop's ``NEXT`` fused): with two stages its iterations complete one per
    cycle once running (an iteration's evaluation during the previous one's execution), so the
    run completes more uops than half its run cycles, which two stages without the overlap
    (an evaluate and an execute cycle per uop) cannot. Counted by the unit's own counters
    (``uops``; ``cycles`` minus ``decode_cycles``), not by wall-clock time."""
    seed = fresh_seed("two-stage self-loop overlap")
    R = Source.arg
    case = _self_loop_case("overlap", seed, [
        Stream(0, StreamKind.MEM, R(0), Source.index(0), size=8, stride=8, region=0),
        Stream(0, StreamKind.ALU, Source.stream(0), R(2), op=AluOp.ADD)],
        [Source.stream(1)], n=48)
    uops, run, _ = _uop_rate(case, 0.0, seed)
    assert 2 * uops > run


@pytest.mark.parametrize("backpressure", [0.0, 0.5])
def test_uops_that_evaluate_nothing_skip_the_evaluate_cycle(backpressure):
    """A loop body of one ``STREAM`` uop and two ``ACT`` uops (six ``ITER`` operands: two ride
    in the ``STREAM`` uop, two in each ``ACT``, the loop's ``NEXT`` fused into the last): the
    ``ACT`` uops evaluate nothing, so with two stages they execute without an evaluate cycle
    (and one that waits for the core executes again the next cycle). Tokens as the golden
    model's and the one-stage unit's; without back-pressure the run completes more uops than
    half its run cycles, which an evaluate and an execute cycle per uop cannot (the body has
    no uop that loops on itself). Counted by the unit's own counters."""
    seed = fresh_seed(f"two-stage uops without evaluation {backpressure}")
    S, I, R = Source.stream, Source.index, Source.arg
    case = _self_loop_case("act_body", seed, [
        Stream(0, StreamKind.ALU, R(2), I(0), op=AluOp.ADD)],
        [S(0), I(0), R(2), S(0), R(3), I(0)], n=24)
    uops, run, _ = _uop_rate(case, backpressure, seed)
    if backpressure == 0.0:
        assert 2 * uops > run


@pytest.mark.parametrize("backpressure", [0.0, 0.5])
def test_next_uop_evaluated_during_this_ones_execution(backpressure):
    """A loop body of two ``STREAM`` uops (``s1 = s0 + arg``, ``s3 = s2 - arg``, ``s0`` and
    ``s2`` loads affine in the index, fetched by run-ahead engines and popped into the uops;
    ``s1`` and ``s3`` pushed from the second uop, which carries the loop's ``NEXT``): with two
    stages E evaluates each uop during the previous one's execution (the next entry, and the
    first across the loop back): without back-pressure the run takes fewer than a quarter
    of its uops more cycles than with one stage, where an evaluate cycle per uop would add
    about one per uop (the body has no ``ACT``/``NEXT`` uop and no uop looping on itself). A
    body whose second uop reads the first one's stream (a hazard: evaluated after its
    execution) gives the same tokens. Counted by the unit's own counters."""
    seed = fresh_seed(f"two-stage next uop overlapped {backpressure}")
    S, I, R = Source.stream, Source.index, Source.arg

    def body(second_reads_first):
        return [
            Stream(0, StreamKind.MEM, R(0), I(0), size=8, stride=8, region=0),
            Stream(0, StreamKind.ALU, S(0), R(2), op=AluOp.ADD),
            Stream(0, StreamKind.MEM, R(0), I(0), size=8, stride=16, region=0),
            Stream(0, StreamKind.ALU, S(2), S(1) if second_reads_first else R(3),
                   op=AluOp.SUB)]

    free = _self_loop_case("two_uops", seed, body(False), [S(1), S(3)], n=24)
    dependent = _self_loop_case("two_uops_dependent", seed, body(True), [S(1), S(3)], n=24)
    _check(dependent, TWO, backpressure, seed)
    uops, run, run_one_stage = _uop_rate(free, backpressure, seed)
    if backpressure == 0.0:
        assert 4 * (run - run_one_stage) < uops


def _chain_case(name, seed, first, n):
    """A loop body of three dependent streams: ``s0 = a op b`` (``first = (a, b, op)``), ``s1
    = s0 + i``, ``s2 = load(arg0 + s1 * 8)``; ``s2`` and ``s1`` pushed from the last uop, which
    carries the loop's ``NEXT``."""
    S, I, R = Source.stream, Source.index, Source.arg
    a, b, op = first
    return _self_loop_case(name, seed, [
        Stream(0, StreamKind.ALU, a, b, op=op),
        Stream(0, StreamKind.ALU, S(0), I(0), op=AluOp.ADD),
        Stream(0, StreamKind.MEM, R(0), S(1), size=8, stride=8, region=0)],
        [S(2), S(1)], n=n)


@pytest.mark.parametrize("backpressure", [0.0, 0.5])
def test_dependent_streams_forwarded(backpressure):
    """A loop body of three dependent streams, as ``-O0`` compiles an EmbeddingBag's address
    (``s0 = i + 3``, ``s1 = s0 + i``, ``s2 = load(a + s1 * 8)``; ``s2`` and ``s1`` pushed from
    the last uop, which carries the loop's ``NEXT``): with two stages ``s1``'s evaluation reads
    the value ``s0``'s execution keeps in the same cycle, forwarded from the held result;
    ``s2``'s reads ``s1``'s, forwarded; ``s0``'s, during the last uop's execution, reads the
    index that uop's ``NEXT`` writes, forwarded from the loop control. Without back-pressure
    the run takes fewer than an eighth of its uops more cycles than with one stage, where
    evaluating every dependent stream after its producer's execution would add one cycle per
    uop, and evaluating the index's reader after the ``NEXT`` one per iteration of three uops.
    Tokens as the golden model's and the one-stage unit's; counted by the unit's own
    counters."""
    seed = fresh_seed(f"two-stage forwarded streams {backpressure}")
    case = _chain_case("dependent_chain", seed, (Source.index(0), Source.imm(3), AluOp.ADD),
                       n=24)
    uops, run, run_one_stage = _uop_rate(case, backpressure, seed)
    if backpressure == 0.0:
        assert 8 * (run - run_one_stage) < uops


@pytest.mark.parametrize("backpressure", [0.0, 0.5])
def test_forwarded_wrapped_bit(backpressure):
    """The ``wrapped`` bit travels with a forwarded value: ``s0 = 3 << 62`` wraps, ``s1 = s0 +
    i`` (evaluated during ``s0``'s execution) inherits the bit, and the load at ``a + s1 * 8``
    faults ``ADDR_OVERFLOW`` with ``s2``'s id in the first iteration, as in the golden model
    and the one-stage unit (an ``s1`` reading the stale bit would load instead)."""
    seed = fresh_seed(f"two-stage forwarded wrapped bit {backpressure}")
    case = _chain_case("forwarded_wraps", seed, (Source.imm(3), Source.imm(62), AluOp.SHL),
                       n=8)
    _, two = _check(case, TWO, backpressure, seed)
    assert two.fault_code == FaultCode.ADDR_OVERFLOW.value and two.fault_addr == 2


def _restarted_engine_case(name, seed, rows=12):
    """Three layers: ``i < rows``; ``j in [lo[i], hi[i])``; ``k in [0, lens[j])``. ``lo[i]`` and
    ``hi[i]`` (streams 0 and 1) are loads affine in ``i`` that layer 1's bounds read, so the
    outer uop pops one and loads the other and ``ENTER``s layer 1 (fused), starting the engine
    of ``lens[j]`` (stream 2): a blocking load affine in ``j`` that layer 2's bound reads, the
    first uop of layer 1's body. Rows start at random ``lo[i]`` (the engine restarts) or where
    the previous row ended (it continues its sequence). Pushes ``i`` at layer 1's BEGIN,
    ``lens[j]`` and ``j`` per ``j``, ``k`` per ``k``."""
    rng = random.Random(seed)
    lens = [rng.randrange(0, 4) for _ in range(64)]
    lo, hi, end = [], [], 0
    for _ in range(rows):
        start = end if rng.random() < 0.5 else rng.randrange(0, 60)
        stop = min(64, start + rng.randrange(0, 5))
        lo.append(start)
        hi.append(stop)
        end = stop
    words = lo + hi + lens
    memory = b"".join(w.to_bytes(8, "little") for w in words)
    S, I, R, imm = Source.stream, Source.index, Source.arg, Source.imm
    prog = Program(
        n_args=4,
        layers=[Layer(imm(0), imm(rows)), Layer(S(0), S(1)), Layer(imm(0), S(2))],
        regions=[Region(R(0), R(1))],
        streams=[Stream(0, StreamKind.MEM, R(0), I(0), size=8, stride=8, region=0),
                 Stream(0, StreamKind.MEM, R(2), I(0), size=8, stride=8, region=0),
                 Stream(1, StreamKind.MEM, R(3), I(1), size=8, stride=8, region=0)],
        actions=[Action(1, Event.BEGIN, ActionKind.OPERAND, source=I(0)),
                 Action(1, Event.ITER, ActionKind.OPERAND, source=S(2)),
                 Action(1, Event.ITER, ActionKind.OPERAND, source=I(1)),
                 Action(2, Event.ITER, ActionKind.OPERAND, source=I(2)),
                 Action(1, Event.END, ActionKind.CONTROL, callback=0x55)])
    args = [0, 8 * len(words), 8 * rows, 16 * rows]
    return Case(f"{name}_{seed}", prog.encode(), memory, args)


@pytest.mark.parametrize("backpressure", [0.0, 0.5])
def test_blocking_stream_and_enter_evaluated_ahead(backpressure):
    """A blocking ``STREAM`` uop (a bound's load, its value an engine's head taken in X) and an
    ``ENTER`` are evaluated during the previous uop's execution, and an executed blocking uop
    whose engine has its value forwards it: ``-O0`` SpMV's row (``i + 1``, ``rowptr[i + 1]``
    with ``rowptr[i]`` popped, the row's ``ENTER``) costs no evaluate cycle. An engine that the
    executed ``ENTER`` restarts (a row starting elsewhere) is not read ahead: its head would be
    the old sequence's (``_restarted_engine_case``, rows that restart and rows that continue).
    Tokens as the golden model's and the one-stage unit's; without back-pressure the compiled
    SpMV takes fewer than 6 % more run cycles than one stage (11 % with both evaluated after
    the previous execution). Counted by the unit's own counters."""
    seed = fresh_seed(f"two-stage blocking and ENTER ahead {backpressure}")
    _check(_restarted_engine_case("restarted_engine", seed), TWO, backpressure, seed)
    _, run, run_one_stage = _uop_rate(_compiled_case("spmv_csr", 0, seed), backpressure, seed,
                                      COMPILED)
    if backpressure == 0.0:
        assert 100 * run < 106 * run_one_stage
