#!/usr/bin/env python3
"""Design-space sweep: a grid of hardware points × workloads × -O levels on the RTL, one CSV.

A *hardware point* is one value of each hardware axis — lines in flight (``--max-inflight``),
memory ports (``--ports``), output width in 64-bit tokens (``--output-tokens``), lanes
(``--lanes``), reorder-buffer entries drained per cycle (``--drain-entries``), memory preset
(``--memory``) — i.e. one ``hw.tmu.TmuConfig`` and one Verilator
build (cached in ``build/rtl``). Each hardware point is one task: it compiles every workload of
``sw.workloads`` (``--workloads``) at every level (``--levels``) for that configuration's limits
(``Limits.from_tmu_config``), runs each on the golden model, runs them all on the RTL in one
simulator process (``sim.system.run_many_on_rtl``, C++ harness), and checks every run: RTL tokens
equal to the golden model's, results against PyTorch and the workload's sequential reference
(``Workload.check``). A run that does not compile for a point, or faults, gets its ``error``.

Tasks run on a local process pool (``--jobs``, default: the number of CPUs) or, with
``--ray ADDRESS``, as Ray tasks on that cluster (``ray.init(address=ADDRESS)``; ``--ray local``
starts a one-machine Ray). Builds of distinct points may then run at the same time; each point is
built once.

Per row (one workload × level × hardware point): access-unit cycles, core cycles
(``CoreCostModel``), DAE cycles ``max(access, core)``, useful bytes/cycle (``bytes_loaded`` ÷
cycles), line requests, mean and peak lines in flight, tokens, and what the memory did with them:
mean and largest read latency (cycles, request accepted to data back), reads that took 200 cycles
or more, the fullest channel request queue (entries; the preset's ``queue_depth`` when a channel
filled and refused the ports), and the unit's cycles without a completed uop by cause
(``WAIT_COUNTERS``, ``unattributed_cycles``; ``docs/rtl.md`` §2.6). Latencies are empty for the ``simple`` memory.

Usage: python scripts/sweep.py [--workloads eb_sum,spmm_cora] [--levels 3] [--memory HBM2]
       [--max-inflight 128,512] [--ports 2] [--output-tokens 8] [--lanes 8] [--drain-entries 1,2]
       [--size small]
       [--jobs N | --ray ADDRESS] [--out build/sweep.csv]
"""

from __future__ import annotations

import argparse
import csv
import itertools
import os
import sys
import time
from pathlib import Path
from typing import Sequence

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

# hardware axes: CLI option -> TmuConfig field (memory is the preset, not a TmuConfig field)
HARDWARE_AXES = {"max_inflight": "max_inflight", "ports": "memory_ports",
                 "output_tokens": "output_tokens", "lanes": "lanes",
                 "drain_entries": "drain_entries"}


def hardware_points(axes: dict[str, Sequence[int]], memories: Sequence[str]) -> list[dict]:
    """The product of the hardware axes: ``[{"memory": ..., "max_inflight": ..., ...}, ...]``
    (only the axes given; the others keep ``TmuConfig``'s defaults)."""
    names = [k for k in HARDWARE_AXES if axes.get(k)]
    points = []
    for memory in memories:
        for values in itertools.product(*(axes[k] for k in names)):
            points.append(dict(memory=memory, **dict(zip(names, values))))
    return points


def config_for(point: dict):
    """The ``TmuConfig`` of a hardware point. ``prefetch_depth`` follows ``max_inflight`` when
    lines in flight are swept: the default's (32) or the largest power of two with which the
    engines' loads fit in the lines in flight (``TmuConfig.with_max_inflight``: 8 at 64 lines
    with the default's five engines)."""
    from hw.tmu import TmuConfig
    fields = {HARDWARE_AXES[k]: v for k, v in point.items() if k in HARDWARE_AXES}
    inflight = fields.pop("max_inflight", None)
    config = TmuConfig(**fields)
    return config if inflight is None else config.with_max_inflight(inflight)


