#!/usr/bin/env python3
"""System bandwidth of K access units on one memory (issue 11, table 2).

The DLRM shape of ``scripts/bench_bandwidth.py``: EmbeddingBag sum over one 100,000 x 64 float32
table (256-byte rows), pooling 32, indices uniform over the rows (``numpy.random.default_rng``),
the kernel ``examples/embedding_bag_sum.mlir`` compiled at ``-O3``. **256 bags per unit** (weak
scaling: K units run K x 256 bags, the call split by ``sw.runtime.partition`` into K contiguous
bag ranges; one shared image holds the table once). For each K:

* the multi-unit system (``hw.multi_system.MultiSystem``, the memory with
  ``default_memory_ports`` ports: HBM2 2 for K = 1, 4 for K >= 2) runs the K slices, all units
  started in the same cycle (``sim.system.run_multi_on_rtl``); the results are checked against
  ``torch.nn.functional.embedding_bag`` bit for bit;
* *makespan* = cycles from the start until the last unit is done; *system useful bytes/cycle* =
  the units' ``bytes_loaded`` counters summed (table rows, indices, offsets) / makespan; *table
  bytes/cycle* = K x 256 x 32 rows x 256 bytes / makespan;
* the *memory ceiling* of the same row trace (the call's rows as 64-byte lines, all offered at
  cycle 0 to the reference HBM model with the ports its peak needs, no cap in flight:
  ``hw.hbm_model.traces.ceiling``, what ``ember hbm-trace`` reports), in table bytes per cycle;
  the ratio system table bytes/cycle / ceiling.

Usage: python scripts/bench_multiunit.py [--units 1,2,4] [--preset HBM2] [--seed S]
       [--max-inflight 256] [--csv build/bench_multiunit.csv]
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

ROWS, DIM, BAGS_PER_UNIT, POOLING = 100_000, 64, 256, 32


def call_args(units: int, seed: int):
    """The whole call: table (ROWS x DIM f32), indices (units x 256 x 32, int64, uniform),
    offsets (bags + 1, int64)."""
    rng = np.random.default_rng(seed)
    table = rng.standard_normal((ROWS, DIM)).astype(np.float32)
    bags = units * BAGS_PER_UNIT
    indices = rng.integers(0, ROWS, bags * POOLING, dtype=np.int64)
    offsets = np.arange(0, bags * POOLING + 1, POOLING, dtype=np.int64)
    return table, indices, offsets


def run_point(units: int, preset_name: str, seed: int, config=None) -> dict:
    """One K: run, check against PyTorch, measure (see the module doc). ``config``: every
    unit's ``TmuConfig`` (default ``TmuConfig()``)."""
    import torch
    from hw.hbm_model.presets import get_preset
    from hw.hbm_model.traces import ceiling, embedding_gather
    from hw.multi_system import default_memory_ports
    from hw.tmu import TmuConfig
    from sw.compiler import compile_mlir
    from sw.runtime.multi_unit import run_partitioned
    from sw.runtime.partition import split_embedding_bag

    path = REPO / "examples" / "embedding_bag_sum.mlir"
    kernel = compile_mlir(path.read_text(), filename=path.name, opt_level=3)
    table, indices, offsets = call_args(units, seed)
    out = np.zeros((len(offsets) - 1, DIM), np.float32)
    parts = split_embedding_bag(indices, offsets, units=units)
    unit_args = [[table, p.indices, p.offsets, out[p.start:p.stop]] for p in parts]
    t0 = time.perf_counter()
    config = config or TmuConfig()
    run = run_partitioned(kernel, unit_args, shared=[0], memory=preset_name, config=config)
    wall = time.perf_counter() - t0
    want = torch.nn.functional.embedding_bag(torch.from_numpy(indices), torch.from_numpy(table),
                                             torch.from_numpy(offsets[:-1]), mode="sum").numpy()
    if not np.array_equal(out.view(np.uint32), want.view(np.uint32)):
        raise AssertionError(f"K={units}: the results differ from torch.nn.functional.embedding_bag")
    preset = get_preset(preset_name)
    table_base = run.image.placements[0].base
    bound, ports, ceiling_cycles = ceiling(preset, embedding_gather(DIM, indices=indices,
                                                                    base=table_base))
    makespan = run.makespan
    loaded = sum(u.access.stats["bytes_loaded"] for u in run.units)
    table_bytes = len(indices) * DIM * 4
    row = dict(units=units, preset=preset_name, bags_per_unit=BAGS_PER_UNIT, pooling=POOLING,
               rows=ROWS, dim=DIM, seed=seed,
               max_inflight=config.max_inflight,
               memory_ports=default_memory_ports(config, preset, units),
               makespan=makespan,
               unit_cycles=" ".join(str(u.access.cycles) for u in run.units),
               useful_bytes_per_cycle=round(loaded / makespan, 2),
               table_bytes_per_cycle=round(table_bytes / makespan, 2),
               ceiling_ports=ports, ceiling_cycles=ceiling_cycles,
               ceiling_bytes_per_cycle=round(bound, 2),
               over_ceiling=round(table_bytes / makespan / bound, 4),
               wall_s=round(wall, 1))
    row.update(diagnostics(run, preset))
    return row


