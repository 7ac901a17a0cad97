"""Compiled ÷ hand-written: cycles of the compiler's -O0..-O3 kernels against the hand-written access programs.

For every workload of ``sw/workloads.py`` the hand-written kernel
(``sw.runtime.handwritten.suite``) and the compiled kernels at the given levels
(``scripts/bench_compiler.py``'s ``measure``) run on the same input, on the golden model (results
checked against PyTorch and the sequential references, ``Workload.check``) and on the RTL under
Verilator (all jobs of one kind in one simulator process; tokens compared one by one with the
golden model, results checked again; the C++ harness, ``engine="cpp"``, like
``bench_compiler``). On an HBM preset every run starts at the same refresh phase and bank state:
``hw.system.System`` pulses the memory's ``refresh_restart`` with START (``docs/hbm_model.md`` §2
"Refresh restart"), so a compiled and a hand-written program see their refreshes at the same
cycles of their runs, whatever ran before them. Per workload it reports the access-unit cycles (RTL,
START to done) and the DAE cycles ``max(access, core)`` (``CoreCostModel``) of each, and

    compiled / hand-written = hand-written cycles / compiled cycles   (in %, Ember's Fig. 16 measure:
                                                                     100 % = as fast as hand-written)

Ember (arXiv 2504.09870, Fig. 16) reports 95.2-100 %, mean 98.1 %, at -O3.

Writes ``build/bench_handwritten.csv`` (``--out``).

    python scripts/bench_handwritten.py [--size small|full] [--levels 0 1 2 3]
                                        [--memory simple|HBM2|HBM3] [--workloads NAME ...]
"""

from __future__ import annotations

import argparse
import csv
import sys
import warnings
from pathlib import Path
from typing import Sequence

REPO = Path(__file__).resolve().parents[1]
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "scripts"))

from bench_compiler import MEMORIES, geomean, measure, rtl_config_for  # noqa: E402
from sw.runtime.drivers import AccessRun, ReplayTransport, run_kernel  # noqa: E402
from sw.runtime.execute import CoreCostModel  # noqa: E402
from sw.runtime.handwritten.suite import HANDWRITTEN, handwritten_kernel  # noqa: E402
from sw.runtime.image import bind_arguments, build_image  # noqa: E402
from sw.runtime.isa import Limits  # noqa: E402
from sw.workloads import WORKLOADS  # noqa: E402

EMBER_FIG16 = "Ember Fig. 16: compiled -O3 / hand-written = 95.2..100 %, mean 98.1 %"

#: CSV columns: one row per workload and program (``level`` -1 = hand-written); ``*_pct`` =
#: hand-written cycles / this program's cycles, in percent.
FIELDS = ["workload", "level", "data_tokens", "control_tokens", "core_cycles", "rtl_cycles",
          "dae_cycles", "rtl_pct", "dae_pct", "memory", "error"]


def _copy(args):
    return [a.copy() if hasattr(a, "copy") else a for a in args]


def measure_handwritten(workloads: Sequence[str], size: str, limits: Limits, *, memory: str = "simple",
                        cost: CoreCostModel | None = None) -> list[dict]:
    """Run the hand-written kernel of each workload on the golden model and the RTL; one dict per
    workload (``level`` -1), keys ``FIELDS``.

    Raises
    ------
    AssertionError
        Results differ from the workload's references, or RTL tokens from the golden model's.
    """
    from sim.system import RtlJob, run_many_on_rtl
    cost = cost or CoreCostModel()
    rows, pending = [], []
    for name in workloads:
        w, kernel = WORKLOADS[name], handwritten_kernel(name)
        args = w.make(size, 0)
        r = run_kernel(kernel, _copy(args), "golden", limits=limits, cost=cost)
        w.check(_copy(args), r.results)
        row = dict(workload=name, level=-1, data_tokens=len(r.access.data_tokens),
                   control_tokens=len(r.access.control_tokens), core_cycles=r.execute.core_cycles,
                   memory=memory, error="")
        rows.append(row)
        run_args = _copy(args)
        image = build_image(kernel, run_args)
        pending.append((row, w, kernel, args, r.access,
                        RtlJob(kernel.program.encode(), image.data, bind_arguments(kernel, run_args, image))))
    results = run_many_on_rtl([p[-1] for p in pending], config=rtl_config_for(limits), memory=memory,
                              engine="cpp")
    for (row, w, kernel, args, gold, _), rr in zip(pending, results):
        if rr.fault_code:
            row["error"] = f"RTL fault {rr.fault_code} at {rr.fault_addr:#x}"
            continue
        assert rr.data_tokens == gold.data_tokens and rr.control_tokens == gold.control_tokens, \
            f"{row['workload']} hand-written: RTL tokens differ from the golden model's"
        res = run_kernel(kernel, _copy(args), ReplayTransport(kernel.program.encode(), AccessRun.from_rtl(rr)),
                         cost=cost)
        w.check(_copy(args), res.results)
        row.update(rtl_cycles=rr.cycles, dae_cycles=max(rr.cycles, res.execute.core_cycles))
    return rows


