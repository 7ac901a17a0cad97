#!/usr/bin/env python3
"""The performance report: runs the benchmarks of issues 10 and 11 and writes ``docs/report/``.

``make report`` (or ``python scripts/report.py``) runs each step's command — a benchmark script of
``scripts/`` that checks every run it makes against the golden model or PyTorch and writes a CSV
into ``build/report/`` — then renders ``docs/report/README.md``: per step, the command, when it
ran (UTC start and end), the machine's load average before and after (the machine is shared:
cycle counts do not depend on it, wall times do), the git commit, a table of the CSV's main
columns and a matplotlib figure (``docs/report/<step>.png``).

Steps (``--steps``, default all, in this order):

====================  =======================================================================
``bandwidth``         issue 10: the unit against the memory's ceiling, -O3 and hand-written, HBM2 and HBM3
                      (``bench_bandwidth.py``)
``bandwidth_sweeps``  issue 10: sweeps of lines in flight, ports and output width, DLRM shape
``bandwidth_wide``    issue 10: 1, 2, 4, 8 memory ports at a 1024-bit output (not the default unit)
``core_only``         issue 11 table 1: DAE ÷ core-only at 8/16/32 misses in flight (``bench_core_only.py``)
``multiunit``         issue 11 table 2: K = 1, 2, 4, 8 units sharing one HBM2 (``bench_multiunit.py``)
``compiler``          issue 11 table 3: -O3 ÷ -O0 per workload on the RTL (``bench_compiler.py``)
``chained``           issue 10: dependent index chains (``hashed_gather``, ``csr_of_csr``) on the RTL
``handwritten``       issue 11 table 4: compiled ÷ hand-written (``bench_handwritten.py``)
``mapping``           issue 11 table 5: makespan of the table-to-unit mappers (``bench_mapping.py``)
``sweep``             a design-space sweep: lines in flight on the DLRM-like EmbeddingBag (``sweep.py``)
====================  =======================================================================

Each step that runs copies its CSV and metadata (JSON: command, commit, dates, load) into the
report's ``data/`` directory (``docs/report/data/``, kept in git), and the report is rendered from
there; a step that is not run keeps its section (and figure) as the report already has it, so
``--steps NAME`` on a fresh clone updates that one section and leaves the others alone.

``--quick`` runs every step on small inputs (minutes; what the tests run) and writes its report to
``build/report/quick/`` unless ``--out`` says otherwise (a smoke run never replaces the committed
figures); the default runs the full inputs (hours on two cores) into ``docs/report/``.
``--render-only`` re-renders from ``<out>/data/`` (dates stay those of the runs).

Usage: python scripts/report.py [--steps bandwidth,mapping] [--quick] [--render-only]
       [--out docs/report]
"""

from __future__ import annotations

import argparse
import csv
import json
import os
import re
import shutil
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
BUILD = REPO / "build" / "report"
DOCS = REPO / "docs" / "report"
QUICK_OUT = BUILD / "quick"


@dataclass(frozen=True)
class Step:
    """One benchmark of the report: how to run it and what to show of its CSV."""
    name: str
    title: str
    full: list[str]                   # script + arguments (the CSV path is appended)
    quick: list[str]
    csv_option: str                   # the script's option that names its CSV
    columns: list[str]                # CSV columns of the table (those present are shown)
    bar_label: list[str]              # columns that name a bar
    bar_value: str                    # column plotted
    bar_axis: str                     # its axis label
    note: str = ""
    keep_rows: dict = field(default_factory=dict)   # column -> value: rows shown


