"""Run access programs on the multi-unit system (``hw.multi_system.MultiSystem``: K access units
sharing one memory model) through the C++ harness (``sim.fast``, ``sim/harness.cpp``).

>>> r = run_multi_on_rtl([UnitJob(program, regs0), UnitJob(program, regs1)], image, units=2)
>>> r.units[1].data_tokens, r.makespan
>>> s = run_sequences_on_rtl([[job_a, job_b], [job_c]], image, units=2)
>>> s.units[0][1].cycles, s.starts[0][1], s.unit_cycles, s.makespan

:func:`run_multi_on_rtl` runs one program per unit, all started in the same cycle;
:func:`run_sequences_on_rtl` runs a *sequence* of programs per unit (for example one EmbeddingBag
per table a table-to-unit mapping gave the unit: ``sw.runtime.multi_unit.run_mapped``): every
unit starts its first program in the same cycle; when a unit has finished one, the harness reads
its status, fault address and counters and loads and starts the next on that unit's register
port (one register access per cycle), while the other units go on running. The memory's
statistics of a run cover all of it (:attr:`SequenceRtlResult.memory_stats`: every program of
every unit, from the common START to the end).
"""

from __future__ import annotations

import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Sequence

from hw.tmu import TmuConfig
from sim.system import RtlJob, RtlResult, _check_job, _core_entry, _entry, _hex_image, _result, \
    memory_summary
from sim.verilator import mem_words_for

__all__ = ["UnitJob", "MultiRtlResult", "run_multi_on_rtl", "SequenceRtlResult",
           "run_sequences_on_rtl"]


@dataclass
class UnitJob:
    """What one unit of a multi-unit system runs (:func:`run_multi_on_rtl`); the memory image
    is shared."""
    program: bytes
    args: Sequence[int]
    backpressure: float = 0.0
    seed: int = 0
    watchdog: int | None = None
    #: the unit's execute side (as ``RtlJob.core`` / ``RtlJob.core_schedule``): its output
    #: queues are consumed by its own core model instead of the back-pressure sinks
    core: object | None = None
    core_schedule: Sequence[int] | None = None


@dataclass
class MultiRtlResult:
    """A multi-unit run: one :class:`RtlResult` per unit (its tokens, status, counters; its
    ``cycles`` from the common start to its own done) and the ``makespan`` (cycles from the
    common start until the last unit was done = the largest ``cycles``)."""
    units: list[RtlResult]
    makespan: int

    @property
    def memory_stats(self) -> dict:
        """The shared memory's statistics over the run (``docs/hbm_model.md`` §5)."""
        return self.units[0].memory_stats


@dataclass
class SequenceRtlResult:
    """A run of a sequence of programs per unit (:func:`run_sequences_on_rtl`).

    ``units[u][k]``: the :class:`RtlResult` of unit ``u``'s ``k``-th program (its tokens,
    status, counters; ``cycles`` from its own START to its done); ``starts[u][k]``: the cycle of
    that program's START, counted from the common START of the first programs (0 for ``k = 0``).
    A unit given no program has empty lists."""
    units: list[list[RtlResult]]
    starts: list[list[int]]

    @property
    def unit_cycles(self) -> list[int]:
        """Per unit, cycles from the common START until its last program was done (its last
        START + that program's ``cycles``; 0 for an idle unit)."""
        return [s[-1] + r[-1].cycles if r else 0 for s, r in zip(self.starts, self.units)]

    @property
    def makespan(self) -> int:
        """Cycles from the common START until the last unit was done: ``max(unit_cycles)``."""
        return max(self.unit_cycles)

    @property
    def memory_stats(self) -> dict:
        """The shared memory's statistics (``docs/hbm_model.md`` §5, the layout of
        ``RtlResult.memory_stats``) over the whole run: from the common START of the first
        programs (the harness sets ``hw.multi_system.MultiSystem``'s ``stats_clear`` with it;
        the later STARTs of a sequence do not clear them) until they are read, after the last
        unit's last program was done. So ``reads`` and ``bytes_read`` count every program of
        every unit (``reads`` = the sum of their ``loads`` counters), the row-buffer and latency
        figures are over all of them, and ``cycles`` is the makespan plus the cycles between the
        last done and the read (the last read-out, the queues' drain and the register reads:
        divide by :attr:`makespan` for rates, as :meth:`memory_summary` does). Every
        ``units[u][k].memory_stats`` is this same dictionary's values."""
        return next(r for runs in self.units for r in runs).memory_stats

    def memory_summary(self) -> dict:
        """Derived memory figures of the whole run over :attr:`makespan` cycles, as
        ``sim.system.memory_summary`` gives for a single run (``bytes`` moved,
        ``bytes_per_cycle``, ``peak_fraction``, ``row_hits``/``row_misses``/``row_conflicts``,
        read latency ``lat_mean``/``lat_p50``/``lat_p99``/``lat_max`` in unit cycles, per-channel
        ``utilisation``), plus ``row_hit_rate`` (hits ÷ classified requests; 0.0 if none),
        ``useful_bytes`` (the sum of every program's ``bytes_loaded`` counter: the bytes of the
        elements the units loaded lines for) and ``useful_bytes_per_cycle`` (÷ makespan)."""
        first = next(r for runs in self.units for r in runs)
        summary = memory_summary(self.memory_stats, first.memory, self.makespan)
        classified = summary["row_hits"] + summary["row_misses"] + summary["row_conflicts"]
        summary["row_hit_rate"] = summary["row_hits"] / classified if classified else 0.0
        useful = sum(r.stats["bytes_loaded"] for runs in self.units for r in runs)
        summary["useful_bytes"] = useful
        summary["useful_bytes_per_cycle"] = useful / self.makespan if self.makespan else 0.0
        return summary


