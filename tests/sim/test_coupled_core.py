"""The execute side coupled to the access unit (issue 11): the core's consumption schedule
(``ExecuteResult.pops_per_control``), its rate model (``CoreCostModel``) and the simulated core
that consumes the output queues in the same Verilator simulation (``RtlJob.core``,
``CoreModel`` in ``sim/harness/core_model.h``; ``run_kernel(..., "rtl", coupled=True)``).

References: the golden model (``sw.runtime.golden``) for the tokens, the schedule counted from the
kernel by hand (-O0 EmbeddingBag: each callback pops its bag id, column and value), and the rate
model's closed form for the core's own cycles. Inputs are fresh random bags each run (seed printed).
"""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from sw.compiler import compile_mlir
from sw.runtime.drivers import run_kernel
from sw.runtime.execute import CoreCostModel, CoreReplay, execute_tokens
from sw.runtime.golden import run_golden
from sw.runtime.image import bind_arguments, build_image
from sw.runtime.isa import DONE_TOKEN
from sw.workloads import WORKLOADS
from tb.seeds import fresh_seed

EB = WORKLOADS["eb_sum"]


@pytest.fixture(scope="module")
def kernels():
    return {level: compile_mlir(EB.path.read_text(), filename=EB.example, opt_level=level)
            for level in (0, 3)}


@pytest.fixture(scope="module")
def seed():
    return fresh_seed("test_coupled_core")


def _prepare(kernel, args, cost=None):
    """Program, image, registers, golden tokens and the execute result over them."""
    image = build_image(kernel, args)
    regs = bind_arguments(kernel, args, image)
    program = kernel.program.encode()
    gold = run_golden(program, image.data, regs, limits=kernel.limits)
    executed = execute_tokens(kernel, [np.copy(a) if isinstance(a, np.ndarray) else a for a in args],
                              gold.data_tokens, gold.control_tokens, cost)
    return program, image, regs, gold, executed


