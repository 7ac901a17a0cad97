"""A 1024-bit data output (``TmuConfig.output_tokens = 16``) and 4..8 memory ports, end to end on
the Verilator system: the tokens are the golden model's, bit for bit (``sw.runtime.golden``),
and the kernel's results PyTorch's (``Workload.check``), with a free-running sink under random
back-pressure and with the coupled core model consuming 16 tokens per cycle
(``CoreCostModel.tokens_per_cycle``). Inputs are fresh random EmbeddingBag batches (seed
printed). The ``simple`` memory has one port (the unit's others stay idle: the row issue block
and the reorder buffer still run at their configured widths); the HBM2 runs, which use all
ports, are ``slow``."""

from __future__ import annotations

import numpy as np
import pytest

from hw.tmu import TmuConfig
from sim.system import RtlJob, run_many_on_rtl
from sw.compiler import compile_mlir
from sw.runtime.execute import CoreCostModel, execute_tokens
from sw.runtime.golden import run_golden
from sw.runtime.image import bind_arguments, build_image
from sw.workloads import WORKLOADS
from tb.seeds import fresh_seed

EB = WORKLOADS["eb_sum"]
CORE16 = CoreCostModel(tokens_per_cycle=16)


def _copy(args):
    return [np.copy(a) if isinstance(a, np.ndarray) else a for a in args]


def _run_and_compare(config, memory, seed, size="small", core=CORE16):
    kernel = compile_mlir(EB.path.read_text(), filename=EB.example, opt_level=3)
    args = EB.make(size, seed)
    image = build_image(kernel, _copy(args))
    regs = bind_arguments(kernel, _copy(args), image)
    program = kernel.program.encode()
    gold = run_golden(program, image.data, regs, limits=kernel.limits)
    executed = execute_tokens(kernel, _copy(args), gold.data_tokens, gold.control_tokens, core)
    EB.check(_copy(args), executed.results)
    jobs = [RtlJob(program, image.data, regs, backpressure=0.5, seed=seed),
            RtlJob(program, image.data, regs, core=core,
                   core_schedule=executed.pops_per_control)]
    results = run_many_on_rtl(jobs, config=config, memory=memory, engine="cpp")
    for result in results:
        assert result.fault_code == 0
        assert result.data_tokens == gold.data_tokens
        assert result.control_tokens == gold.control_tokens
    core = results[1].core
    assert core is not None and core.finished and not core.schedule_mismatch
    return results


def test_1024_bit_output_with_8_ports_on_the_simple_memory():
    seed = fresh_seed("wide output simple")
    _run_and_compare(TmuConfig(output_tokens=16, memory_ports=8), "simple", seed)


@pytest.mark.slow
def test_2048_bit_output_with_8_ports_on_the_simple_memory():
    """32 tokens per beat: the packer places four 64-byte lines per cycle (``drain_lines`` 4);
    the core pops 32 tokens per cycle. Slow: its build takes ~10 minutes."""
    seed = fresh_seed("2048-bit output simple")
    _run_and_compare(TmuConfig(output_tokens=32, memory_ports=8), "simple", seed,
                     core=CoreCostModel(tokens_per_cycle=32))


@pytest.mark.slow
@pytest.mark.parametrize("ports", [4, 8])
def test_1024_bit_output_on_hbm2(ports):
    seed = fresh_seed(f"wide output HBM2 {ports}")
    _run_and_compare(TmuConfig(output_tokens=16, memory_ports=ports), "HBM2", seed)
