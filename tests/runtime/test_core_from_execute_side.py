"""The coupled core made from the execute side (sw/runtime/coupled_core.py) and its use by
``run_kernel(core=...)``.

Independent references: the workloads' PyTorch references for the trace's results; the
execute side run directly (``sim.execute_trace``) for the cycles and paces the core is made of;
the fitted rate's definition (its estimate within half a cycle per callback of the run's cycles).
"""

from __future__ import annotations

import warnings

import numpy as np
import pytest

from hw.hbm_model.presets import get_preset
from sim.core_only import CoreConfig
from sim.execute_trace import callback_pace, run_execute_side
from sw.compiler.pipelines import run_pipeline
from sw.runtime.coupled_core import CORE_MODES, core_from_execute_side
from sw.runtime.drivers import run_kernel
from sw.runtime.execute import CoreCostModel, CoreReplay
from sw.workloads import WORKLOADS

warnings.simplefilter("ignore", UserWarning)


def _golden(name, level, seed):
    w = WORKLOADS[name]
    comp = run_pipeline(w.path.read_text(), opt_level=level)
    run = run_kernel(comp.kernel, w.make("small", seed), "golden")
    return w, comp, run


@pytest.mark.parametrize("name,level", [("eb_sum", 3), ("spmm_cora", 0), ("kg_transe", 1)])
def test_the_replayed_core_is_the_execute_side_run(name, level, seed):
    """Replay: the paces of the execute side run directly, its cycles and instruction count,
    results equal to PyTorch's; the inputs are not written."""
    w, comp, run = _golden(name, level, seed)
    args = w.make("small", seed)
    before = [np.array(a, copy=True) for a in args]
    pops = run.execute.pops_per_control[:-1]
    made = core_from_execute_side(comp.dlc, args, run.access.data_tokens,
                                  run.access.control_tokens, pops, "HBM2")
    for a, b in zip(args, before):
        np.testing.assert_array_equal(a, b)
    w.check(w.make("small", seed), list(made.results))
    trace, result = run_execute_side(comp.dlc, w.make("small", seed), run.access.data_tokens,
                                     run.access.control_tokens, get_preset("HBM2"))
    assert isinstance(made.cost, CoreReplay) and made.mode == "replay"
    assert made.cost.pace == callback_pace(trace, result)
    assert (made.execute_cycles, made.instructions) == (result.cycles, len(trace))
    assert made.cost.window == CoreConfig().rob_entries and made.cost.buffer_beats == 2
    assert f"replays its {len(pops)} callbacks" in made.describe(pops)


def test_the_fitted_core_is_nearest_the_run(seed):
    """Fitted: a flat model at the given width whose estimate is within half a cycle per
    callback of the run's cycles (or at its floor of one cycle per callback)."""
    w, comp, run = _golden("spmm_cora", 3, seed)
    pops = run.execute.pops_per_control[:-1]
    made = core_from_execute_side(comp.dlc, w.make("small", seed), run.access.data_tokens,
                                  run.access.control_tokens, pops, "simple", mode="fitted",
                                  tokens_per_cycle=16, buffer_beats=3)
    assert isinstance(made.cost, CoreCostModel)
    assert (made.cost.tokens_per_cycle, made.cost.buffer_beats) == (16, 3)
    off = made.cost.cycles(pops) - made.execute_cycles
    assert abs(off) <= len(pops) / 2 or (made.cost.cycles_per_control == 1 and off > 0)
    assert "fitted to it" in made.describe(pops)


@pytest.mark.parametrize("kwargs, names", [
    (dict(mode="flat"), "'flat'"),
    (dict(memory="DDR9"), "'DDR9'"),
])
def test_bad_arguments_are_named(kwargs, names, seed):
    w, comp, run = _golden("eb_sum", 3, seed)
    call = dict(memory="HBM2") | kwargs
    with pytest.raises(ValueError, match=names):
        core_from_execute_side(comp.dlc, w.make("small", seed), run.access.data_tokens,
                               run.access.control_tokens, [], **call)
    assert CORE_MODES == ("replay", "fitted")


@pytest.mark.parametrize("options, names", [
    (dict(core="replay"), "coupled=False"),                          # not coupled
    (dict(core="replay", coupled=True), "dlc=None"),                 # no DLC module
    (dict(core="model", coupled=True, dlc=object()), "'model'"),
    (dict(core="fitted", coupled=True, dlc=object(), cost=CoreCostModel()), "not both"),
])
def test_run_kernel_refuses_a_core_it_cannot_make(options, names, seed):
    """Checked before anything runs (no RTL build): the message names the argument."""
    w, comp, _ = _golden("eb_sum", 3, seed)
    with pytest.raises(ValueError, match=names):
        run_kernel(comp.kernel, w.make("small", seed), "rtl", **options)


def test_a_trace_that_computes_otherwise_stops_the_run(monkeypatch, seed):
    """The execute side's trace must compute the compute loop's results: a trace that does not
    (here one result perturbed) raises ``ExecuteError`` before the RTL runs."""
    import dataclasses

    import sw.runtime.coupled_core as coupled_core
    from sw.runtime.execute import ExecuteError
    real = coupled_core.core_from_execute_side

    def perturbed(*a, **k):
        made = real(*a, **k)
        first = np.array(made.results[0], copy=True)
        first.flat[0] += 1
        return dataclasses.replace(made, results=(first, *made.results[1:]))

    monkeypatch.setattr(coupled_core, "core_from_execute_side", perturbed)
    w, comp, _ = _golden("eb_sum", 3, seed)
    with pytest.raises(ExecuteError, match="computed another result 0"):
        run_kernel(comp.kernel, w.make("small", seed), "rtl", coupled=True, core="replay",
                   dlc=comp.dlc)


def test_an_execute_side_the_trace_cannot_run_is_named(monkeypatch, seed):
    import sim.execute_trace

    def refuse(*a, **k):
        raise ValueError("an operation outside the trace: foo.bar")

    monkeypatch.setattr(sim.execute_trace, "run_execute_side", refuse)
    w, comp, run = _golden("eb_sum", 3, seed)
    with pytest.raises(ValueError, match="mode='fitted'.*foo.bar.*flat CoreCostModel"):
        core_from_execute_side(comp.dlc, w.make("small", seed), run.access.data_tokens,
                               run.access.control_tokens, [], "HBM2", mode="fitted")
