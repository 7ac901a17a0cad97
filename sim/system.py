"""Run access programs on the RTL (Verilator through cocotb): the API the rest of the project uses.

>>> r = run_on_rtl(program_bytes, image_bytes, [base, n, ...], memory="HBM2")
>>> r.data_tokens, r.control_tokens, r.cycles, r.fault_code, r.stats, r.memory_stats

``memory`` selects the memory model's preset (``"simple"``, the default, ``"HBM2"``, ``"HBM3"``
or an ``HbmPreset``; ``docs/hbm_model.md``); ``memory_stats`` are its statistics over the run
(``docs/hbm_model.md`` §5, same names and layout as the reference model's ``stats``).

The Verilator model of ``hw.system.System`` is built once per configuration and memory size
(``sim.verilator.build_model``) and reused. With ``WAVES=1`` in the environment the model is built with
tracing and the waveform of each call is copied to ``build/rtl/waves/``. A call writes its job (program, memory image as a hex file,
arguments, back-pressure) into a temporary directory, points ``$EMBER_RTL_JOB`` at it and runs the
cocotb module ``sim.system_top`` in one simulator process; :func:`run_many_on_rtl` runs
several jobs in one process (what the tests use: one simulator start-up for many programs).
K units on one memory (``hw.multi_system``): ``sim.multi`` (``run_multi_on_rtl``,
``run_sequences_on_rtl``; the first also importable from here).
"""

from __future__ import annotations

import json
import os
import shutil
import struct
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Sequence

import numpy as np

from hw.tmu import COUNTERS, TmuConfig
from sim.verilator import BUILD_ROOT, build_model, mem_words_for, run_cocotb


__all__ = ["TmuConfig", "RtlResult", "RtlJob", "CoreRun", "ENGINES", "run_on_rtl", "run_many_on_rtl",
           "memory_stats_dict", "memory_summary", "UnitJob", "MultiRtlResult", "run_multi_on_rtl"]   # the last three: sim.multi


MASK64 = (1 << 64) - 1


@dataclass(frozen=True)
class CoreRun:
    """What the simulated core did in a coupled run (``RtlJob.core``; ``CoreModel`` in
    ``sim/harness/core_model.h``). Cycles count from the START write like the unit's ``cycles`` counter."""
    finish_cycles: int          # cycle in which the core popped DONE (0 if it never did)
    #: cycles the core had fewer tokens than it could consume: waiting for a control token, or
    #: taking fewer operands than min(tokens_per_cycle, operands its callback still pops)
    starved_cycles: int
    finished: bool              # it popped DONE at the end of its schedule
    #: the token stream and the schedule disagreed (more or fewer tokens, DONE elsewhere, a
    #: fault, or no progress); from then on the queues were drained free-running, so
    #: ``finish_cycles`` and ``starved_cycles`` are not a coupled result
    schedule_mismatch: bool
    first_control_cycle: int = 0   # cycle in which the core popped its first control token


@dataclass
class RtlResult:
    data_tokens: list[int]      # 64-bit operands, in order
    control_tokens: list[int]   # 16-bit callback ids, in order (ends with 0xFFFF unless faulted)
    cycles: int                 # cycles from start to done (from the unit's counter)
    fault_code: int
    fault_addr: int
    stats: dict[str, int] = field(default_factory=dict)   # loads issued, bytes loaded, tokens, ...
    #: the memory model's statistics from START to the end of the run (docs/hbm_model.md §5):
    #: scalars, and lists for read_latency_hist (64 bins of 4 cycles), busy, queue_occupancy_*
    memory_stats: dict = field(default_factory=dict)
    memory: str = "simple"        # the memory preset's name
    core: CoreRun | None = None   # the simulated core (jobs with a core schedule only)
    #: the stream whose evaluation raised the fault: STATUS.FAULT_STREAM when
    #: STATUS.FAULT_HAS_STREAM (MISALIGNED, ADDR_RANGE, ADDR_OVERFLOW, BLOCK_LENGTH), else None
    fault_stream: int | None = None

    @property
    def faulted(self) -> bool:
        return self.fault_code != 0


