#!/usr/bin/env python3
"""DAE against a core-only baseline on the same memory model (issue 11, report table 1).

For every workload of ``sw.workloads``, the kernel's sequential form (``sim.core_trace``, vector
form for 64-byte AVX-512 registers) runs on the out-of-order core model ``sim.core_only``
(Golden Cove parameters, ``CoreConfig``) for each number of L1 misses in flight (``--mshrs``,
default 8 16 32), in two cache settings:

* ``caches``: the core's own 48 KiB L1D and 2 MiB L2 (LRU);
* ``none``: no cache (every load that is not merged into an in-flight miss goes to memory): the
  memory-level-parallelism limit alone, as the access unit, which has no cache, sees the memory.

Every core-only run's results are checked against PyTorch (``Workload.check``). The DAE side is
measured, not copied: ``scripts/bench_compiler.py``'s ``measure`` compiles each workload at
``-O3`` (``--level``) for ``configs/tmu_rtl.json``, runs it on the RTL (Verilator) with the same
memory preset, checks tokens against the golden model and results against PyTorch, and gives
the access unit's cycles, the core cost model's cycles and ``DAE = max(access, core)``.

**The execute side on the same core.** The coupled core above pops at a flat rate
(``CoreCostModel``: 6 cycles per callback). ``bench_compiler.fitted_cost`` runs the DAE kernel's
compute loop (the DLC ``dlc.compute_loop`` over the golden model's tokens, ``sim.execute_trace``)
on the *same* out-of-order core model as the baseline, tokens always ready (the execute side's own
bound), checks its results against PyTorch, and fits the coupled core's cycles per callback to it
(``fitted_cycles_per_control``, at least 1); the RTL then runs coupled again with that rate
(``dae_fitted_cycles``, ``speedup_fitted``; ``--no-fit`` skips it), and once more with that
run replayed callback by callback (``sw.runtime.execute.CoreReplay``: each callback at its own
pace, operands at the vector width; ``execute_replay_cycles``, ``dae_replay_cycles``,
``speedup_replay``; ``--no-replay`` skips it). Both traces keep an
accumulator that is stored and loaded again in a register and store it once, after its last
update (scalar promotion, ``promote``; ``--no-promote``: the baseline's every such load is
store-to-load forwarded, 5 cycles, and every update stored, as before 2026-11-27).

``speedup = core-only cycles / DAE cycles`` (> 1: the DAE system is faster). Cycles are memory
(unit) cycles for both (``CoreConfig.clock_ratio`` 1 by default: the core runs at the unit's
clock; ``--clock-ratio 3`` models 3 GHz cores on both sides: the core-only model runs at
``CoreConfig(clock_ratio=3)`` and the DAE's execute core pops three times as many tokens per
memory cycle, its per-callback cycles divided by three, ``CoreCostModel.in_memory_cycles``).

**The DAE side's unit.** ``--output-tokens``, ``--memory-ports`` and ``--max-inflight`` (lines in
flight, the reorder buffer's 64-byte entries; the run-ahead engines' ``prefetch_depth`` follows
it, ``TmuConfig.with_max_inflight``) change the RTL build of every DAE run (``TmuConfig``, through
``measure``'s ``config_changes``; one Verilator build per configuration); the core-only side does
not depend on them. A value ``TmuConfig`` refuses exits 2 before any run. With ``--no-rtl``
(the core-only side alone) these options, ``--tokens-per-cycle``, ``--level`` and ``--config``
would have no effect: given with it (``--level``/``--config`` other than their defaults), the
script exits 2 naming them.

Writes ``build/bench_core_only.csv`` (``--out``) and prints a Markdown table.

    python scripts/bench_core_only.py [--size small|full] [--memory HBM2|HBM3|simple]
                                      [--mshrs 8 16 32] [--no-rtl] [--workloads NAME ...]
                                      [--output-tokens T] [--memory-ports P] [--max-inflight N]
"""

from __future__ import annotations

import argparse
import csv
import dataclasses
import math
import sys
import warnings
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
for p in (REPO, REPO / "scripts"):
    if str(p) not in sys.path:
        sys.path.insert(0, str(p))

from hw.hbm_model.presets import get_preset  # noqa: E402
from sim.core_only import CoreConfig, run_core  # noqa: E402
from sim.core_trace import trace_kernel  # noqa: E402
from sw.compiler.frontends.mlir import parse_mlir  # noqa: E402
from sw.workloads import BENCH_WORKLOADS, WORKLOADS  # noqa: E402

