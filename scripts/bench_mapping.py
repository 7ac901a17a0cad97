#!/usr/bin/env python3
"""Table-to-unit mapping on the RTL: makespan and imbalance of each mapper (issue 11, table 5).

For each table set of ``sw.runtime.mapping.table_set`` (balanced, imbalanced, extreme; tables and
poolings drawn from Meta's DLRM statistics as that function states) and each mapper of
``sw.runtime.mapping.MAPPERS``, at K units:

* every distinct *piece* (a table's bag range) the mappers produce runs once on the RTL: the
  EmbeddingBag-sum kernel (``examples/embedding_bag_sum.mlir``, -O3) over the whole table with
  that range's indices and offsets, on the HBM model (default HBM2), in one simulator process
  (``sim.system.run_many_on_rtl``, C++ harness); its results are checked bit for bit against a
  sequential float32 reference (rows added in index order from 0, as the kernel does);
* a unit runs its pieces back to back, so its cycles are the sum of its pieces' RTL cycles and the
  mapping's **makespan** the largest unit sum; **imbalance** = makespan ÷ mean unit cycles. The
  units are measured one at a time on an idle memory: the contention of K units for one HBM is not
  in these figures (the multi-unit system measures it);
* beside it, the cost model's estimate (``UnitCostModel``) of the same makespan, and its error;
* with ``--system``, each mapping also runs on the K-unit system sharing one memory
  (``hw.multi_system.MultiSystem``, ``sw.runtime.multi_unit.run_mapped``): every unit runs its
  pieces back to back (loading the next piece's program and registers through its register
  port, one access per cycle, while the other units run), all units started together, every
  table once in one shared image; every piece's results are checked bit for bit against the
  same reference; the **system makespan** is the cycles from the common start until the last
  unit is done (contention for the HBM and the turnaround between pieces included), its
  imbalance the makespan ÷ mean unit cycles (idle units count 0), and ``system_over_isolated``
  the system makespan ÷ the idle-memory makespan above. The shared memory's statistics cover the
  whole run (every piece of every unit, ``sim.multi.SequenceRtlResult.memory_stats``): its reads,
  bytes moved per makespan cycle and fraction of the preset's peak, the units' useful bytes (the
  elements they loaded) per makespan cycle, the row-buffer hit rate and the mean and p99 read
  latency (``system_mem_*``, ``system_useful_bytes_per_cycle``, ``system_row_hit_rate``,
  ``system_read_latency_*``; the printed table shows four of them).

Writes one CSV row per (set, mapper) and prints a table.

Usage: python scripts/bench_mapping.py [--units 4] [--tables 16] [--bags 64] [--memory HBM2]
       [--median-rows 20000] [--max-rows 100000] [--seed S] [--system]
       [--csv build/bench_mapping.csv]
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


def reference_sum(table: np.ndarray, indices: np.ndarray, offsets: np.ndarray) -> np.ndarray:
    """EmbeddingBag sum, float32, each bag's rows added in index order starting from 0."""
    bags = len(offsets) - 1
    out = np.zeros((bags, table.shape[1]), np.float32)
    lengths = np.diff(offsets)
    for k in range(int(lengths.max(initial=0))):
        live = np.flatnonzero(lengths > k)
        out[live] += table[indices[offsets[live] + k]]
    return out


def piece_args(table: np.ndarray, indices: np.ndarray, offsets: np.ndarray, start: int, stop: int):
    """The kernel's arguments for bags ``[start, stop)``: the whole table, that range's indices,
    its offsets rebased to 0 (``stop - start + 1`` entries), a zero output."""
    lo, hi = int(offsets[start]), int(offsets[stop])
    return [table, indices[lo:hi].copy(), (offsets[start:stop + 1] - lo).astype(np.int64),
            np.zeros((stop - start, table.shape[1]), np.float32)]


def _unit_calls(mapping, tables, data) -> list[list[list]]:
    """Per unit, the kernel arguments of its pieces in order (``piece_args``; each table array
    is the same object in every piece of it, so the shared image holds it once)."""
    calls = []
    for pieces in mapping.units:
        calls.append([piece_args(data[p.table][0], data[p.table][1], tables[p.table].offsets,
                                 p.bag_start, p.bag_stop) for p in pieces])
    return calls