def diagnostics(run, preset) -> dict:
    """Where the cycles go (the columns after ``wall_s``): per unit (means over the units) the
    mean lines in flight (``inflight_sum / cycles``), the fraction of its cycles it waited for a
    blocking load (index/offset lines: ``block_wait_cycles``), for a free reorder-buffer entry
    (``rob_full_cycles``) and for a full output queue (``out_stall_cycles``); of the shared
    memory (``docs/hbm_model.md`` §5) the reads' mean and largest latency, the activates per
    read, the row hits/misses/conflicts as classified at acceptance, and per channel the mean
    request-queue occupancy and the fraction of the makespan its data bus was busy."""
    units = [u.access for u in run.units]
    mean = lambda key: sum(u.stats[key] / max(1, u.cycles) for u in units) / len(units)
    ms = run.system.memory_stats
    makespan = run.makespan
    reads = max(1, ms["reads"])
    return dict(
        unit_mean_inflight=round(mean("inflight_sum"), 1),
        unit_block_wait=round(mean("block_wait_cycles"), 3),
        unit_rob_full=round(mean("rob_full_cycles"), 3),
        unit_out_stall=round(mean("out_stall_cycles"), 3),
        mem_read_latency_mean=round(ms["read_latency_sum"] / reads, 1),
        mem_read_latency_max=ms["read_latency_max"],
        mem_activates_per_read=round(ms["activates"] / reads, 3),
        mem_row_hits=ms["row_hits"], mem_row_misses=ms["row_misses"],
        mem_row_conflicts=ms["row_conflicts"],
        mem_queue_occupancy=" ".join(f"{v / makespan:.1f}" for v in ms["queue_occupancy_sum"]),
        mem_queue_max=" ".join(str(v) for v in ms["queue_occupancy_max"]),
        mem_busy=" ".join(f"{v / makespan:.2f}" for v in ms["busy"]))


