"""A sequence of programs per unit on the multi-unit system (``sim.multi.run_sequences_on_rtl``,
``sw.runtime.multi_unit.run_mapped``; ``run_sequence`` in ``sim/harness/sequence.h``): two units
on one HBM2 model (the cached K = 2 build of ``test_multi_system.py`` at ``TmuConfig.small()``:
~2 minutes to build where the default unit's K = 2 build takes 8-16), tiny EmbeddingBag tables
mapped to units, run back to back on each unit:

* every call's tokens equal the golden model's for its registers on the shared image, and its
  results a sequential float32 reference bit for bit (every table's output, none dropped);
* each unit's calls start one after the other (a call starts after the previous one was done),
  the first at the common start; a unit's cycles are its last START + that call's cycles, and
  the makespan is the largest of them; an idle unit has none;
* the shared memory's statistics cover the whole run: its reads are every program's line
  requests as the units counted them (their ``loads`` counters), every read is in the latency
  histogram and classified once at the row buffer, the useful bytes are the golden model's.
"""

from pathlib import Path

import numpy as np
import pytest

from hw.hbm_model.presets import get_preset
from hw.tmu import TmuConfig
from sim.multi import UnitJob, run_sequences_on_rtl
from sw.compiler import compile_mlir
from sw.runtime.golden import run_golden
from sw.runtime.isa import Limits
from sw.runtime.multi_unit import mapped_image, run_mapped
from tb.seeds import fresh_seed

pytestmark = pytest.mark.rtl

CFG = TmuConfig.small()  # the K = 2 model test_multi_system.py builds (64 Ki words)
MEMORY = "HBM2"
EXAMPLES = Path(__file__).resolve().parents[2] / "examples"


def _kernel():
    path = EXAMPLES / "embedding_bag_sum.mlir"
    return compile_mlir(path.read_text(), filename=path.name, opt_level=3,
                        limits=Limits.from_tmu_config(CFG))


def _call(rng, rows, dim, bags, max_pooling, min_pooling=0):
    """One EmbeddingBag-sum call's arguments: table, indices, offsets, zero output."""
    table = rng.standard_normal((rows, dim)).astype(np.float32)
    lengths = rng.integers(min_pooling, max_pooling + 1, bags)
    offsets = np.concatenate([[0], np.cumsum(lengths)]).astype(np.int64)
    indices = rng.integers(0, rows, int(offsets[-1])).astype(np.int64)
    return [table, indices, offsets, np.zeros((bags, dim), np.float32)]


def _reference(table, indices, offsets):
    """Each bag's rows added in index order from 0, in float32 (the kernel's order)."""
    out = np.zeros((len(offsets) - 1, table.shape[1]), np.float32)
    for b in range(len(offsets) - 1):
        for i in indices[offsets[b]:offsets[b + 1]]:
            out[b] = out[b] + table[i]
    return out


@pytest.mark.slow      # ~2 min; the file's other tests run the same sequences' machinery in CI
def test_sequences_per_unit_give_every_tables_output_and_the_makespan():
    seed = fresh_seed("multi-unit sequences")
    rng = np.random.default_rng(seed)
    kernel = _kernel()
    dims = [int(d) for d in rng.choice([16, 32, 64], 4)]
    # unit 0: three tables back to back; unit 1: one small table (uneven on purpose)
    unit_calls = [[_call(rng, rows=int(rng.integers(20, 200)), dim=d, bags=6, min_pooling=3,
                         max_pooling=5) for d in dims[:3]],
                  [_call(rng, rows=int(rng.integers(20, 200)), dim=dims[3], bags=2,
                         max_pooling=2)]]
    run = run_mapped(kernel, unit_calls, memory=MEMORY, config=CFG)
    image, regs = mapped_image(kernel, unit_calls)
    program = kernel.program.encode()
    assert [len(c) for c in run.calls] == [3, 1], seed
    for u, (unit_args, unit_regs, results) in enumerate(zip(unit_calls, regs, run.calls)):
        for k, (args, r, res) in enumerate(zip(unit_args, unit_regs, results)):
            g = run_golden(program, image.data, r, limits=kernel.limits)
            assert res.access.data_tokens == g.data_tokens, (seed, u, k)
            assert res.access.control_tokens == g.control_tokens, (seed, u, k)
            want = _reference(*args[:3])
            assert np.array_equal(args[3].view(np.uint32), want.view(np.uint32)), (seed, u, k)
    sys = run.system
    for u, (starts, runs) in enumerate(zip(sys.starts, sys.units)):
        assert starts[0] == 0, (seed, u)
        for k in range(1, len(runs)):
            assert starts[k] > starts[k - 1] + runs[k - 1].cycles, (seed, u, k)
        assert sys.unit_cycles[u] == starts[-1] + runs[-1].cycles > 0, (seed, u)
    assert run.makespan == max(sys.unit_cycles), seed
    # unit 0 runs three calls of 18-30 lookups, unit 1 one of at most 4: unit 0 is done last
    assert run.makespan == sys.unit_cycles[0] > sys.unit_cycles[1], seed


