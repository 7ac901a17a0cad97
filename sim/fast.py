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
    program <count> <hex 32-bit words...>
    prog_len <bytes>
    args <count> <hex 64-bit values...>
    mem_limit <hex bytes>
    watchdog <cycles, -1: leave the register alone>
    bp_threshold <0..65536: a sink is ready when its xorshift32 state's low 16 bits are >= this>
    seed <32-bit seed>
    max_cycles <cycles>
    core <n> [<cycles per control> <tokens per cycle> <buffer beats> <n operand counts>]
                                              (n = 0: no core schedule, the back-pressure sinks)

``results.txt`` (written by the harness), per job::

    result <n> timeout <0|1> status <STATUS> fault_addr <addr> drain_cycles <c> drain_wall <s>
    core <active 0|1> <schedule mismatch 0|1> <finished 0|1> <finish cycle> <starved cycles> <first cycle>
    counters <count> <values in hw.tmu.COUNTERS order>
    mem_stats <count> <values in hw.hbm_model.stat_names order>

and the tokens in ``data_<n>.bin`` (uint64 little-endian) and ``ctrl_<n>.bin`` (uint16).
"""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import numpy as np

from hw.tmu import COUNTERS, TmuConfig
from sim.verilator import REPO, SYSTEM, VERILATOR_ARGS, _preset, _storage_verilog, cached_build, \
    generate_verilog

__all__ = ["HARNESS", "build_harness", "run_jobs"]

HARNESS = Path(__file__).resolve().parent / "harness.cpp"
EXECUTABLE = "ember_harness"
#: Verilator arguments of the harness build: the cocotb build's, without --timing (the harness
#: makes the clock, the design has no delays)
HARNESS_ARGS = [a for a in VERILATOR_ARGS if a != "--timing"]


def build_harness(config: TmuConfig | None = None, mem_words: int = 1 << 16, *,
                  memory="simple") -> Path:
    """Build (once, cached in ``build/rtl/``) the harness executable for a configuration, memory
    preset (name or ``HbmPreset``) and memory size (64-bit words); returns its path.
    Raises ``RuntimeError`` with the tail of ``build.log`` if Verilator fails."""
    config = config or TmuConfig()
    preset = _preset(memory)
    key = json.dumps({"engine": "cpp", "config": config.as_dict(), "mem_words": mem_words,
                      "memory": repr(preset), "verilator_args": HARNESS_ARGS}, sort_keys=True)
    inputs = [p for p in (REPO / "hw").rglob("*") if p.suffix in (".py", ".v")] + [HARNESS]

    def generate():
        return {f"{SYSTEM}.v": generate_verilog(config, mem_words, preset),
                "ember_hbm_storage.v": _storage_verilog().read_text(),
                "harness.cpp": HARNESS.read_text()}

    def build(build_dir, paths):
        cmd = ["verilator", "--cc", "--exe", "--build", "-j", str(os.cpu_count() or 1),
               "--top-module", SYSTEM, "-Mdir", str(build_dir / "obj"), "-o", EXECUTABLE,
               "-CFLAGS", f"-DDATA_TOKENS={config.output_tokens}",
               *HARNESS_ARGS, *[str(p) for p in paths]]
        with open(build_dir / "build.log", "w") as log:
            log.write(" ".join(cmd) + "\n")
            log.flush()
            subprocess.run(cmd, cwd=build_dir, stdout=log, stderr=subprocess.STDOUT, check=True)

    return cached_build(key, inputs, generate, build) / "obj" / EXECUTABLE


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
        words = job["program_words"]
        lines.append(f"program {len(words)} " + " ".join(f"{w:x}" for w in words))
        lines.append(f"prog_len {job['prog_len']}")
        lines.append(f"args {len(job['args'])} " + " ".join(f"{a:x}" for a in job["args"]))
        lines.append(f"mem_limit {job['mem_limit']:x}")
        lines.append(f"watchdog {-1 if job['watchdog'] is None else int(job['watchdog'])}")
        lines.append(f"bp_threshold {job['bp_threshold']}")
        lines.append(f"seed {job['seed'] & 0xFFFF_FFFF}")
        lines.append(f"max_cycles {job['max_cycles']}")
        core = job.get("core")
        if core is None:
            lines.append("core 0")
        else:
            pops = core["pops_per_control"]
            lines.append(f"core {len(pops)} {core['cycles_per_control']} {core['tokens_per_cycle']} "
                         f"{core['buffer_beats']} " + " ".join(str(int(k)) for k in pops))
    path.write_text("\n".join(lines) + "\n")


def _read_results(job_dir: Path) -> list[dict]:
    results = []
    lines = (job_dir / "results.txt").read_text().splitlines()
    for head, core, counters, stats in zip(lines[0::4], lines[1::4], lines[2::4], lines[3::4]):
        f = head.split()
        fields = dict(zip(f[0::2], f[1::2]))
        active, mismatch, finished, finish, starved, first = (int(v) for v in core.split()[1:])
        n = int(fields["result"])
        counter_values = [int(v) for v in counters.split()[2:]]
        results.append({
            "data": np.fromfile(job_dir / f"data_{n}.bin", dtype="<u8").tolist(),
            "ctrl": np.fromfile(job_dir / f"ctrl_{n}.bin", dtype="<u2").tolist(),
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
    starved cycles, finished and schedule-mismatch flags). Raises ``RuntimeError`` (with the log's tail) if the
    harness fails."""
    _write_jobs(job_dir / "jobs.txt", spec)
    log = job_dir / "sim.log"
    with open(log, "w") as f:
        proc = subprocess.run([str(executable), str(job_dir), f"+HBM_IMAGE={job_dir / 'image.hex'}"],
                              cwd=job_dir, stdout=f, stderr=subprocess.STDOUT)
    if proc.returncode != 0 or not (job_dir / "results.txt").is_file():
        tail = log.read_text(errors="replace")[-4000:]
        raise RuntimeError(f"the C++ harness failed (exit {proc.returncode}); log {log}:\n{tail}")
    return _read_results(job_dir)
