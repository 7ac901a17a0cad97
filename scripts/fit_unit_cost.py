#!/usr/bin/env python3
"""Fit the mapper's cost model (``sw.runtime.mapping.UnitCostModel``) to the RTL, and check it
on pieces it was not fitted on.

The statistics-guided mapper places tables by the cycles ``UnitCostModel`` predicts for each
piece (a table's bag range): ``run + bags × bag + lookups × max(lines per row × line, lookup)``.
Its default rates must be the unit's own. This script measures them:

* two draws of the table sets of ``sw.runtime.mapping.table_set`` (balanced, imbalanced,
  extreme), seeds ``--seed`` (the *fit* draw) and ``--seed + 1000`` (the *held-out* draw);
* the pieces: every table whole and cut into 2 and 4 bag ranges of about equal lookups
  (``split_bags``), so that pieces of every size the mappers make are in the sample;
* every piece runs once on the RTL (EmbeddingBag sum, ``examples/embedding_bag_sum.mlir`` at
  ``-O3``, on the HBM model, one unit on an idle memory: ``sim.system.run_many_on_rtl``, C++
  harness), its results checked bit for bit against the sequential float32 reference of
  ``scripts/bench_mapping.py``; its cycles are the unit's ``cycles`` counter;
* ``UnitCostModel().fit`` on the fit draw's pieces; the error of the default and of the fitted
  model (estimate ÷ RTL − 1) on both draws.

Prints the fitted rates (as the ``UnitCostModel(...)`` to paste into the defaults) and the
errors; writes one CSV row per piece.

Usage: python scripts/fit_unit_cost.py [--tables 16] [--bags 64] [--memory HBM2] [--seed 0]
       [--median-rows 20000] [--max-rows 100000] [--csv build/fit_unit_cost.csv]
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "scripts"))

HELD_OUT_SEED_OFFSET = 1000
SPLITS = (1, 2, 4)


def draw_pieces(kind: str, seed: int, *, tables: int, bags: int, median_rows: int, max_rows: int):
    """One draw: ``(tables, data, pieces)``; ``data[i]`` = (table array float32 of shape
    ``(rows, dim)``, indices int64 of shape ``(lookups,)``), pieces = every table whole and in
    2 and 4 bag ranges (distinct pieces, in table order)."""
    from sw.runtime.mapping import Piece, split_bags, table_set
    stats = table_set(kind, tables, bags=bags, seed=seed, median_rows=median_rows,
                      max_rows=max_rows)
    rng = np.random.default_rng(seed)
    data = [(rng.standard_normal((t.rows, t.dim)).astype(np.float32),
             rng.integers(0, t.rows, t.lookups, dtype=np.int64)) for t in stats]
    pieces = sorted({Piece(i, a, b) for i, t in enumerate(stats) for parts in SPLITS
                     for a, b in split_bags(t.offsets, parts)},
                    key=lambda p: (p.table, p.bag_start, p.bag_stop))
    return stats, data, pieces


def errors(model, samples, tables) -> np.ndarray:
    """Per ``(piece, cycles)`` sample, ``model``'s estimate ÷ measured cycles − 1."""
    return np.array([model.piece_cycles(p, tables) / c - 1 for p, c in samples])


