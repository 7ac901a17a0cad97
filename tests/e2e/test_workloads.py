"""The five workload classes end to end (``sw.workloads``): each MLIR kernel in ``examples/`` compiled
at -O0, run on the golden model and on the RTL (ISA v0), checked
against PyTorch — bit for bit where the accumulation order is PyTorch's, else within ``rtol`` and
bit for bit against a sequential NumPy reference of the kernel's order (see ``sw/workloads.py``). The -O1..-O3 forms of the same workloads
are checked in ``tests/compiler/test_opt_levels.py``."""

from __future__ import annotations

import numpy as np
import pytest

from sw.compiler import compile_mlir
from sw.runtime.drivers import run_kernel
from sw.workloads import WORKLOADS, dlrm_trace, load_reuse_histogram

@pytest.fixture(scope="module")
def o0():
    return {name: compile_mlir(w.path.read_text(), filename=w.example) for name, w in WORKLOADS.items()}


@pytest.mark.parametrize("name", list(WORKLOADS))
def test_workload_on_golden_matches_pytorch(o0, name):
    w = WORKLOADS[name]
    for seed in (0, 1):
        args = w.make("small", seed)
        w.check(args, run_kernel(o0[name], args, "golden").results)


@pytest.mark.slow
@pytest.mark.parametrize("name", list(WORKLOADS))
def test_workload_full_size_on_golden(o0, name):
    w = WORKLOADS[name]
    args = w.make("full", 0)
    w.check(args, run_kernel(o0[name], args, "golden").results)


def test_o0_token_counts_per_lookup(o0):
    """Ember's -O0 form, counted by hand from the kernels: one operand per value a callback uses,
    one control token per callback firing."""
    w = WORKLOADS["kg_transe"]
    args = w.make("small", 0)
    r = run_kernel(o0["kg_transe"], args, "golden")
    n, dim = len(args[3]), args[1].shape[1]
    assert len(r.access.data_tokens) == n * dim * 4 + n        # eh, er, et, t per element; t at end
    assert len(r.access.control_tokens) == n * dim + n + 1      # iter, end, DONE
    w = WORKLOADS["spattn_gather"]
    args = w.make("small", 0)
    r = run_kernel(o0["spattn_gather"], args, "golden")
    elements = len(args[1]) * int(args[4]) * args[2].shape[1]
    assert len(r.access.data_tokens) == 4 * elements           # k, orow, d, v
    assert len(r.access.control_tokens) == elements + 1


def test_dlrm_trace_follows_the_reuse_histogram():
    lo, hi, share = load_reuse_histogram()
    assert share[0] == pytest.approx(0.342, abs=2e-3) and (lo[0], hi[0]) == (0, 1)
    indices, offsets = dlrm_trace(1_000_000, 1000, 100, seed=0)
    assert offsets[0] == 0 and offsets[-1] == len(indices) == 100_000
    assert np.all(np.diff(offsets) >= 0) and (np.diff(offsets) == 0).any()
    _, counts = np.unique(indices, return_counts=True)
    # share of distinct rows looked up once / at most 4 times: Meta's 0.342 and 0.635
    assert np.mean(counts == 1) == pytest.approx(0.342, abs=0.03)
    assert np.mean(counts <= 4) == pytest.approx(0.635, abs=0.03)


@pytest.mark.parametrize("bad, message", [
    (dict(num_rows=0, nbags=1, pooling=1), "num_rows must be >= 1, not 0"),
    (dict(num_rows=5, nbags=0, pooling=1), "nbags must be >= 1, not 0"),
    (dict(num_rows=5, nbags=1, pooling=-2), "pooling must be >= 0, not -2"),
])
def test_dlrm_trace_rejects_bad_sizes(bad, message):
    with pytest.raises(ValueError, match=message):
        dlrm_trace(**bad)




@pytest.mark.rtl
def test_all_workloads_on_rtl_match_golden_and_pytorch(o0):
    """Every workload (small inputs, -O0 = ISA v0) in one simulator process: the RTL's tokens equal
    the golden model's, and the results PyTorch's."""
    from sim.system import run_many_on_rtl
    from tb.golden_compare import compiled_job, replay_checked
    cases = [(name, w, compiled_job(o0[name], w.make("small", 2), backpressure=0.25, seed=n))
             for n, (name, w) in enumerate(WORKLOADS.items())]
    results = run_many_on_rtl([c.job for _, _, c in cases])
    for (name, w, compiled), rtl in zip(cases, results):
        run = replay_checked(compiled, rtl, name)
        w.check(compiled.args, run.results)
        assert run.cycles > 0