@dataclass
class RtlJob:
    """One run: what :func:`run_on_rtl` takes."""
    program: bytes
    memory: bytes
    args: Sequence[int]
    backpressure: float = 0.0
    seed: int = 0
    max_cycles: int = 50_000_000
    watchdog: int | None = None       # WATCHDOG register (cycles, 0 disables); None: the
                                      # configuration's default (TmuConfig.watchdog_cycles)
    backdoor: bool = False            # load memory through the per-word back door (slow)
    #: the execute side's rate (any object with int attributes ``cycles_per_control``,
    #: ``tokens_per_cycle``, ``buffer_beats``: ``sw.runtime.execute.CoreCostModel``; or with
    #: ``pace``, one int per control token, ``instructions`` and ``window`` instead of
    #: ``cycles_per_control``: ``sw.runtime.execute.CoreReplay``); with
    #: ``core_schedule`` the output queues are consumed by a model of the core instead of the
    #: back-pressure sinks (``backpressure`` is then unused; C++ engine only)
    core: object | None = None
    #: operands the callback of each control token pops, in control-queue order, DONE included
    #: (with 0): ``sw.runtime.execute.ExecuteResult.pops_per_control``
    core_schedule: Sequence[int] | None = None


def _hex_image(memory: bytes) -> bytes:
    """``$readmemh`` text: one 64-bit word per line, word 0 first."""
    words = np.frombuffer(memory, dtype="<u8").astype(">u8")
    hexed = words.tobytes().hex().encode()
    lines = np.frombuffer(hexed, dtype="S16")
    return b"\n".join(lines.tolist()) + b"\n"


def memory_stats_dict(values: Sequence[int], channels: int) -> dict:
    """The statistics registers (``hw.hbm_model.stat_names(channels)`` order) as the reference
    model's ``stats`` dict: scalars, and lists for ``read_latency_hist``, ``busy``,
    ``queue_occupancy_sum``/``_max``; ``read_latency_min`` is 0 without reads (the register
    then holds all ones)."""
    from hw.hbm_model import stat_names
    names = stat_names(channels)
    if len(values) != len(names):
        raise ValueError(f"values must have {len(names)} statistics for {channels} channels, "
                         f"not {len(values)}")
    out: dict = {}
    for name, value in zip(names, values):
        if "[" in name:
            out.setdefault(name[:name.index("[")], []).append(int(value))
        else:
            out[name] = int(value)
    if out["read_latency_min"] == (1 << 64) - 1:
        out["read_latency_min"] = 0
    return out


def memory_summary(stats: dict, preset_name: str, cycles: int) -> dict:
    """Derived memory figures over ``cycles`` unit cycles from the §5 statistics of a run.

    Returns a dict: ``bytes`` moved (``access_bytes`` per request), ``bytes_per_cycle``, ``gbps``
    (10^9 B/s at the preset's unit cycle), ``peak_fraction`` (of ``peak_bytes_per_cycle``),
    ``row_hits``/``row_misses``/``row_conflicts``, read latency ``lat_min``/``lat_mean``/
    ``lat_p50``/``lat_p99``/``lat_max`` (unit cycles; p50/p99 from the histogram: upper bin
    edge), ``utilisation`` (per channel: data-bus busy cycles / cycles), ``occupancy_mean``
    and ``occupancy_max`` (per channel: request-queue entries).
    """
    from hw.hbm_model.presets import get_preset
    from hw.hbm_model.reference import hist_percentile
    preset = get_preset(preset_name)
    moved = stats["bytes_read"] + stats["bytes_written"]
    bpc = moved / cycles if cycles else 0.0
    reads = sum(stats["read_latency_hist"])
    return {
        "bytes": moved, "bytes_per_cycle": bpc, "gbps": bpc / preset.unit_cycle_ns,
        "peak_fraction": bpc / float(preset.peak_bytes_per_cycle),
        "row_hits": stats["row_hits"], "row_misses": stats["row_misses"],
        "row_conflicts": stats["row_conflicts"], "reads": reads,
        "lat_min": stats["read_latency_min"], "lat_max": stats["read_latency_max"],
        "lat_mean": stats["read_latency_sum"] / reads if reads else 0.0,
        "lat_p50": hist_percentile(stats["read_latency_hist"], 50),
        "lat_p99": hist_percentile(stats["read_latency_hist"], 99),
        "utilisation": [b / cycles if cycles else 0.0 for b in stats["busy"]],
        "occupancy_mean": [q / cycles if cycles else 0.0 for q in stats["queue_occupancy_sum"]],
        "occupancy_max": list(stats["queue_occupancy_max"]),
    }


