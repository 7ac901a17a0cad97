"""The multi-unit system (``hw/multi_system.py``) on the RTL through the C++ harness, HBM2 memory:

* one unit is ``hw.system.System`` cycle for cycle (tokens, cycles, counters, memory statistics);
* two units on one EmbeddingBag call split by bags: each unit's tokens equal the golden model's
  for its slice, the results equal ``torch.nn.functional.embedding_bag`` bit for bit;
* a unit that faults stops alone; the other finishes its slice;
* argument checks of ``sim.system.run_multi_on_rtl``.

The fast suite runs two units of ``TmuConfig.small()`` (a ~2-minute Verilator build; the arbiter,
the shared memory and the harness do not depend on the unit's sizes); the default unit's K = 2
build (8-16 minutes on two cores) runs the EmbeddingBag test under ``-m slow`` only.
"""

from pathlib import Path

import numpy as np
import pytest
import torch

from hw.tmu import TmuConfig
from sim.system import UnitJob, run_multi_on_rtl, run_on_rtl
from sw.compiler import compile_mlir
from sw.runtime.golden import run_golden
from sw.runtime.isa import Limits
from sw.runtime.isa import Fault
from sw.runtime.multi_unit import run_partitioned
from sw.runtime.partition import shared_image, split_embedding_bag
from tb.programs import embedding_bag_case, random_case
from tb.golden_compare import comparable
from tb.seeds import fresh_seed, seed_range

pytestmark = pytest.mark.rtl

CFG = TmuConfig.small()
DEFAULT = TmuConfig()
MEMORY = "HBM2"
EXAMPLES = Path(__file__).resolve().parents[2] / "examples"
def _eb_kernel(config=CFG):
    path = EXAMPLES / "embedding_bag_sum.mlir"
    return compile_mlir(path.read_text(), filename=path.name, opt_level=3,
                        limits=Limits.from_tmu_config(config))


@pytest.mark.slow      # its own K = 1 HBM2 build: 5-25 minutes (CI budget); K = 2 runs in the fast suite
def test_one_unit_is_system_cycle_for_cycle():
    base = fresh_seed("random_case")
    cases = [embedding_bag_case("eb_sum", rows=40, dim=16, lengths=[3, 1, 0, 7, 2])]
    cases += [random_case(s) for s in seed_range(base, 2)]
    for n, case in enumerate(cases):
        for backpressure in (0.0, 0.3):
            single = run_on_rtl(case.program, case.memory, case.args, config=DEFAULT,
                                memory=MEMORY, engine="cpp", backpressure=backpressure, seed=n)
            multi = run_multi_on_rtl([UnitJob(case.program, case.args, backpressure=backpressure,
                                              seed=n)], case.memory, units=1, memory=MEMORY,
                                     config=DEFAULT)
            assert multi.makespan == multi.units[0].cycles
            assert comparable(multi.units[0]) == comparable(single), (case.name, backpressure)


def _eb_call(rng, rows, dim, bags, max_pooling):
    """An EmbeddingBag call; the image stays under 512 KiB (the cached 64 Ki-word build)."""
    table = rng.standard_normal((rows, dim)).astype(np.float32)
    lengths = rng.integers(0, max_pooling + 1, bags)
    offsets = np.concatenate([[0], np.cumsum(lengths)]).astype(np.int64)
    indices = rng.integers(0, rows, offsets[-1]).astype(np.int64)
    return table, indices, offsets


@pytest.mark.parametrize("config", [CFG, pytest.param(DEFAULT, marks=pytest.mark.slow)],
                         ids=["small", "default"])
def test_two_units_embedding_bag_equal_golden_and_torch(config):
    seed = fresh_seed("multi-unit EmbeddingBag")
    rng = np.random.default_rng(seed)
    table, indices, offsets = _eb_call(rng, rows=1500, dim=64, bags=40, max_pooling=12)
    kernel = _eb_kernel(config)
    out = np.zeros((len(offsets) - 1, table.shape[1]), np.float32)
    parts = split_embedding_bag(indices, offsets, units=2)
    unit_args = [[table, p.indices, p.offsets, out[p.start:p.stop]] for p in parts]
    run = run_partitioned(kernel, unit_args, shared=[0], memory=MEMORY, config=config,
                          backpressure=0.2, seed=seed)
    # each unit's tokens: the golden model's for its slice, from the same image and registers
    image, regs = shared_image(kernel, unit_args, shared=[0])
    program = kernel.program.encode()
    for u, (unit, r) in enumerate(zip(run.units, regs)):
        g = run_golden(program, image.data, r, limits=kernel.limits)
        assert unit.access.data_tokens == g.data_tokens, (seed, u)
        assert unit.access.control_tokens == g.control_tokens, (seed, u)
        assert unit.access.cycles > 0
    assert run.makespan == max(u.access.cycles for u in run.units)
    want = torch.nn.functional.embedding_bag(torch.from_numpy(indices), torch.from_numpy(table),
                                             torch.from_numpy(offsets[:-1]), mode="sum").numpy()
    assert np.array_equal(out.view(np.uint32), want.view(np.uint32)), seed
    # both units loaded their rows through the one memory: its reads (restarted with the
    # common START) are the line requests the units counted
    assert run.system.memory_stats["reads"] == sum(u.access.stats["loads"] for u in run.units)


def test_a_faulting_unit_stops_alone():
    seed = fresh_seed("multi-unit fault")
    rng = np.random.default_rng(seed)
    table, indices, offsets = _eb_call(rng, rows=500, dim=16, bags=10, max_pooling=6)
    kernel = _eb_kernel()
    out = np.zeros((len(offsets) - 1, table.shape[1]), np.float32)
    indices[-1] = 0                                      # unit 1's last lookup, patched below
    parts = split_embedding_bag(indices, offsets, units=2)
    unit_args = [[table, p.indices, p.offsets, out[p.start:p.stop]] for p in parts]
    image, regs = shared_image(kernel, unit_args, shared=[0])
    # unit 1 reads past the table (in the image: the host-side checks refuse it as an argument)
    data = bytearray(image.data)
    place = next(p for p in image.placements.values() if p.name == "indices[unit 1]")
    data[place.base + place.nbytes - 8:place.base + place.nbytes] = \
        (table.shape[0] + 5).to_bytes(8, "little")
    data = bytes(data)
    program = kernel.program.encode()
    res = run_multi_on_rtl([UnitJob(program, r) for r in regs], data, units=2,
                           memory=MEMORY, config=CFG)
    g0 = run_golden(program, data, regs[0], limits=kernel.limits)
    assert res.units[0].fault_code == 0 and res.units[0].data_tokens == g0.data_tokens, seed
    assert res.units[1].fault_code == Fault.ADDR_RANGE, seed


def test_bad_arguments():
    job = UnitJob(b"\0" * 8, [])
    with pytest.raises(ValueError, match="units"):
        run_multi_on_rtl([job] * 3, bytes(64), units=3)
    with pytest.raises(ValueError, match="units"):
        run_multi_on_rtl([job], bytes(64), units=True)
    with pytest.raises(ValueError, match="jobs_per_unit"):
        run_multi_on_rtl([job], bytes(64), units=2)
    with pytest.raises(ValueError, match="engine"):
        run_multi_on_rtl([job, job], bytes(64), units=2, engine="cocotb")
    with pytest.raises(ValueError, match="memory length"):
        run_multi_on_rtl([job, job], bytes(60), units=2)