STEPS = [
    Step("bandwidth", "Issue 10: the access unit against the memory's own ceiling",
         ["scripts/bench_bandwidth.py", "--no-sweeps", "--presets", "HBM2", "HBM3", "--programs",
          "O3", "hand"],
         ["scripts/bench_bandwidth.py", "--ceiling-only", "--no-sweeps", "--cases", "dlrm_uniform",
          "cora_d16"], "--out",
         ["case", "program", "preset", "max_inflight", "unit_cycles", "unit_useful_bytes_per_cycle",
          "ceiling_bytes_per_cycle", "output_bound", "over_ceiling", "over_min_ceiling_output",
          "unit_mean_lines_in_flight", "unit_peak_lines_in_flight", "littles_law_bound"],
         ["case", "program", "preset"], "unit_useful_bytes_per_cycle", "useful bytes / cycle",
         "Goal (DLRM shape): unit ÷ min(ceiling, output bound) >= 95 %. --quick computes the "
         "ceilings only."),
    Step("bandwidth_sweeps",
         "Issue 10: lines in flight, memory ports and output width (DLRM shape, -O3, HBM2)",
         ["scripts/bench_bandwidth.py", "--no-table", "--inflight", "16,64,256,1024", "--ports",
          "1,4,8", "--output-tokens", "2,4,16"],
         ["scripts/bench_bandwidth.py", "--ceiling-only", "--no-table", "--inflight", "64",
          "--cases", "dlrm_uniform"], "--out",
         ["sweep", "max_inflight", "memory_ports", "output_tokens", "unit_cycles",
          "unit_useful_bytes_per_cycle", "ceiling_bytes_per_cycle", "output_bound",
          "over_min_ceiling_output", "unit_mean_lines_in_flight", "unit_peak_lines_in_flight",
          "littles_law_bound"],
         ["sweep", "max_inflight", "memory_ports", "output_tokens"], "unit_useful_bytes_per_cycle",
         "useful bytes / cycle",
         "One Verilator build per point; every other parameter the default unit's (512 lines in "
         "flight, 2 ports, 8 tokens = a 512-bit output), whose row is the bandwidth table's "
         "dlrm_uniform -O3 HBM2 row."),
    Step("bandwidth_wide", "Issue 10: memory ports at a 1024-bit output (DLRM shape, -O3, HBM2)",
         ["scripts/bench_bandwidth.py", "--no-table", "--base-output-tokens", "16", "--ports",
          "1,2,4,8"],
         ["scripts/bench_bandwidth.py", "--ceiling-only", "--no-table", "--base-output-tokens", "16",
          "--ports", "4", "--cases", "dlrm_uniform"], "--out",
         ["sweep", "max_inflight", "memory_ports", "output_tokens", "unit_cycles",
          "unit_useful_bytes_per_cycle", "ceiling_bytes_per_cycle", "output_bound",
          "over_min_ceiling_output", "unit_mean_lines_in_flight", "unit_peak_lines_in_flight",
          "littles_law_bound"],
         ["memory_ports"], "unit_useful_bytes_per_cycle", "useful bytes / cycle",
         "Not the default unit: 16 tokens = a 1024-bit output (output bound 128 B/cycle), where the "
         "ports, not the output, can bound the rate; 512 lines in flight as the default."),
    Step("core_only", "Issue 11, table 1: DAE against a core-only baseline on the same memory",
         ["scripts/bench_core_only.py", "--size", "full", "--memory", "HBM2", "--workloads",
          "eb_sum", "eb_mean", "eb_max", "eb_weighted", "spmm_cora", "spmv_csr", "kg_transe",
          "spattn_gather", "dlrm_sum"],
         ["scripts/bench_core_only.py", "--size", "small", "--memory", "simple", "--mshrs", "8", "16"],
         "--out", ["workload", "mshrs", "caches", "core_only_cycles", "mshr_mean", "dae_access_cycles",
                   "dae_core_cycles", "dae_cycles", "speedup", "execute_ooo_cycles",
                   "fitted_cycles_per_control", "dae_fitted_cycles", "speedup_fitted",
                   "execute_replay_cycles", "dae_replay_cycles", "speedup_replay", "error"],
         ["workload", "mshrs", "caches"], "speedup_replay",
         "speedup (core-only ÷ DAE cycles, execute side replayed from the same OoO core)",
         "Speedup = core-only cycles ÷ DAE cycles (> 1: DAE faster); `speedup`: the coupled core at "
         "the flat 6 cycles per callback; `speedup_fitted`: at the rate fitted to the execute side "
         "run on the baseline's own out-of-order core (`execute_ooo_cycles`); `speedup_replay`: "
         "that run replayed callback by callback (`CoreReplay`). Both traces keep "
         "accumulators in registers and store each once, after its last update. Goal >= 8x at "
         "16 misses."),
    Step("multiunit", "Issue 11, table 2: system bandwidth of K units on one HBM (DLRM shape)",
         ["scripts/bench_multiunit.py", "--units", "1,2,4,8", "--preset", "HBM2"],
         ["scripts/bench_multiunit.py", "--units", "1", "--preset", "HBM2"], "--csv",
         ["units", "preset", "max_inflight", "memory_ports", "makespan", "unit_cycles",
          "useful_bytes_per_cycle", "table_bytes_per_cycle", "ceiling_bytes_per_cycle",
          "over_ceiling"],
         ["units"], "table_bytes_per_cycle", "table bytes / cycle",
         "Goal: >= 90 % of the ceiling at the K that saturates the memory."),
    Step("compiler", "Issue 11, table 3: -O3 ÷ -O0 per workload on the RTL",
         ["scripts/bench_compiler.py", "--size", "full", "--rtl", "--coupled", "--replay",
          "--memory", "HBM2"],
         ["scripts/bench_compiler.py", "--size", "small", "--rtl", "--coupled", "--replay", "--levels",
          "0", "3"],
         "--out",
         ["workload", "level", "rtl_cycles", "dae_cycles", "dae_estimate", "rtl_speedup",
          "dae_speedup", "execute_ooo_cycles", "core_cycles", "data_per_lookup",
          "control_per_lookup"],
         ["workload"], "dae_speedup", "DAE speedup over -O0",
         "DAE cycles: the simulated core (coupled) popped DONE, replaying each kernel's execute "
         "side run on the core-only baseline's out-of-order core callback by callback "
         "(`--replay`). Ember Fig. 13: 6.5x-21x from -O0 to -O3.", keep_rows={"level": "3"}),
    Step("chained", "Issue 10: dependent index chains on the RTL (an index read through another)",
         ["scripts/bench_compiler.py", "--size", "full", "--rtl", "--memory", "HBM2", "--levels", "0",
          "3", "--workloads", "hashed_gather", "csr_of_csr"],
         ["scripts/bench_compiler.py", "--size", "small", "--rtl", "--levels", "3", "--workloads",
          "hashed_gather", "csr_of_csr"],
         "--out",
         ["workload", "level", "lookups", "rtl_cycles", "rtl_output_bound_cycles",
          "rtl_over_output_bound", "rtl_block_wait_cycles", "rtl_uops", "rtl_bytes_per_cycle",
          "rtl_speedup", "error"],
         ["workload", "level"], "rtl_over_output_bound", "access cycles ÷ the unit's output bound",
         "`hashed_gather`: ids -> hash -> `remap[h]` -> a 256-byte row (the chain engine); "
         "`csr_of_csr`: groups -> sessions -> items -> a row (three nested layers). "
         "`rtl_output_bound_cycles`: the data tokens at 8 per cycle. Access cycles (the unit "
         "alone, no core); a lookup is one gathered element."),
    Step("handwritten", "Issue 11, table 4: compiled ÷ hand-written",
         ["scripts/bench_handwritten.py", "--size", "full", "--memory", "HBM2"],
         ["scripts/bench_handwritten.py", "--size", "small", "--levels", "3"], "--out",
         ["workload", "level", "rtl_cycles", "dae_cycles", "rtl_pct", "dae_pct", "error"],
         ["workload", "level"], "rtl_pct", "compiled ÷ hand-written, access cycles (%)",
         "Ember Fig. 16: 95.2-100 %, mean 98.1 %; goal >= 99 % at -O3."),
    Step("mapping", "Issue 11, table 5: table-to-unit mapping (makespan on the RTL)",
         ["scripts/bench_mapping.py", "--units", "4", "--tables", "16", "--bags", "64",
          "--memory", "HBM2"],
         ["scripts/bench_mapping.py", "--units", "2", "--tables", "4", "--bags", "8",
          "--memory", "simple", "--sets", "balanced,extreme", "--median-rows", "500", "--max-rows", "2000"], "--csv",
         ["set", "mapper", "units", "pieces", "makespan_cycles", "makespan_over_best", "imbalance",
          "estimated_makespan", "estimate_error"],
         ["set", "mapper"], "makespan_cycles", "makespan (cycles)"),
    Step("sweep", "Design-space sweep: lines in flight (EmbeddingBag sum, -O3, HBM2)",
         ["scripts/sweep.py", "--workloads", "eb_sum,spmm_cora", "--size", "full", "--levels", "3",
          "--memory", "HBM2", "--max-inflight", "64,128,256,512", "--jobs", "1"],
         ["scripts/sweep.py", "--workloads", "eb_sum", "--levels", "3", "--memory", "simple",
          "--jobs", "1"], "--out",
         ["workload", "memory", "max_inflight", "access_cycles", "dae_cycles",
          "useful_bytes_per_cycle", "mean_lines_in_flight", "peak_lines_in_flight",
          "read_latency_mean", "read_latency_max", "slow_reads", "channel_queue_peak",
          "rob_full_cycles", "unattributed_cycles", "error"],
         ["workload", "max_inflight"], "useful_bytes_per_cycle", "useful bytes / cycle"),
]
STEP_NAMES = [s.name for s in STEPS]