def _check_job(job: RtlJob, config: TmuConfig) -> None:
    if len(job.memory) % 8:
        raise ValueError(f"memory length must be a multiple of 8 bytes, not {len(job.memory)}")
    if len(job.args) > config.args:
        raise ValueError(f"args must have at most {config.args} registers for this configuration, "
                         f"not {len(job.args)}")
    if not 0.0 <= job.backpressure < 1.0:
        raise ValueError(f"backpressure must be in [0, 1), not {job.backpressure!r}")
    if job.watchdog is not None and not 0 <= job.watchdog < 1 << 32:
        raise ValueError(f"watchdog must be in 0..2**32-1 cycles or None, not {job.watchdog!r}")
    if (job.core is None) != (job.core_schedule is None):
        raise ValueError("core and core_schedule must be given together, not "
                         f"core={job.core!r} with core_schedule={'None' if job.core_schedule is None else '...'}")
    if job.core is not None:
        pace = getattr(job.core, "pace", None)
        names = ("tokens_per_cycle", "buffer_beats") if pace is not None else \
            ("cycles_per_control", "tokens_per_cycle", "buffer_beats")
        for name in names:
            value = getattr(job.core, name, None)
            if not isinstance(value, int) or not 1 <= value < 1 << 32:
                raise ValueError(f"core.{name} must be an int in 1..2**32-1, not {value!r}")
        if not len(job.core_schedule) or any(not 0 <= int(k) < 1 << 32 for k in job.core_schedule):
            raise ValueError("core_schedule must be a non-empty sequence of operand counts in "
                             "0..2**32-1 (one per control token, DONE included)")
        if pace is not None and (len(pace) != len(job.core_schedule)
                                 or any(not 0 <= int(p) < 1 << 32 for p in pace)):
            raise ValueError(f"core.pace must have one entry in 0..2**32-1 cycles per control "
                             f"token ({len(job.core_schedule)}), not {len(pace)} entries")
        instructions = getattr(job.core, "instructions", None) if pace is not None else None
        if instructions is not None and (len(instructions) != len(pace) or any(
                not 1 <= int(k) < 1 << 32 for k in instructions)):
            raise ValueError(f"core.instructions must have one entry in 1..2**32-1 per control "
                             f"token ({len(pace)}), not {len(instructions)} entries")


ENGINES = ("cocotb", "cpp")