def run_point(point: dict, workloads: Sequence[str], levels: Sequence[int], size: str,
              seed: int = 0) -> list[dict]:
    """Run one hardware point (one task): see the module docstring. Returns its rows."""
    import numpy as np
    from sim.system import RtlJob, run_many_on_rtl
    from sw.compiler import CompileError, compile_mlir
    from sw.runtime.isa import Limits
    from sw.runtime.drivers import AccessRun, ReplayTransport, run_kernel
    from sw.runtime.execute import CoreCostModel
    from sw.runtime.golden import AccessFault
    from sw.runtime.image import bind_arguments, build_image
    from sw.workloads import BENCH_WORKLOADS as WORKLOADS

    def fresh(args):
        return [a.copy() if isinstance(a, np.ndarray) else a for a in args]

    config = config_for(point)
    limits = Limits.from_tmu_config(config)
    cost = CoreCostModel()
    rows, pending = [], []
    for name in workloads:
        w = WORKLOADS[name]
        args = w.make(size, seed)
        for level in levels:
            row = dict(point, workload=name, level=level, size=size, lookups=w.lookups(args),
                       error="")
            rows.append(row)
            try:
                kernel = compile_mlir(w.path.read_text(), filename=w.example, limits=limits,
                                      opt_level=level)
                gold = run_kernel(kernel, fresh(args), "golden", cost=cost)
            except (CompileError, AccessFault) as e:
                row["error"] = f"{type(e).__name__}: {e}"
                continue
            run_args = fresh(args)
            image = build_image(kernel, run_args)
            pending.append((row, w, kernel, args, gold,
                            RtlJob(kernel.program.encode(), image.data,
                                   bind_arguments(kernel, run_args, image))))
    t0 = time.perf_counter()
    results = run_many_on_rtl([job for *_, job in pending], config=config,
                              memory=point["memory"], engine="cpp") if pending else []
    wall = time.perf_counter() - t0
    for (row, w, kernel, args, gold, job), r in zip(pending, results):
        if r.fault_code:
            row["error"] = f"RTL fault {r.fault_code} at {r.fault_addr:#x}"
            continue
        if (r.data_tokens, r.control_tokens) != (gold.access.data_tokens,
                                                 gold.access.control_tokens):
            raise AssertionError(f"{point} {row['workload']} -O{row['level']}: RTL tokens differ "
                                 "from the golden model's")
        res = run_kernel(kernel, fresh(args), ReplayTransport(job.program, AccessRun.from_rtl(r)),
                         cost=cost)
        w.check(fresh(args), res.results)
        cycles = max(r.cycles, 1)
        row.update(access_cycles=r.cycles, core_cycles=res.execute.core_cycles,
                   dae_cycles=max(r.cycles, res.execute.core_cycles),
                   useful_bytes_per_cycle=round(r.stats["bytes_loaded"] / cycles, 3),
                   line_requests=r.stats["loads"],
                   mean_lines_in_flight=round(r.stats["inflight_sum"] / cycles, 2),
                   peak_lines_in_flight=r.stats["peak_inflight"],
                   data_tokens=len(r.data_tokens), control_tokens=len(r.control_tokens),
                   **{k: r.stats[k] for k in WAIT_COUNTERS},
                   unattributed_cycles=unattributed_cycles(r.stats),
                   **memory_columns(r.memory_stats), rtl_wall_s=round(wall, 1))
    return rows


#: the unit's counters of cycles without a completed uop (docs/rtl.md §2.6), one column each
WAIT_COUNTERS = ("rob_full_cycles", "issue_wait_cycles", "block_wait_cycles", "evaluate_cycles",
                 "fetch_bubble_cycles")


def unattributed_cycles(stats: dict) -> int:
    """Cycles after decoding in which the traversal completed no uop and no counter of
    ``WAIT_COUNTERS`` claims the cycle: the drain after ``DONE``, a full control queue, engines
    not ready to start, a row's or vector's further chunks (``docs/rtl.md`` §2.6, whose counters
    count disjoint cycles but for the cycle a blocking load's data is used)."""
    return (stats["cycles"] - stats["decode_cycles"] - stats["uops"]
            - sum(stats[k] for k in WAIT_COUNTERS))


#: read latencies at or above this many cycles are counted in ``slow_reads`` (the tail that the
#: reorder buffer's in-order drain waits on; docs/performance.md, "Lines in flight and the hot
#: channels")
SLOW_READ_CYCLES = 200


