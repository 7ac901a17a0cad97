"""The differential fuzz campaign's program generators and runner, shared by the slow campaign
(``tb/system/test_fuzz_campaign.py``, the default unit) and the two-stage uop's fuzz run
(``tb/tmu/test_two_stage_uop.py``): random programs run on the RTL under Verilator, token by
token against the golden model.

A generator is ``generate(base, n) -> list of Case``: program ``k`` from seed ``base + k``."""

import os
import random

from sim.system import RtlJob, run_many_on_rtl
from tb.golden_compare import assert_matches
from tb.programs import alu_case, mutated_cases, pack_case, random_case, random_v1_case
from tb.seeds import seed_range
from tb.tmu.lockstep_programs import vector_mode_case


__all__ = ["generators", "programs_per_generator", "mismatches"]


def programs_per_generator(default):
    """``EMBER_FUZZ_PROGRAMS`` (programs per generator), ``default`` when unset; ``ValueError``
    for a value that is not an integer >= 1."""
    text = os.environ.get("EMBER_FUZZ_PROGRAMS", str(default))
    try:
        n = int(text)
    except ValueError:
        raise ValueError(f"EMBER_FUZZ_PROGRAMS must be an integer, not {text!r}") from None
    if n < 1:
        raise ValueError(f"EMBER_FUZZ_PROGRAMS must be at least 1, not {n}")
    return n


def generators(config):
    """The generators for a unit of ``config`` (its sizes bound the v1 programs): name ->
    ``generate(base, n)``."""

    def v0(seed):
        # One in 20 is the ALU case (every op, every load size and sign).
        return alu_case(seed) if seed % 20 == 0 else random_case(seed)

    def v1(seed):
        # One in 50 is the hand-written packing case with a random trip count and image.
        if seed % 50 == 0:
            return pack_case(f"pack_{seed}", n=seed % 7, seed=seed)
        return random_v1_case(seed, config, block_prob=0.6, lockstep_prob=0.5)

    def mutated(base, count):
        """One-word corruptions of v0 and v1 programs (decoder faults and PCs, and the runs of
        the mutants that still decode)."""
        out = []
        for k in range(0, count, 100):
            seed = base + k
            bases = [random_v1_case(s, config, block_prob=0.5, lockstep_prob=0.5)
                     for s in seed_range(seed, 2)]
            bases += [vector_mode_case(seed, config), pack_case(seed=seed)]
            cases = (mutated_cases(seed, min(100, count - k), config) if k % 200 == 0
                     else mutated_cases(seed, min(100, count - k), config, bases=bases))
            out += cases
        return out

    return {
        "random_case": lambda base, n: [v0(s) for s in seed_range(base, n)],
        "random_v1_case": lambda base, n: [v1(s) for s in seed_range(base, n)],
        "vector_mode_case": lambda base, n: [vector_mode_case(s, config)
                                             for s in seed_range(base, n)],
        "mutated_cases": mutated,
    }


def mismatches(cases, config, rng):
    """Run ``cases`` in one simulator process on the Verilator build of ``config`` (each with
    back-pressure 0, 0.3 or 0.7 and a seed drawn from ``rng``, at most 2,000,000 cycles) and
    return the golden model's complaints, one string per case that differs."""
    jobs = [RtlJob(c.program, c.memory, c.args, backpressure=rng.choice([0.0, 0.3, 0.7]),
                   seed=rng.getrandbits(32), max_cycles=2_000_000) for c in cases]
    failures = []
    for case, r in zip(cases, run_many_on_rtl(jobs, config=config)):
        try:
            assert_matches(case, r, config)
        except AssertionError as e:
            failures.append(str(e))
    return failures