def run_system(kernel, mapping, tables, data, *, memory: str, mem_words: int, label: str) -> dict:
    """Run ``mapping`` on the ``len(mapping.units)``-unit system (module docstring), check every
    piece against :func:`reference_sum` bit for bit; the system columns of the CSV."""
    from sw.runtime.multi_unit import run_mapped
    calls = _unit_calls(mapping, tables, data)
    t0 = time.perf_counter()
    run = run_mapped(kernel, calls, memory=memory, mem_words=mem_words)
    wall = time.perf_counter() - t0
    for u, (pieces, unit_args) in enumerate(zip(mapping.units, calls)):
        for p, args in zip(pieces, unit_args):
            want = reference_sum(data[p.table][0], args[1], args[2])
            if not np.array_equal(args[3].view(np.uint32), want.view(np.uint32)):
                raise AssertionError(f"{label}: unit {u} piece {p}: the system's results differ "
                                     f"from the reference")
    unit_cycles = run.unit_cycles
    busy = [sum(r.access.cycles for r in unit) for unit in run.calls]
    mem = run.system.memory_summary()      # the shared memory over the whole run (makespan)
    return dict(system_makespan=run.makespan,
                system_unit_cycles=" ".join(str(c) for c in unit_cycles),
                system_imbalance=round(run.makespan / (sum(unit_cycles) / len(unit_cycles)), 3),
                # cycles between a piece's done and the next piece's START (read-out + load)
                system_turnaround_cycles=sum(c - b for c, b in zip(unit_cycles, busy)),
                system_mem_reads=mem["reads"],
                system_mem_bytes_per_cycle=round(mem["bytes_per_cycle"], 2),
                system_mem_peak_fraction=round(mem["peak_fraction"], 3),
                system_useful_bytes_per_cycle=round(mem["useful_bytes_per_cycle"], 2),
                system_row_hit_rate=round(mem["row_hit_rate"], 3),
                system_read_latency_mean=round(mem["lat_mean"], 1),
                system_read_latency_p99=mem["lat_p99"],
                system_wall_s=round(wall, 1))


def add_table_set_arguments(parser: argparse.ArgumentParser) -> None:
    """``--tables --bags --sets --median-rows --max-rows``: the table sets of
    ``sw.runtime.mapping.table_set`` (also used by ``scripts/fit_unit_cost.py``)."""
    parser.add_argument("--tables", type=int, default=16, help="tables per set (default 16)")
    parser.add_argument("--bags", type=int, default=64, help="bags per table in the batch (default 64)")
    parser.add_argument("--sets", default="balanced,imbalanced,extreme",
                        help="comma-separated table sets (default: all three)")
    parser.add_argument("--median-rows", type=int, default=20_000,
                        help="median table rows (table_set; default 20,000)")
    parser.add_argument("--max-rows", type=int, default=100_000,
                        help="largest table rows (table_set; default 100,000)")