def compare(hand: Sequence[dict], compiled: Sequence[dict]) -> list[dict]:
    """Hand-written and compiled rows together, each with ``rtl_pct``/``dae_pct`` = hand-written
    cycles / its cycles (percent; the hand-written row is 100)."""
    by_name = {h["workload"]: h for h in hand}
    out = []
    for name, h in by_name.items():
        for r in [h] + [c for c in compiled if c["workload"] == name]:
            r = {k: r.get(k) for k in FIELDS} | {"memory": h["memory"]}
            for key in ("rtl", "dae"):
                mine, ref = r.get(f"{key}_cycles"), h.get(f"{key}_cycles")
                r[f"{key}_pct"] = 100.0 * ref / mine if mine and ref else None
            out.append(r)
    return out


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                 epilog=__doc__.split("\n\n", 1)[1],
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--size", choices=("small", "full"), default="small",
                    help="input size of sw.workloads (default small)")
    ap.add_argument("--levels", type=int, nargs="+", default=[0, 1, 2, 3], help="-O levels (default 0..3)")
    ap.add_argument("--workloads", nargs="+", default=list(HANDWRITTEN), metavar="NAME",
                    help=f"workloads (default all: {' '.join(HANDWRITTEN)})")
    ap.add_argument("--memory", choices=MEMORIES, default="simple",
                    help="memory model behind the RTL (default simple; HBM2/HBM3 builds take minutes)")
    ap.add_argument("--out", default=str(REPO / "build" / "bench_handwritten.csv"), help="CSV file")
    a = ap.parse_args(argv)
    bad = [lv for lv in a.levels if lv not in (0, 1, 2, 3)]
    if bad:
        ap.error(f"--levels must be in 0..3, not {bad[0]}")
    unknown = [n for n in a.workloads if n not in HANDWRITTEN]
    if unknown:
        ap.error(f"--workloads must name workloads with a hand-written kernel ({', '.join(HANDWRITTEN)}), "
                 f"not {unknown[0]!r}")
    limits = Limits.from_file(REPO / "configs" / "tmu_rtl.json")
    warnings.simplefilter("ignore", UserWarning)
    hand = measure_handwritten(a.workloads, a.size, limits, memory=a.memory)
    compiled = measure(a.workloads, sorted(set(a.levels)), a.size, limits, rtl=True, memory=a.memory)
    rows = compare(hand, compiled)

    out = Path(a.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    with out.open("w", newline="") as f:
        wr = csv.DictWriter(f, fieldnames=FIELDS)
        wr.writeheader()
        wr.writerows(rows)

    print(f"{a.size} inputs, tmu_rtl, RTL memory {a.memory}; % = hand-written cycles / cycles"
          + ("" if a.memory == "simple" else "; every run starts at the same refresh phase (refresh_restart)"))
    print(f"{'workload':14s} {'prog':>5s} {'data':>8s} {'ctrl':>6s} {'RTL cyc':>9s} {'RTL %':>6s} "
          f"{'DAE cyc':>9s} {'DAE %':>6s}")
    for r in rows:
        prog = "hand" if r["level"] == -1 else f"-O{r['level']}"
        if r["error"]:
            print(f"{r['workload']:14s} {prog:>5s}  {r['error']}")
            continue
        f = lambda v, s: "-" if v is None else format(v, s)  # noqa: E731
        print(f"{r['workload']:14s} {prog:>5s} {r['data_tokens']:>8,d} {r['control_tokens']:>6,d} "
              f"{f(r['rtl_cycles'], ',d'):>9s} {f(r['rtl_pct'], '.1f'):>6s} "
              f"{f(r['dae_cycles'], ',d'):>9s} {f(r['dae_pct'], '.1f'):>6s}")
    for level in sorted(set(a.levels)):
        for key in ("rtl", "dae"):
            p = [r[f"{key}_pct"] for r in rows if r["level"] == level and r.get(f"{key}_pct")]
            if p:
                print(f"-O{level} {key.upper()}: {min(p):.1f} .. {max(p):.1f} %, mean {sum(p) / len(p):.1f} %, "
                      f"geomean {geomean(p):.1f} % over {len(p)} workloads")
    print(EMBER_FIG16)
    print(f"wrote {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
