"""A load as a uop's second action (``Uop.act2_load``, ``docs/rtl.md`` §9.5 A): SpMV's
``val[j]`` (immediate, popped from its engine) and ``x[col[j]]`` (a lazy load) in one uop.

* Structure: the compiled ``-O3`` SpMV's nonzero loop is one ``STREAM`` uop (``x[col[j]]``'s
  address, the engine pops, ``+act val[j]``, ``+act2 x[col[j]]`` as a load, ``+NEXT``).
* Tokens and faults, token for token against the golden model (``sw/runtime/golden.py``), on
  random CSR matrices with random back-pressure: a ``col[j]`` past ``x`` (``x[col[j]]`` out of
  its region), ``col`` ending before the last nonzero (the engine stops: the fused uop falls
  back to evaluating its pops), and a reorder buffer of 8 entries under heavy back-pressure (the
  uop waits, writing nothing, until both entries are free; the run counts such cycles).
"""

import dataclasses

import numpy as np
import pytest

from hw.tmu.layouts import UopKind
from sw.compiler import compile_mlir
from sw.runtime.golden import run_golden
from sw.runtime.image import bind_arguments, build_image
from sw.runtime.isa import Program
from sw.workloads import WORKLOADS
from tb.golden_compare import assert_matches
from tb.programs import Case
from tb.seeds import fresh_seed
from tb.tmu.amaranth_bench import run_on_amaranth
from tb.tmu.builder_bench import layer_body_uops
from tb.tmu.test_spmm_rate import CONFIG, LIMITS


def _spmv_case(rng, rows=8, ncols=16, bad_col=False):
    """The compiled ``-O3`` SpMV over a random CSR matrix (rows of 0..6 nonzeros): (case, nnz).
    ``bad_col``: one ``col[j]`` is ``ncols`` or more (``x[col[j]]`` outside ``x``)."""
    lengths = rng.integers(0, 7, rows)
    lengths[rng.integers(0, rows)] += 1
    rowptr = np.concatenate([[0], np.cumsum(lengths)]).astype(np.int64)
    nnz = int(rowptr[-1])
    col = rng.integers(0, ncols, nnz).astype(np.int64)
    if bad_col:
        col[rng.integers(0, nnz)] = ncols + int(rng.integers(0, 4))
    val = rng.standard_normal(nnz).astype(np.float32)
    x = rng.standard_normal(ncols).astype(np.float32)
    args = [rowptr, col, val, x, np.zeros(rows, np.float32)]
    w = WORKLOADS["spmv_csr"]
    k = compile_mlir(w.path.read_text(), filename=w.example, opt_level=3, limits=LIMITS)
    image = build_image(k, args)
    regs = bind_arguments(k, args, image)
    return Case("spmv_O3", k.program.encode(), image.data, regs), nnz


def test_spmv_is_one_uop_per_nonzero():
    """The layer-1 body of the compiled -O3 SpMV: one STREAM uop carrying both actions, the
    second a load."""
    seed = fresh_seed("fused load structure")
    case, _ = _spmv_case(np.random.default_rng(seed))
    prog = Program.decode(case.program, LIMITS)
    body = layer_body_uops(CONFIG, case, LIMITS)
    assert len(body) == 1, (seed, body)
    [u] = body
    assert (u.kind, u.fuse_act, u.fuse_act2, u.act2_load, u.fuse_next) == (
        UopKind.STREAM, 1, 1, 1, 1), seed
    second = prog.actions[u.act2_id].source
    assert second.value == u.id, seed          # the load of the stream the uop evaluates


@pytest.mark.parametrize("max_inflight", [8, 16])
def test_spmv_fused_load_matches_golden(max_inflight):
    """Compiled -O3 SpMV, token for token and the fault against the golden model: no fault,
    ``x[col[j]]`` out of its region, ``col`` cut before the last nonzero; random back-pressure;
    a reorder buffer of ``max_inflight`` entries (8: engines 2 deep, and it fills)."""
    seed = fresh_seed(f"fused load golden {max_inflight}")
    rng = np.random.default_rng(seed)
    config = dataclasses.replace(CONFIG, max_inflight=max_inflight,
                                 prefetch_depth=min(CONFIG.prefetch_depth, max_inflight // 4))
    full = 0
    for variant in ("plain", "bad_col", "cut_col", "plain"):
        case, nnz = _spmv_case(rng, bad_col=variant == "bad_col")
        args = list(case.args)
        if variant == "cut_col":
            # -O3 SpMV: region 1 (col) is a3/a4 (sw.cli compile -O3).
            args[4] = 8 * int(rng.integers(0, nnz))
            case = Case(case.name, case.program, case.memory, args)
        gold = run_golden(case.program, case.memory, args, limits=LIMITS)
        assert (gold.fault_code != 0) == (variant != "plain"), (seed, variant)
        pressure = 0.8 if max_inflight == 8 else float(rng.choice([0.0, 0.3, 0.6]))
        r = run_on_amaranth(case.program, case.memory, args, config=config,
                            backpressure=pressure, seed=seed)
        assert_matches(dataclasses.replace(case, name=f"{variant}_{seed}"), r, config)
        full += r.stats["rob_full_cycles"]
    if max_inflight == 8:
        assert full > 0, seed           # the full reorder buffer was exercised
