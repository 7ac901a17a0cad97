#!/usr/bin/env python3
"""Benchmark of the vertical slice: Cora sum-aggregation on the RTL, compiled vs hand-written.

For each feature width and program (the compiler's output for ``examples/embedding_bag_sum.mlir``,
and the hand-written program of ``sw/runtime/handwritten.py``) it runs the RTL (Verilator via
cocotb) and prints/writes: cycles, loads, bytes loaded per cycle, elements per cycle, output tokens
per lookup, peak loads in flight, stall cycles, and the compiled/hand-written cycle ratio.
The memory model is the v0 fixed-latency one (8 bytes per response, one response per cycle), so
``bytes/cycle`` is bounded by 8 × (element bytes / 8) for f32 elements: 4 bytes/cycle.

Usage: python scripts/bench_slice.py [--dims 4 8 16] [--nodes N] [--csv build/bench_slice.csv]
"""

from __future__ import annotations

import argparse
import csv
import sys
import time
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[1])
    parser.add_argument("--dims", type=int, nargs="+", default=[4, 8, 16])
    parser.add_argument("--nodes", type=int, default=0, help="first NODES bags of Cora (0: all)")
    parser.add_argument("--target", default="rtl", choices=("rtl", "golden"))
    parser.add_argument("--csv", default=str(REPO / "build" / "bench_slice.csv"))
    ns = parser.parse_args(argv)
    bad = [d for d in ns.dims if d < 1]
    if bad:
        parser.error(f"--dims must be positive, not {bad[0]}")
    if ns.nodes < 0:
        parser.error(f"--nodes must be >= 0 (0: all), not {ns.nodes}")

    import torch

    from sw.compiler import compile_mlir
    from sw.runtime.datasets import load_cora, node_features
    from sw.runtime.drivers import run_kernel
    from sw.runtime.handwritten import embedding_bag_kernel

    g = load_cora()
    offsets, indices = g.offsets, g.indices
    if ns.nodes > g.num_nodes:
        parser.error(f"--nodes must be at most Cora's {g.num_nodes} nodes, not {ns.nodes}")
    if ns.nodes:
        offsets = offsets[:ns.nodes + 1]
        indices = indices[:offsets[-1]]
    kernel_text = (REPO / "examples" / "embedding_bag_sum.mlir").read_text()
    programs = {"compiled": compile_mlir(kernel_text, filename="embedding_bag_sum.mlir"),
                "handwritten": embedding_bag_kernel("float32", "sum")}
    rows = []
    for dim in ns.dims:
        x = node_features(g.num_nodes, dim)
        expected = torch.nn.functional.embedding_bag(torch.from_numpy(indices), torch.from_numpy(x),
                                                     torch.from_numpy(offsets[:-1]), mode="sum").numpy()
        cycles_by = {}
        for name, kernel in programs.items():
            out = np.zeros((len(offsets) - 1, dim), dtype=np.float32)
            t0 = time.perf_counter()
            r = run_kernel(kernel, [x, indices, offsets, out], ns.target)
            wall = time.perf_counter() - t0
            ok = np.allclose(r.results[0], expected, rtol=1e-5, atol=1e-5)
            s = r.access.stats
            cycles = r.cycles or 0
            cycles_by[name] = cycles
            tokens = len(r.access.data_tokens) + len(r.access.control_tokens)
            row = {"program": name, "dim": dim, "bags": len(offsets) - 1, "lookups": len(indices),
                   "cycles": cycles, "loads": s.get("loads", 0), "bytes_loaded": s.get("bytes_loaded", 0),
                   "bytes_per_cycle": round(s.get("bytes_loaded", 0) / cycles, 4) if cycles else "",
                   "elements_per_cycle": round(len(indices) * dim / cycles, 4) if cycles else "",
                   "tokens_per_lookup": round(tokens / max(len(indices), 1), 2),
                   "peak_inflight": s.get("peak_inflight", ""), "stall_cycles": s.get("stall_cycles", ""),
                   "sim_cycles_per_s": round(cycles / wall) if cycles else "", "check": "PASS" if ok else "FAIL"}
            rows.append(row)
            print(", ".join(f"{k}={v}" for k, v in row.items()), flush=True)
        if cycles_by.get("handwritten"):
            print(f"dim={dim}: compiled/hand-written cycles = {cycles_by['compiled'] / cycles_by['handwritten']:.2f}x")
    Path(ns.csv).parent.mkdir(parents=True, exist_ok=True)
    with open(ns.csv, "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=list(rows[0]))
        w.writeheader()
        w.writerows(rows)
    print(f"wrote {ns.csv}")
    return 0 if all(r["check"] == "PASS" for r in rows) else 1


if __name__ == "__main__":
    sys.exit(main())