def test_pops_per_control_is_the_schedule(kernels, seed):
    args = EB.make("small", seed)
    elements = len(args[1]) * args[0].shape[1]
    for level, kernel in kernels.items():
        _, _, _, gold, ex = _prepare(kernel, args)
        pops = ex.pops_per_control
        assert len(pops) == len(gold.control_tokens) and gold.control_tokens[-1] == DONE_TOKEN
        assert pops[-1] == 0
        assert sum(pops) == ex.operands == len(gold.data_tokens)
        # the estimate is the rate model's closed form over the callbacks (DONE runs none)
        assert ex.core_cycles == sum(6 + -(-k // 8) for k in pops[:-1])
        if level == 0:            # counted from the kernel: bag id, column, value per element
            assert pops[:-1] == [3] * elements
    # a wider vector needs fewer cycles per callback only when it pops more than 8 operands
    _, _, _, _, ex = _prepare(kernels[3], args, CoreCostModel(tokens_per_cycle=1))
    assert ex.core_cycles == sum(6 + k for k in ex.pops_per_control[:-1])


def test_core_cost_model_rejects_bad_rates():
    for field, value in (("tokens_per_cycle", 0), ("buffer_beats", 0), ("dispatch", -1),
                         ("per_callback", 1.5)):
        with pytest.raises(ValueError, match=field):
            CoreCostModel(**{field: value})
    with pytest.raises(ValueError, match="dispatch \\+ per_callback"):
        CoreCostModel(dispatch=0, per_callback=0)


def test_core_cost_model_in_memory_cycles():
    """A core R times faster than the memory, counted in memory cycles: per-control cycles
    divided by R rounded up, R times the tokens (and buffer) per cycle."""
    base = CoreCostModel()                                   # 2 + 4 cycles, 8 tokens
    assert base.in_memory_cycles(1) is base
    two = base.in_memory_cycles(2)
    assert (two.dispatch, two.per_callback, two.tokens_per_cycle, two.buffer_beats) == (1, 2, 16, 4)
    three = CoreCostModel(dispatch=2, per_callback=5, tokens_per_cycle=16).in_memory_cycles(3)
    assert (three.cycles_per_control, three.dispatch, three.tokens_per_cycle) == (3, 1, 48)
    # never faster than the faster core: a callback of k operands takes at least k / (R * 8)
    for k in (0, 1, 8, 17, 1024):
        assert two.callback_cycles(k) >= base.callback_cycles(k) / 2
    for bad in (0, -1, 1.5, True):
        with pytest.raises(ValueError, match="clock_ratio"):
            base.in_memory_cycles(bad)


# ------------------------------------------------------------------------------------------------
# RTL (the default TmuConfig, `simple` memory: the cached build)
# ------------------------------------------------------------------------------------------------

SLOW = CoreCostModel(dispatch=2, per_callback=38)          # 40 cycles per control token
#: Cycles by which a callback's operands may follow its control token out of the unit: the data
#: tokens pass the packer's two registered stages and its beat register (docs/rtl.md §2.5), the
#: control tokens none of them.
OPERANDS_AFTER_CONTROL = 3
FAST = CoreCostModel(dispatch=1, per_callback=0)           # 1 cycle per control token


#: The -O0 jobs repeat the small input's bags this many times (3,072 callbacks): enough for a
#: core 1 cycle per callback slower than the unit (the default rate against -O0's ~5 cycles per
#: lookup element) to fall more than the default unit's 512-entry control queue behind, so that it
#: back-pressures the unit (the queues were 64 deep until session 52; the small input's 384
#: callbacks then sufficed).
REPEAT_O0 = 8


def _repeated(args, times):
    """The EmbeddingBag arguments ``(table, indices, offsets, out)`` with the bags ``times``
    times over (the same lookups again, in order)."""
    table, indices, offsets, out = args
    n = len(indices)
    offs = np.concatenate([offsets[:-1] + k * n for k in range(times)] + [[n * times]])
    return [table, np.tile(indices, times), offs.astype(offsets.dtype),
            np.zeros((out.shape[0] * times,) + out.shape[1:], out.dtype)]


@pytest.fixture(scope="module")
def batch(kernels, seed):
    """One harness process: -O0 free-running, default core, slow core; -O3 free-running, fast
    core; and two wrong schedules."""
    from sim.system import RtlJob, run_many_on_rtl
    args = EB.make("small", seed)
    runs = {}
    jobs = []
    for name, level, cost in (("o0_free", 0, None), ("o0_default", 0, CoreCostModel()),
                              ("o0_slow", 0, SLOW), ("o3_free", 3, None), ("o3_fast", 3, FAST)):
        program, image, regs, gold, ex = _prepare(kernels[level],
                                                  _repeated(args, REPEAT_O0) if level == 0 else args,
                                                  cost)
        runs[name] = dict(gold=gold, ex=ex, cost=cost)
        jobs.append(RtlJob(program, image.data, regs, core=cost, max_cycles=2_000_000,
                           core_schedule=None if cost is None else ex.pops_per_control))
    # replayed cores (CoreReplay): 40 cycles per callback and 4 callbacks in its window (slower
    # than the unit), and no pace at all (only the operands' 16 per cycle: faster than the unit)
    for name, level, pace, window in (("o0_replay_slow", 0, 40, 4), ("o3_replay_fast", 3, 0, 512)):
        run_args = _repeated(args, REPEAT_O0) if level == 0 else args
        controls = len(_prepare(kernels[level], run_args)[3].control_tokens)
        cost = CoreReplay((pace,) * controls, window=window)
        program, image, regs, gold, ex = _prepare(kernels[level], run_args, cost)
        runs[name] = dict(gold=gold, ex=ex, cost=cost)
        jobs.append(RtlJob(program, image.data, regs, core=cost, max_cycles=2_000_000,
                           core_schedule=ex.pops_per_control))
    program, image, regs, gold, ex = _prepare(kernels[3], args)
    wrong = {"extra_control": ex.pops_per_control[:-1] + [0, 0],       # one more control token
             "extra_operand": [ex.pops_per_control[0] + 1] + ex.pops_per_control[1:]}
    for name, schedule in wrong.items():
        runs[name] = dict(gold=gold, ex=ex, cost=CoreCostModel())
        jobs.append(RtlJob(program, image.data, regs, core=CoreCostModel(), core_schedule=schedule,
                           max_cycles=2_000_000))       # a deadlock fails in seconds
    for (name, run), result in zip(runs.items(), run_many_on_rtl(jobs, engine="cpp")):
        run["rtl"] = result
    return runs


@pytest.mark.rtl
def test_coupled_tokens_are_the_golden_models(batch):
    for name, run in batch.items():
        r, gold = run["rtl"], run["gold"]
        assert (r.fault_code, r.data_tokens, r.control_tokens) == \
            (0, gold.data_tokens, gold.control_tokens), name
        assert (r.core is None) == (run["cost"] is None), name


@pytest.mark.rtl
def test_coupled_time_is_at_least_both_sides(batch):
    """The core pops DONE after the unit pushed it and after doing all its own work."""
    for name in ("o0_default", "o0_slow", "o3_fast", "o0_replay_slow", "o3_replay_fast"):
        r, ex = batch[name]["rtl"], batch[name]["ex"]
        assert r.core.finished and not r.core.schedule_mismatch, name
        assert r.core.finish_cycles >= max(r.cycles, ex.core_cycles + 1), name


@pytest.mark.rtl
def test_slow_core_back_pressures_the_unit_and_sets_the_time(batch):
    """A core slower than the unit: the unit stalls on full queues and the coupled time is the
    estimate plus the core's waits: estimate + 1 (the DONE pop) <= DAE <= estimate + 1 + starved
    cycles. A core much slower than the unit (40 cycles per control token) waits only at the
    start: for the first control token (decode and the first loads: ~350 cycles on `simple`) and
    for its callback's operands, which the packer's two stages deliver up to
    ``OPERANDS_AFTER_CONTROL`` cycles after it (docs/rtl.md §2.5); so its DAE time is exactly
    the estimate + those waits + 1."""
    from hw.tmu import TmuConfig
    free, slow, default = (batch[n]["rtl"] for n in ("o0_free", "o0_slow", "o0_default"))
    assert free.stats["out_stall_cycles"] == 0
    assert slow.stats["out_stall_cycles"] > default.stats["out_stall_cycles"] > 0
    assert slow.cycles > default.cycles > free.cycles
    for name in ("o0_slow", "o0_default"):
        r, ex = batch[name]["rtl"], batch[name]["ex"]
        estimate = ex.core_cycles
        assert estimate + 1 <= r.core.finish_cycles <= estimate + 1 + r.core.starved_cycles, name
    core, estimate = slow.core, batch["o0_slow"]["ex"].core_cycles
    assert core.first_control_cycle - 1 <= core.starved_cycles \
        <= core.first_control_cycle - 1 + OPERANDS_AFTER_CONTROL
    assert core.finish_cycles == estimate + 1 + core.starved_cycles
    # the unit's own START-to-done follows the core: it ends when the core is at most a full
    # control queue, the unit's own 4-entry control FIFO (hw/tmu/tmu.py, ``ctrl_fifo``) and the
    # token in hand behind
    assert slow.cycles >= estimate - (TmuConfig().ctrl_queue_depth + 4 + 1) * SLOW.cycles_per_control


@pytest.mark.rtl
def test_fast_core_waits_for_the_unit(batch):
    """A core faster than the unit: the unit is never stalled, runs exactly as with a
    free-running sink, and the core pops DONE a few cycles after the unit is done (the queue's
    latency, the last callback's operands, the DONE pop: at most 8 cycles here)."""
    free, fast = batch["o3_free"]["rtl"], batch["o3_fast"]["rtl"]
    ex = batch["o3_fast"]["ex"]
    assert fast.core.finish_cycles > 2 * ex.core_cycles              # the unit is the bottleneck
    assert fast.stats["out_stall_cycles"] == 0
    assert fast.cycles == free.cycles
    assert fast.cycles < fast.core.finish_cycles <= fast.cycles + 8
    assert fast.core.starved_cycles >= fast.core.finish_cycles - ex.core_cycles - 1


@pytest.mark.rtl
def test_a_replayed_core_keeps_its_pace_or_waits_for_the_unit(batch):
    """A replayed core (CoreReplay) 40 cycles per callback, at most 4 callbacks ahead, far
    slower than the unit: after its first control token it never waits, so it is done exactly
    its estimate (40 cycles per callback) after the first control token, and the unit stalls
    behind it. With no pace it is faster than the unit: the unit runs as with a free-running
    sink, and the core is done a few cycles after the unit (as the flat fast core above). (Its
    first callback's operands may come up to ``OPERANDS_AFTER_CONTROL`` cycles after the first
    control token.)"""
    slow, free = batch["o0_replay_slow"]["rtl"], batch["o0_free"]["rtl"]
    ex = batch["o0_replay_slow"]["ex"]
    assert ex.core_cycles == 40 * (len(ex.pops_per_control) - 1)
    late = slow.core.finish_cycles - ex.core_cycles - slow.core.first_control_cycle
    assert 0 <= late <= OPERANDS_AFTER_CONTROL
    assert slow.stats["out_stall_cycles"] > 0 and slow.cycles > free.cycles
    fast, free = batch["o3_replay_fast"]["rtl"], batch["o3_free"]["rtl"]
    assert fast.stats["out_stall_cycles"] == 0 and fast.cycles == free.cycles
    assert fast.cycles < fast.core.finish_cycles <= fast.cycles + 8


@pytest.mark.rtl
def test_a_wrong_schedule_falls_back_to_a_free_running_sink(batch):
    for name in ("extra_control", "extra_operand"):
        core = batch[name]["rtl"].core
        assert core.schedule_mismatch and not core.finished, name


def test_cocotb_engine_refuses_a_core_schedule():
    from sim.system import RtlJob, run_many_on_rtl
    job = RtlJob(b"", bytes(8), [], core=CoreCostModel(), core_schedule=[0])
    with pytest.raises(ValueError, match="engine"):
        run_many_on_rtl([job], engine="cocotb")
    with pytest.raises(ValueError, match="core_schedule"):
        run_many_on_rtl([dataclasses.replace(job, core_schedule=None)], engine="cpp")


def test_a_replayed_core_needs_one_pace_per_control_token():
    from sim.system import RtlJob, run_many_on_rtl
    job = RtlJob(b"", bytes(8), [], core=CoreReplay((0, 0)), core_schedule=[0])
    with pytest.raises(ValueError, match=r"core.pace must have one entry .* \(1\), not 2 entries"):
        run_many_on_rtl([job], engine="cpp")


def test_coupled_needs_the_rtl_target(kernels):
    with pytest.raises(ValueError, match="coupled"):
        run_kernel(kernels[0], EB.make("small", 0), "golden", coupled=True)


@pytest.mark.rtl
def test_run_kernel_coupled(kernels, seed):
    args = EB.make("small", seed)
    r = run_kernel(kernels[3], args, "rtl", coupled=True)
    EB.check(args, r.results)
    assert r.dae_cycles == r.access.core.finish_cycles >= r.dae_cycles_estimate
    assert r.dae_cycles_estimate == max(r.access.cycles, r.execute.core_cycles)
    plain = run_kernel(kernels[3], EB.make("small", seed), "rtl")
    assert plain.dae_cycles is None and plain.access.core is None
    assert plain.access.data_tokens == r.access.data_tokens
