#!/usr/bin/env python3
"""Bandwidth of the access unit against the memory's own ceiling (issue 10's benchmark; skeleton).

One case today, the DLRM shape of issue 10: EmbeddingBag sum over a 100,000 x 64 float32 table
(256-byte rows), 256 bags x pooling 32, indices uniform over the rows
(``numpy.random.default_rng(seed)``), the kernel ``examples/embedding_bag_sum.mlir``.

* **Memory ceiling** of the row trace: every gathered row as its 64-byte lines (a 256-byte row is
  4 line reads), in program order, all issued at cycle 0, through the reference HBM model
  (``hw.hbm_model.reference.run_requests``) with enough ports for the preset's peak
  (``ceil(peak / 64 B)``: HBM2 4) and no outstanding limit — what ``ember hbm-trace --ports 4``
  reports for that trace. Reported as table bytes per cycle (= 64 x lines / cycles).
* **Unit** (``--rtl``): the kernel compiled at ``-O3`` and run on the RTL system with that memory
  preset (``sw.runtime.drivers.run_kernel(..., "rtl", memory=PRESET)``, results checked against
  ``torch.nn.functional.embedding_bag`` bit for bit); *useful bytes/cycle* = the unit's
  ``bytes_loaded`` counter (table elements, indices, offsets) / its cycles from start to done,
  and *table bytes/cycle* = rows x 256 / cycles.

Printed and written as one CSV row per (case, preset): both numbers, the unit's line requests
and lines in flight (mean and peak), and the ratios unit / ceiling and unit / min(ceiling, the
unit's output bound = ``8 * TmuConfig().output_tokens`` bytes per cycle), issue 10's goal
(>= 95 %).

Usage: python scripts/bench_bandwidth.py [--preset HBM2] [--rtl] [--max-inflight 64,128,256]
       [--seed S] [--csv build/bench_bandwidth.csv]
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

ROWS, DIM, BAGS, POOLING = 100_000, 64, 256, 32
LINE = 64


def dlrm_args(seed: int) -> list:
    """The kernel's arguments: table (ROWS x DIM f32), indices (BAGS x POOLING, int64, uniform),
    offsets (BAGS + 1, int64), output (BAGS x DIM f32, zeros)."""
    rng = np.random.default_rng(seed)
    table = rng.standard_normal((ROWS, DIM)).astype(np.float32)
    indices = rng.integers(0, ROWS, BAGS * POOLING, dtype=np.int64)
    offsets = np.arange(0, BAGS * POOLING + 1, POOLING, dtype=np.int64)
    return [table, indices, offsets, np.zeros((BAGS, DIM), np.float32)]


def memory_ceiling(preset, indices: np.ndarray, *, table_base: int = 0) -> dict:
    """The reference model's bytes per cycle on the row trace of ``indices`` (see module doc)."""
    from hw.hbm_model.traces import ceiling, embedding_gather
    reqs = embedding_gather(DIM, indices=indices, base=table_base)
    bound, ports, cycles = ceiling(preset, reqs)
    return dict(ceiling_ports=ports, ceiling_lines=len(reqs), ceiling_cycles=cycles,
                ceiling_bytes_per_cycle=round(bound, 2))


