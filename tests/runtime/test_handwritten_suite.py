"""The hand-written access programs of every workload (sw.runtime.handwritten.suite) against the
workloads' references: bit for bit against PyTorch for EmbeddingBag and the gather, bit for bit
against the sequential NumPy references and within the stated bound (SpMV: the summation bound;
SpMM, TransE: rtol = atol = 1e-5) of PyTorch for the rest (``Workload.check``), on random inputs
with empty bags, rows and query blocks. Seeds are fresh each run and printed."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

from sw.runtime.drivers import run_kernel
from sw.runtime.handwritten.suite import HANDWRITTEN, handwritten_kernel
from sw.runtime.isa import Limits, Program
from sw.workloads import WORKLOADS, block_mask

LIMITS = Limits.from_file("configs/tmu_rtl.json")


def _lengths(rng, n, mean):
    """``n`` segment lengths, about a third of them 0, the first and last always 0."""
    lengths = rng.integers(1, 2 * mean + 1, n)
    lengths[rng.random(n) < 0.3] = 0
    lengths[0] = lengths[-1] = 0
    return lengths


def random_args(name: str, rng: np.random.Generator) -> list:
    """Arguments of workload ``name`` (its kernel's signature) with random sizes and values and
    empty segments (bags, CSR rows, query blocks)."""
    f32 = np.float32
    if name.startswith("eb_"):
        rows, dim, nbags = int(rng.integers(1, 40)), int(rng.integers(1, 20)), int(rng.integers(2, 12))
        lengths = _lengths(rng, nbags, 4)
        offsets = np.concatenate([[0], np.cumsum(lengths)]).astype(np.int64)
        indices = rng.integers(0, rows, offsets[-1]).astype(np.int64)
        args = [rng.standard_normal((rows, dim)).astype(f32), indices, offsets]
        if name == "eb_weighted":
            args.append(rng.random(len(indices)).astype(f32))
        return args + [np.zeros((nbags, dim), f32)]
    if name in ("spmm_cora", "spmv_csr"):
        nrows, ncols = int(rng.integers(2, 12)), int(rng.integers(1, 30))
        lengths = np.minimum(_lengths(rng, nrows, 5), ncols)
        rowptr = np.concatenate([[0], np.cumsum(lengths)]).astype(np.int64)
        col = np.concatenate([np.sort(rng.choice(ncols, n, replace=False)) for n in lengths]
                             + [np.zeros(0)]).astype(np.int64)
        val = rng.standard_normal(len(col)).astype(f32)
        if name == "spmv_csr":
            return [rowptr, col, val, rng.standard_normal(ncols).astype(f32), np.zeros(nrows, f32)]
        dim = int(rng.integers(1, 20))
        return [rowptr, col, val, rng.standard_normal((ncols, dim)).astype(f32),
                np.array([nrows], np.int64), np.zeros((nrows, dim), f32)]
    if name == "kg_transe":
        n, ents, rels, dim = (int(rng.integers(1, 20)), int(rng.integers(1, 30)),
                              int(rng.integers(1, 6)), int(rng.integers(1, 20)))
        tri = np.stack([rng.integers(0, ents, n), rng.integers(0, rels, n), rng.integers(0, ents, n)], 1)
        return [tri.reshape(-1).astype(np.int64), rng.standard_normal((ents, dim)).astype(f32),
                rng.standard_normal((rels, dim)).astype(f32), np.zeros(n, f32)]
    assert name == "spattn_gather"
    nq, nk, bs, dim = (int(rng.integers(2, 6)), int(rng.integers(1, 6)), int(rng.integers(1, 5)),
                       int(rng.integers(1, 9)))
    ptr, idx = block_mask(nq, nk, int(rng.integers(0, nk + 1)), seed=int(rng.integers(1 << 30)),
                          local=False)
    zeros = np.zeros((len(idx) * bs, dim), f32)
    return [ptr, idx, rng.standard_normal((nk * bs, dim)).astype(f32),
            rng.standard_normal((nk * bs, dim)).astype(f32), np.int64(bs), zeros, zeros.copy()]


def _copy(args):
    return [a.copy() if hasattr(a, "copy") else a for a in args]


@pytest.mark.parametrize("name", list(HANDWRITTEN))
def test_random_inputs_match_the_references(name):
    seed = int(np.random.SeedSequence().entropy % (1 << 32))
    print(f"seed {seed}")
    rng = np.random.default_rng(seed)
    w, kernel = WORKLOADS[name], handwritten_kernel(name)
    for _ in range(5):
        args = random_args(name, rng)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", UserWarning)
            result = run_kernel(kernel, _copy(args), "golden", limits=LIMITS)
            w.check(_copy(args), result.results)


@pytest.mark.parametrize("name", list(HANDWRITTEN))
def test_workload_inputs_match_the_references_with_fewer_tokens(name):
    """The workload's own small input; the hand-written program pushes no more tokens than the
    compiler's -O3 (it is the reference the compiler is measured against)."""
    from sw.compiler import compile_mlir
    w, kernel = WORKLOADS[name], handwritten_kernel(name)
    args = w.make("small", 0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        hand = run_kernel(kernel, _copy(args), "golden", limits=LIMITS)
        w.check(_copy(args), hand.results)
        compiled = run_kernel(compile_mlir(w.path.read_text(), filename=w.example, limits=LIMITS,
                                           opt_level=3), _copy(args), "golden", limits=LIMITS)
    hand_tokens = len(hand.access.data_tokens) + len(hand.access.control_tokens)
    assert hand_tokens <= len(compiled.access.data_tokens) + len(compiled.access.control_tokens)


def test_programs_fit_the_rtl_configuration():
    for name in HANDWRITTEN:
        program = handwritten_kernel(name).program
        program.validate(LIMITS)                    # ProgramError if it does not fit tmu_rtl
        assert Program.decode(program.encode(), LIMITS).encode() == program.encode(), name


def test_unknown_workload_is_named():
    with pytest.raises(ValueError, match="'nope'"):
        handwritten_kernel("nope")


@pytest.mark.slow
def test_rtl_tokens_equal_the_golden_model():
    """One RTL run per workload on its small input (all in one simulator process): tokens equal
    the golden model's one by one, results the references."""
    import importlib.util
    from pathlib import Path
    path = Path(__file__).resolve().parents[2] / "scripts" / "bench_handwritten.py"
    spec = importlib.util.spec_from_file_location("bench_handwritten", path)
    bench = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(bench)
    rows = bench.measure_handwritten(list(HANDWRITTEN), "small", LIMITS)
    assert [r["error"] for r in rows] == [""] * len(HANDWRITTEN)
    assert all(r["rtl_cycles"] > 0 for r in rows)