def test_memory_statistics_cover_the_whole_sequence():
    """Unit 0 runs three calls back to back while unit 1 runs one: the memory's statistics of the
    run are those of all four calls (they restart with the common START only). With statistics
    restarting at every START (the multi-unit system before) they held unit 0's last call only
    (``reads`` = that call's ``loads``) and this test failed."""
    seed = fresh_seed("multi-unit sequence memory statistics")
    rng = np.random.default_rng(seed)
    kernel = _kernel()
    unit_calls = [[_call(rng, rows=int(rng.integers(20, 200)), dim=int(rng.choice([16, 32, 64])),
                         bags=4, min_pooling=2, max_pooling=5) for _ in range(3)],
                  [_call(rng, rows=int(rng.integers(20, 200)), dim=32, bags=3, min_pooling=1,
                         max_pooling=4)]]
    run = run_mapped(kernel, unit_calls, memory=MEMORY, config=CFG)
    image, regs = mapped_image(kernel, unit_calls)
    program = kernel.program.encode()
    sys = run.system
    ms = sys.memory_stats
    runs = [r for unit in sys.units for r in unit]
    assert len(runs) == 4, seed
    # the reads: every call's line requests, counted by the units (not by the memory)
    loads = [r.stats["loads"] for r in runs]
    assert min(loads) > 0, seed
    assert ms["reads"] == sum(loads) and ms["writes"] == 0, (seed, ms["reads"], loads)
    assert ms["bytes_read"] == ms["reads"] * get_preset(MEMORY).access_bytes, seed
    assert sum(ms["read_latency_hist"]) == ms["reads"], seed
    assert ms["row_hits"] + ms["row_misses"] + ms["row_conflicts"] == ms["reads"], seed
    assert ms["cycles"] >= sys.makespan, seed
    # the useful bytes: per call the golden model's bytes loaded
    golden = [run_golden(program, image.data, r, limits=kernel.limits).bytes_loaded
              for unit_regs in regs for r in unit_regs]
    assert [r.stats["bytes_loaded"] for r in runs] == golden, seed
    summary = sys.memory_summary()
    assert summary["useful_bytes"] == sum(golden), seed
    assert summary["useful_bytes_per_cycle"] == sum(golden) / sys.makespan, seed
    assert summary["bytes_per_cycle"] == ms["bytes_read"] / sys.makespan, seed
    assert summary["reads"] == ms["reads"], seed
    assert summary["lat_mean"] == ms["read_latency_sum"] / ms["reads"], seed
    assert summary["row_hit_rate"] == ms["row_hits"] / ms["reads"], seed


def test_an_idle_unit_and_bad_arguments():
    seed = fresh_seed("multi-unit idle unit")
    rng = np.random.default_rng(seed)
    kernel = _kernel()
    args = _call(rng, rows=50, dim=16, bags=3, max_pooling=4)
    run = run_mapped(kernel, [[args], []], memory=MEMORY, config=CFG)
    assert run.system.units[1] == [] and run.unit_cycles[1] == 0, seed
    assert run.makespan == run.unit_cycles[0] == run.calls[0][0].access.cycles > 0, seed
    assert np.array_equal(args[3].view(np.uint32), _reference(*args[:3]).view(np.uint32)), seed
    job = UnitJob(b"\0" * 8, [])
    with pytest.raises(ValueError, match="sequences"):
        run_sequences_on_rtl([[job]], bytes(64), units=2)
    with pytest.raises(ValueError, match="sequences"):
        run_sequences_on_rtl([[], []], bytes(64), units=2)
    with pytest.raises(ValueError, match="core"):
        run_sequences_on_rtl([[UnitJob(b"\0" * 8, [], core=object(), core_schedule=[0])], []],
                             bytes(64), units=2)
    with pytest.raises(ValueError, match="unit_calls"):
        mapped_image(kernel, [[], []])