def _check_units(units, engine: str) -> None:
    from hw.multi_system import UNITS
    if isinstance(units, bool) or units not in UNITS:
        raise ValueError(f"units must be one of {UNITS}, not {units!r}")
    if engine != "cpp":
        raise ValueError(f"engine must be 'cpp' for a multi-unit run (the cocotb engine drives "
                         f"one unit), not {engine!r}")


def _run(unit_entries: list, image: bytes, *, units: int, memory, config: TmuConfig,
         mem_words: int | None, max_cycles: int) -> tuple[list[dict], object]:
    """Build (cached) and run one multi-unit job; the harness's raw results and the preset."""
    from sim.fast import build_harness, run_jobs
    from sim.verilator import _preset
    preset = _preset(memory)
    if mem_words is None:
        mem_words = mem_words_for(len(image))
    if len(image) > 8 * mem_words:
        raise ValueError(f"memory image of {len(image)} bytes does not fit the model's "
                         f"{8 * mem_words} bytes")
    executable = build_harness(config, mem_words, memory=preset, units=units)
    with tempfile.TemporaryDirectory(prefix="ember_rtl_") as tmp:
        tmp = Path(tmp)
        path = tmp / "image_0.hex"
        path.write_bytes(_hex_image(bytes(image)))
        entry = {"image": str(path), "max_cycles": int(max_cycles), "units": unit_entries}
        t0 = time.perf_counter()
        raw = run_jobs(executable, [entry], tmp)
        for r in raw:
            r["wall"] = time.perf_counter() - t0
    return raw, preset


def run_multi_on_rtl(jobs_per_unit: Sequence[UnitJob], image: bytes, *, units: int,
                     memory="simple", config: TmuConfig | None = None,
                     mem_words: int | None = None, max_cycles: int = 50_000_000,
                     engine: str = "cpp") -> MultiRtlResult:
    """Run one program per unit on ``hw.multi_system.MultiSystem``: ``units`` access units
    sharing one memory model loaded with ``image``, all started in the same cycle (the C++
    harness, ``sim.fast``; one Verilator build per configuration, preset, memory size and K).

    Parameters
    ----------
    jobs_per_unit : sequence of UnitJob
        ``units`` entries, unit 0 first: program, argument registers, back-pressure and seed of
        that unit's output-queue sinks, watchdog, optional core model (each unit has its own;
        ``RtlResult.core``).
    image : bytes
        The shared memory image from byte address 0 (length a multiple of 8); every unit's
        memory limit is its length.
    units : int
        K, one of 1, 2, 4, 8.
    memory, config, mem_words, max_cycles
        As ``sim.system.run_many_on_rtl`` / ``sim.system.run_on_rtl``.
    engine : str
        ``"cpp"`` only (the cocotb engine drives one unit).

    Raises
    ------
    ValueError
        ``units`` not in 1, 2, 4, 8; ``jobs_per_unit`` not of length ``units``; ``engine`` not
        ``"cpp"``; a bad image length, argument count, back-pressure or watchdog.
    TimeoutError
        Not every unit finished within ``max_cycles`` cycles.
    """
    _check_units(units, engine)
    if len(jobs_per_unit) != units:
        raise ValueError(f"jobs_per_unit must have one entry per unit ({units}), not "
                         f"{len(jobs_per_unit)}")
    config = config or TmuConfig()
    for job in jobs_per_unit:
        _check_job(RtlJob(job.program, image, job.args, backpressure=job.backpressure,
                          watchdog=job.watchdog, core=job.core,
                          core_schedule=job.core_schedule), config)
    entries = []
    for j in jobs_per_unit:
        unit = _entry(j.program, j.args, len(image), j, config)
        if j.core is not None:
            unit["core"] = _core_entry(j.core, j.core_schedule)
        entries.append(unit)
    raw, preset = _run(entries, image, units=units, memory=memory, config=config,
                       mem_words=mem_words, max_cycles=max_cycles)
    if len(raw) != units:
        raise RuntimeError(f"the simulation returned {len(raw)} results for {units} units")
    if raw[0]["timeout"]:
        raise TimeoutError(f"the units did not all finish within {max_cycles} cycles")
    results = [_result(r, preset, r["wall"]) for r in raw]
    return MultiRtlResult(results, max(r.cycles for r in results))


