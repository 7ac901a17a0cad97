#!/usr/bin/env python3
"""Bandwidth of the access unit against the memory's own ceiling (issue 10's benchmark).

Cases (``--cases``; inputs drawn with ``numpy.random.default_rng(--seed)``):

=================  ===========================================================================
``dlrm_uniform``   EmbeddingBag sum over a 100,000 x 64 float32 table (256-byte rows), 256 bags x
                   pooling 32, indices uniform over the rows (``examples/embedding_bag_sum.mlir``)
``dlrm_reuse``     the same table and lookups, indices and bag lengths from ``sw.workloads.
                   dlrm_trace`` (Meta's per-row reuse histogram, ``data/dlrm/``)
``cora_d16/64``    SpMM, the GCN-normalised Cora graph (2,708 nodes, 10,556 edges) x a dense
                   (2,708, dim) float32 matrix (``examples/spmm_csr.mlir``)
``grqc_d16/64``    the same on SNAP's ca-GrQc collaboration graph (5,242 nodes, 28,968
                   directed edges, no self-loops; ``--grqc``, default
                   ``data/graphs/ca-GrQc.txt``)
=================  ===========================================================================

Each case runs compiled at ``-O3`` and (``--programs hand``), where
``sw.runtime.handwritten.suite`` has one, as the hand-written program, on the RTL system
(Verilator, ``sw.runtime.drivers.run_kernel(..., "rtl")``) with each memory preset
(``--presets``, default HBM2; HBM3). Every run's results
are checked: EmbeddingBag bit for bit against ``torch.nn.functional.embedding_bag``, SpMM bit for
bit against the kernel-order NumPy reference and within ``rtol = 1e-5`` of PyTorch's sparse
``@`` (``sw.workloads.Workload.check``); a mismatch raises.

Per run (one CSV row):

* *useful bytes/cycle*: the unit's ``bytes_loaded`` counter (gathered elements, indices,
  offsets, values) / its cycles from start to done;
* ÷ *memory ceiling*: the reference HBM model's bytes/cycle on the case's line trace — every
  gathered row as its 64-byte lines in program order, then the lines of the index/offset/value
  arrays — all issued at cycle 0, with ``ceil(peak / 64 B)`` ports and no cap on requests in
  flight (``hw.hbm_model.traces.ceiling``; what ``ember hbm-trace`` reports for that trace);
* ÷ *output bound*: ``8 * output_tokens`` bytes per cycle (the data output's width);
* ÷ *raw peak*: the preset's peak bytes per cycle;
* line requests, peak and mean lines in flight, read latency (mean, max) from the memory model,
  and the **Little's-law bound** ``64 B * max_inflight / mean read latency``: the bytes/cycle a
  reorder buffer of that many lines can sustain at the measured mean latency.

Sweeps (one Verilator build per hardware point, cached in ``$EMBER_BUILD_DIR/rtl``) on
``--sweep-case`` (-O3, ``--sweep-preset``): ``--inflight`` (``TmuConfig.max_inflight``, run-ahead
depth the largest that fits, ``TmuConfig.with_max_inflight``), ``--ports`` (``memory_ports``,
1..8: the row issue block sends up to one line of a row per port per cycle, the traversal and
run-ahead engines use the ports it leaves), ``--output-tokens`` (1, 2, 4, 8, 16: 16 is a 1024-bit beat),
``--prefetch-depth`` (loads each run-ahead engine keeps ahead, e.g. of the index stream). The
sweeps vary one parameter of the base configuration, ``TmuConfig()`` unless
``--base-output-tokens`` / ``--base-ports`` change it (e.g. the port sweep at a 1024-bit output:
``--base-output-tokens 16 --ports 2,4,8``); ``--no-table`` skips the table's runs. On the loaded 2-core machine the default — the six cases at
``-O3`` on HBM2, no sweeps — takes about 25 minutes (a DLRM run is 5-7 minutes of wall time at a
load average of 7: the 25.6 MB table image); ``--all`` adds HBM3, the hand-written programs and
sweeps of 16..1024 lines, 1, 2, 4 and 8 ports and 1..16 tokens (hours). ``TmuConfig`` accepts
1..8 ports and 1..32 tokens (``ValueError`` otherwise, reported as a usage error).

Writes ``build/bench_bandwidth.csv`` and ``build/bench_bandwidth.png`` (``--out``);
``--docs-figure`` also copies the plot to ``docs/figures/bench_bandwidth.png``.

This script chooses the runs (the table, the sweeps' hardware points) and writes the CSV and the
plot; the cases, their memory ceiling and one checked RTL run are ``scripts/bandwidth_cases.py``.

Usage: python scripts/bench_bandwidth.py [--cases ...] [--presets HBM2 HBM3] [--programs O3 hand]
       [--inflight 64,256,1024] [--ports 1,2,4,8] [--output-tokens 2,4,8,16] [--prefetch-depth 64]
       [--base-output-tokens 16] [--base-ports 4] [--no-table]
       [--sweep-case C] [--sweep-preset P] [--no-sweeps] [--all] [--ceiling-only] [--seed S]
       [--out build/bench_bandwidth] [--docs-figure] [--replot CSV ...]
"""

