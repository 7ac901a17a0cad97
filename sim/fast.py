"""The C++ engine of :func:`sim.system.run_many_on_rtl`: a Verilator ``--exe`` build of the system top
with the harness ``sim/harness.cpp``, so no Python runs while the unit runs.

The harness does cycle for cycle what the cocotb engine does (``sim/system_top.v`` and
``sim/system_top.py``: same register protocol, image load, xorshift32 back-pressure generators,
capture buffers and read-out), so both engines return identical tokens, fault code and address,
cycle counts and statistics, with or without back-pressure (``tests/sim/test_fast_engine.py``).

Files in the job directory:

``jobs.txt`` (written here)::

    ember_jobs
    csr PROG_ADDR PROG_DATA PROG_LEN ARGS MEM_LIMIT_LO WATCHDOG CTRL STATUS FAULT_ADDR_LO COUNTERS CONFIG3 MEM_STATS
    counters <number of unit counters>
    jobs <n>
    job
    image <path of the $readmemh file>        (or: backdoor <count> <hex words...>)
    units <K>                                  (then per unit, unit 0 first:)
    sequence <m>                               (the unit's programs, run back to back; then m blocks:)
    program <count> <hex 32-bit words...>
    prog_len <bytes>
    args <count> <hex 64-bit values...>
    mem_limit <hex bytes>
    watchdog <cycles, -1: leave the register alone>
    bp_threshold <0..65536: a sink is ready when its xorshift32 state's low 16 bits are >= this>
    seed <32-bit seed>
    core <n> [<cycles per control> <tokens per cycle> <buffer beats> <n operand counts>
              [<n paces> <n instruction counts> <window>]]
                                              (n = 0: no core schedule, the back-pressure sinks;
                                              cycles per control 0: a replayed core,
                                              sw.runtime.execute.CoreReplay, its pace,
                                              instructions and window follow)
    max_cycles <cycles>                        (after the unit blocks)

``results.txt`` (written by the harness), per job, unit and program of its sequence::

    result <n> unit <u> seq <s> start <cycle of its START from the job's common START> timeout <0|1> status <STATUS> fault_addr <addr> drain_cycles <c> drain_wall <s>
    core <active 0|1> <schedule mismatch 0|1> <finished 0|1> <finish cycle> <starved cycles> <first cycle>
    counters <count> <values in hw.tmu.COUNTERS order>
    mem_stats <count> <values in hw.hbm_model.stat_names order>

and the tokens in ``data_<n>_<u>_<s>.bin`` (uint64 little-endian) and ``ctrl_<n>_<u>_<s>.bin`` (uint16).

With ``units`` (:func:`build_harness`), the harness drives ``hw.multi_system.MultiSystem`` (K
units on one memory; compiled with ``-DMULTI_TOP -DUNITS=K``): one shared image per job, one
unit block per unit, all units started in the same cycle, the job ending when all have finished.
A unit block may list a sequence of programs (``"sequence"``: a list of unit entries in the
job's ``units``; ``sim.multi.run_sequences_on_rtl``): the unit runs them back to back, loading
the next through its own register port while the others run (``run_sequence`` in
``sim/harness/sequence.h``); each result then has its ``seq`` number and ``start`` cycle. The memory's
statistics of a multi-unit job restart with its common START only (the harness sets
``MultiSystem.stats_clear`` in the cycle of the units' start pulse; a unit's later START does not
clear them), so every result of the job carries the statistics of the whole job, read at its end.
"""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import numpy as np

from hw.tmu import COUNTERS, TmuConfig
from sim.verilator import (REGISTERED_RESET, REPO, SYSTEM, VERILATOR_ARGS, _preset,
                           _storage_verilog, cached_build, generate_verilog)
from sim.zero_init import ZERO_INIT_THRESHOLD, compact_zero_init, zero_init_lines

__all__ = ["HARNESS", "HARNESS_SOURCES", "build_harness", "run_jobs", "generate_multi_verilog"]

HARNESS = Path(__file__).resolve().parent / "harness.cpp"
#: Every source of the harness: ``harness.cpp`` (its ``main``) and the headers it includes from
#: ``sim/harness/`` (one concept each; the list is in its header comment). All are copied into
#: the build directory and are inputs of the build's cache key, so a change to any of them
#: rebuilds the harness (``tests/sim/test_build_cache.py`` checks that every file it includes
#: is here).
HARNESS_SOURCES = (HARNESS, *sorted((HARNESS.parent / "harness").glob("*.h")))
EXECUTABLE = "ember_harness"
#: Verilator arguments of the harness build: the cocotb build's, without --timing (the harness
#: makes the clock, the design has no delays)
HARNESS_ARGS = [a for a in VERILATOR_ARGS if a != "--timing"]