def run_sequences_on_rtl(sequences: Sequence[Sequence[UnitJob]], image: bytes, *, units: int,
                         memory="simple", config: TmuConfig | None = None,
                         mem_words: int | None = None, max_cycles: int = 50_000_000,
                         engine: str = "cpp") -> SequenceRtlResult:
    """Run a sequence of programs on each unit of ``hw.multi_system.MultiSystem`` (``units``
    units on one memory loaded with ``image``), back to back (see the module docstring).

    Parameters
    ----------
    sequences : sequence of sequences of UnitJob
        ``units`` entries, unit 0 first: the programs that unit runs, in order (an empty entry:
        the unit stays idle; at least one unit has a program). Back-pressure, seed and watchdog
        apply per program; core schedules are not supported here.
    image, units, memory, config, mem_words, engine
        As :func:`run_multi_on_rtl`.
    max_cycles : int
        Give up after this many cycles from the common START (all sequences included).

    Every program's START, register writes and counter reads are simulated cycles on its unit's
    register port: the gap between a program's done and the next one's START (the read-out of
    its 15 counters and the load of the next program) is in ``starts`` and in the makespan.
    The memory's statistics cover the whole run, every program of every unit
    (:attr:`SequenceRtlResult.memory_stats`, :meth:`SequenceRtlResult.memory_summary`).

    Raises
    ------
    ValueError
        As :func:`run_multi_on_rtl` (``sequences`` not of length ``units``); no program at all;
        a ``UnitJob`` with a core schedule.
    TimeoutError
        Not every unit finished its sequence within ``max_cycles`` cycles.
    """
    _check_units(units, engine)
    if len(sequences) != units:
        raise ValueError(f"sequences must have one entry per unit ({units}), not {len(sequences)}")
    if not any(len(seq) for seq in sequences):
        raise ValueError("sequences must give at least one unit a program, not none")
    config = config or TmuConfig()
    entries = []
    for u, seq in enumerate(sequences):
        programs = []
        for job in seq:
            if job.core is not None or job.core_schedule is not None:
                raise ValueError(f"sequences[{u}]: a UnitJob with a core schedule is not supported "
                                 f"in a sequence (core={job.core!r})")
            _check_job(RtlJob(job.program, image, job.args, backpressure=job.backpressure,
                              watchdog=job.watchdog), config)
            programs.append(_entry(job.program, job.args, len(image), job, config))
        entries.append({"sequence": programs})
    raw, preset = _run(entries, image, units=units, memory=memory, config=config,
                       mem_words=mem_words, max_cycles=max_cycles)
    if any(r["timeout"] for r in raw):
        raise TimeoutError(f"the units did not all finish their sequences within {max_cycles} "
                           f"cycles")
    out: list[list[RtlResult]] = [[] for _ in range(units)]
    starts: list[list[int]] = [[] for _ in range(units)]
    for r in raw:
        u, k = r["unit"], r["seq"]
        if k != len(out[u]):
            raise RuntimeError(f"the simulation returned unit {u}'s program {k} out of order")
        out[u].append(_result(r, preset, r["wall"]))
        starts[u].append(r["start"])
    for u, seq in enumerate(sequences):
        if len(out[u]) != len(seq):
            raise RuntimeError(f"the simulation returned {len(out[u])} results for unit {u}'s "
                               f"{len(seq)} programs")
    return SequenceRtlResult(out, starts)