from __future__ import annotations

import argparse
import csv
import dataclasses
import shutil
import sys
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parents[1]
for p in (REPO, REPO / "scripts"):
    if str(p) not in sys.path:
        sys.path.insert(0, str(p))

from bandwidth_cases import (  # noqa: E402,F401  (re-exported: tests import them from here)
    BAGS, CASES, DIM, FAMILY, GRQC, LINE, POOLING, ROWS, case_args, check, dlrm_args, family,
    kernel_for, line_trace, memory_ceiling, ratios, spmm_args, unit_run)

SWEEPS = (("max_inflight", "lines in flight (reorder buffer)"), ("memory_ports", "memory ports"),
          ("output_tokens", "output tokens per cycle (x 64 bits)"),
          ("prefetch_depth", "run-ahead loads per engine"))


def _sweep_points(rows: list, sweep: str) -> list:
    """The rows of one sweep, with the default unit's table row of the same case, program and
    memory as its default point; one row per swept value, in increasing order."""
    swept = [r for r in rows if r["sweep"] == sweep and "unit_cycles" in r]
    if not swept:
        return []
    first = swept[0]
    same = [r for r in rows if r["sweep"] == "table" and "unit_cycles" in r
            and (r["case"], r["program"], r["preset"]) == (first["case"], first["program"],
                                                           first["preset"])]
    from hw.tmu import TmuConfig
    default = getattr(TmuConfig(), sweep)      # CSVs of earlier versions lack some columns
    by_value = {r.setdefault(sweep, default): r for r in same + swept}
    return [by_value[v] for v in sorted(by_value)]


def plot(rows: list, path: Path) -> None:
    """The table's ratio to min(ceiling, output bound) per run, and each sweep's useful
    bytes/cycle against min(output bound, ceiling), one panel each."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    sweeps = [(s, label, pts) for s, label in SWEEPS
              if len(pts := _sweep_points(rows, s)) > 1]
    nrows = (2 + len(sweeps)) // 2
    fig, axes = plt.subplots(nrows, 2, figsize=(13, 4.5 * nrows), squeeze=False)
    panels = [ax for line in axes for ax in line]
    table = [r for r in rows if r["sweep"] == "table" and "unit_cycles" in r]
    ax = panels[0]
    presets = sorted({r["preset"] for r in table})
    labels = sorted({(r["case"], r["program"]) for r in table},
                    key=lambda k: (CASES.index(k[0]), k[1] != "O3"))
    width = 0.8 / max(1, len(presets))
    for j, p in enumerate(presets):
        by = {(r["case"], r["program"]): r for r in table if r["preset"] == p}
        ys = [100 * by[k]["over_min_ceiling_output"] if k in by else 0 for k in labels]
        ax.bar(np.arange(len(labels)) + j * width, ys, width, label=p)
    ax.axhline(95, color="k", ls="--", lw=0.8, label="issue 10 goal (95 %)")
    ax.set_xticks(np.arange(len(labels)) + width * (len(presets) - 1) / 2,
                  [f"{c}\n{'-O3' if p == 'O3' else 'hand'}" for c, p in labels], fontsize=7,
                  rotation=60)
    ax.set_ylabel("% of min(memory ceiling, output bound)")
    ax.set_title("useful bytes/cycle, default unit")
    ax.legend(fontsize=8)
    for ax, (sweep, xlabel, pts) in zip(panels[1:], sweeps):
        xs = [r[sweep] for r in pts]
        ax.plot(xs, [r["unit_useful_bytes_per_cycle"] for r in pts], "o-", label="unit (useful B/cycle)")
        ax.plot(xs, [min(r["output_bound"], r["ceiling_bytes_per_cycle"]) for r in pts], "k--",
                label="min(output bound, memory ceiling)")
        if sweep == "max_inflight":
            ax.set_xscale("log", base=2)
            ax.plot(xs, [r["littles_law_bound"] for r in pts], ":", label="Little's-law bound")
            ax.set_ylim(0, 1.3 * max(min(r["output_bound"], r["ceiling_bytes_per_cycle"]) for r in pts))
        ax.set_xticks(xs, [str(x) for x in xs])
        ax.set_ylim(bottom=0)
        ax.set_xlabel(xlabel)
        ax.set_ylabel("useful bytes / cycle")
        ax.set_title(f"{pts[0]['case']} -O3, {pts[0]['preset']}")
        ax.legend(fontsize=8)
    for ax in panels[1 + len(sweeps):]:
        ax.set_axis_off()
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)


def write_csv(rows: list, path: Path) -> None:
    fields = list(dict.fromkeys(k for r in rows for k in r))
    with path.open("w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=fields)
        w.writeheader()
        w.writerows(rows)


def read_csv(paths: list) -> list:
    """Rows of earlier runs' CSVs, numbers as numbers (for ``--replot``)."""
    rows = []
    for path in paths:
        with open(path, newline="") as f:
            for r in csv.DictReader(f):
                for k, v in r.items():
                    try:
                        r[k] = int(v)
                    except ValueError:
                        try:
                            r[k] = float(v)
                        except ValueError:
                            pass
                rows.append({k: v for k, v in r.items() if v != ""})
    return rows


