#!/usr/bin/env python3
"""Compiler benchmark: every workload of ``sw.workloads`` at every -O level, golden model and RTL.

Each workload is compiled at each level for one TMU configuration (``--config``, default
``configs/tmu_rtl.json``: the RTL's default build, ISA v0 + v1 with 8 lanes), run on the golden
model and checked against PyTorch (``Workload.check``). Per workload and level it reports:

* access-program size: descriptors = layers + regions + streams + actions (the instructions of
  ``docs/isa.md``), and the TMU resources used (layers / streams / actions);
* data and control tokens per lookup (a lookup is one gathered element, ``Workload.lookups``) and
  their reduction over -O0, ``tokens(-O0) / tokens(-On)`` (the execute side pops one 64-bit token
  per operand word and dispatches one callback per control token);
* core cycles: ``sw.runtime.execute.CoreCostModel`` over the token stream, i.e. per callback
  ``dispatch + per_callback + ceil(operands / tokens_per_cycle)`` (2 + 4 cycles, and one cycle
  per 8 operands: a 512-bit vector of operands per cycle);
* with ``--rtl``: access-unit cycles from START to done on the RTL under Verilator (all jobs in one
  simulator process, ``sim.system.run_many_on_rtl``; tokens compared one by one with the golden
  model, results with PyTorch), bytes loaded per cycle, the unit's own counters (blocking-load
  waits, uops, ...), its output bound (``rtl_output_bound_cycles``: the data tokens at the
  build's ``output_tokens`` per cycle) and the cycles over it, and the decoupled access-execute estimate
  ``DAE = max(access cycles, core cycles)`` — the two sides overlap through the output queues, so
  the slower one sets the time. Ember's Fig. 13 cycles include the core, so the DAE column is the
  one to compare with it.

Speedups are over -O0 of the same workload; geometric means are over the workloads that ran at
both levels. A kernel that does not fit the configuration gets a row with the compiler's
``CompileError`` message (the resource and how many are needed); an RTL fault gets a row with
the fault. Ember (arXiv 2504.09870, Fig. 13) reports 6.5x-21x from -O0 to -O3, geometric mean
about 11x, in cycles of its simulated TMU + core.

Writes ``build/bench_compiler.csv`` (``--out``). Compile times are wall clock, informative only.

    python scripts/bench_compiler.py [--size small|full] [--levels 0 1 2 3] [--rtl]
                                     [--memory simple|HBM2|HBM3] [--config FILE]
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
from typing import Sequence

REPO = Path(__file__).resolve().parents[1]
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))

from sw.compiler import CompileError  # noqa: E402
from sw.compiler.pipelines import run_pipeline  # noqa: E402
from sw.runtime.drivers import AccessRun, ReplayTransport, run_kernel  # noqa: E402
from sw.runtime.execute import CoreCostModel  # noqa: E402
from sw.runtime.golden import AccessFault  # noqa: E402
from sw.runtime.image import bind_arguments, build_image  # noqa: E402
from sw.runtime.isa import Limits  # noqa: E402
from sw.workloads import BENCH_WORKLOADS, WORKLOADS  # noqa: E402

EMBER_FIG13 = "Ember Fig. 13: -O3 over -O0 = 6.5x..21x, geomean ~11x (cycles, simulated TMU + core)"
MEMORIES = ("simple", "HBM2", "HBM3")

#: CSV columns, in order. Counts are per run; ``*_per_lookup`` per gathered element; cycles are
#: clock cycles of the access unit (``rtl_cycles``), of the core model (``core_cycles``) and
#: their maximum (``dae_cycles``); ``*_speedup`` = value at -O0 / value at this level. ``rtl_*``
#: counters are the unit's (docs/rtl.md §2.7): loads issued, cycles the traversal waited for a
#: blocking load, cycles an action waited for a reorder-buffer entry, the microcode entries the
#: traversal completed (``rtl_uops``, at most one per cycle after the ``rtl_decode_cycles``), the
#: cycles its fetch stage held no uop (``rtl_fetch_bubble_cycles``) and those a load request or a
#: row job it offered was not taken (``rtl_issue_wait_cycles``); data
#: tokens per cycle near 1 means the 64-bit data queue (one token per cycle) is the access
#: unit's limit. ``core_rate``:
#: ``flat`` (``cost``), ``fitted`` (``fit``: the rate fitted to ``execute_ooo_cycles``, the
#: execute side on the core-only baseline's core) or ``replay`` (``replay``: that run's callbacks
#: replayed at their own pace, ``sw.runtime.execute.CoreReplay``).
FIELDS = ["workload", "level", "isa", "descriptors", "layers", "streams", "actions", "lookups",
          "data_tokens", "control_tokens", "data_per_lookup", "control_per_lookup",
          "token_speedup", "core_cycles", "core_speedup", "rtl_cycles", "rtl_speedup",
          "rtl_bytes_per_cycle", "rtl_data_tokens_per_cycle", "rtl_loads", "rtl_block_wait_cycles",
          "rtl_rob_full_cycles", "rtl_uops", "rtl_decode_cycles", "rtl_fetch_bubble_cycles",
          "rtl_issue_wait_cycles", "rtl_output_bound_cycles", "rtl_over_output_bound",
          "dae_cycles", "dae_speedup",
          "dae_estimate", "core_starved_cycles",
          "rtl_out_stall_cycles", "core_rate", "execute_ooo_cycles", "fitted_cycles_per_control",
          "memory", "config", "compile_ms", "error"]


def _copy(args):
    return [a.copy() if hasattr(a, "copy") else a for a in args]


def rtl_config_for(limits: Limits):
    """The RTL build (``hw.tmu.TmuConfig``) whose resources and ISA support are ``limits``.

    ``configs/tmu_rtl.json`` gives ``TmuConfig()``, the default build (cached in
    ``build/rtl``); another configuration means another Verilator build (35 s or more).

    Raises
    ------
    ValueError
        ``limits`` cannot be built as RTL (e.g. ``streams_per_layer`` set: the RTL's stream
        slots are one pool), naming the field.
    """
    from hw.tmu import TmuConfig
    cfg = TmuConfig(layers=limits.layers, regions=limits.regions, streams=limits.streams,
                    actions=limits.actions, args=limits.args, versions=tuple(limits.versions),
                    features=tuple(sorted(f.value for f in limits.features)), lanes=limits.lanes,
                    max_block=limits.max_block)
    want = {k: v for k, v in limits.to_dict().items() if k != "name"}
    got = {k: v for k, v in Limits.from_tmu_config(cfg).to_dict().items() if k != "name"}
    diff = sorted(k for k in want if want[k] != got[k])
    if diff:
        raise ValueError(f"config {limits.name!r} cannot be built as RTL: "
                         + ", ".join(f"{k} must be {got[k]!r}, not {want[k]!r}" for k in diff))
    return cfg


def _ratio(base, value):
    return base / value if base and value else None


def geomean(values: Sequence[float]) -> float:
    """Geometric mean of positive numbers.

    Raises
    ------
    ValueError
        ``values`` is empty or holds a value <= 0.
    """
    if not values or min(values) <= 0:
        raise ValueError(f"values must be a non-empty sequence of positive numbers, not {values!r}")
    return math.exp(sum(math.log(v) for v in values) / len(values))


def fitted_cost(workload, dlc, args, tokens, pops, memory: str, cost: CoreCostModel, *,
                clock_ratio: int = 1, replay: bool = False):
    """The execute side on the core-only baseline's core and the coupled core made from it
    (``sw.runtime.coupled_core.core_from_execute_side``: ``CoreConfig`` with ``clock_ratio``,
    memory preset ``memory``, ``cost``'s tokens per cycle and buffer); the run's results are
    checked with ``workload.check``. Returns ``(cycles, core)``: the run's memory cycles and
    ``CoreCostModel.fitted(pops, cycles, ...)``, or with ``replay`` the run replayed callback by
    callback (``CoreReplay``)."""
    from sim.core_only import CoreConfig
    from sw.runtime.coupled_core import core_from_execute_side
    made = core_from_execute_side(dlc, args, tokens.data_tokens, tokens.control_tokens, pops,
                                  memory, mode="replay" if replay else "fitted",
                                  core=CoreConfig(clock_ratio=clock_ratio),
                                  tokens_per_cycle=cost.tokens_per_cycle,
                                  buffer_beats=cost.buffer_beats)
    workload.check(_copy(args), list(made.results))
    return made.execute_cycles, made.cost


def measure(workloads: Sequence[str], levels: Sequence[int], size: str, limits: Limits, *,
            rtl: bool = False, memory: str = "simple", cost: CoreCostModel | None = None,
            coupled: bool = False, config_changes: dict | None = None, fit: bool = False,
            clock_ratio: int = 1, replay: bool = False) -> list[dict]:
    """Compile, run and measure ``workloads`` × ``levels``; one dict per row, keys ``FIELDS``.

    ``config_changes`` (e.g. ``{"output_tokens": 16, "memory_ports": 8}``) replaces fields of the
    RTL build ``rtl_config_for(limits)`` that the compiler does not see (widths, ports).

    Every run's results are checked against PyTorch (``AssertionError`` on a mismatch); RTL
    tokens must equal the golden model's (``AssertionError``). A ``CompileError``, an RTL fault
    or a golden-model fault becomes the row's ``error`` instead.

    With ``coupled`` the RTL runs drive a simulated core (``sim/harness.cpp`` ``CoreModel`` at
    ``cost``'s rate, fed the execute side's schedule): ``dae_cycles`` is when that core popped
    DONE, ``dae_estimate`` the cross-check ``max(access, core)`` with the free-running access
    cycles unknown (the run is coupled: ``rtl_cycles`` then includes the core's back-pressure).
    Without it ``dae_cycles`` is ``max(rtl_cycles, core_cycles)``.

    With ``fit`` each kernel's core runs at the rate fitted to its execute side on the
    core-only baseline's core (:func:`fitted_cost`, ``clock_ratio`` core cycles per memory
    cycle; ``cost`` gives the tokens per cycle); with ``replay`` it replays that run callback by
    callback (``sw.runtime.execute.CoreReplay``) instead.
    """
    cost = cost or CoreCostModel()
    rows, pending = [], []      # pending: (row, workload, kernel, args, golden AccessRun, cost, job)
    for name in workloads:
        w = BENCH_WORKLOADS[name]
        text = w.path.read_text()
        args = w.make(size, 0)
        lookups = w.lookups(args)
        for level in levels:
            row = dict(workload=name, level=level, lookups=lookups, config=limits.name,
                       memory=memory if rtl else "", error="")
            rows.append(row)
            t0 = time.perf_counter()
            try:
                comp = run_pipeline(text, filename=w.example, limits=limits, opt_level=level)
            except CompileError as e:
                row["error"] = f"does not compile for {limits.name}: {e.message}"
                continue
            kernel = comp.kernel
            row["compile_ms"] = round(1000 * (time.perf_counter() - t0), 1)
            p = kernel.program
            row.update(isa=p.version, descriptors=len(p.layers) + len(p.regions) + len(p.streams)
                       + len(p.actions), layers=len(p.layers), streams=len(p.streams),
                       actions=len(p.actions))
            try:
                r = run_kernel(kernel, _copy(args), "golden", limits=limits, cost=cost)
            except AccessFault as e:
                row["error"] = f"golden model: {e}"
                continue
            w.check(_copy(args), r.results)
            nd, nc = len(r.access.data_tokens), len(r.access.control_tokens)
            row_cost, row["core_rate"] = cost, "flat"
            pops = r.execute.pops_per_control[:-1]            # DONE last, with 0
            if replay:
                ooo, row_cost = fitted_cost(w, comp.dlc, args, r.access, pops, memory, cost,
                                            clock_ratio=clock_ratio, replay=True)
                row.update(core_rate="replay", execute_ooo_cycles=ooo)
            elif fit:
                ooo, row_cost = fitted_cost(w, comp.dlc, args, r.access, pops, memory, cost,
                                            clock_ratio=clock_ratio)
                row.update(core_rate="fitted", execute_ooo_cycles=ooo,
                           fitted_cycles_per_control=row_cost.cycles_per_control)
            row.update(data_tokens=nd, control_tokens=nc, data_per_lookup=nd / lookups,
                       control_per_lookup=nc / lookups, core_cycles=row_cost.cycles(pops))
            if rtl:
                from sim.system import RtlJob
                run_args = _copy(args)
                image = build_image(kernel, run_args)
                regs = bind_arguments(kernel, run_args, image)
                core = dict(core=row_cost, core_schedule=r.execute.pops_per_control) if coupled else {}
                pending.append((row, w, kernel, args, r.access, row_cost,
                                RtlJob(p.encode(), image.data, regs, **core)))
    if pending:
        from sim.system import run_many_on_rtl
        config = dataclasses.replace(rtl_config_for(limits), **(config_changes or {}))
        results = run_many_on_rtl([job for *_, job in pending], config=config,
                                  memory=memory, engine="cpp")
        for (row, w, kernel, args, gold, row_cost, _), rr in zip(pending, results):
            if rr.fault_code:
                row["error"] = f"RTL fault {rr.fault_code} at {rr.fault_addr:#x}"
                continue
            assert rr.data_tokens == gold.data_tokens and rr.control_tokens == gold.control_tokens, \
                f"{row['workload']} -O{row['level']}: RTL tokens differ from the golden model's"
            replay = ReplayTransport(kernel.program.encode(), AccessRun.from_rtl(rr))
            res = run_kernel(kernel, _copy(args), replay, cost=row_cost)
            w.check(_copy(args), res.results)
            cyc = max(rr.cycles, 1)
            # the unit's own output bound: its data tokens at config.output_tokens per cycle
            bound = max(-(-len(gold.data_tokens) // config.output_tokens), 1)
            row.update(rtl_cycles=rr.cycles, rtl_bytes_per_cycle=rr.stats["bytes_loaded"] / cyc,
                       rtl_data_tokens_per_cycle=rr.stats["data_tokens"] / cyc,
                       rtl_loads=rr.stats["loads"], rtl_block_wait_cycles=rr.stats["block_wait_cycles"],
                       rtl_rob_full_cycles=rr.stats["rob_full_cycles"],
                       rtl_uops=rr.stats["uops"], rtl_decode_cycles=rr.stats["decode_cycles"],
                       rtl_fetch_bubble_cycles=rr.stats["fetch_bubble_cycles"],
                       rtl_issue_wait_cycles=rr.stats["issue_wait_cycles"],
                       rtl_output_bound_cycles=bound, rtl_over_output_bound=rr.cycles / bound,
                       dae_cycles=max(rr.cycles, res.execute.core_cycles))
            if coupled:
                if rr.core is None or rr.core.schedule_mismatch or not rr.core.finished:
                    raise AssertionError(f"{row['workload']} -O{row['level']}: the simulated core "
                                         f"did not follow the execute side's schedule ({rr.core})")
                row.update(dae_estimate=row["dae_cycles"], dae_cycles=rr.core.finish_cycles,
                           core_starved_cycles=rr.core.starved_cycles,
                           rtl_out_stall_cycles=rr.stats["out_stall_cycles"])
    base = {r["workload"]: r for r in rows if r["level"] == 0 and not r["error"]}
    for r in rows:
        b = base.get(r["workload"])
        if r["error"] or b is None:
            continue
        r["token_speedup"] = _ratio(b["data_tokens"] + b["control_tokens"],
                                    r["data_tokens"] + r["control_tokens"])
        for key in ("core", "rtl", "dae"):
            r[f"{key}_speedup"] = _ratio(b.get(f"{key}_cycles"), r.get(f"{key}_cycles"))
    return rows


def summary(rows: Sequence[dict], levels: Sequence[int]) -> list[dict]:
    """Per level > 0 and metric (token, core, rtl, dae): min, max and geometric mean of the
    speedup over -O0 across the workloads that have it."""
    out = []
    for level in levels:
        if level == 0:
            continue
        for key in ("token", "core", "rtl", "dae"):
            sps = [r[f"{key}_speedup"] for r in rows
                   if r["level"] == level and r.get(f"{key}_speedup")]
            if sps:
                out.append(dict(level=level, metric=key, n=len(sps), min=min(sps), max=max(sps),
                                geomean=geomean(sps)))
    return out


def _fmt(value, spec, width):
    return f"{'-':>{width}s}" if value is None else f"{value:>{width}{spec}}"


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                 epilog=__doc__.split("\n\n", 1)[1],
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--size", choices=("small", "full"), default="small",
                    help="input size of sw.workloads (default small)")
    ap.add_argument("--levels", type=int, nargs="+", default=[0, 1, 2, 3],
                    help="-O levels (default 0 1 2 3; speedups need 0)")
    ap.add_argument("--workloads", nargs="+", default=list(WORKLOADS), metavar="NAME",
                    help=f"workloads (default all of the test suite's: {' '.join(WORKLOADS)}; "
                         f"also {' '.join(n for n in BENCH_WORKLOADS if n not in WORKLOADS)})")
    ap.add_argument("--config", default=str(REPO / "configs" / "tmu_rtl.json"),
                    help="TMU configuration to compile for (and build the RTL of); "
                         "default configs/tmu_rtl.json")
    ap.add_argument("--coupled", action="store_true",
                    help="with --rtl: the RTL runs drive the simulated core (DAE cycles simulated, "
                         "not max(access, core))")
    ap.add_argument("--rtl", action="store_true",
                    help="also run every workload x level on the RTL (Verilator) for cycles")
    ap.add_argument("--fit", action="store_true",
                    help="the core's rate per kernel fitted to its execute side run on the "
                         "core-only baseline's out-of-order core (sim.execute_trace), instead "
                         "of the flat 6 cycles per callback")
    ap.add_argument("--replay", action="store_true",
                    help="each kernel's core replays its execute side run on the core-only "
                         "baseline's out-of-order core, callback by callback "
                         "(sw.runtime.execute.CoreReplay), instead of a flat rate")
    ap.add_argument("--memory", choices=MEMORIES, default="simple",
                    help="memory model behind the RTL (default simple = fixed 32-cycle latency; "
                         "HBM2/HBM3 = docs/hbm_model.md presets, builds take minutes)")
    ap.add_argument("--out", default=str(REPO / "build" / "bench_compiler.csv"), help="CSV file")
    a = ap.parse_args(argv)
    bad = [lv for lv in a.levels if lv not in (0, 1, 2, 3)]
    if bad:
        ap.error(f"--levels must be in 0..3, not {bad[0]}")
    unknown = [n for n in a.workloads if n not in BENCH_WORKLOADS]
    if unknown:
        ap.error(f"--workloads must name workloads of sw.workloads ({', '.join(BENCH_WORKLOADS)}), "
                 f"not {unknown[0]!r}")
    if a.memory != "simple" and not a.rtl:
        ap.error(f"--memory {a.memory} needs --rtl")
    if a.fit and a.replay:
        ap.error("--fit and --replay are two models of the core: give one")
    levels = sorted(set(a.levels))
    try:
        limits = Limits.from_file(a.config)
        if a.rtl:
            rtl_config_for(limits)
    except (OSError, ValueError) as e:
        ap.error(f"--config: {e}")
    warnings.simplefilter("ignore", UserWarning)
    rows = measure(a.workloads, levels, a.size, limits, rtl=a.rtl, memory=a.memory,
                   coupled=a.coupled, fit=a.fit, replay=a.replay)

    out = Path(a.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    with out.open("w", newline="") as f:
        wr = csv.DictWriter(f, fieldnames=FIELDS)
        wr.writeheader()
        for r in rows:
            wr.writerow({k: r.get(k) for k in FIELDS})

    print(f"{a.size} inputs, {limits.name}" + (f", RTL memory {a.memory}" if a.rtl else ""))
    print(f"{'workload':14s} {'-O':>2s} {'desc':>4s} {'L/S/A':>8s} {'data/lk':>7s} {'ctrl/lk':>7s} "
          f"{'tok x':>6s} {'core cyc':>9s} {'RTL cyc':>9s} {'RTL x':>6s} {'B/cyc':>5s} "
          f"{'DAE cyc':>9s} {'DAE x':>6s}")
    for r in rows:
        if r["error"]:
            print(f"{r['workload']:14s} {r['level']:>2d}  {r['error']}")
            continue
        print(f"{r['workload']:14s} {r['level']:>2d} {r['descriptors']:>4d} "
              f"{r['layers']:>2d}/{r['streams']:>2d}/{r['actions']:>2d} "
              f"{r['data_per_lookup']:>7.3f} {r['control_per_lookup']:>7.3f} "
              f"{_fmt(r.get('token_speedup'), '.2f', 6)} {r['core_cycles']:>9,d} "
              f"{_fmt(r.get('rtl_cycles'), ',d', 9)} {_fmt(r.get('rtl_speedup'), '.2f', 6)} "
              f"{_fmt(r.get('rtl_bytes_per_cycle'), '.2f', 5)} "
              f"{_fmt(r.get('rtl_data_tokens_per_cycle'), '.2f', 5)} {_fmt(r.get('dae_cycles'), ',d', 9)} "
              f"{_fmt(r.get('dae_speedup'), '.2f', 6)}")
    names = dict(token="tokens", core="core cycles", rtl="RTL access cycles",
                 dae="DAE max(access, core)")
    for s in summary(rows, levels):
        print(f"-O{s['level']} over -O0, {names[s['metric']]:22s}: {s['min']:.2f}x .. "
              f"{s['max']:.2f}x, geomean {s['geomean']:.2f}x over {s['n']} workloads")
    print(EMBER_FIG13)
    print(f"wrote {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