def table_sets_from(parser: argparse.ArgumentParser, ns) -> list[str]:
    """The ``--sets`` names, checked; exits 2 (``parser.error``) on an unknown set or a size < 1."""
    from sw.runtime.mapping import TABLE_SETS
    sets = [s.strip() for s in ns.sets.split(",") if s.strip()]
    for s in sets:
        if s not in TABLE_SETS:
            parser.error(f"--sets: {s!r} is not one of {', '.join(TABLE_SETS)}")
    for option in ("tables", "bags", "median_rows", "max_rows"):
        if getattr(ns, option) < 1:
            parser.error(f"--{option.replace('_', '-')} must be >= 1, not {getattr(ns, option)}")
    return sets


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--units", type=int, default=4, help="access units K (default 4)")
    add_table_set_arguments(parser)
    parser.add_argument("--memory", default="HBM2", choices=("simple", "HBM2", "HBM3"))
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--system", action="store_true",
                        help="also run every mapping on the K-unit system sharing one memory "
                             "(units 1, 2, 4 or 8; one Verilator build of K units)")
    parser.add_argument("--system-only", action="store_true",
                        help="--system without the pieces' runs one at a time on an idle memory "
                             "(no single-unit build)")
    parser.add_argument("--csv", default=str(REPO / "build" / "bench_mapping.csv"))
    ns = parser.parse_args(argv)
    ns.system = ns.system or ns.system_only
    if ns.seed < 0:
        parser.error(f"--seed must be an integer >= 0, not {ns.seed}")
    from sw.runtime.mapping import MAPPERS, UnitCostModel, map_tables, table_set
    sets = table_sets_from(parser, ns)
    if ns.units < 1:
        parser.error(f"--units must be >= 1, not {ns.units}")
    if ns.system and ns.units not in (1, 2, 4, 8):
        parser.error(f"--units must be 1, 2, 4 or 8 with --system, not {ns.units}")

    from tqdm import tqdm
    from sim.system import RtlJob, run_many_on_rtl
    from sw.compiler import compile_mlir
    from sw.runtime.drivers import AccessRun, ReplayTransport, run_kernel
    from sw.runtime.image import bind_arguments, build_image

    path = REPO / "examples" / "embedding_bag_sum.mlir"
    kernel = compile_mlir(path.read_text(), filename=path.name, opt_level=3)
    program = kernel.program.encode()
    cost = UnitCostModel()
    rows = []
    drawn = []                    # per set: (kind, seed, tables, data, mappings, pieces, jobs, argsets)
    for set_no, kind in enumerate(sets):
        seed = ns.seed + set_no
        tables = table_set(kind, ns.tables, bags=ns.bags, seed=seed, median_rows=ns.median_rows,
                           max_rows=ns.max_rows)
        rng = np.random.default_rng(seed)
        data = []                 # per table: (table array, indices)
        for t in tables:
            data.append((rng.standard_normal((t.rows, t.dim)).astype(np.float32),
                         rng.integers(0, t.rows, t.lookups, dtype=np.int64)))
        mappings = {name: map_tables(tables, ns.units, name) for name in MAPPERS}
        pieces = sorted({p for m in mappings.values() for u in m.units for p in u},
                        key=lambda p: (p.table, p.bag_start))
        jobs, argsets = [], []
        for p in pieces:
            table, indices = data[p.table]
            args = piece_args(table, indices, tables[p.table].offsets, p.bag_start, p.bag_stop)
            image = build_image(kernel, args)
            jobs.append(RtlJob(program, image.data, bind_arguments(kernel, args, image)))
            argsets.append(args)
        drawn.append((kind, seed, tables, data, mappings, pieces, jobs, argsets))
    # one memory size for every run of this invocation: one Verilator build per system
    sizes = [len(j.memory) for d in drawn for j in d[6]]
    if ns.system:
        from sw.runtime.multi_unit import mapped_image
        for kind, seed, tables, data, mappings, *_ in drawn:
            for m in mappings.values():
                sizes.append(mapped_image(kernel, _unit_calls(m, tables, data))[0].size)
    from sim.verilator import mem_words_for
    mem_words = mem_words_for(max(sizes))
    for kind, seed, tables, data, mappings, pieces, jobs, argsets in drawn:
        print(f"{kind}: {len(tables)} tables, {sum(t.lookups for t in tables)} lookups, "
              f"{len(pieces)} distinct pieces on the RTL ({ns.memory}) ...", flush=True)
        if ns.system_only:
            for name, m in mappings.items():
                est = m.makespan(lambda p: cost.piece_cycles(p, tables))
                row = dict(set=kind, mapper=name, units=ns.units, tables=ns.tables, bags=ns.bags,
                           memory=ns.memory, seed=seed, pieces=sum(len(u) for u in m.units),
                           estimated_makespan=round(est))
                row.update(run_system(kernel, m, tables, data, memory=ns.memory,
                                      mem_words=mem_words, label=f"{kind}/{name}"))
                row["estimate_error_system"] = round(est / row["system_makespan"] - 1, 3)
                rows.append(row)
                print(f"  {name}: makespan {row['system_makespan']:,} on the {ns.units}-unit "
                      f"system", flush=True)
            continue
        t0 = time.perf_counter()
        results = run_many_on_rtl(jobs, memory=ns.memory, engine="cpp", mem_words=mem_words)
        wall = time.perf_counter() - t0
        measured = {}
        for p, job, args, r in tqdm(list(zip(pieces, jobs, argsets, results)), desc="check",
                                    leave=False):
            run = run_kernel(kernel, args, ReplayTransport(program, AccessRun.from_rtl(r)))
            table, indices = data[p.table]
            want = reference_sum(table, args[1], args[2])
            if not np.array_equal(np.asarray(run.results[0]).view(np.uint32), want.view(np.uint32)):
                raise AssertionError(f"{kind}: piece {p}: RTL results differ from the reference")
            measured[p] = r.cycles
        for name, m in mappings.items():
            unit_rtl = m.unit_cycles(lambda p: measured[p])
            est = m.makespan(lambda p: cost.piece_cycles(p, tables))
            makespan = max(unit_rtl)
            row = dict(set=kind, mapper=name, units=ns.units, tables=ns.tables, bags=ns.bags,
                       memory=ns.memory, seed=seed, pieces=sum(len(u) for u in m.units),
                       makespan_cycles=makespan,
                       imbalance=round(makespan / (sum(unit_rtl) / len(unit_rtl)), 3),
                       total_unit_cycles=sum(unit_rtl),
                       estimated_makespan=round(est),
                       estimate_error=round(est / makespan - 1, 3),
                       rtl_wall_s=round(wall, 1))
            if ns.system:
                row.update(run_system(kernel, m, tables, data, memory=ns.memory,
                                      mem_words=mem_words, label=f"{kind}/{name}"))
                row["system_over_isolated"] = round(row["system_makespan"] / makespan, 3)
                row["estimate_error_system"] = round(est / row["system_makespan"] - 1, 3)
            rows.append(row)
            print(f"  {name}: makespan {makespan:,} (idle memory)"
                  + (f", {row['system_makespan']:,} on the {ns.units}-unit system"
                     if ns.system else ""), flush=True)
    key = "system_makespan" if ns.system_only else "makespan_cycles"
    best = {}
    for r in rows:
        best[r["set"]] = min(best.get(r["set"], 1 << 62), r[key])
    for r in rows:
        r["makespan_over_best"] = round(r[key] / best[r["set"]], 3)
    if ns.system_only:
        print(f"{'set':<11} {'mapper':<13} {'pieces':>6} {'system':>9} {'÷ best':>7} "
              f"{'imbalance':>9} {'estimate':>9} {'est. err':>8} {'turnaround':>10}"
              + MEMORY_HEADER)
        for r in rows:
            print(f"{r['set']:<11} {r['mapper']:<13} {r['pieces']:>6} {r['system_makespan']:>9,} "
                  f"{r['makespan_over_best']:>7.2f} {r['system_imbalance']:>9.2f} "
                  f"{r['estimated_makespan']:>9,} {100 * r['estimate_error_system']:>7.1f}% "
                  f"{r['system_turnaround_cycles']:>10,}" + memory_columns(r))
        return _write_csv(ns.csv, rows)
    print(f"{'set':<11} {'mapper':<13} {'pieces':>6} {'makespan':>9} {'÷ best':>7} "
          f"{'imbalance':>9} {'estimate':>9} {'est. err':>8}"
          + (f" {'system':>9} {'sys imb.':>8} {'sys÷idle':>8}" + MEMORY_HEADER
             if ns.system else ""))
    for r in rows:
        print(f"{r['set']:<11} {r['mapper']:<13} {r['pieces']:>6} {r['makespan_cycles']:>9,} "
              f"{r['makespan_over_best']:>7.2f} {r['imbalance']:>9.2f} "
              f"{r['estimated_makespan']:>9,} {100 * r['estimate_error']:>7.1f}%"
              + (f" {r['system_makespan']:>9,} {r['system_imbalance']:>8.2f} "
                 f"{r['system_over_isolated']:>8.2f}" + memory_columns(r) if ns.system else ""))
    return _write_csv(ns.csv, rows)


#: The printed columns of the shared memory over a system run (``run_system``): bytes it moved
#: per makespan cycle, the units' useful bytes per makespan cycle, row-buffer hit rate, mean read
#: latency (unit cycles).
MEMORY_HEADER = f" {'mem B/cyc':>9} {'useful B/cyc':>12} {'row hits':>8} {'read lat.':>9}"


def memory_columns(row: dict) -> str:
    """A row's :data:`MEMORY_HEADER` columns."""
    return (f" {row['system_mem_bytes_per_cycle']:>9.2f} "
            f"{row['system_useful_bytes_per_cycle']:>12.2f} "
            f"{100 * row['system_row_hit_rate']:>7.1f}% {row['system_read_latency_mean']:>9.1f}")


def _write_csv(path: str, rows: list[dict]) -> int:
    out = Path(path)
    out.parent.mkdir(parents=True, exist_ok=True)
    with out.open("w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=list(rows[0]))
        w.writeheader()
        w.writerows(rows)
    print(f"wrote {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