def generate_multi_verilog(config: TmuConfig, mem_words: int, memory, units: int) -> str:
    """Verilog of ``hw.multi_system.MultiSystem`` (module ``ember_system``) with ``units`` units,
    followed by the extra modules it instantiates."""
    from hw.multi_system import MultiSystem
    from sim.registered_reset import convert
    top = MultiSystem(config, units=units, memory=memory, mem_words=mem_words, storage="verilog")
    text = convert(top, SYSTEM)               # the reset input registered once (sim.registered_reset)
    return text + "".join(top.verilog_modules.values())


def build_harness(config: TmuConfig | None = None, mem_words: int = 1 << 16, *,
                  memory="simple", units: int | None = None) -> Path:
    """Build (once, cached in ``build/rtl/``) the harness executable for a configuration, memory
    preset (name or ``HbmPreset``) and memory size (64-bit words); returns its path. ``units``
    None: the single-unit ``hw.system.System``; K (1, 2, 4, 8): ``hw.multi_system.MultiSystem``
    with K units (one build per K). A design with more than ``sim.zero_init.ZERO_INIT_THRESHOLD``
    zero-initialised memory elements (the 8-unit system; 4 units with 512 lines each) has its memory initialisation written
    as loops (``sim.zero_init``; same simulation), which the C++ compiler can compile in
    bounded memory. Raises ``RuntimeError`` with the tail of ``build.log`` if
    Verilator fails, ``ValueError`` naming ``units`` for another count."""
    from hw.multi_system import UNITS
    if units is not None and (units not in UNITS or isinstance(units, bool)):
        raise ValueError(f"units must be one of {UNITS} or None, not {units!r}")
    config = config or TmuConfig()
    preset = _preset(memory)
    key = {"engine": "cpp", "config": config.as_dict(), "mem_words": mem_words,
           "memory": repr(preset), "verilator_args": HARNESS_ARGS}
    if units is not None:
        key["units"] = units
    key = json.dumps(key, sort_keys=True)
    inputs = [p for p in (REPO / "hw").rglob("*") if p.suffix in (".py", ".v")] + \
        list(HARNESS_SOURCES) + [REGISTERED_RESET]

    def generate():
        text = (generate_verilog(config, mem_words, preset) if units is None
                else generate_multi_verilog(config, mem_words, preset, units))
        if zero_init_lines(text) > ZERO_INIT_THRESHOLD:   # K = 8; K = 4 at 512 lines (sim.zero_init)
            text = compact_zero_init(text)
        files = {f"{SYSTEM}.v": text, "ember_hbm_storage.v": _storage_verilog().read_text()}
        for path in HARNESS_SOURCES:      # harness.cpp, harness/*.h: the same tree as in sim/
            files[path.relative_to(HARNESS.parent).as_posix()] = path.read_text()
        return files

    defines = [] if units is None else ["-DMULTI_TOP", f"-DUNITS={units}"]

    def build(build_dir, paths):
        cmd = ["verilator", "--cc", "--exe", "--build", "-j", str(os.cpu_count() or 1),
               "--top-module", SYSTEM, "-Mdir", str(build_dir / "obj"), "-o", EXECUTABLE,
               "-CFLAGS", " ".join([f"-DDATA_TOKENS={config.output_tokens}"] + defines),
               *HARNESS_ARGS, *[str(p) for p in paths if p.suffix in (".v", ".cpp")]]
        with open(build_dir / "build.log", "w") as log:
            log.write(" ".join(cmd) + "\n")
            log.flush()
            subprocess.run(cmd, cwd=build_dir, stdout=log, stderr=subprocess.STDOUT, check=True)

    return cached_build(key, inputs, generate, build) / "obj" / EXECUTABLE


def _unit_lines(job: dict) -> list[str]:
    words = job["program_words"]
    return [f"program {len(words)} " + " ".join(f"{w:x}" for w in words),
            f"prog_len {job['prog_len']}",
            f"args {len(job['args'])} " + " ".join(f"{a:x}" for a in job["args"]),
            f"mem_limit {job['mem_limit']:x}",
            f"watchdog {-1 if job['watchdog'] is None else int(job['watchdog'])}",
            f"bp_threshold {job['bp_threshold']}",
            f"seed {job['seed'] & 0xFFFF_FFFF}",
            _core_line(job.get("core"))]


def _core_line(core: dict | None) -> str:
    if core is None:
        return "core 0"
    pops = core["pops_per_control"]
    pace = core.get("pace")
    line = (f"core {len(pops)} {0 if pace else core['cycles_per_control']} "
            f"{core['tokens_per_cycle']} {core['buffer_beats']} " + " ".join(str(int(k)) for k in pops))
    if not pace:
        return line
    return (line + " " + " ".join(str(int(p)) for p in pace) + " "
            + " ".join(str(int(k)) for k in core["instructions"]) + f" {core['window']}")