def run_many_on_rtl(jobs: Sequence[RtlJob], *, config: TmuConfig | None = None,
                    mem_words: int | None = None, memory="simple",
                    engine: str = "cocotb") -> list[RtlResult]:
    """Run several jobs in one simulator process (same configuration, memory preset and size).

    ``engine`` is ``"cocotb"`` (the cocotb module ``sim.system_top``) or ``"cpp"`` (the Verilator
    C++ harness ``sim/harness.cpp``, ``sim.fast``; no Python per cycle); both return identical
    results. A job with a core schedule (``RtlJob.core``) runs its output queues against a model
    of the execute side (``RtlResult.core``) and needs ``engine="cpp"``. Raises ``ValueError``
    for an unknown engine, or a core schedule with the cocotb engine."""
    from sim.verilator import _preset
    if engine not in ENGINES:
        raise ValueError(f"engine must be one of {', '.join(ENGINES)}, not {engine!r}")
    config = config or TmuConfig()
    preset = _preset(memory)
    for job in jobs:
        _check_job(job, config)
    if engine != "cpp" and any(job.core is not None for job in jobs):
        raise ValueError(f"a job with a core schedule (RtlJob.core) needs engine='cpp', not "
                         f"engine={engine!r}: the cocotb engine has no core model")
    if mem_words is None:
        mem_words = mem_words_for(max((len(j.memory) for j in jobs), default=0))
    for job in jobs:
        if len(job.memory) > 8 * mem_words:
            raise ValueError(f"memory image of {len(job.memory)} bytes does not fit the model's "
                             f"{8 * mem_words} bytes")
    if engine == "cpp":
        from sim.fast import build_harness
        executable = build_harness(config, mem_words, memory=preset)
    else:
        build_dir = build_model(config, mem_words, memory=preset)
    with tempfile.TemporaryDirectory(prefix="ember_rtl_") as tmp:
        tmp = Path(tmp)
        spec = []
        for n, job in enumerate(jobs):
            entry = _entry(job.program, job.args, len(job.memory), job, config)
            entry["max_cycles"] = int(job.max_cycles)
            if job.core is not None:
                entry["core"] = _core_entry(job.core, job.core_schedule)
            if job.backdoor:
                entry["backdoor_words"] = np.frombuffer(job.memory, dtype="<u8").tolist()
            else:
                path = tmp / f"image_{n}.hex"
                path.write_bytes(_hex_image(bytes(job.memory)))
                entry["image"] = str(path)
            spec.append(entry)
        t0 = time.perf_counter()
        if engine == "cpp":
            from sim.fast import run_jobs
            raw = run_jobs(executable, spec, tmp)
            wall = time.perf_counter() - t0
        else:
            raw = _run_cocotb(build_dir, spec, tmp)
            wall = time.perf_counter() - t0
    if len(raw) < len(jobs) and (not raw or not raw[-1]["timeout"]):
        raise RuntimeError(f"the simulation returned {len(raw)} results for {len(jobs)} jobs")
    results = []
    for job, r in zip(jobs, raw):
        if r["timeout"]:
            raise TimeoutError(f"the unit did not finish within {job.max_cycles} cycles")
        results.append(_result(r, preset, wall))
    return results


