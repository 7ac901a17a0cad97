#!/usr/bin/env python3
"""Benchmark of the HBM reference model: bandwidth and latency per preset and access pattern.

For each preset and each standard pattern of ``hw/hbm_model/traces.py`` (sequential, strided,
random, hot-set, write bursts, Cora embedding gather) it runs the reference model
(``run_requests``, no outstanding limit) with one request/response port (like the RTL and
DRAMSim3's trace frontend) and with P = peak bytes per cycle / 64 ports (enough for the peak),
and prints bandwidth (GB/s, % of the preset's peak) and read latency (mean, p99, ns).

Then, for uniformly random reads (P ports), the number of requests in flight needed to reach
90 % of the saturated random-read bandwidth (random reads cannot reach the preset's peak: every
access needs an ACT, see docs/hbm_model.md §8): *measured* = the smallest ``max_outstanding`` of
a sweep whose bandwidth reaches it; *Little's law* = 0.9 x saturated rate (requests/cycle) x
latency, with the unloaded latency of a random read and with the latency measured at that point.

With ``--rtl-ports P [P ...]`` it instead runs uniformly random 64-byte reads (1 GiB footprint)
through the RTL model (Verilator) and the reference with P request/response ports each, via
``ember hbm-trace --model {rtl,reference} --ports P --json`` (one Verilator build per preset and P,
cached), and prints both reports side by side (they must be identical: bandwidth, latency, row
hits), the wall time of each and the simulated cycles per second of the RTL run (build excluded);
CSV in ``build/bench_hbm_rtl.csv``.

Usage: python scripts/bench_hbm.py [--requests N] [--presets HBM2 HBM3 simple] [--csv build/bench_hbm.csv]
       python scripts/bench_hbm.py --rtl-ports 1 2 4 [--presets HBM2] [--requests N]
"""

from __future__ import annotations

import argparse
import csv
import math
import sys
import time
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

