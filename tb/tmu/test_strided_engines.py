"""Run-ahead engines on strided elements in the whole unit (``docs/rtl.md`` §2.3, "Strided
lines"): the compiled ``-O3`` TransE reads ``triples[3t + k]`` through three engines whose
8-byte elements lie 24 bytes apart, so on 64-byte lines each engine collects two or three of
them into one request.

* Tokens and faults, token for token against the golden model (``sw/runtime/golden.py``), on
  random triples at random embedding widths, under random back-pressure on the output queues:
  no fault, and an entity index past the table (its row's address faults ``ADDR_RANGE``).
* ``bytes_loaded`` (the useful bytes of the line requests) equals the golden model's, so a
  collected request counts each of its elements once; ``loads`` equals the line requests
  counted independently from the triples' and rows' addresses (the index lines once per
  engine and line, not once per element).

The unit-level tests of the collection (random sizes, steps, strides, ranges, region cuts,
continuations) are in ``tb/tmu/test_prefetch.py``.
"""

import dataclasses

import numpy as np
import pytest

from hw.tmu.config import TmuConfig
from hw.tmu.isa import FaultCode
from sw.runtime.golden import run_golden
from sw.runtime.isa import Limits
from tb.golden_compare import assert_matches
from tb.programs import Case
from tb.seeds import fresh_seed
from tb.tmu.amaranth_bench import run_on_amaranth
from tb.tmu.transe_programs import transe_o3

# The small build with room for TransE's 11 streams and 3 run-ahead engines, on 64-byte lines
# (the default's): 24 bytes between elements is below a line.
CONFIG = dataclasses.replace(TmuConfig.small(), streams=12, regions=4, args=10, prefetchers=4,
                             line_bytes=64)
LIMITS = Limits.from_tmu_config(CONFIG)


def _lines(start, size, line=64):
    """Line addresses ``[start, start + size)`` touches."""
    return range(start // line, (start + size - 1) // line + 1)


@pytest.mark.parametrize("variant", ["plain", "bad_entity"])
def test_strided_engines_match_golden(variant):
    seed = fresh_seed(f"strided engines, {variant}")
    rng = np.random.default_rng(seed)
    dim = int(rng.choice([4, 8, 24]))
    kernel, args, image, regs = transe_o3(seed, dim, LIMITS, bad_entity=variant == "bad_entity")
    program = kernel.program.encode()
    case = Case(f"transe_O3_d{dim}_{variant}_{seed}", program, image.data, regs)
    gold = run_golden(program, image.data, regs, limits=LIMITS)
    assert (gold.fault_code == FaultCode.ADDR_RANGE.value) == (variant == "bad_entity"), \
        (seed, gold.fault_code)
    r = run_on_amaranth(program, image.data, regs, config=CONFIG,
                        backpressure=float(rng.choice([0.0, 0.4, 0.8])), seed=seed)
    assert_matches(case, r, CONFIG)
    if variant == "bad_entity":
        return
    assert r.stats["bytes_loaded"] == gold.bytes_loaded, (seed, r.stats, gold.bytes_loaded)
    # Line requests, counted from the addresses: each engine's index lines (its elements in
    # order, one request per run of elements in one line) and each row's lines.
    triples = args[0]
    base = {name: image.placements[i].base
            for i, name in enumerate(("triples", "entity", "relation"))}
    n = len(triples) // 3
    index_lines = sum(len({(base["triples"] + 8 * (3 * t + k)) // 64 for t in range(n)})
                      for k in range(3))
    row = 4 * dim
    row_lines = sum(len(_lines(base["entity"] + row * int(triples[3 * t]), row))
                    + len(_lines(base["relation"] + row * int(triples[3 * t + 1]), row))
                    + len(_lines(base["entity"] + row * int(triples[3 * t + 2]), row))
                    for t in range(n))
    assert r.stats["loads"] == index_lines + row_lines, \
        (seed, r.stats["loads"], index_lines, row_lines)
    assert index_lines < 3 * n, seed