MEMORIES = ("HBM2", "HBM3", "simple")
CACHES = {"caches": {}, "none": dict(l1_bytes=0, l2_bytes=0)}

FIELDS = ["workload", "class", "memory", "mshrs", "caches", "core_only_cycles",
          "core_only_bytes_per_cycle", "instructions", "loads", "load_bytes", "memory_requests",
          "l1_hits", "l2_hits", "merged", "mshr_mean", "mshr_peak", "mshr_wait_cycles",
          "row_hit_rate", "read_latency_mean", "dae_level", "dae_output_tokens",
          "dae_memory_ports", "dae_max_inflight", "dae_access_cycles",
          "dae_core_cycles", "dae_cycles", "speedup", "promote", "execute_ooo_cycles",
          "fitted_cycles_per_control", "execute_fit_cycles",
          "dae_fitted_access_cycles", "dae_fitted_cycles", "speedup_fitted",
          "execute_replay_cycles", "dae_replay_access_cycles", "dae_replay_cycles",
          "speedup_replay", "error"]


def core_only_rows(workloads, size: str, memory: str, mshrs, *, vector_bytes: int = 64,
                   clock_ratio: int = 1, promote: bool = True) -> list[dict]:
    """Run the core-only model for ``workloads`` x ``mshrs`` x the two cache settings
    (``promote``: scalar replacement of stored-then-loaded values, ``sim.core_trace``).

    Raises ``AssertionError`` if the sequential form's results differ from the workload's
    reference."""
    preset = get_preset(memory)
    rows = []
    for name in workloads:
        w = BENCH_WORKLOADS[name]
        args = w.make(size, 0)                 # the same inputs as bench_compiler's measure
        tr = trace_kernel(parse_mlir(w.path.read_text(), w.example), args, vector_bytes=vector_bytes,
                          promote=promote)
        w.check(w.make(size, 0), list(tr.results))
        for caches, over in CACHES.items():
            for m in mshrs:
                r = run_core(tr, preset, CoreConfig(mshrs=m, clock_ratio=clock_ratio, **over))
                s = r.stats
                classified = s["row_hits"] + s["row_misses"] + s["row_conflicts"]
                rows.append(dict(
                    workload=name, **{"class": w.cls}, memory=memory, mshrs=m, caches=caches,
                    core_only_cycles=r.cycles, core_only_bytes_per_cycle=r.bytes_per_cycle,
                    instructions=r.instructions, loads=r.loads, load_bytes=r.load_bytes,
                    memory_requests=r.memory_requests, l1_hits=r.l1_hits, l2_hits=r.l2_hits,
                    merged=r.merged, mshr_mean=r.mshr_mean, mshr_peak=r.mshr_peak,
                    mshr_wait_cycles=r.mshr_wait_cycles,
                    row_hit_rate=s["row_hits"] / classified if classified else 0.0,
                    read_latency_mean=s["read_latency_sum"] / s["reads"] if s["reads"] else 0.0,
                    promote=promote, error=""))
    return rows