def memory_columns(memory_stats: dict | None) -> dict:
    """The memory's side of a run, from ``RtlResult.memory_stats`` (``hw/hbm_model`` counters):
    ``read_latency_mean`` and ``read_latency_max`` (cycles), ``slow_reads`` (reads of
    ``SLOW_READ_CYCLES`` or more, from the latency histogram's 4-cycle bins) and
    ``channel_queue_peak`` (the fullest channel request queue, entries). Empty strings where the
    memory does not count them (the ``simple`` preset)."""
    m = memory_stats or {}
    reads, hist = m.get("reads"), m.get("read_latency_hist")
    if not reads or not hist:
        return dict(read_latency_mean="", read_latency_max="", slow_reads="",
                    channel_queue_peak=max(m.get("queue_occupancy_max") or [""]))
    from hw.hbm_model.reference import HIST_BIN_CYCLES
    return dict(read_latency_mean=round(m["read_latency_sum"] / reads, 1),
                read_latency_max=m["read_latency_max"],
                slow_reads=sum(hist[SLOW_READ_CYCLES // HIST_BIN_CYCLES:]),
                channel_queue_peak=max(m.get("queue_occupancy_max") or [0]))


def _ints(text: str, option: str, parser) -> list[int]:
    try:
        values = [int(v) for v in text.split(",") if v.strip()]
    except ValueError:
        parser.error(f"{option}: {text!r} is not a comma-separated list of integers")
    if any(v < 1 for v in values):
        parser.error(f"{option}: {text!r}: values must be >= 1")
    return values


def run_grid(points: list[dict], workloads, levels, size, *, jobs: int = 1,
             ray_address: str | None = None, progress: bool = True) -> list[dict]:
    """Run every hardware point (a process pool of ``jobs``, or Ray); rows in point order."""
    from tqdm import tqdm
    if ray_address is not None:
        import ray
        if ray_address == "local":
            ray.init(include_dashboard=False, log_to_driver=False,
                     runtime_env={"env_vars": {"PYTHONPATH": str(REPO)}})
        else:
            ray.init(address=ray_address, runtime_env={"working_dir": str(REPO)})
        module = sys.modules[run_point.__module__]
        if module.__name__ != "__main__":    # imported from scripts/: ship it, workers cannot import it
            ray.cloudpickle.register_pickle_by_value(module)
        task = ray.remote(run_point)
        refs = [task.remote(p, workloads, levels, size) for p in points]
        out = []
        for ref in tqdm(refs, desc="points", disable=not progress):
            out.append(ray.get(ref))
        ray.shutdown()
    elif jobs <= 1:
        out = [run_point(p, workloads, levels, size)
               for p in tqdm(points, desc="points", disable=not progress)]
    else:
        import multiprocessing
        from concurrent.futures import ProcessPoolExecutor
        # spawn, not fork: a forked child of a process that has run PyTorch can hang in OpenMP
        with ProcessPoolExecutor(max_workers=jobs,
                                 mp_context=multiprocessing.get_context("spawn")) as pool:
            futures = [pool.submit(run_point, p, workloads, levels, size) for p in points]
            out = [f.result() for f in tqdm(futures, desc="points", disable=not progress)]
    return [row for rows in out for row in rows]


def main(argv=None) -> int:
    from sw.workloads import BENCH_WORKLOADS as WORKLOADS
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                     epilog=__doc__.split("\n\n", 1)[1],
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--workloads", default="eb_sum",
                        help=f"comma-separated, from: {', '.join(WORKLOADS)} (default eb_sum)")
    parser.add_argument("--levels", default="3", help="comma-separated -O levels (default 3)")
    parser.add_argument("--memory", default="HBM2", help="comma-separated presets: simple, HBM2, "
                        "HBM3 (default HBM2)")
    parser.add_argument("--max-inflight", default="", help="lines in flight, e.g. 64,256,1024")
    parser.add_argument("--ports", default="", help="memory ports, e.g. 1,2")
    parser.add_argument("--output-tokens", default="", help="output width in tokens, e.g. 2,4,8")
    parser.add_argument("--lanes", default="", help="lanes, e.g. 4,8")
    parser.add_argument("--drain-entries", default="",
                        help="reorder-buffer entries drained per cycle, 1..4, e.g. 1,2 "
                             "(TmuConfig.drain_entries; default: the configuration's automatic 2)")
    parser.add_argument("--size", choices=("small", "full"), default="small",
                        help="workload inputs (sw.workloads; default small)")
    parser.add_argument("--jobs", type=int, default=os.cpu_count() or 1,
                        help="local worker processes (default: CPUs)")
    parser.add_argument("--ray", metavar="ADDRESS", default=None,
                        help="run the points as Ray tasks on this cluster ('local': start one)")
    parser.add_argument("--out", default=str(REPO / "build" / "sweep.csv"))
    ns = parser.parse_args(argv)
    workloads = [w.strip() for w in ns.workloads.split(",") if w.strip()]
    for w in workloads:
        if w not in WORKLOADS:
            parser.error(f"--workloads: {w!r} is not one of {', '.join(WORKLOADS)}")
    try:
        levels = [int(v) for v in ns.levels.split(",") if v.strip()]
    except ValueError:
        levels = []
    if not levels or any(v not in (0, 1, 2, 3) for v in levels):
        parser.error(f"--levels: {ns.levels!r}: levels are 0, 1, 2, 3")
    memories = [m.strip() for m in ns.memory.split(",") if m.strip()]
    for m in memories:
        if m not in ("simple", "HBM2", "HBM3"):
            parser.error(f"--memory: {m!r} is not one of simple, HBM2, HBM3")
    if ns.jobs < 1:
        parser.error(f"--jobs must be a positive integer, not {ns.jobs}")
    axes = {k: _ints(getattr(ns, k), "--" + k.replace("_", "-"), parser) for k in HARDWARE_AXES}
    points = hardware_points(axes, memories)
    for p in points:
        try:
            config_for(p)
        except (TypeError, ValueError) as e:
            parser.error(f"hardware point {p}: {e}")
    print(f"{len(points)} hardware point(s) x {len(workloads)} workload(s) x {len(levels)} "
          f"level(s), {ns.size} inputs", flush=True)
    rows = run_grid(points, workloads, levels, ns.size, jobs=ns.jobs, ray_address=ns.ray)
    out = Path(ns.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    fields = list(dict.fromkeys(k for r in rows for k in r))
    with out.open("w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=fields)
        w.writeheader()
        w.writerows(rows)
    for r in rows:
        label = " ".join(f"{k}={r[k]}" for k in ("memory", *HARDWARE_AXES) if k in r)
        what = r["error"] or (f"{r['access_cycles']:,} cycles, {r['useful_bytes_per_cycle']} useful "
                              f"B/cycle, DAE {r['dae_cycles']:,}")
        print(f"{label:<40} {r['workload']:<14} -O{r['level']}: {what}")
    print(f"wrote {out} ({len(rows)} rows)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