def _entry(program: bytes, args, mem_limit: int, job, config: TmuConfig) -> dict:
    """The harness/cocotb entry of one unit's run (program words, registers, back-pressure)."""
    program = bytes(program)
    nwords = -(-len(program) // 4)
    padded = program + bytes(4 * nwords - len(program))
    return {
        "program_words": list(struct.unpack(f"<{nwords}I", padded)),
        "prog_len": len(program),
        "args": [int(a) & MASK64 for a in args] + [0] * (config.args - len(args)),
        "mem_limit": mem_limit,
        "backpressure": float(job.backpressure),
        "bp_threshold": min(65536, round(job.backpressure * 65536)),
        "seed": int(job.seed),
        # Written for every job: a batch must not leak one job's value into the next.
        "watchdog": config.watchdog_cycles if job.watchdog is None else int(job.watchdog),
    }


def _core_entry(core, schedule) -> dict:
    pace = getattr(core, "pace", None)
    entry = {"cycles_per_control": 0 if pace is not None else core.cycles_per_control,
             "tokens_per_cycle": core.tokens_per_cycle, "buffer_beats": core.buffer_beats,
             "pops_per_control": [int(k) for k in schedule]}
    if pace is not None:
        entry["pace"] = [int(p) for p in pace]
        instructions = getattr(core, "instructions", None) or (1,) * len(pace)
        entry["instructions"] = [int(k) for k in instructions]
        entry["window"] = int(getattr(core, "window", 512))
    return entry


def _result(r: dict, preset, wall: float) -> RtlResult:
    """An :class:`RtlResult` from one unit's raw result."""
    status = r["status"]
    counters = r["counters"]
    stats = dict(counters)
    stats["loads_issued"] = counters["loads"]
    stats["tokens"] = counters["data_tokens"] + counters["control_tokens"]
    stats["stall_cycles"] = counters["out_stall_cycles"]
    stats["avg_inflight_x1000"] = (1000 * counters["inflight_sum"] // counters["cycles"]
                                   if counters["cycles"] else 0)
    stats["sim_cycles_per_s"] = int(r["drain_cycles"] / r["drain_wall"]) if r["drain_wall"] else 0
    stats["sim_wall_ms"] = int(1000 * wall)
    return RtlResult(
        data_tokens=r["data"], control_tokens=r["ctrl"], cycles=counters["cycles"],
        fault_code=(status >> 8) & 0xFF if status & 4 else 0,
        fault_stream=(status >> 16) & 0xFF if status & 4 and status & 8 else None,
        fault_addr=r["fault_addr"], stats=stats,
        memory_stats=memory_stats_dict(r["mem_stats"],
                                       1 if preset.fixed_latency is not None else preset.channels),
        memory=preset.name,
        core=CoreRun(**r["core"]) if r.get("core") else None)


def _run_cocotb(build_dir: Path, spec: list[dict], tmp: Path) -> list[dict]:
    """Run the job entries with the cocotb module ``sim.system_top``; its raw results."""
    (tmp / "jobs.json").write_text(json.dumps(spec))
    run_cocotb(build_dir, "sim.system_top", test_dir=tmp,
               env={"EMBER_RTL_JOB": str(tmp)},
               plusargs=[f"+HBM_IMAGE={tmp / 'image.hex'}",
                         f"+TOKEN_DATA={tmp / 'tokens_data.hex'}",
                         f"+TOKEN_CTRL={tmp / 'tokens_ctrl.hex'}"])
    if os.environ.get("WAVES") == "1":                   # keep the waveform
        waves_dir = BUILD_ROOT / "waves"
        waves_dir.mkdir(parents=True, exist_ok=True)
        for f in list(tmp.glob("*.vcd")) + list(tmp.glob("*.fst")):
            dest = waves_dir / f"{time.strftime('%Y%m%d-%H%M%S')}-{f.name}"
            shutil.copyfile(f, dest)
            print(f"waveform: {dest}")
    return json.loads((tmp / "results.json").read_text())


def run_on_rtl(program: bytes, image: bytes, args: Sequence[int], *,
               config: "TmuConfig | None" = None, backpressure: float = 0.0, seed: int = 0,
               max_cycles: int = 50_000_000, memory="simple", engine: str = "cocotb",
               core=None, core_schedule: Sequence[int] | None = None) -> RtlResult:
    """Run one access program on the RTL and return its output-queue tokens and status.

    Parameters
    ----------
    program : bytes
        The binary access program (``docs/isa.md``).
    image : bytes
        Flat memory image from byte address 0; length a multiple of 8.
    args : sequence of int
        Argument registers (64-bit, signed or unsigned); missing registers are 0.
    config : TmuConfig, optional
        The unit's parameters (default: ``TmuConfig()``).
    backpressure : float
        Probability in [0, 1) that the core is not ready for a token in a cycle (per queue).
    seed : int
        Seed of the back-pressure pattern.
    max_cycles : int
        Give up (``TimeoutError``) after this many cycles of draining.
    memory : str or HbmPreset
        Memory model preset: ``"simple"`` (default; fixed latency ``config.mem_latency``),
        ``"HBM2"``, ``"HBM3"`` (``hw/hbm_model/presets.py``) or a preset. One Verilator build per
        (configuration, preset, memory size), cached.
    engine : str
        ``"cocotb"`` (default) or ``"cpp"`` (the C++ harness, ``sim.fast``: same results, no
        Python per cycle); see :func:`run_many_on_rtl`.
    core, core_schedule
        The execute side's rate and its consumption schedule (``RtlJob.core``,
        ``RtlJob.core_schedule``): the queues are consumed by a model of the core
        (``RtlResult.core``); needs ``engine="cpp"``.

    Raises
    ------
    ValueError
        Bad arguments (an unknown ``memory`` preset name). ``TimeoutError``: the unit did not finish. ``RuntimeError``: the
        simulation failed (the message names its log).
    """
    job = RtlJob(program, image, args, backpressure=backpressure, seed=seed,
                 max_cycles=max_cycles, core=core, core_schedule=core_schedule)
    return run_many_on_rtl([job], config=config, memory=memory, engine=engine)[0]


#: The multi-unit system's API lives in ``sim.multi`` (one concept per module); these names are
#: re-exported from here, lazily (``sim.multi`` imports this module).
_MULTI = ("UnitJob", "MultiRtlResult", "run_multi_on_rtl")


def __getattr__(name):
    if name in _MULTI:
        import sim.multi
        return getattr(sim.multi, name)
    raise AttributeError(f"module 'sim.system' has no attribute {name!r}")
