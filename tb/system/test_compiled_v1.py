"""The compiler's -O0..-O3 output for every workload of ``sw.workloads`` (the ``examples/*.mlir``
kernels) run on the RTL of ``configs/tmu_rtl.json``: the RTL's tokens equal the golden model's
(same configuration), and the results equal PyTorch's (``Workload.check``). Levels whose program
needs an ISA feature the configuration lacks are refused by the compiler (``CompileError``) and
skipped here; every level that compiles runs. One simulator process for all of them."""

from __future__ import annotations

import pytest

from hw.tmu import TmuConfig
from sw.compiler import compile_mlir
from sw.compiler.errors import CompileError
from sw.runtime.isa import Limits
from sw.workloads import WORKLOADS
from sim.system import run_many_on_rtl
from tb.golden_compare import compiled_job, replay_checked

pytestmark = pytest.mark.rtl

CFG = TmuConfig()




def test_config_file_is_the_default_build():
    assert Limits.from_file("tmu_rtl").to_dict() == {**Limits.from_tmu_config(CFG).to_dict(), "name": "tmu_rtl"}


def test_every_level_of_every_workload_on_rtl():
    limits = Limits.from_file("tmu_rtl")
    cases, refused = [], []
    for name, w in WORKLOADS.items():
        text = w.path.read_text()
        for level in range(4):
            try:
                k = compile_mlir(text, filename=w.example, opt_level=level, limits=limits)
            except CompileError as e:
                refused.append((name, level, str(e)))
                continue
            cases.append((name, level, w, compiled_job(k, w.make("small", 3), backpressure=0.25,
                                                       seed=len(cases), limits=limits)))
    # A refusal names the missing ISA feature; the embedding bag runs at -O0 and at -O3.
    assert all("feature" in msg for _, _, msg in refused), refused
    assert {("eb_sum", 0), ("eb_sum", 3)} <= {(n, lv) for n, lv, *_ in cases}
    results = run_many_on_rtl([c.job for *_, c in cases], config=CFG)
    for (name, level, w, compiled), rtl in zip(cases, results):
        run = replay_checked(compiled, rtl, f"{name} -O{level}")
        w.check(compiled.args, run.results)
