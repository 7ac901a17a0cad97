"""Every -O level of every example kernel gives the results of -O0 and of PyTorch/NumPy.

Each workload of ``sw.workloads`` (EmbeddingBag sum/mean/max/weighted, SpMM over Cora, CSR SpMV,
TransE, block-sparse K/V gather) is compiled at -O0…-O3 for the vector configuration
(``configs/tmu_vector.json``: ISA v1 with 8 lanes, more stream slots) and run two ways:

* on the golden model (``sw.runtime.golden``, the ISA's reference semantics) through the
  runtime's driver, and
* on the DLC reference interpreter (``sw.compiler.backend.python.run_access``), which does not use
  the ISA encoding at all — the two must push the same tokens.

Results are checked against the workload's references (PyTorch, and the sequential NumPy
reference where the accumulation order is the kernel's) and against -O0 bit for bit.
"""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from sw.compiler import compile_mlir
from sw.compiler.backend.python import run_access
from sw.compiler.pipelines import _kernel_fn, run_pipeline
from sw.runtime.drivers import run_kernel
from sw.runtime.isa import Limits
from sw.workloads import WORKLOADS

# configs/tmu_vector.json with room for TransE's 9 streams in one layer (the kernels, not the
# resource mapping, are under test here; tests/compiler/test_backend_*.py cover the limits).
VECTOR = dataclasses.replace(Limits.from_file("configs/tmu_vector.json"), streams=32,
                             streams_per_layer=None, actions=32, args=32)
LEVELS = (0, 1, 2, 3)


def _copy(args):
    return [a.copy() if isinstance(a, np.ndarray) else a for a in args]


@pytest.fixture(scope="module")
def baseline():
    out = {}
    for name, w in WORKLOADS.items():
        args = w.make("small", 3)
        kernel = compile_mlir(w.path.read_text(), filename=w.example)
        out[name] = (args, run_kernel(kernel, _copy(args), "golden"))
    return out


@pytest.mark.parametrize("level", LEVELS)
@pytest.mark.parametrize("name", list(WORKLOADS))
def test_level_matches_o0_and_the_reference_on_golden(baseline, name, level):
    w = WORKLOADS[name]
    args, base = baseline[name]
    text = w.path.read_text()
    kernel = compile_mlir(text, filename=w.example, limits=VECTOR, opt_level=level)
    got = run_kernel(kernel, _copy(args), "golden", limits=VECTOR)
    w.check(_copy(args), got.results)
    for a, b in zip(got.results, base.results):
        np.testing.assert_array_equal(a, b)
    # the DLC reference interpreter pushes exactly the golden model's tokens
    dlc_fn = _kernel_fn(run_pipeline(text, until="dlc", opt_level=level, limits=VECTOR))
    data, control = run_access(dlc_fn, _copy(args))
    assert data == [t & (2**64 - 1) for t in got.access.data_tokens]
    assert control == got.access.control_tokens


def test_higher_levels_push_fewer_tokens(baseline):
    """Token counts of the running example fall with every level (docs/compiler.md table)."""
    w = WORKLOADS["eb_sum"] if "eb_sum" in WORKLOADS else next(iter(WORKLOADS.values()))
    args, _ = baseline[w.name]
    counts = []
    for level in LEVELS:
        kernel = compile_mlir(w.path.read_text(), limits=VECTOR, opt_level=level)
        r = run_kernel(kernel, _copy(args), "golden", limits=VECTOR)
        counts.append(len(r.access.data_tokens) + len(r.access.control_tokens))
    assert counts == sorted(counts, reverse=True) and len(set(counts)) == 4, counts


def test_cli_compiles_every_stage_at_o3_for_the_vector_configuration(capsys):
    from sw.cli import main
    for stage in ("scf", "slc", "slcv", "dlc", "tmu", "asm"):
        assert main(["compile", "examples/embedding_bag_sum.mlir", "--emit", stage, "-O3",
                     "--tmu-config", "tmu_vector"]) == 0
    out = capsys.readouterr().out
    assert "slcv.buf_stream" in out and "block n=a5" in out and "tmu.program version 1" in out


def test_cli_refuses_o1_on_the_v0_configuration(capsys):
    from sw.cli import main
    assert main(["compile", "examples/embedding_bag_sum.mlir", "-O1", "--tmu-config", "tmu_rtl"]) == 2
    err = capsys.readouterr().err
    assert "ISA version 1" in err and "lockstep" in err