def dae_rows(workloads, size: str, memory: str, level: int, config: str, *,
             output_tokens: int | None = None, memory_ports: int | None = None,
             max_inflight: int | None = None, tokens_per_cycle: int | None = None,
             clock_ratio: int = 1, fit: bool = False, replay: bool = False) -> dict[str, dict]:
    """``bench_compiler.measure`` at one level on the RTL with the simulated core (coupled:
    ``dae_cycles`` is when the core model popped DONE): workload -> its row.

    ``output_tokens`` / ``memory_ports`` / ``max_inflight`` change the RTL build (``TmuConfig``;
    default the configuration's; with ``max_inflight`` the run-ahead engines' ``prefetch_depth``
    follows, ``TmuConfig.with_max_inflight``, as in ``scripts/sweep.py``), ``tokens_per_cycle``
    the core's rate per core cycle (``CoreCostModel``;
    default 8, one 512-bit vector per cycle), ``clock_ratio`` core cycles per memory cycle (the
    cost model in memory cycles: ``CoreCostModel.in_memory_cycles``); ``fit``: each kernel's
    core at the rate fitted to its execute side on the baseline's core
    (``bench_compiler.fitted_cost``: ``execute_ooo_cycles``, ``fitted_cycles_per_control``);
    ``replay``: each kernel's core replays that run callback by callback (``CoreReplay``)."""
    from bench_compiler import measure, rtl_config_for
    from sw.runtime.execute import CoreCostModel
    from sw.runtime.isa import Limits
    limits = Limits.from_file(config)
    base = rtl_config_for(limits)
    changes = {k: v for k, v in (("output_tokens", output_tokens),
                                 ("memory_ports", memory_ports)) if v is not None}
    if max_inflight is not None:
        built = dataclasses.replace(base, **changes).with_max_inflight(max_inflight)
        changes.update(max_inflight=built.max_inflight, prefetch_depth=built.prefetch_depth)
    cost = (CoreCostModel() if tokens_per_cycle is None else
            CoreCostModel(tokens_per_cycle=tokens_per_cycle)).in_memory_cycles(clock_ratio)
    unit = dataclasses.replace(base, **changes)     # the unit built, recorded in each row
    recorded = dict(dae_output_tokens=unit.output_tokens, dae_memory_ports=unit.memory_ports,
                    dae_max_inflight=unit.max_inflight)
    rows = measure(workloads, [level], size, limits, rtl=True, memory=memory, coupled=True,
                   cost=cost, config_changes=changes, fit=fit, clock_ratio=clock_ratio,
                   replay=replay)
    return {r["workload"]: {**r, **recorded} for r in rows}


def _merge(rows, dae: dict, columns) -> None:
    """Add ``columns(row, its workload's DAE row)`` to every core-only row, or the first error."""
    for r in rows:
        d = dae[r["workload"]]
        if d.get("error") or r["error"]:
            r["error"] = r["error"] or d["error"]
            continue
        r.update(columns(r, d))


