"""A chained index on the default RTL unit: ``examples/hashed_gather.mlir`` (``ids[i]`` ->
multiplicative hash -> ``remap[h]`` -> a row) at -O3, whose ``remap[h]`` the chain engine fetches
ahead (``docs/rtl.md`` §2.3, "Chain engines").

The tokens must equal the golden model's and the result NumPy's gather (the kernel only copies
rows: bit for bit). The engine's effect is checked as the unit's own counters: without it every
lookup waits a whole memory latency (32 cycles on the ``simple`` memory) for ``remap[h]``; with
it the traversal waits fewer than 2 cycles per lookup in all (80 for 64 lookups on 2026-12-01),
and runs 2 uops per lookup (the row with its control token, and ``row << logd`` popping
``ids[i]`` and ``remap[h]``): the hash's ``MUL`` and ``SHR`` have no uop (``docs/rtl.md`` §9.5
C). Evaluating them again would cost 2 uops and, the ``MUL`` waiting for its registered
product, 2 cycles per lookup: the 36 % that ``examples/hashed_gather.mlir`` lost unseen from
session 39 to 43 (``docs/performance.md``, "``hashed_gather`` re-measured").
"""

from __future__ import annotations

import numpy as np
import pytest

from sw.compiler import compile_mlir
from sw.workloads import EXAMPLES

pytestmark = pytest.mark.rtl


def _inputs(rng, n=64, logb=6, logd=4, rows=50):
    table = rng.standard_normal(rows << logd).astype(np.float32)
    remap = rng.integers(0, rows, 1 << logb).astype(np.int64)
    ids = rng.integers(-2**63, 2**63 - 1, n, dtype=np.int64)
    h = (ids.astype(np.uint64) * np.uint64(0x9E3779B97F4A7C15)) >> np.uint64(64 - logb)
    expected = table.reshape(rows, 1 << logd)[remap[h.astype(np.int64)]]
    return [table, remap, ids, logb, logd, np.zeros((n, 1 << logd), np.float32)], expected


def _run_on_default_unit(kernel, args):
    """Run ``kernel`` on ``args`` on the default RTL unit (the core stalling 20 % of the
    cycles); its tokens must equal the golden model's. Returns (the RTL run, the kernel's run
    replayed from those tokens)."""
    from sim.system import run_many_on_rtl
    from tb.golden_compare import compiled_job, replay_checked
    compiled = compiled_job(kernel, args, backpressure=0.2, seed=1)
    rtl, = run_many_on_rtl([compiled.job])
    return rtl, replay_checked(compiled, rtl)


def test_hashed_gather_on_the_default_unit():
    from tb.seeds import fresh_seed
    rng = np.random.default_rng(fresh_seed("hashed_gather on the RTL"))
    args, expected = _inputs(rng)
    kernel = compile_mlir((EXAMPLES / "hashed_gather.mlir").read_text(), opt_level=3)
    rtl, run = _run_on_default_unit(kernel, args)
    np.testing.assert_array_equal(run.results[0], expected)
    lookups = len(args[2])
    assert rtl.stats["block_wait_cycles"] < lookups * 2, rtl.stats
    assert rtl.stats["uops"] <= lookups * 2 + 8, rtl.stats


def test_csr_of_csr_fetches_every_index_ahead_on_the_default_unit():
    """``examples/csr_of_csr.mlir`` (groups -> ``gptr`` -> sessions -> ``sptr`` -> items -> a row)
    has five blocking affine index streams; the default unit has an engine for each
    (``TmuConfig.prefetchers = 5``), so the traversal waits for none of them per group or
    session: the run waits for the chain's first elements (~180 cycles: the first ``gptr``,
    ``sptr``, ``items`` and row, each a memory latency of 32+ cycles here) and then less than a
    quarter of a latency per group. With four engines ``gptr[g + 1]`` is loaded by the
    traversal and every group waits a whole latency: ~40 cycles per group besides the start
    (554-656 wait cycles for 11-14 groups on 2026-12-01; the input has at least 6 groups:
    ``sw/chained_workloads.py``) (``docs/performance.md``, "Dependent index chains")."""
    from tb.seeds import fresh_seed
    from sw.workloads import BENCH_WORKLOADS
    w = BENCH_WORKLOADS["csr_of_csr"]
    args = w.make("small", fresh_seed("csr_of_csr on the RTL"))
    rtl, run = _run_on_default_unit(compile_mlir(w.path.read_text(), opt_level=3), args)
    w.check([a.copy() for a in args], run.results)
    groups = len(args[1]) - 1
    assert groups >= 6
    assert rtl.stats["block_wait_cycles"] < 7 * 32 + 8 * groups, (groups, rtl.stats)