def _load() -> str:
    return " ".join(f"{v:.2f}" for v in os.getloadavg())


def _git_commit() -> str:
    try:
        return subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=REPO, capture_output=True,
                              text=True, check=True).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return "unknown"


def run_step(step: Step, quick: bool, build: Path = BUILD) -> dict:
    """Run a step's command; write its CSV and metadata (JSON) into ``build``. Raises
    ``RuntimeError`` naming the step and its log when the command fails."""
    build.mkdir(parents=True, exist_ok=True)
    csv_path = build / f"{step.name}.csv"
    cmd = [sys.executable, *(step.quick if quick else step.full), step.csv_option, str(csv_path)]
    meta = dict(step=step.name, command=" ".join(["python", *cmd[1:]]).replace(str(REPO) + "/", ""),
                quick=quick, commit=_git_commit(), load_before=_load(),
                start=time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()))
    t0 = time.perf_counter()
    log = build / f"{step.name}.log"
    with log.open("w") as f:
        proc = subprocess.run(cmd, cwd=REPO, stdout=f, stderr=subprocess.STDOUT)
    meta.update(end=time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()), load_after=_load(),
                wall_s=round(time.perf_counter() - t0, 1), returncode=proc.returncode)
    (build / f"{step.name}.json").write_text(json.dumps(meta, indent=1))
    if proc.returncode != 0 or not csv_path.exists():
        raise RuntimeError(f"report step {step.name!r} failed (exit {proc.returncode}); see {log}")
    return meta