def _write_jobs(path: Path, spec: list[dict]) -> None:
    from hw.core_if import CSR
    lines = ["ember_jobs",
             " ".join(["csr"] + [str(v) for v in (
                 CSR.PROG_ADDR, CSR.PROG_DATA, CSR.PROG_LEN, CSR.ARGS, CSR.MEM_LIMIT_LO,
                 CSR.WATCHDOG, CSR.CTRL, CSR.STATUS, CSR.FAULT_ADDR_LO, CSR.COUNTERS,
                 CSR.CONFIG3, CSR.MEM_STATS)]),
             f"counters {len(COUNTERS)}", f"jobs {len(spec)}"]
    for job in spec:
        lines.append("job")
        if job.get("backdoor_words") is not None:
            words = job["backdoor_words"]
            lines.append(f"backdoor {len(words)} " + " ".join(f"{w:x}" for w in words))
        else:
            lines.append(f"image {job['image']}")
        units = job.get("units") or [job]     # a multi-unit job lists its units' entries
        lines.append(f"units {len(units)}")
        for unit in units:                    # a unit entry, or {"sequence": [unit entries]}
            programs = unit["sequence"] if "sequence" in unit else [unit]
            lines.append(f"sequence {len(programs)}")
            for program in programs:
                lines += _unit_lines(program)
        lines.append(f"max_cycles {job['max_cycles']}")
    path.write_text("\n".join(lines) + "\n")


def _read_results(job_dir: Path) -> list[dict]:
    """Per job, unit and program of the unit's sequence (in that order), the raw results; each
    entry has ``job``, ``unit``, ``seq`` and ``start``."""
    results = []
    lines = (job_dir / "results.txt").read_text().splitlines()
    for head, core, counters, stats in zip(lines[0::4], lines[1::4], lines[2::4], lines[3::4]):
        f = head.split()
        fields = dict(zip(f[0::2], f[1::2]))
        active, mismatch, finished, finish, starved, first = (int(v) for v in core.split()[1:])
        n, u, k = int(fields["result"]), int(fields["unit"]), int(fields["seq"])
        counter_values = [int(v) for v in counters.split()[2:]]
        results.append({
            "job": n, "unit": u, "seq": k, "start": int(fields["start"]),
            "data": np.fromfile(job_dir / f"data_{n}_{u}_{k}.bin", dtype="<u8").tolist(),
            "ctrl": np.fromfile(job_dir / f"ctrl_{n}_{u}_{k}.bin", dtype="<u2").tolist(),
            "status": int(fields["status"]), "fault_addr": int(fields["fault_addr"]),
            "counters": dict(zip(COUNTERS, counter_values)),
            "mem_stats": [int(v) for v in stats.split()[2:]],
            "timeout": fields["timeout"] == "1",
            "drain_cycles": int(fields["drain_cycles"]), "drain_wall": float(fields["drain_wall"]),
            "core": ({"schedule_mismatch": bool(mismatch), "finished": bool(finished),
                      "finish_cycles": finish, "starved_cycles": starved,
                      "first_control_cycle": first} if active else None),
        })
    return results


def run_jobs(executable: Path, spec: list[dict], job_dir: Path) -> list[dict]:
    """Run the jobs of ``spec`` (the entries ``sim.system`` builds: program words, image path or
    back-door words, arguments, memory limit, watchdog, back-pressure threshold, seed, max
    cycles, optional core schedule) in one harness process in ``job_dir``; returns per job what the cocotb module
    ``sim.system_top`` returns (tokens, status, fault address, counters, memory statistics,
    timeout, drain cycles and wall time), and ``core`` (None, or the core model's finish cycle,
    starved cycles, finished and schedule-mismatch flags); a multi-unit job (an entry with
    ``units``: a list of per-unit entries, for a harness built with ``units``) gives one result
    per unit, in order. Raises ``RuntimeError`` (with the log's tail) if the harness fails.

    With ``EMBER_PROFILE_GUIDED=1`` in the environment the jobs run on the profile-guided build
    of ``executable`` (``sim.profile_guided``; same results), built and trained on ``spec``'s
    first job if it does not exist yet."""
    from sim import profile_guided
    if profile_guided.requested() and spec:
        executable = profile_guided.profile_guided_harness(Path(executable), spec[:1], _run_jobs)
    return _run_jobs(executable, spec, job_dir)


def _run_jobs(executable: Path, spec: list[dict], job_dir: Path) -> list[dict]:
    _write_jobs(job_dir / "jobs.txt", spec)
    log = job_dir / "sim.log"
    with open(log, "w") as f:
        proc = subprocess.run([str(executable), str(job_dir), f"+HBM_IMAGE={job_dir / 'image.hex'}"],
                              cwd=job_dir, stdout=f, stderr=subprocess.STDOUT)
    if proc.returncode != 0 or not (job_dir / "results.txt").is_file():
        tail = log.read_text(errors="replace")[-4000:]
        raise RuntimeError(f"the C++ harness failed (exit {proc.returncode}); log {log}:\n{tail}")
    return _read_results(job_dir)
