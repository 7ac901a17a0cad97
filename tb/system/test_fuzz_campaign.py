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

import random

import pytest

from hw.tmu import TmuConfig
from tb.fuzz import generators, mismatches, programs_per_generator
from tb.seeds import fresh_seed

pytestmark = [pytest.mark.rtl, pytest.mark.slow]

CFG = TmuConfig()
BATCH = 2000
GENERATORS = generators(CFG)


@pytest.mark.parametrize("generator", list(GENERATORS))
def test_fuzz_campaign(generator):
    n = programs_per_generator(10000)
    base = fresh_seed(f"{generator}: {n} programs, seeds base .. base + {n - 1}")
    rng = random.Random(base)
    failures = []
    done = 0
    for start in range(0, n, BATCH):
        count = min(BATCH, n - start)
        cases = GENERATORS[generator](base + start, count)
        failures += mismatches(cases, CFG, rng)
        done += len(cases)
    print(f"{generator}: {done} programs, {len(failures)} mismatches")
    assert not failures, (f"{len(failures)} of {done} programs differ from the golden model "
                          f"(EMBER_SEED={base}):\n" + "\n".join(failures[:20]))