def unit_run(preset_name: str, args: list, config=None) -> dict:
    """Compile ``embedding_bag_sum.mlir`` at -O3, run it on the RTL system built with ``config``
    (a ``TmuConfig``; default the default unit), check the results."""
    import torch
    from sw.compiler import compile_mlir
    from sw.runtime.drivers import run_kernel
    path = REPO / "examples" / "embedding_bag_sum.mlir"
    kernel = compile_mlir(path.read_text(), filename=path.name, opt_level=3)
    t0 = time.perf_counter()
    res = run_kernel(kernel, args, "rtl", memory=preset_name, config=config)
    wall = time.perf_counter() - t0
    table, indices, offsets = args[:3]
    want = torch.nn.functional.embedding_bag(torch.from_numpy(indices), torch.from_numpy(table),
                                             torch.from_numpy(offsets[:-1]), mode="sum").numpy()
    got = np.asarray(res.results[0])
    if not np.array_equal(got.view(np.uint32), want.view(np.uint32)):
        raise AssertionError("the RTL run's results differ from torch.nn.functional.embedding_bag")
    from hw.tmu import TmuConfig
    cycles = res.access.cycles
    stats = res.access.stats
    loaded = stats["bytes_loaded"]
    return dict(unit_cycles=cycles, unit_bytes_loaded=loaded,
                unit_useful_bytes_per_cycle=round(loaded / cycles, 2),
                unit_table_bytes_per_cycle=round(len(indices) * DIM * 4 / cycles, 2),
                unit_max_inflight=(config or TmuConfig()).max_inflight,
                unit_output_bound=8 * (config or TmuConfig()).output_tokens,
                unit_line_requests=stats["loads"],
                unit_peak_lines_in_flight=stats["peak_inflight"],
                unit_mean_lines_in_flight=round(stats["inflight_sum"] / cycles, 1),
                unit_rob_full_cycles=stats["rob_full_cycles"],
                unit_wall_s=round(wall, 1))


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--preset", default="HBM2", choices=("HBM2", "HBM3"))
    parser.add_argument("--rtl", action="store_true", help="also run the unit on the RTL")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--csv", default=str(REPO / "build" / "bench_bandwidth.csv"))
    parser.add_argument("--max-inflight", default="",
                        help="comma-separated reorder-buffer sizes (lines in flight) to sweep, "
                             "e.g. 64,128,256,512 (one Verilator build each; implies --rtl); "
                             "default: the default unit only")
    ns = parser.parse_args(argv)
    try:
        sweep = [int(v) for v in ns.max_inflight.split(",") if v.strip()]
        from hw.tmu import TmuConfig
        configs = [TmuConfig(max_inflight=v, prefetch_depth=min(32, v // 4)) for v in sweep]
    except ValueError as e:
        parser.error(f"--max-inflight {ns.max_inflight!r}: {e}")
    ns.rtl = ns.rtl or bool(configs)

    from hw.hbm_model.presets import get_preset
    preset = get_preset(ns.preset)
    args = dlrm_args(ns.seed)
    row = dict(case="dlrm_uniform", preset=ns.preset, rows=ROWS, dim=DIM, bags=BAGS,
               pooling=POOLING, seed=ns.seed)
    row.update(memory_ceiling(preset, args[1]))
    print(f"memory ceiling ({ns.preset}, {row['ceiling_ports']} ports, no cap): "
          f"{row['ceiling_bytes_per_cycle']} bytes/cycle ({row['ceiling_lines']} lines in "
          f"{row['ceiling_cycles']} cycles)", flush=True)
    rows = []
    for config in (configs or [None]) if ns.rtl else []:
        row = dict(row)
        # Fresh arguments each run: the kernel accumulates into its output argument.
        row.update(unit_run(ns.preset, dlrm_args(ns.seed), config))
        rows.append(row)
        row["unit_over_ceiling"] = round(row["unit_useful_bytes_per_cycle"]
                                         / row["ceiling_bytes_per_cycle"], 4)
        limit = min(row["ceiling_bytes_per_cycle"], row["unit_output_bound"])
        row["unit_over_min_ceiling_output"] = round(row["unit_useful_bytes_per_cycle"] / limit, 4)
        print(f"unit (-O3, RTL): {row['unit_useful_bytes_per_cycle']} useful bytes/cycle "
              f"({row['unit_table_bytes_per_cycle']} table bytes/cycle, {row['unit_cycles']} "
              f"cycles, {row['unit_line_requests']} line requests, lines in flight "
              f"{row['unit_mean_lines_in_flight']} mean / {row['unit_peak_lines_in_flight']} peak); "
              f"unit / ceiling = {100 * row['unit_over_ceiling']:.1f} %, unit / min(ceiling, "
              f"output bound {row['unit_output_bound']}) = "
              f"{100 * row['unit_over_min_ceiling_output']:.1f} % "
              f"({row['unit_max_inflight']} lines of reorder buffer)", flush=True)
    rows = rows or [row]
    out = Path(ns.csv)
    out.parent.mkdir(parents=True, exist_ok=True)
    with out.open("w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=list(rows[-1]))
        w.writeheader()
        w.writerows(rows)
    print(f"wrote {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