FOOTPRINT = 1 << 30          # random/hot-set/write-burst footprint: 1 GiB
SWEEP = (1, 2, 4, 8, 16, 24, 32, 48, 64, 96, 128, 192, 256, 384, 512)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--requests", type=int, default=20000, help="requests per pattern")
    parser.add_argument("--presets", nargs="+", default=["HBM2", "HBM3", "simple"],
                        choices=("HBM2", "HBM3", "simple"))
    parser.add_argument("--csv", default=str(REPO / "build" / "bench_hbm.csv"))
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--rtl-ports", type=int, nargs="+", default=None, metavar="P",
                        help="only compare the RTL model and the reference on random reads "
                        "with these port counts")
    ns = parser.parse_args(argv)
    if ns.seed < 0:
        parser.error(f"--seed must be an integer >= 0, not {ns.seed}")
    if ns.requests < 100:
        parser.error(f"--requests must be at least 100, not {ns.requests}")
    if ns.rtl_ports is not None:
        if any(p < 1 for p in ns.rtl_ports):
            parser.error(f"--rtl-ports must be positive integers, not {ns.rtl_ports}")
        return rtl_ports(ns)

    from hw.hbm_model.presets import get_preset
    from hw.hbm_model.reference import run_requests
    from hw.hbm_model.traces import PATTERNS, embedding_gather, uniform_random
    from sw.runtime.datasets import load_cora

    cora = load_cora().indices
    patterns = {**PATTERNS,
                "gather": ("Cora embedding-bag gather, dim 64 f32 (4 accesses per row)",
                           lambda n, fp, seed: embedding_gather(64, indices=cora)[:n])}

    rows = []
    print(f"{'preset':7} {'pattern':13} {'ports':>5} {'GB/s':>8} {'% peak':>7} "
          f"{'lat mean ns':>11} {'lat p99 ns':>10} {'ACT/req':>7}")
    t_start = time.perf_counter()
    for name in ns.presets:
        p = get_preset(name)
        peak_ports = max(1, math.ceil(p.peak_bytes_per_cycle / p.access_bytes))
        for pat, (desc, gen) in patterns.items():
            reqs = gen(ns.requests, FOOTPRINT, ns.seed)
            for ports in sorted({1, peak_ports}):
                r = run_requests(p, reqs, ports=ports)
                ns_c = p.unit_cycle_ns
                row = dict(preset=name, pattern=pat, ports=ports, requests=len(reqs),
                           cycles=r.cycles, gbps=round(r.bandwidth_gbps(), 2),
                           pct_peak=round(100 * r.fraction_of_peak(), 1),
                           lat_mean_ns=round(r.read_latency_mean() * ns_c, 1),
                           lat_p99_ns=round(r.read_latency_percentile(99) * ns_c, 1),
                           act_per_req=round(r.activates_per_request(), 3),
                           row_hit_rate=round(r.row_hit_rate(), 3))
                rows.append(row)
                print(f"{name:7} {pat:13} {ports:5d} {row['gbps']:8.1f} {row['pct_peak']:7.1f} "
                      f"{row['lat_mean_ns']:11.1f} {row['lat_p99_ns']:10.1f} {row['act_per_req']:7.3f}",
                      flush=True)

    print()
    print("Random reads: requests in flight for 90 % of the saturated random-read bandwidth")
    print(f"{'preset':7} {'ports':>5} {'sat GB/s':>8} {'% peak':>6} {'measured':>8} "
          f"{'Little (unloaded)':>17} {'Little (at point)':>17}")
    little_rows = []
    for name in ns.presets:
        p = get_preset(name)
        ports = max(1, math.ceil(p.peak_bytes_per_cycle / p.access_bytes))
        n = min(ns.requests, 12000)
        reqs = uniform_random(n, FOOTPRINT, seed=ns.seed)
        sat = run_requests(p, reqs, ports=ports)
        sat_rate = sat.bytes_per_cycle() / p.access_bytes           # requests per cycle
        measured, point = None, None
        for mo in SWEEP:
            r = run_requests(p, reqs, ports=ports, max_outstanding=mo)
            if r.bytes_per_cycle() >= 0.9 * sat.bytes_per_cycle():
                measured, point = mo, r
                break
        # unloaded latency of a random read: a row miss/conflict mix; take the mean of isolated
        # random reads, one at a time (max_outstanding 1)
        w0 = run_requests(p, reqs[:300], ports=1, max_outstanding=1).read_latency_mean()
        little0 = 0.9 * sat_rate * w0
        little_pt = 0.9 * sat_rate * point.read_latency_mean() if point else float("nan")
        row = dict(preset=name, ports=ports, sat_gbps=round(sat.bandwidth_gbps(), 1),
                   sat_pct_peak=round(100 * sat.fraction_of_peak(), 1),
                   measured_in_flight=measured, unloaded_latency_cycles=round(w0, 1),
                   little_unloaded=round(little0, 1), little_at_point=round(little_pt, 1))
        little_rows.append(row)
        print(f"{name:7} {ports:5d} {row['sat_gbps']:8.1f} {row['sat_pct_peak']:6.1f} "
              f"{str(measured):>8} {little0:17.1f} {little_pt:17.1f}", flush=True)

    out = Path(ns.csv)
    out.parent.mkdir(parents=True, exist_ok=True)
    with out.open("w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=list(rows[0]))
        w.writeheader()
        w.writerows(rows)
    out2 = out.with_name(out.stem + "_littles_law.csv")
    with out2.open("w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=list(little_rows[0]))
        w.writeheader()
        w.writerows(little_rows)
    print(f"\nwrote {out} and {out2} ({time.perf_counter() - t_start:.0f} s)")
    return 0


def rtl_ports(ns) -> int:
    """The ``--rtl-ports`` mode (see the module docstring)."""
    import json
    import subprocess
    import tempfile

    from hw.hbm_model.traces import uniform_random, write_trace

    presets = ns.presets if ns.presets != ["HBM2", "HBM3", "simple"] else ["HBM2"]
    rows = []
    print(f"{'preset':7} {'ports':>5} {'model':9} {'GB/s':>8} {'% peak':>7} {'lat mean ns':>11} "
          f"{'lat p99 ns':>10} {'wall s':>7} {'cycles/s':>9}")
    with tempfile.TemporaryDirectory() as tmp:
        trace = Path(tmp) / "random.trace"
        write_trace(uniform_random(ns.requests, FOOTPRINT, seed=ns.seed), trace)
        for name in presets:
            for ports in ns.rtl_ports:
                reports = {}
                for model in ("rtl", "reference"):
                    cmd = [sys.executable, "-m", "sw.cli", "hbm-trace", str(trace), "--preset",
                           name, "--ports", str(ports), "--model", model, "--json"]
                    if model == "rtl":      # build once, outside the timed run
                        subprocess.run(cmd, cwd=REPO, capture_output=True)
                    t0 = time.perf_counter()
                    out = subprocess.run(cmd, cwd=REPO, capture_output=True, text=True)
                    if out.returncode:
                        print(out.stderr, file=sys.stderr)
                        return 1
                    wall = time.perf_counter() - t0
                    d = json.loads(out.stdout)
                    reports[model] = d
                    row = dict(preset=name, ports=ports, model=model, requests=d["requests"],
                               cycles=d["cycles"], gbps=d["bandwidth_gbps"],
                               pct_peak=round(100 * d["fraction_of_peak"], 1),
                               lat_mean_ns=d["read_latency_mean_ns"],
                               lat_p99_ns=d["read_latency_p99_ns"],
                               row_hit_rate=d["row_hit_rate"], wall_s=round(wall, 1),
                               cycles_per_s=round(d["cycles"] / wall))
                    rows.append(row)
                    print(f"{name:7} {ports:5d} {model:9} {row['gbps']:8.1f} {row['pct_peak']:7.1f} "
                          f"{row['lat_mean_ns']:11.1f} {row['lat_p99_ns']:10.1f} {wall:7.1f} "
                          f"{row['cycles_per_s']:9d}", flush=True)
                a, b = (dict(reports[m]) for m in ("rtl", "reference"))
                a.pop("model"), b.pop("model")
                a.pop("trace"), b.pop("trace")
                print(f"{'':7} {'':5} {'identical' if a == b else 'DIFFERENT: ' + repr(a) + ' vs ' + repr(b)}")
                if a != b:
                    return 1
    out = Path(ns.csv).with_name("bench_hbm_rtl.csv")
    out.parent.mkdir(parents=True, exist_ok=True)
    with out.open("w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=list(rows[0]))
        w.writeheader()
        w.writerows(rows)
    print(f"wrote {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