def _rows(path: Path) -> list[dict]:
    with path.open(newline="") as f:
        return list(csv.DictReader(f))


def _cell(text: str) -> str:
    """A CSV value for a table: integers as they are, other numbers to 4 significant digits."""
    try:
        value = float(text)
    except (TypeError, ValueError):
        return text or ""
    return text if value.is_integer() and "." not in text else f"{value:.4g}"


def _table(rows: list[dict], columns: list[str]) -> str:
    if not rows:
        return "(no rows)\n"
    cols = [c for c in columns if c in rows[0]] or list(rows[0])
    out = ["| " + " | ".join(cols) + " |", "|" + "---|" * len(cols)]
    out += ["| " + " | ".join(_cell(r.get(c, "")) for c in cols) + " |" for r in rows]
    return "\n".join(out) + "\n"


def _figure(step: Step, rows: list[dict], path: Path) -> bool:
    """A bar chart of ``step.bar_value`` per row (False when there is nothing to plot)."""
    value = step.bar_value
    points = []
    for r in rows:
        try:
            points.append((" ".join(r.get(c, "") for c in step.bar_label), float(r[value])))
        except (KeyError, TypeError, ValueError):
            continue
    if not points:
        return False
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    fig, ax = plt.subplots(figsize=(max(4.0, 0.5 * len(points) + 2), 3.2))
    ax.bar(range(len(points)), [v for _, v in points], color="#4477aa")
    ax.set_xticks(range(len(points)), [k for k, _ in points], rotation=45, ha="right", fontsize=7)
    ax.set_ylabel(step.bar_axis)
    ax.set_title(step.title, fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return True


def keep_data(step: Step, build: Path, out: Path) -> None:
    """Copy a step's CSV and metadata from ``build`` into the report's ``out/data/``."""
    data = out / "data"
    data.mkdir(parents=True, exist_ok=True)
    for suffix in (".csv", ".json"):
        shutil.copyfile(build / f"{step.name}{suffix}", data / f"{step.name}{suffix}")


def _sections(readme: Path) -> dict[str, str]:
    """An existing report's sections: heading line (``## title``) -> the section's text."""
    if not readme.exists():
        return {}
    parts = re.split(r"(?m)^(?=## )", readme.read_text())[1:]
    return {p.splitlines()[0]: p.rstrip() + "\n" for p in parts}


def render(steps: list[Step], out: Path, data: Path | None = None, quick: bool = False) -> Path:
    """Write ``out/README.md`` (and the figures) from the CSVs and metadata in ``data`` (default
    ``out/data``). Only runs of the same size (``quick`` or full) are shown; a step without such
    a run keeps its section of the existing ``out/README.md`` (figure untouched), or is listed as
    not run with the command that runs it."""
    out.mkdir(parents=True, exist_ok=True)
    data = out / "data" if data is None else data
    existing = _sections(out / "README.md")
    parts = ["# Performance report (generated by `make report`)\n",
             "Every table below is a CSV written by the command shown (all runs checked against the "
             "golden model or PyTorch by that script; the CSVs with every column, and each run's "
             "metadata, are in [`data/`](data/) for the steps run since session 49); re-run with `make report` "
             "(`python scripts/report.py`), or one step with `--steps NAME`. Cycle counts do not "
             "depend on the machine's load; wall times do. See docs/performance.md for the "
             "analysis.\n"]
    for step in steps:
        heading = f"## {step.title}"
        csv_path, meta_path = data / f"{step.name}.csv", data / f"{step.name}.json"
        meta = json.loads(meta_path.read_text()) if meta_path.exists() else None
        if not csv_path.exists() or meta is None or bool(meta.get("quick")) != quick:
            kept = existing.get(heading, "")
            if kept and not kept[len(heading):].lstrip().startswith("Not run"):
                parts.append(kept)                              # kept as the report has it
                continue
            (out / f"{step.name}.png").unlink(missing_ok=True)
            parts.append(heading + "\n")
            if meta is None or not csv_path.exists():
                parts.append(f"Not run yet: `python scripts/report.py --steps {step.name}"
                             f"{' --quick' if quick else ''}`.\n")
            else:
                parts.append(f"Not run {'--quick' if quick else 'on the full inputs'} yet: "
                             f"`python scripts/report.py --steps {step.name}"
                             f"{' --quick' if quick else ''}`.\n")
            continue
        (out / f"{step.name}.png").unlink(missing_ok=True)      # never leave another run's figure
        parts.append(heading + "\n")
        rows = _rows(csv_path)
        if step.keep_rows:
            rows = [r for r in rows if all(r.get(k) == v for k, v in step.keep_rows.items())]
        parts.append(f"```sh\n{meta['command']}\n```\n")
        parts.append(f"Ran {meta['start']} to {meta['end']} ({meta['wall_s']} s) at commit "
                     f"`{meta['commit']}`, load average {meta['load_before']} before, "
                     f"{meta['load_after']} after{' (--quick: small inputs)' if meta['quick'] else ''}."
                     + (f" {step.note}" if step.note else "") + "\n")
        parts.append(_table(rows, step.columns))
        if step.bar_value and _figure(step, rows, out / f"{step.name}.png"):
            parts.append(f"![{step.title}]({step.name}.png)\n")
    readme = out / "README.md"
    readme.write_text("\n".join(parts))
    return readme


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                     epilog=__doc__.split("\n\n", 1)[1],
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--steps", default=",".join(STEP_NAMES),
                        help=f"comma-separated steps (default all: {','.join(STEP_NAMES)})")
    parser.add_argument("--quick", action="store_true", help="small inputs (minutes)")
    parser.add_argument("--render-only", action="store_true",
                        help="render from <out>/data/ without running anything")
    parser.add_argument("--out", default=None,
                        help="the report's directory (default docs/report/; with --quick "
                             "build/report/quick/)")
    ns = parser.parse_args(argv)
    names = [s.strip() for s in ns.steps.split(",") if s.strip()]
    for n in names:
        if n not in STEP_NAMES:
            parser.error(f"--steps: {n!r} is not one of {', '.join(STEP_NAMES)}")
    chosen = [s for s in STEPS if s.name in names]
    out = Path(ns.out) if ns.out else (QUICK_OUT if ns.quick else DOCS)
    if not ns.render_only:
        for step in chosen:
            print(f"[{time.strftime('%H:%M:%S')}] {step.name}: running ...", flush=True)
            try:
                meta = run_step(step, ns.quick)
            except RuntimeError as e:
                print(f"error: {e}", file=sys.stderr)
                return 1
            keep_data(step, BUILD, out)
            print(f"[{time.strftime('%H:%M:%S')}] {step.name}: done in {meta['wall_s']} s", flush=True)
    readme = render(STEPS, out, quick=ns.quick)
    print(f"wrote {readme}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