def _ints(text: str, name: str) -> list:
    try:
        return [int(v) for v in text.split(",") if v.strip()]
    except ValueError:
        raise argparse.ArgumentTypeError(f"{name} must be comma-separated integers, not {text!r}")


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cases", nargs="+", default=list(CASES), choices=CASES)
    parser.add_argument("--presets", nargs="+", default=["HBM2"], choices=("HBM2", "HBM3"))
    parser.add_argument("--programs", nargs="+", default=["O3"], choices=("O3", "hand"),
                        help="O3: compiled at -O3; hand: the hand-written program (EmbeddingBag, SpMM)")
    parser.add_argument("--inflight", default="", help="max_inflight values to sweep, e.g. 64,256,1024")
    parser.add_argument("--ports", default="", help="memory_ports values to sweep (1..8), e.g. 1,2,4,8")
    parser.add_argument("--output-tokens", default="",
                        help="output_tokens values to sweep (1..32), e.g. 2,4,8,16")
    parser.add_argument("--base-output-tokens", type=int, default=None,
                        help="output_tokens of the table and of the other sweeps' points "
                             "(default TmuConfig's, 8)")
    parser.add_argument("--base-ports", type=int, default=None,
                        help="memory_ports of the table and of the other sweeps' points "
                             "(default TmuConfig's, 2)")
    parser.add_argument("--no-table", action="store_true", help="only the sweeps")
    parser.add_argument("--prefetch-depth", default="",
                        help="prefetch_depth values to sweep (run-ahead loads per engine; default none)")
    parser.add_argument("--sweep-case", default="dlrm_uniform", choices=CASES)
    parser.add_argument("--sweep-preset", default="HBM2", choices=("HBM2", "HBM3"))
    parser.add_argument("--no-sweeps", action="store_true", help="only the table")
    parser.add_argument("--all", action="store_true",
                        help="everything of issue 10: HBM2 and HBM3, -O3 and hand-written, sweeps of "
                             "16..1024 lines, 1, 2, 4, 8 ports, 1..16 tokens (hours under load)")
    parser.add_argument("--ceiling-only", action="store_true", help="no RTL runs")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--grqc", type=Path, default=GRQC, help="ca-GrQc edge list (SNAP)")
    parser.add_argument("--out", default=str(REPO / "build" / "bench_bandwidth"),
                        help="path without suffix of the .csv and .png")
    parser.add_argument("--docs-figure", action="store_true",
                        help="copy the plot to docs/figures/bench_bandwidth.png")
    parser.add_argument("--replot", nargs="+", type=Path, metavar="CSV",
                        help="no runs: plot the rows of these CSVs (earlier runs of this script)")
    ns = parser.parse_args(argv)
    if ns.seed < 0:
        parser.error(f"--seed must be an integer >= 0, not {ns.seed}")
    missing = [str(p) for p in ns.replot or () if not p.is_file()]
    if missing:
        parser.error(f"--replot {missing[0]!r} does not exist or is not a file")
    if ns.replot:
        out = Path(ns.out).with_suffix(".png")
        out.parent.mkdir(parents=True, exist_ok=True)
        plot(read_csv(ns.replot), out)
        print(f"wrote {out}")
        if ns.docs_figure:
            dest = REPO / "docs" / "figures" / "bench_bandwidth.png"
            dest.parent.mkdir(parents=True, exist_ok=True)
            shutil.copy(out, dest)
            print(f"wrote {dest}")
        return 0
    from hw.hbm_model.presets import get_preset
    from hw.tmu import TmuConfig
    try:
        tqdm = __import__("tqdm").tqdm
    except ImportError:                       # progress bars only
        def tqdm(it, **_):
            return it
    say = getattr(tqdm, "write", print)
    if ns.all:
        ns.presets, ns.programs = ["HBM2", "HBM3"], ["O3", "hand"]
        ns.inflight, ns.ports, ns.output_tokens = "16,32,64,128,256,512,1024", "1,2,4,8", "1,2,4,8,16"
    if not ns.grqc.exists():
        dropped = [c for c in ns.cases if c.startswith("grqc")]
        ns.cases = [c for c in ns.cases if not c.startswith("grqc")]
        if dropped:
            print(f"{ns.grqc} does not exist: skipping {', '.join(dropped)}", file=sys.stderr)
    try:
        base = TmuConfig(**{k: v for k, v in (("output_tokens", ns.base_output_tokens),
                                              ("memory_ports", ns.base_ports)) if v is not None})
        sweeps = [] if ns.no_sweeps else (
            [("max_inflight", base.with_max_inflight(v))
             for v in _ints(ns.inflight, "--inflight")]
            + [("memory_ports", dataclasses.replace(base, memory_ports=v)) for v in _ints(ns.ports, "--ports")]
            + [("output_tokens", dataclasses.replace(base, output_tokens=v))
               for v in _ints(ns.output_tokens, "--output-tokens")]
            + [("prefetch_depth", dataclasses.replace(base, prefetch_depth=v))
               for v in _ints(ns.prefetch_depth, "--prefetch-depth")])
    except (ValueError, argparse.ArgumentTypeError) as e:
        parser.error(str(e))

    ceilings = {}
    for case in tqdm(ns.cases, desc="memory ceilings", unit="case"):
        args = case_args(case, ns.seed, ns.grqc)
        for p in ns.presets:
            ceilings[case, p] = memory_ceiling(get_preset(p), case, args)
    if not ns.no_sweeps and (ns.sweep_case, ns.sweep_preset) not in ceilings:
        ceilings[ns.sweep_case, ns.sweep_preset] = memory_ceiling(
            get_preset(ns.sweep_preset), ns.sweep_case, case_args(ns.sweep_case, ns.seed, ns.grqc))
    # Runs grouped by hardware point (one Verilator build each): (sweep, case, program, preset, config)
    plan = [] if ns.no_table else [("table", c, prog, p, base) for p in ns.presets
                                   for c in ns.cases for prog in ns.programs]
    plan += [(s, ns.sweep_case, "O3", ns.sweep_preset, cfg) for s, cfg in sweeps]
    done, rows = {}, []
    out = Path(ns.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    for sweep, case, program, preset, config in tqdm(plan, desc="RTL runs", unit="run"):
        row = dict(sweep=sweep, case=case, program=program, preset=preset, seed=ns.seed,
                   max_inflight=config.max_inflight, prefetch_depth=config.prefetch_depth,
                   memory_ports=config.memory_ports,
                   output_tokens=config.output_tokens, output_bound=8 * config.output_tokens,
                   peak_bytes_per_cycle=get_preset(preset).peak_bytes_per_cycle)
        row.update(ceilings[case, preset])
        if not ns.ceiling_only:
            key = (case, program, preset, config)
            if key not in done:
                done[key] = unit_run(case, program, preset, ns.seed, config, ns.grqc)
            row.update(done[key])
            row.update(ratios(row))
            say(f"{sweep:>13} {case:>12} {program:>4} {preset} ROB {config.max_inflight:>4} "
                       f"run-ahead {config.prefetch_depth} ports {config.memory_ports} out {config.output_tokens}: "
                       f"{row['unit_useful_bytes_per_cycle']:6.2f} B/cycle = "
                       f"{100 * row['over_min_ceiling_output']:5.1f} % of min(ceiling "
                       f"{row['ceiling_bytes_per_cycle']}, output {row['output_bound']}); in flight "
                       f"{row['unit_mean_lines_in_flight']} mean / {row['unit_peak_lines_in_flight']} "
                       f"peak; latency {row['read_latency_mean']} mean / {row['read_latency_max']} max"
                       )
        rows.append(row)
        write_csv(rows, out.with_suffix(".csv"))      # after every run: a stopped sweep keeps its rows
    print(f"wrote {out.with_suffix('.csv')}")
    if not ns.ceiling_only:
        plot(rows, out.with_suffix(".png"))
        print(f"wrote {out.with_suffix('.png')}")
        if ns.docs_figure:
            dest = REPO / "docs" / "figures" / "bench_bandwidth.png"
            dest.parent.mkdir(parents=True, exist_ok=True)
            shutil.copy(out.with_suffix(".png"), dest)
            print(f"wrote {dest}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
