"""The differential fuzz campaign (``slow``): at least 10,000 fresh random programs per program
generator of ``tb/`` on the RTL under Verilator, token by token against the golden model.

One base seed per generator is drawn fresh and printed (``EMBER_SEED=<base> reproduces the
campaign``, ``tb.seeds``); program ``n`` uses seed ``base + n``. Programs run in batches of
``BATCH`` jobs per simulator process (``run_many_on_rtl``), in order, so every program also runs
after other programs (state left by an earlier job must not matter), each with its own random
back-pressure. Every mismatch is collected and the test fails listing them (case names carry the
seed). ``EMBER_FUZZ_PROGRAMS`` changes the number of programs per generator (default 10,000).

Run with ``python3 -m pytest -m slow tb/system/test_fuzz_campaign.py`` (about 7 minutes of one
core per 10,000 programs on the ``simple`` memory).
"""

import os
import random

import pytest

from hw.tmu import TmuConfig
from tb.golden_compare import assert_matches
from sim.system import RtlJob, run_many_on_rtl
from tb.programs import alu_case, mutated_cases, pack_case, random_case, random_v1_case
from tb.seeds import fresh_seed, seed_range
from tb.tmu.lockstep_programs import vector_mode_case

pytestmark = [pytest.mark.rtl, pytest.mark.slow]

CFG = TmuConfig()
BATCH = 2000


def _programs() -> int:
    text = os.environ.get("EMBER_FUZZ_PROGRAMS", "10000")
    try:
        n = int(text)
    except ValueError:
        raise ValueError(f"EMBER_FUZZ_PROGRAMS must be an integer, not {text!r}") from None
    if n < 1:
        raise ValueError(f"EMBER_FUZZ_PROGRAMS must be at least 1, not {n}")
    return n


def _v0(seed):
    # One in 20 is the ALU case (every op, every load size and sign).
    return alu_case(seed) if seed % 20 == 0 else random_case(seed)


def _v1(seed):
    # One in 50 is the hand-written packing case with a random trip count and image.
    if seed % 50 == 0:
        return pack_case(f"pack_{seed}", n=seed % 7, seed=seed)
    return random_v1_case(seed, CFG, block_prob=0.6, lockstep_prob=0.5)


def _mutated(base, count):
    """One-word corruptions of v0 and v1 programs (decoder faults and PCs, and the runs of
    the mutants that still decode)."""
    out = []
    for k in range(0, count, 100):
        seed = base + k
        bases = [random_v1_case(s, CFG, block_prob=0.5, lockstep_prob=0.5)
                 for s in seed_range(seed, 2)]
        bases += [vector_mode_case(seed, CFG), pack_case(seed=seed)]
        cases = (mutated_cases(seed, min(100, count - k), CFG) if k % 200 == 0
                 else mutated_cases(seed, min(100, count - k), CFG, bases=bases))
        out += cases
    return out


GENERATORS = {
    "random_case": lambda base, n: [_v0(s) for s in seed_range(base, n)],
    "random_v1_case": lambda base, n: [_v1(s) for s in seed_range(base, n)],
    "vector_mode_case": lambda base, n: [vector_mode_case(s, CFG) for s in seed_range(base, n)],
    "mutated_cases": _mutated,
}


@pytest.mark.parametrize("generator", list(GENERATORS))
def test_fuzz_campaign(generator):
    n = _programs()
    base = fresh_seed(f"{generator}: {n} programs, seeds base .. base + {n - 1}")
    rng = random.Random(base)
    failures = []
    done = 0
    for start in range(0, n, BATCH):
        count = min(BATCH, n - start)
        cases = GENERATORS[generator](base + start, count)
        jobs = [RtlJob(c.program, c.memory, c.args, backpressure=rng.choice([0.0, 0.3, 0.7]),
                       seed=rng.getrandbits(32), max_cycles=2_000_000) for c in cases]
        for case, r in zip(cases, run_many_on_rtl(jobs, config=CFG)):
            try:
                assert_matches(case, r, CFG)
            except AssertionError as e:
                failures.append(str(e))
        done += len(cases)
    print(f"{generator}: {done} programs, {len(failures)} mismatches")
    assert not failures, (f"{len(failures)} of {done} programs differ from the golden model "
                          f"(EMBER_SEED={base}):\n" + "\n".join(failures[:20]))
