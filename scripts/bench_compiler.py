#!/usr/bin/env python3
"""Compiler benchmark: every workload of ``sw.workloads`` at every -O level.

Per workload and level: access-program size (descriptors = layers + regions + streams + actions,
the instructions of docs/isa.md), TMU resources used (layers, streams, actions), data and control
tokens per lookup on the golden model, compile time (ms, wall clock, informative only), and with
``--rtl`` RTL cycles for -O0 (the RTL runs ISA v0 only). -O1..-O3 are compiled for
``configs/tmu_vector.json`` (ISA v1), -O0 for ``configs/tmu_rtl.json``.

The speedup column is the reduction of the core's queue traffic, (data + control tokens at -O0) /
(tokens at -On): the execute side pops one token per operand and dispatches one callback per
control token, so in a core-bound DAE machine (Ember §7) time scales with tokens. It is a proxy,
not a cycle measurement; Ember's Fig. 13 reports 6.5x-21x cycle speedups from -O0 to -O3
(geometric mean about 11x) on its simulated TMU + core.

Writes build/bench_compiler.csv.

    python scripts/bench_compiler.py [--size small|full] [--rtl] [--levels 0 1 2 3]
"""

from __future__ import annotations

import argparse
import csv
import dataclasses
import math
import sys
import time
import warnings
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from sw.compiler import CompileError, compile_mlir  # noqa: E402
from sw.runtime.drivers import run_kernel  # noqa: E402
from sw.runtime.isa import Limits  # noqa: E402
from sw.workloads import WORKLOADS  # noqa: E402

EMBER_FIG13 = "Ember Fig. 13: -O3 over -O0 = 6.5x..21x, geomean ~11x (cycles, simulated TMU + core)"


def _copy(args):
    return [a.copy() if hasattr(a, "copy") else a for a in args]


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--size", choices=("small", "full"), default="small",
                    help="input size of sw.workloads (default small)")
    ap.add_argument("--levels", type=int, nargs="+", default=[0, 1, 2, 3], help="-O levels")
    ap.add_argument("--rtl", action="store_true", help="also run -O0 on the RTL (Verilator) for cycles")
    ap.add_argument("--out", default=str(REPO / "build" / "bench_compiler.csv"), help="CSV file")
    a = ap.parse_args(argv)
    bad = [lv for lv in a.levels if lv not in (0, 1, 2, 3)]
    if bad:
        ap.error(f"--levels must be in 0..3, not {bad[0]}")
    warnings.simplefilter("ignore", UserWarning)
    rtl_limits = Limits.from_file("configs/tmu_rtl.json")
    vector = Limits.from_file("configs/tmu_vector.json")
    rows = []
    for name, w in WORKLOADS.items():
        text = w.path.read_text()
        args = w.make(a.size, 0)
        lookups = w.lookups(args)
        base_tokens = None
        for level in a.levels:
            limits = rtl_limits if level == 0 else vector
            t0 = time.perf_counter()
            try:
                kernel = compile_mlir(text, filename=w.example, limits=limits, opt_level=level)
            except CompileError as e:
                rows.append(dict(workload=name, level=level, error=str(e)))
                continue
            ms = 1000 * (time.perf_counter() - t0)
            p = kernel.program
            r = run_kernel(kernel, _copy(args), "golden", limits=limits)
            w.check(_copy(args), r.results)
            tokens = len(r.access.data_tokens) + len(r.access.control_tokens)
            if level == 0:
                base_tokens = tokens
            row = dict(workload=name, level=level, descriptors=len(p.layers) + len(p.regions)
                       + len(p.streams) + len(p.actions), layers=len(p.layers), streams=len(p.streams),
                       actions=len(p.actions), lookups=lookups,
                       data_per_lookup=len(r.access.data_tokens) / lookups,
                       control_per_lookup=len(r.access.control_tokens) / lookups,
                       compile_ms=ms, token_speedup=(base_tokens / tokens) if base_tokens else None,
                       rtl_cycles=None, error="")
            if a.rtl and level == 0:
                rr = run_kernel(kernel, _copy(args), "rtl")
                row["rtl_cycles"] = rr.cycles
            rows.append(row)
    out = Path(a.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    fields = ["workload", "level", "descriptors", "layers", "streams", "actions", "lookups",
              "data_per_lookup", "control_per_lookup", "compile_ms", "token_speedup", "rtl_cycles", "error"]
    with out.open("w", newline="") as f:
        wr = csv.DictWriter(f, fieldnames=fields)
        wr.writeheader()
        for r in rows:
            wr.writerow({k: r.get(k) for k in fields})
    print(f"{'workload':14s} {'-O':>2s} {'desc':>4s} {'L/S/A':>8s} {'data/lk':>8s} {'ctrl/lk':>8s} "
          f"{'ms':>6s} {'speedup':>8s} {'RTL cyc':>8s}")
    for r in rows:
        if r.get("error"):
            print(f"{r['workload']:14s} {r['level']:>2d}  does not compile: {r['error'][:90]}")
            continue
        sp = f"{r['token_speedup']:.2f}x" if r["token_speedup"] else "-"
        cyc = str(r["rtl_cycles"]) if r["rtl_cycles"] else "-"
        print(f"{r['workload']:14s} {r['level']:>2d} {r['descriptors']:>4d} "
              f"{r['layers']:>2d}/{r['streams']:>2d}/{r['actions']:>2d} {r['data_per_lookup']:>8.3f} "
              f"{r['control_per_lookup']:>8.3f} {r['compile_ms']:>6.0f} {sp:>8s} {cyc:>8s}")
    for level in a.levels[1:]:
        sps = [r["token_speedup"] for r in rows if r["level"] == level and r.get("token_speedup")]
        if sps:
            g = math.exp(sum(math.log(s) for s in sps) / len(sps))
            print(f"-O{level} over -O0 (tokens): {min(sps):.2f}x .. {max(sps):.2f}x, geomean {g:.2f}x "
                  f"over {len(sps)} workloads")
    print(EMBER_FIG13)
    print(f"wrote {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