def geomean(values):
    return math.exp(sum(math.log(v) for v in values) / len(values)) if values else None


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                 epilog=__doc__.split("\n\n", 1)[1],
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--size", choices=("small", "full"), default="full")
    ap.add_argument("--memory", choices=MEMORIES, default="HBM2")
    ap.add_argument("--mshrs", type=int, nargs="+", default=[8, 16, 32])
    ap.add_argument("--workloads", nargs="+", default=list(WORKLOADS), metavar="NAME")
    ap.add_argument("--level", type=int, default=3, help="-O level of the DAE kernel (default 3)")
    ap.add_argument("--config", default=str(REPO / "configs" / "tmu_rtl.json"))
    ap.add_argument("--no-rtl", action="store_true", help="core-only model only (no DAE cycles)")
    ap.add_argument("--vector-bytes", type=int, default=64,
                    help="vector register bytes of the core's innermost loops (64: AVX-512; 0: scalar)")
    ap.add_argument("--clock-ratio", type=int, default=1,
                    help="core cycles per memory cycle, for both cores (the core-only baseline "
                         "and the DAE side's execute core); default 1")
    ap.add_argument("--output-tokens", type=int, default=None,
                    help="TmuConfig.output_tokens of the DAE run (1..32; default 8, a 512-bit beat)")
    ap.add_argument("--memory-ports", type=int, default=None,
                    help="TmuConfig.memory_ports of the DAE run (1..8; default 2)")
    ap.add_argument("--max-inflight", type=int, default=None, metavar="N",
                    help="TmuConfig.max_inflight of the DAE run: memory lines (64 bytes each) the "
                         "access unit keeps in flight, its reorder-buffer entries; a power of two "
                         ">= 2 (default 512); the run-ahead engines' depth follows it "
                         "(TmuConfig.with_max_inflight: 16 loads each at 128 lines)")
    ap.add_argument("--tokens-per-cycle", type=int, default=None,
                    help="64-bit tokens the DAE side's core pops per cycle (CoreCostModel; "
                         "default 8 = one 512-bit vector; 16 = two 512-bit loads per cycle, "
                         "as Golden Cove / Sapphire Rapids' L1D serves with AVX-512)")
    ap.add_argument("--no-promote", action="store_true",
                    help="no scalar replacement in the core-only baseline's trace: a value stored "
                         "and loaded again is store-to-load forwarded (the baseline before "
                         "2026-11-27; the execute side's trace keeps it)")
    ap.add_argument("--no-fit", action="store_true",
                    help="skip the execute side on the out-of-order core and the coupled run at "
                         "its fitted rate")
    ap.add_argument("--no-replay", action="store_true",
                    help="skip the coupled run with the execute side replayed callback by callback")
    ap.add_argument("--out", default=str(REPO / "build" / "bench_core_only.csv"))
    a = ap.parse_args(argv)
    unknown = [n for n in a.workloads if n not in BENCH_WORKLOADS]
    if unknown:
        ap.error(f"--workloads must name workloads of sw.workloads ({', '.join(BENCH_WORKLOADS)}), "
                 f"not {unknown[0]!r}")
    if min(a.mshrs) < 1:
        ap.error(f"--mshrs must be positive, not {min(a.mshrs)}")
    if a.level not in (0, 1, 2, 3):
        ap.error(f"--level must be in 0..3, not {a.level}")
    if a.vector_bytes < 0:
        ap.error(f"--vector-bytes must be >= 0, not {a.vector_bytes}")
    if a.clock_ratio < 1:
        ap.error(f"--clock-ratio must be >= 1, not {a.clock_ratio}")
    if not a.no_rtl:             # read by the DAE runs, after the core-only model's runs
        try:
            from sw.runtime.isa import Limits
            Limits.from_file(a.config)
        except (OSError, ValueError) as e:
            ap.error(f"--config: {e}")
    try:
        from hw.tmu import TmuConfig
        from sw.runtime.execute import CoreCostModel
        unit = TmuConfig(**{k: v for k, v in (("output_tokens", a.output_tokens),
                                              ("memory_ports", a.memory_ports)) if v is not None})
        if a.tokens_per_cycle is not None:
            CoreCostModel(tokens_per_cycle=a.tokens_per_cycle)
    except ValueError as e:
        ap.error(str(e))
    if a.max_inflight is not None:
        try:
            unit.with_max_inflight(a.max_inflight)
        except ValueError as e:
            ap.error(f"--max-inflight {a.max_inflight}: {e}")
    if a.no_rtl:                 # options read only by the DAE runs, which --no-rtl skips
        unused = [flag for flag, given in (
            ("--level", a.level != ap.get_default("level")),
            ("--config", Path(a.config).resolve() != Path(ap.get_default("config")).resolve()),
            ("--output-tokens", a.output_tokens is not None),
            ("--memory-ports", a.memory_ports is not None),
            ("--max-inflight", a.max_inflight is not None),
            ("--tokens-per-cycle", a.tokens_per_cycle is not None)) if given]
        if unused:
            ap.error(f"{', '.join(unused)} {'has' if len(unused) == 1 else 'have'} no effect with "
                     f"--no-rtl (read only by the DAE side's RTL runs, which --no-rtl skips)")
    warnings.simplefilter("ignore", UserWarning)
    promote = not a.no_promote
    rows = core_only_rows(a.workloads, a.size, a.memory, a.mshrs, vector_bytes=a.vector_bytes,
                          clock_ratio=a.clock_ratio, promote=promote)
    if not a.no_rtl:
        dae = dae_rows(a.workloads, a.size, a.memory, a.level, a.config,
                       output_tokens=a.output_tokens, memory_ports=a.memory_ports,
                       max_inflight=a.max_inflight, tokens_per_cycle=a.tokens_per_cycle,
                       clock_ratio=a.clock_ratio)
        for r in rows:
            d = dae[r["workload"]]
            r.update(dae_level=a.level, **{k: d[k] for k in ("dae_output_tokens", "dae_memory_ports",
                                                            "dae_max_inflight")})
            if d.get("error"):
                r["error"] = d["error"]
                continue
            r.update(dae_access_cycles=d["rtl_cycles"], dae_core_cycles=d["core_cycles"],
                     dae_cycles=d["dae_cycles"], speedup=r["core_only_cycles"] / d["dae_cycles"])
        common = dict(output_tokens=a.output_tokens, memory_ports=a.memory_ports,
                      max_inflight=a.max_inflight, tokens_per_cycle=a.tokens_per_cycle,
                      clock_ratio=a.clock_ratio)
        if not a.no_fit:
            _merge(rows, dae_rows(a.workloads, a.size, a.memory, a.level, a.config, fit=True,
                                  **common),
                   lambda r, d: dict(execute_ooo_cycles=d.get("execute_ooo_cycles"),
                                     fitted_cycles_per_control=d.get("fitted_cycles_per_control"),
                                     execute_fit_cycles=d["core_cycles"],
                                     dae_fitted_access_cycles=d["rtl_cycles"],
                                     dae_fitted_cycles=d["dae_cycles"],
                                     speedup_fitted=r["core_only_cycles"] / d["dae_cycles"]))
        if not a.no_replay:
            _merge(rows, dae_rows(a.workloads, a.size, a.memory, a.level, a.config, replay=True,
                                  **common),
                   lambda r, d: dict(execute_ooo_cycles=d.get("execute_ooo_cycles"),
                                     execute_replay_cycles=d["core_cycles"],
                                     dae_replay_access_cycles=d["rtl_cycles"],
                                     dae_replay_cycles=d["dae_cycles"],
                                     speedup_replay=r["core_only_cycles"] / d["dae_cycles"]))
    out = Path(a.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    with out.open("w", newline="") as f:
        wr = csv.DictWriter(f, fieldnames=FIELDS)
        wr.writeheader()
        for r in rows:
            wr.writerow({k: r.get(k) for k in FIELDS})

    print(f"{a.size} inputs, memory {a.memory}, DAE at -O{a.level}"
          + (" (not run)" if a.no_rtl else
             f" (output_tokens {a.output_tokens or 'default'}, memory_ports "
             f"{a.memory_ports or 'default'}"
             + (f", max_inflight {a.max_inflight}" if a.max_inflight is not None else "")
             + f", core tokens/cycle {a.tokens_per_cycle or 8})")
          + f", core clock {a.clock_ratio}x the memory's")
    print("| workload | caches | " + " | ".join(f"core-only M={m}" for m in a.mshrs)
          + " | DAE access | DAE core | DAE | " + " | ".join(f"speedup M={m}" for m in a.mshrs)
          + " | execute side (OoO) | fitted cycles/callback | DAE (fitted) | "
          + " | ".join(f"speedup (fitted) M={m}" for m in a.mshrs)
          + " | DAE (replay) | " + " | ".join(f"speedup (replay) M={m}" for m in a.mshrs) + " |")
    print("|---" * (4 + 2 * len(a.mshrs) + 1 + 3 + len(a.mshrs) + 1 + len(a.mshrs)) + "|")
    by = {(r["workload"], r["caches"], r["mshrs"]): r for r in rows}
    for name in a.workloads:
        for caches in CACHES:
            rs = [by[(name, caches, m)] for m in a.mshrs]
            d = rs[0]
            cell = lambda v, f: "-" if v is None else format(v, f)  # noqa: E731
            print(f"| {name} | {caches} | " + " | ".join(f"{r['core_only_cycles']:,}" for r in rs)
                  + f" | {cell(d.get('dae_access_cycles'), ',')} | {cell(d.get('dae_core_cycles'), ',')}"
                  f" | {cell(d.get('dae_cycles'), ',')} | "
                  + " | ".join(cell(r.get("speedup"), ".2f") for r in rs)
                  + f" | {cell(d.get('execute_ooo_cycles'), ',')} | {cell(d.get('fitted_cycles_per_control'), 'd')}"
                  f" | {cell(d.get('dae_fitted_cycles'), ',')} | "
                  + " | ".join(cell(r.get("speedup_fitted"), ".2f") for r in rs)
                  + f" | {cell(d.get('dae_replay_cycles'), ',')} | "
                  + " | ".join(cell(r.get("speedup_replay"), ".2f") for r in rs) + " |")
    if not a.no_rtl:
        print("\nspeedup (core-only / DAE), geometric mean per class:")
        classes = sorted({r["class"] for r in rows})
        for caches in CACHES:
            for m in a.mshrs:
                parts = []
                for cls in classes:
                    g = geomean([r["speedup"] for r in rows if r["class"] == cls and r["caches"] == caches
                                 and r["mshrs"] == m and r.get("speedup")])
                    gf = geomean([r["speedup_fitted"] for r in rows if r["class"] == cls
                                  and r["caches"] == caches and r["mshrs"] == m
                                  and r.get("speedup_fitted")])
                    gr = geomean([r["speedup_replay"] for r in rows if r["class"] == cls
                                  and r["caches"] == caches and r["mshrs"] == m
                                  and r.get("speedup_replay")])
                    parts.append((f"{cls} {g:.2f}" if g else f"{cls} -")
                                 + (f" (fitted {gf:.2f})" if gf else "")
                                 + (f" (replay {gr:.2f})" if gr else ""))
                print(f"  {caches:6s} M={m:<3d} " + ", ".join(parts))
    print(f"wrote {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