def windowed_bound(preset_name: str, unit_indices, *, window: int, unit_ports: int = 2,
                   memory_ports: int = 4, base: int = 0) -> dict:
    """The same memory under K idealised access units: what the memory gives K requesters that
    each keep up to ``window`` lines in flight, issue their rows' lines in order on
    ``unit_ports`` ports, retire one line per cycle in order (the unit's 64 B/cycle output) and
    accept every response at once, through the interconnect's rotating request rule
    (``hw.interconnect``) onto ``memory_ports`` ports of the reference model
    (``hw.hbm_model.reference.HbmReference.step_ports``). No index or offset loads, no
    decode: only the table rows (``unit_indices[u]``: unit ``u``'s rows, 4 lines each at
    ``base``). Returns the table bytes per cycle and the memory's statistics summary; the RTL
    below this bound loses in the unit's own request stream, not in the memory."""
    from hw.hbm_model.presets import get_preset
    from hw.hbm_model.reference import HbmReference, Request
    preset = get_preset(preset_name)
    lines = DIM * 4 // preset.access_bytes
    traces = [(base + (np.asarray(rows)[:, None] * lines
                       + np.arange(lines)[None, :]).ravel() * preset.access_bytes).tolist()
              for rows in unit_indices]
    K = len(traces)
    issued, retired, inflight = [0] * K, [0] * K, [0] * K
    done = [set() for _ in range(K)]
    mem = HbmReference(preset, ports=memory_ports)
    owner, accepted, t, left, refused = {}, 0, 0, sum(map(len, traces)), 0
    total = left
    while left:
        offer = []
        for slot in range(K):                    # rotated unit order, each unit's ports in order
            u = (t + slot) % K
            for p in range(unit_ports):
                if issued[u] + p < len(traces[u]) and inflight[u] + p < window:
                    offer.append((u, issued[u] + p))
        offer = offer[:memory_ports]
        n, responses = mem.step_ports([Request(traces[u][i], False, 0) for u, i in offer]
                                      + [None] * (memory_ports - len(offer)), True)
        refused += n < len(offer)
        for u, i in offer[:n]:
            owner[accepted] = (u, i)
            accepted += 1
            issued[u] += 1
            inflight[u] += 1
        for r in responses:
            u, i = owner.pop(r.index)
            done[u].add(i)
        for u in range(K):
            if retired[u] in done[u]:
                done[u].discard(retired[u])
                retired[u] += 1
                inflight[u] -= 1
                left -= 1
        t += 1
    st = mem.stats
    return dict(model_window=window, model_cycles=t,
                model_table_bytes_per_cycle=round(total * preset.access_bytes / t, 2),
                model_refused_cycles=round(refused / t, 3),
                model_read_latency_mean=round(st["read_latency_sum"] / max(1, st["reads"]), 1),
                model_queue_occupancy=" ".join(f"{v / t:.1f}" for v in st["queue_occupancy_sum"]))


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--units", default="1,2,4",
                        help="comma-separated unit counts (1, 2, 4, 8; one Verilator build each)")
    parser.add_argument("--preset", default="HBM2", choices=("HBM2", "HBM3"))
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--max-inflight", type=int, default=None,
                        help="lines in flight per unit (TmuConfig.max_inflight; default: the "
                             "default configuration's)")
    parser.add_argument("--csv", default=str(REPO / "build" / "bench_multiunit.csv"))
    parser.add_argument("--model-only", action="store_true",
                        help="no RTL: only the idealised-units bound (windowed_bound) per K")
    ns = parser.parse_args(argv)
    if ns.seed < 0:
        parser.error(f"--seed must be an integer >= 0, not {ns.seed}")
    try:
        counts = [int(v) for v in ns.units.split(",") if v.strip()]
    except ValueError:
        parser.error(f"--units must be comma-separated integers, not {ns.units!r}")
    bad = [k for k in counts if k not in (1, 2, 4, 8)]
    if bad or not counts:
        parser.error(f"--units must list counts among 1, 2, 4, 8, not {ns.units!r}")
    from hw.tmu import TmuConfig
    try:
        config = (TmuConfig() if ns.max_inflight is None
                  else TmuConfig(max_inflight=ns.max_inflight))
    except ValueError as e:
        parser.error(f"--max-inflight {ns.max_inflight}: {e}")
    out = Path(ns.csv)
    out.parent.mkdir(parents=True, exist_ok=True)
    rows = []
    for k in counts:
        if ns.model_only:
            _, indices, _ = call_args(k, ns.seed)
            per_unit = np.split(indices, k)
            row = dict(units=k, preset=ns.preset, max_inflight=config.max_inflight)
            row.update(windowed_bound(ns.preset, per_unit, window=config.max_inflight,
                                      unit_ports=config.memory_ports, memory_ports=4 if k > 1
                                      else config.memory_ports))
            print(row, flush=True)
            rows.append(row)
            continue
        row = run_point(k, ns.preset, ns.seed, config)
        rows.append(row)
        print(f"K={k}: makespan {row['makespan']} cycles (units {row['unit_cycles']}), "
              f"{row['useful_bytes_per_cycle']} useful bytes/cycle, "
              f"{row['table_bytes_per_cycle']} table bytes/cycle; ceiling "
              f"{row['ceiling_bytes_per_cycle']} ({row['ceiling_ports']} ports) -> "
              f"{100 * row['over_ceiling']:.1f} %", flush=True)
        print("   " + ", ".join(f"{key} {row[key]}" for key in list(row)[list(row).index("wall_s"):]),
              flush=True)
        with out.open("w", newline="") as f:       # rewritten after every point
            w = csv.DictWriter(f, fieldnames=list(rows[0]))
            w.writeheader()
            w.writerows(rows)
    print(f"wrote {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
