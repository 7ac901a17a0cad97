"""No ``STREAM`` uop for a chain engine's operation streams (``hw/tmu/skipped_streams.py``,
``docs/rtl.md`` §9.5 C): the chain engine computes ``op1(op0(V))`` for its own loads, so the
traversal evaluates them only in the engine's fallback step, before the chained load ``M``.

* Structure: on the programs of ``tb/tmu/chain_programs.py`` (every variant, one layer and
  CSR-like groups), with or without an ``OPERAND`` action reading one operation stream, the
  streams without a uop are those of the rule evaluated in Python (``expected_skipped``).
* Tokens and faults, token for token against the golden model with random back-pressure,
  the fault variants included (``M``'s region cut, ``V``'s cut, an operation that wraps): the
  fallback evaluates the skipped streams in id order, then ``M``.
* Rate: the chained layer of the ``hash`` variant (``MUL`` by 0x9E3779B97F4A7C15, then
  ``SHR``) runs one uop per iteration, so the ``MUL``'s registered product (two cycles,
  ``hw/tmu/registered_products.py``) is never waited for.
"""

import dataclasses

import pytest

from hw.tmu.config import TmuConfig
from hw.tmu.layouts import UopKind
from sw.runtime.isa import Action, ActionKind, Event, Limits, Program, Source, SrcKind
from tb.golden_compare import assert_matches
from tb.programs import Case
from tb.seeds import fresh_seed
from tb.tmu.amaranth_bench import run_on_amaranth
from tb.tmu.builder_bench import run_builder
from tb.tmu.chain_programs import VARIANTS, chain_case

CHAINED = dataclasses.replace(TmuConfig.small(), chain_engines=1)
LIMITS = Limits.from_tmu_config(CHAINED)


def _with_pushed(case, stream):
    """``case`` with one more ITER ``OPERAND`` action, before its ``CONTROL``, reading
    ``stream`` (``None``: ``case`` itself)."""
    if stream is None:
        return case
    prog = Program.decode(case.program, LIMITS)
    control = prog.actions[-1]
    assert control.kind == ActionKind.CONTROL
    pushed = Action(control.layer, Event.ITER, ActionKind.OPERAND, source=Source.stream(stream))
    prog = dataclasses.replace(prog, actions=[*prog.actions[:-1], pushed, control])
    return Case(f"{case.name}_push_s{stream}", prog.encode(), case.memory, case.args)


def _chain(prog, variant):
    """(``V``, number of operations, ``M``) of a ``chain_case`` program: ``V`` is the first
    stream of the chained (last) layer."""
    inner = len(prog.layers) - 1
    v = next(i for i, st in enumerate(prog.streams) if st.layer == inner)
    ops = len(VARIANTS[variant][0])
    return v, ops, v + ops + 1


def expected_skipped(prog, variant, engine_streams):
    """The operation streams without a uop by the rule of ``docs/rtl.md`` §9.5 C: ``M`` has the
    chain engine (``engine_streams``, the served streams) and is popped by a later uop (its
    reader ``M + 1`` has its own), ``M - 1`` is read by ``M`` alone, ``M - 2`` by ``M - 1``
    alone, and is skipped only with ``M - 1``. No other stream of these programs is skipped
    (the groups' ``i + 1`` has an engine-less reader on the small unit)."""
    _, ops, m = _chain(prog, variant)
    if m not in engine_streams:
        return set()

    def reads(source, s):
        return source is not None and source.kind == SrcKind.STREAM and source.value == s

    def readers(s):
        out = [r for r, st in enumerate(prog.streams)
               if any(reads(x, s) for x in (st.a, st.b, st.count if st.block else None))]
        out += [f"layer {k}" for k, layer in enumerate(prog.layers)
                if reads(layer.lb, s) or reads(layer.ub, s)]
        out += [f"action {i}" for i, a in enumerate(prog.actions)
                if a.kind == ActionKind.OPERAND and reads(a.source, s)]
        return out

    skipped = set()
    if ops >= 1 and readers(m - 1) == [m]:
        skipped.add(m - 1)
        if ops == 2 and readers(m - 2) == [m - 1]:
            skipped.add(m - 2)
    return skipped


def _skipped(case):
    """The streams that no uop evaluates (no ``STREAM`` uop of their own, not an engine's, not a
    chained uop's ALU stream) in the microcode the builder writes, and the engines' streams."""
    prog = Program.decode(case.program, LIMITS)
    [(fault, _, _, writes, engines, _)] = run_builder(CHAINED, [(case, prog, None)],
                                                       ready_probability=1.0, seed=0)
    assert fault == 0, case.name
    streams = [u for _, u in writes if u.kind == UopKind.STREAM]
    own = {u.id for u in streams} | {u.id - 1 for u in streams if u.chain}
    served = {s for s, _, _ in engines}
    return prog, set(range(len(prog.streams))) - own - served, served


def _cases(seed):
    """Every variant, one layer and groups, with nothing pushed, ``M - 1`` pushed, ``M - 2``
    pushed (two operations)."""
    for variant in sorted(VARIANTS):
        for groups in (None, (3, 0, 4, 1)):
            case = chain_case(f"{variant}_{groups}_{seed}", variant, groups=groups, seed=seed)
            _, ops, m = _chain(Program.decode(case.program, LIMITS), variant)
            for pushed in [None, *(m - k for k in range(1, ops + 1))]:
                yield variant, _with_pushed(case, pushed)


def test_operation_streams_have_no_uop_by_the_rule():
    seed = fresh_seed("chain skip structure")
    seen = set()
    for variant, case in _cases(seed):
        prog, skipped, served = _skipped(case)
        assert skipped == expected_skipped(prog, variant, served), (case.name, skipped)
        seen.add(len(skipped))
    assert seen == {0, 1, 2}, seen          # none, M - 1 alone, both


@pytest.mark.parametrize("variant", sorted(VARIANTS))
def test_fallback_evaluates_the_skipped_operations_first(variant):
    """Each case of the variant, random back-pressure: tokens, fault code and address equal the
    golden model's (the region, root_cut and wrap variants fault in the fallback step)."""
    seed = fresh_seed(f"chain skip golden {variant}")
    for name, case in _cases(seed):
        if name != variant:
            continue
        r = run_on_amaranth(case.program, case.memory, case.args, config=CHAINED,
                            backpressure=0.3, seed=seed)
        assert_matches(case, r, CHAINED)


def test_a_hashed_chain_runs_one_uop_per_iteration():
    """``hash``: 12 more iterations take 12 more uops (only ``M + 1``'s, which pops ``V`` and
    ``M``); with ``M - 2`` pushed (so evaluated, with its ``MUL``), at least 24 more (its own
    uop, and the actions')."""
    uops = {}
    for pushed in (False, True):
        for n in (12, 24):
            case = chain_case(f"hash_{n}", "hash", n=n, seed=n)
            _, _, m = _chain(Program.decode(case.program, LIMITS), "hash")
            case = _with_pushed(case, m - 2 if pushed else None)
            r = run_on_amaranth(case.program, case.memory, case.args, config=CHAINED)
            assert_matches(case, r, CHAINED)
            uops[pushed, n] = r.stats["uops"]
    assert uops[False, 24] - uops[False, 12] == 12, uops
    assert uops[True, 24] - uops[True, 12] >= 24, uops
