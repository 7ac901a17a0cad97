"""The compiled ``-O3`` SpMM (``examples/spmm_csr.mlir``) in the Amaranth simulator: the rate of the
traversal per nonzero (run-ahead engine pops fused into the next ``STREAM`` uop, ``val[j]`` on a
spare engine, contiguous index loads sharing a line request; ``docs/rtl.md`` §2.2-2.3) and the
faults of a fused pop (an engine stopped before a faulting ``col[j]``/``val[j]``), token for
token and fault for fault against the golden model. Random CSR matrices of fresh seeds."""

import dataclasses

import numpy as np
import pytest

from hw.tmu import TmuConfig
from sw.compiler import compile_mlir
from sw.runtime.golden import run_golden
from sw.runtime.image import bind_arguments, build_image
from sw.runtime.isa import Limits
from sw.workloads import WORKLOADS
from tb.golden_compare import assert_matches
from tb.programs import Case
from tb.seeds import fresh_seed
from tb.tmu.amaranth_bench import run_on_amaranth

# The small build with SpMM's 4 regions and an engine for each of rowptr[i], rowptr[i + 1],
# col[j] and val[j].
CONFIG = dataclasses.replace(TmuConfig.small(), regions=4, args=10, prefetchers=4)
LIMITS = Limits.from_tmu_config(CONFIG)


def _spmm_case(seed, rows, dim=4):
    """A random CSR matrix (rows of 0..7 nonzeros) times a random dense ``x``: (case, nnz)."""
    rng = np.random.default_rng(seed)
    lengths = rng.integers(0, 8, rows)
    rowptr = np.concatenate([[0], np.cumsum(lengths)]).astype(np.int64)
    ncols = 16
    col = rng.integers(0, ncols, int(rowptr[-1])).astype(np.int64)
    val = rng.standard_normal(len(col)).astype(np.float32)
    x = rng.standard_normal((ncols, dim)).astype(np.float32)
    args = [rowptr, col, val, x, np.array([rows], np.int64), np.zeros((rows, dim), np.float32)]
    w = WORKLOADS["spmm_cora"]
    k = compile_mlir(w.path.read_text(), filename=w.example, opt_level=3, limits=LIMITS)
    image = build_image(k, args)
    regs = bind_arguments(k, args, image)
    return Case(f"spmm_{seed}", k.program.encode(), image.data, regs), len(col)


def test_spmm_takes_two_cycles_per_nonzero():
    """No back-pressure: after decoding, the run takes at most 2 cycles per nonzero plus 12 per
    row and 40 of start-up and drain (the unit before fused pops took 5 per nonzero, and its
    index/value loads were one request per element)."""
    seed = fresh_seed("spmm rate")
    case, nnz = _spmm_case(seed, rows=24)
    r = run_on_amaranth(case.program, case.memory, case.args, config=CONFIG, seed=seed)
    assert_matches(case, r, CONFIG)
    run_cycles = r.stats["cycles"] - r.stats["decode_cycles"]
    assert run_cycles <= 2 * nnz + 12 * 24 + 40, (seed, run_cycles, nnz)
    # col[j] (8 bytes) and val[j] (4 bytes) share line requests: fewer requests than 3 per
    # nonzero (the rows are one request each at dim 4).
    assert r.stats["loads"] < 2 * nnz + 2 * 24, (seed, r.stats["loads"], nnz)


@pytest.mark.parametrize("cut", ["col", "val", "both"])
def test_fault_behind_a_fused_pop(cut):
    """``col`` or ``val`` (or both) ends before the last nonzero: the engine stops before the
    faulting address, the fused uop falls back to evaluating its pops in stream order, and the
    fault (code, address) and every token before it are the golden model's."""
    seed = fresh_seed(f"spmm fault {cut}")
    rng = np.random.default_rng(seed)
    case, nnz = _spmm_case(seed, rows=10)
    args = list(case.args)
    # -O3 SpMM: region 1 (col) is a3/a4, region 2 (val) a5/a6 (sw.cli compile -O3).
    if cut in ("col", "both"):
        args[4] = 8 * int(rng.integers(0, nnz))
    if cut in ("val", "both"):
        args[6] = 4 * int(rng.integers(0, nnz))
    case = Case(case.name, case.program, case.memory, args)
    gold = run_golden(case.program, case.memory, args, limits=LIMITS)
    r = run_on_amaranth(case.program, case.memory, args, config=CONFIG, backpressure=0.3,
                        seed=seed)
    assert_matches(case, r, CONFIG)
    assert gold.fault_code != 0, seed