def main(argv=None) -> int:
    from bench_mapping import add_table_set_arguments, table_sets_from
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    add_table_set_arguments(parser)
    parser.add_argument("--memory", default="HBM2", choices=("simple", "HBM2", "HBM3"))
    parser.add_argument("--seed", type=int, default=0,
                        help=f"seed of the fit draw (held-out: seed + {HELD_OUT_SEED_OFFSET})")
    parser.add_argument("--csv", default=str(REPO / "build" / "fit_unit_cost.csv"))
    ns = parser.parse_args(argv)
    from sw.runtime.mapping import Piece, UnitCostModel
    sets = table_sets_from(parser, ns)

    from bench_mapping import _write_csv as write_csv, piece_args, reference_sum
    from sim.system import RtlJob, run_many_on_rtl
    from sim.verilator import mem_words_for
    from sw.compiler import compile_mlir
    from sw.runtime.drivers import AccessRun, ReplayTransport, run_kernel
    from sw.runtime.image import bind_arguments, build_image

    path = REPO / "examples" / "embedding_bag_sum.mlir"
    kernel = compile_mlir(path.read_text(), filename=path.name, opt_level=3)
    program = kernel.program.encode()
    draws = []                          # (role, kind, seed, tables, data, pieces)
    for role, offset in (("fit", 0), ("held_out", HELD_OUT_SEED_OFFSET)):
        for set_no, kind in enumerate(sets):
            seed = ns.seed + offset + set_no
            draws.append((role, kind, seed, *draw_pieces(
                kind, seed, tables=ns.tables, bags=ns.bags, median_rows=ns.median_rows,
                max_rows=ns.max_rows)))
    jobs, meta = [], []
    for d, (role, kind, seed, tables, data, pieces) in enumerate(draws):
        for p in pieces:
            table, indices = data[p.table]
            args = piece_args(table, indices, tables[p.table].offsets, p.bag_start, p.bag_stop)
            image = build_image(kernel, args)
            jobs.append(RtlJob(program, image.data, bind_arguments(kernel, args, image)))
            meta.append((d, p, args))
    print(f"{len(jobs)} pieces on the RTL ({ns.memory}, one unit, idle memory) ...", flush=True)
    results = run_many_on_rtl(jobs, memory=ns.memory, engine="cpp",
                              mem_words=mem_words_for(max(len(j.memory) for j in jobs)))
    # one table list for all draws (a piece's table index shifted by its draw's base)
    all_tables, base = [], []
    for draw in draws:
        base.append(len(all_tables))
        all_tables += draw[3]
    samples = {"fit": [], "held_out": []}
    drawn_piece = {}
    for (d, p, args), r in zip(meta, results):
        role, kind, seed, tables, data, _ = draws[d]
        run = run_kernel(kernel, args, ReplayTransport(program, AccessRun.from_rtl(r)))
        want = reference_sum(data[p.table][0], args[1], args[2])
        if not np.array_equal(np.asarray(run.results[0]).view(np.uint32), want.view(np.uint32)):
            raise AssertionError(f"{kind} (seed {seed}): piece {p}: RTL results differ from the "
                                 f"reference")
        shifted = Piece(base[d] + p.table, p.bag_start, p.bag_stop)
        samples[role].append((shifted, r.cycles))
        drawn_piece[shifted] = (d, p)
    default = UnitCostModel()
    fitted = default.fit(samples["fit"], all_tables)
    print(f"fitted: UnitCostModel(cycles_per_run={fitted.cycles_per_run:.1f}, "
          f"cycles_per_bag={fitted.cycles_per_bag:.2f}, "
          f"cycles_per_lookup={fitted.cycles_per_lookup:.2f}, "
          f"cycles_per_line={fitted.cycles_per_line:.3f})")
    print(f"{'model':<8} {'draw':<9} {'pieces':>6} {'mean |err|':>10} {'max |err|':>9} "
          f"{'mean err':>8}")
    for name, model in (("default", default), ("fitted", fitted)):
        for role in ("fit", "held_out"):
            e = errors(model, samples[role], all_tables)
            print(f"{name:<8} {role:<9} {len(e):>6} {100 * np.mean(np.abs(e)):>9.1f}% "
                  f"{100 * np.max(np.abs(e)):>8.1f}% {100 * np.mean(e):>7.1f}%")
    rows = []
    for role in ("fit", "held_out"):
        for shifted, c in samples[role]:
            d, p = drawn_piece[shifted]
            _, kind, seed, tables, _, _ = draws[d]
            rows.append(dict(draw=role, set=kind, seed=seed, memory=ns.memory, table=p.table,
                             bag_start=p.bag_start, bag_stop=p.bag_stop,
                             bags=p.bag_stop - p.bag_start, lookups=p.lookups(tables),
                             lines_per_row=tables[p.table].lines_per_row(), rtl_cycles=c,
                             default_estimate=round(default.piece_cycles(shifted, all_tables), 1),
                             fitted_estimate=round(fitted.piece_cycles(shifted, all_tables), 1)))
    return write_csv(ns.csv, rows)


if __name__ == "__main__":
    sys.exit(main())
