#!/usr/bin/env python3
"""Compare the HBM2 reference model with DRAMSim3's HBM2 model on identical request traces.

Issue 3 asks that ``ember hbm-trace ... --preset HBM2`` land near DRAMSim3's HBM2 model on
sequential, uniformly random and embedding-gather traces. This script

1. writes the traces in DRAMSim3's trace format (one request per line:
   ``0x<hex byte address> READ|WRITE <issue cycle>``, each a 64-byte access):

   * ``seq_read``    -- reads of consecutive 64-byte blocks from address 0;
   * ``rand_read``   -- reads of 64-byte blocks drawn uniformly from [0, 8 GiB)
     (``numpy.random.default_rng(seed)``);
   * ``gather_d16``  -- the embedding gather of Cora (``sw.runtime.datasets.load_cora``): for each
     node in order, the rows of its CSR neighbours in a float32 table of dim 16 (64 B per row,
     row ``j`` at byte ``64 j``) -- one access per neighbour;
   * ``gather_d64``  -- the same with dim 64 (256 B per row at ``256 j``: four consecutive
     64-byte accesses per neighbour);
   * ``mix_2r1w``    -- ``rand_read``'s addresses, every third request a WRITE;

   each in two variants: ``burst`` (all issue cycles 0: offered as fast as accepted) and
   ``paced`` (request ``i`` issued at ``i * gap`` cycles, ``--gap``; light load, so latencies are
   close to the unloaded ones);
2. runs DRAMSim3 (``dramsim3main CONFIG -c CYCLES -t TRACE -o DIR``; its ``TraceBasedCPU``
   offers at most one transaction per cycle, in trace order, once its issue cycle is reached) and
   the reference model (:func:`hw.hbm_model.reference.run_requests` with preset ``HBM2`` and
   ``ports=1``: at most one request accepted per cycle, in trace order -- the engine behind
   ``ember hbm-trace --model reference``);
   plus, for the ``burst`` variant, a diagnostic ``ref-4resp`` row: the same addresses offered
   one per cycle (issue cycle ``i``) to the reference with ``ports=4``, which removes the single
   response port (one 64-byte response per cycle = 64 GB/s) that otherwise runs at 100 % load
   when requests arrive one per cycle (``--no-diag`` omits it);
3. prints a side-by-side table and writes ``build/compare_dramsim3.csv``.

Measured quantities (both simulators run at tCK = 1 ns, so cycles are ns):

* ``cycles``: from cycle 0 to the completion of the last request. Reference: last response
  transfer + 1. DRAMSim3 reports only per-epoch counters, so the script runs it with
  ``epoch_period = --epoch`` (a copy of the config; an output-only setting) and takes the end of
  the first epoch by which every read has been returned and every write command issued to the
  DRAM -- an upper bound, at most ``--epoch`` cycles late;
* ``GB/s`` = requests x 64 B / cycles; ``% peak`` of 256 GB/s (8 channels x 128 bit x 2 Gb/s);
* read latency (ns): DRAMSim3 from ``AddTransaction`` (the cycle after the CPU offered it) to the
  read callback; reference from acceptance to the response transfer (docs/hbm_model.md §2);
  mean, p50 and p99 (DRAMSim3's exact per-value latency counts from its final JSON);
* ``row-hit``: reference -- hits / classified requests (docs/hbm_model.md §2 Classification);
  DRAMSim3 -- column commands issued to a bank that already served a column command since its
  ACT (``num_read_row_hits + num_write_row_hits`` over ``num_read_cmds + num_write_cmds``);
* ``ACT/req``: activates per request, the same definition in both.

DRAMSim3 quirk, not corrected: its TraceBasedCPU reads one record past the end of a trace that
ends with a newline and issues it as a READ of address 0 at the last cycle; that one extra read
is in DRAMSim3's read count and latency figures (1 in ``--requests``).

Usage::

    python scripts/compare_dramsim3.py --dramsim3 /work/ext/dramsim3/build/dramsim3main \\
        [--config PATH] [--requests N] [--gap G] [--epoch E] [--out build/compare_dramsim3.csv]

Without a usable ``--dramsim3`` the script prints why and exits with status 0 (DRAMSim3 is not
part of this repository; scripts/fetch_dramsim3.md tells how to build it).
"""

from __future__ import annotations

import argparse
import csv
import json
import os
import subprocess
import sys
import tempfile
from collections import defaultdict
from dataclasses import dataclass
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parent.parent
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))

ACCESS_BYTES = 64          # one request = one 64-byte access (BL4 x 128 bit)
PEAK_GBPS = 256.0          # HBM2 preset / DRAMSim3 HBM2_8Gb_x128: 8 ch x 16 B x 2 / 1 ns
RAND_SPAN = 8 << 30        # uniformly random traces cover the 8 GiB of HBM2_8Gb_x128


@dataclass
class Metrics:
    """One simulator's result on one trace (times in ns = cycles at tCK 1 ns)."""

    trace: str
    variant: str
    simulator: str
    requests: int
    reads: int
    writes: int
    cycles: int
    bandwidth_gbps: float
    pct_peak: float
    read_lat_mean_ns: float
    read_lat_p50_ns: float
    read_lat_p99_ns: float
    row_hit_rate: float
    act_per_req: float
    refreshes: int
    note: str = ""


# ------------------------------------------------------------------------------------ traces

def make_traces(n: int, seed: int) -> dict[str, list[tuple[int, bool]]]:
    """The (address, is_write) sequences of the module docstring, each truncated to ``n``."""
    rng = np.random.default_rng(seed)
    seq = [(i * ACCESS_BYTES, False) for i in range(n)]
    rand_addrs = (rng.integers(0, RAND_SPAN // ACCESS_BYTES, size=n, dtype=np.int64)
                  * ACCESS_BYTES).tolist()
    rand = [(a, False) for a in rand_addrs]
    mix = [(a, i % 3 == 2) for i, a in enumerate(rand_addrs)]
    from sw.runtime.datasets import load_cora
    g = load_cora()
    nbrs = np.asarray(g.indices, dtype=np.int64)      # CSR order: node 0's neighbours first
    g16 = [(int(j) * 64, False) for j in nbrs][:n]
    g64 = [(int(j) * 256 + k * 64, False) for j in nbrs for k in range(4)][:n]
    return {"seq_read": seq, "rand_read": rand, "gather_d16": g16, "gather_d64": g64,
            "mix_2r1w": mix}


def issue_cycles(n: int, variant: str, gap: int) -> list[int]:
    if variant == "burst":
        return [0] * n
    return [i * gap for i in range(n)]


def write_trace(path: Path, accesses, cycles) -> None:
    with open(path, "w") as f:
        for (a, w), c in zip(accesses, cycles):
            f.write(f"0x{a:x} {'WRITE' if w else 'READ'} {c}\n")


# ------------------------------------------------------------------------------------ DRAMSim3

def _config_with_epoch(src: Path, dst: Path, epoch: int) -> None:
    """Copy the ini with ``[other] epoch_period`` set to ``epoch`` (output setting only)."""
    out, in_other, done = [], False, False
    for line in src.read_text().splitlines():
        s = line.strip()
        if s.startswith("["):
            if in_other and not done:
                out.append(f"epoch_period = {epoch}")
                done = True
            in_other = s == "[other]"
        elif in_other and s.split("=")[0].strip() == "epoch_period":
            line, done = f"epoch_period = {epoch}", True
        out.append(line)
    if not done:
        if not in_other:
            out.append("[other]")
        out.append(f"epoch_period = {epoch}")
    dst.write_text("\n".join(out) + "\n")


def _percentile(counts: dict[int, int], q: float) -> float:
    """Smallest value v with at least q % of the samples <= v (inverted CDF, as the reference)."""
    total = sum(counts.values())
    if total == 0:
        return 0.0
    need = q / 100.0 * total
    acc = 0
    for v in sorted(counts):
        acc += counts[v]
        if acc >= need:
            return float(v)
    return float(max(counts))


def run_dramsim3(exe: Path, config: Path, name: str, variant: str, accesses, cycles_in,
                 workdir: Path, epoch: int) -> Metrics:
    n = len(accesses)
    n_w = sum(1 for _, w in accesses if w)
    n_r = n - n_w
    tdir = workdir / f"{name}_{variant}"
    tdir.mkdir(parents=True, exist_ok=True)
    trace = tdir / "trace.txt"
    write_trace(trace, accesses, cycles_in)
    cfg = tdir / "config.ini"
    _config_with_epoch(config, cfg, epoch)
    budget = max(cycles_in) + 6 * n + 20_000
    note = ""
    for _attempt in range(4):
        out = tdir / "out"
        out.mkdir(exist_ok=True)
        subprocess.run([str(exe), str(cfg), "-c", str(budget), "-t", str(trace), "-o", str(out)],
                       check=True, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
        final = json.loads((out / "dramsim3.json").read_text())
        epochs = json.loads((out / "dramsim3epoch.json").read_text())
        per_ep_r, per_ep_w, per_ep_ref = defaultdict(int), defaultdict(int), defaultdict(int)
        for o in epochs:
            per_ep_r[o["epoch_num"]] += o["num_reads_done"]
            per_ep_w[o["epoch_num"]] += o["num_write_cmds"]
            per_ep_ref[o["epoch_num"]] += o["num_ref_cmds"]
        # epoch k covers cycles [(k-1)E, kE). Reads: all returned. Writes: DRAMSim3 drains its
        # write buffer only when it is full or when no read is queued and it holds at least
        # write_buf_size (16) writes, so up to 15 writes per channel may never reach the DRAM;
        # completion = the later of the last read return and the last write command.
        t_end, cr, t_w = None, 0, 0
        for k in sorted(per_ep_r):
            cr += per_ep_r[k]
            if per_ep_w[k]:
                t_w = k * epoch
            if t_end is None and cr >= n_r:
                t_end = k * epoch
        if t_end is not None:
            t_end = max(t_end, t_w)
            refs = sum(v for k, v in per_ep_ref.items() if k * epoch <= t_end)
            break
        budget *= 2
    if t_end is None:
        note = f"not all reads completed within {budget} cycles; "
        t_end = budget
        refs = sum(per_ep_ref.values())
    ch = list(final.values())
    reads_done = sum(c["num_reads_done"] for c in ch)
    lat_counts: dict[int, int] = defaultdict(int)
    for c in ch:
        for v, k in c["read_latency"].items():
            lat_counts[int(v)] += int(k)
    lat_total = sum(lat_counts.values())
    mean = sum(v * k for v, k in lat_counts.items()) / lat_total if lat_total else 0.0
    cmds = sum(c["num_read_cmds"] + c["num_write_cmds"] for c in ch)
    hits = sum(c["num_read_row_hits"] + c["num_write_row_hits"] for c in ch)
    acts = sum(c["num_act_cmds"] for c in ch)
    w_cmds = sum(c["num_write_cmds"] for c in ch)
    if w_cmds < n_w:
        note += f"{n_w - w_cmds} writes never left the write buffer; "
    bw = n * ACCESS_BYTES / t_end
    return Metrics(name, variant, "DRAMSim3", n, reads_done, n_w, t_end, bw, 100 * bw / PEAK_GBPS,
                   mean, _percentile(lat_counts, 50), _percentile(lat_counts, 99),
                   hits / cmds if cmds else 0.0, acts / n, refs,
                   note + f"cycles: end of epoch (E={epoch})")


# ------------------------------------------------------------------------------------ reference

def run_reference(name: str, variant: str, accesses, cycles_in, ports: int = 1,
                  label: str = "reference") -> Metrics:
    from hw.hbm_model.presets import HBM2
    from hw.hbm_model.reference import Request, run_requests
    reqs = [Request(addr=a, write=w, issue_cycle=c) for (a, w), c in zip(accesses, cycles_in)]
    r = run_requests(HBM2, reqs, ports=ports)
    n = len(reqs)
    n_w = sum(1 for q in reqs if q.write)
    bw = r.bandwidth_gbps()
    return Metrics(name, variant, label, n, n - n_w, n_w, r.cycles, bw,
                   100 * r.fraction_of_peak(), r.read_latency_mean() * HBM2.unit_cycle_ns,
                   r.read_latency_percentile(50) * HBM2.unit_cycle_ns,
                   r.read_latency_percentile(99) * HBM2.unit_cycle_ns,
                   r.row_hit_rate(), r.activates_per_request(), int(r.stats["refreshes"]))


# ------------------------------------------------------------------------------------ main

def _table(rows: list[Metrics]) -> str:
    head = (f"{'trace':<11}{'variant':<7}{'simulator':<10}{'cycles':>8}{'GB/s':>8}{'%peak':>7}"
            f"{'lat mean':>9}{'p50':>6}{'p99':>6}{'row-hit':>8}{'ACT/req':>8}{'REF':>5}  d(GB/s) d(lat)")
    lines = [head, "-" * len(head)]
    for m in rows:
        d = ""
        if m.simulator != "DRAMSim3":
            o = next((x for x in rows if x.simulator == "DRAMSim3"
                      and (x.trace, x.variant) == (m.trace, m.variant)), None)
            if o is not None:
                d = (f"  {100 * (m.bandwidth_gbps / o.bandwidth_gbps - 1):+6.1f}% "
                     f"{100 * (m.read_lat_mean_ns / o.read_lat_mean_ns - 1):+6.1f}%"
                     if o.bandwidth_gbps and o.read_lat_mean_ns else "")
        lines.append(f"{m.trace:<11}{m.variant:<7}{m.simulator:<10}{m.cycles:>8}"
                     f"{m.bandwidth_gbps:>8.1f}{m.pct_peak:>6.1f}%{m.read_lat_mean_ns:>9.1f}"
                     f"{m.read_lat_p50_ns:>6.0f}{m.read_lat_p99_ns:>6.0f}{m.row_hit_rate:>8.3f}"
                     f"{m.act_per_req:>8.3f}{m.refreshes:>5}{d}")
    lines += [f"  note {m.trace} {m.variant} {m.simulator}: {m.note}" for m in rows
              if m.note and "never" in m.note]
    return "\n".join(lines)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter,
                                 epilog="See the module docstring / docs/hbm_dramsim3.md.")
    ap.add_argument("--dramsim3", type=Path, default=None,
                    help="path of DRAMSim3's dramsim3main executable (built outside the repo; "
                         "scripts/fetch_dramsim3.md)")
    ap.add_argument("--config", type=Path, default=None,
                    help="DRAMSim3 ini (default: configs/HBM2_8Gb_x128.ini next to the build dir)")
    ap.add_argument("--requests", type=int, default=20_000,
                    help="requests per trace (default 20000; gather traces are truncated to it)")
    ap.add_argument("--gap", type=int, default=8,
                    help="issue-cycle spacing of the 'paced' variant (default 8 = 8 GB/s offered)")
    ap.add_argument("--epoch", type=int, default=100,
                    help="DRAMSim3 epoch length used to locate the completion cycle (default 100)")
    ap.add_argument("--seed", type=int, default=0, help="seed of the random traces")
    ap.add_argument("--traces", default="seq_read,rand_read,gather_d16,gather_d64,mix_2r1w",
                    help="comma-separated subset of the traces")
    ap.add_argument("--variants", default="burst,paced", help="comma-separated: burst,paced")
    ap.add_argument("--no-diag", dest="diag", action="store_false",
                    help="omit the diagnostic 'ref-4resp' rows (burst traces offered one request "
                         "per cycle, issue cycle i, to the reference with 4 response ports)")
    ap.add_argument("--out", type=Path, default=REPO / "build" / "compare_dramsim3.csv",
                    help="CSV output (default build/compare_dramsim3.csv)")
    ap.add_argument("--workdir", type=Path, default=None,
                    help="keep DRAMSim3 traces/outputs here (default: a temporary directory)")
    a = ap.parse_args(argv)
    for k in ("requests", "gap", "epoch"):
        if getattr(a, k) < 1:
            ap.error(f"--{k} must be >= 1, not {getattr(a, k)}")

    exe = a.dramsim3
    if exe is None or not exe.is_file() or not os.access(exe, os.X_OK):
        print(f"compare_dramsim3: SKIPPED -- no DRAMSim3 executable "
              f"({'--dramsim3 not given' if exe is None else f'{exe} is not an executable file'}). "
              "Build it outside the repository as scripts/fetch_dramsim3.md describes and pass "
              "--dramsim3 PATH/TO/dramsim3main.")
        return 0
    config = a.config or (exe.resolve().parent.parent / "configs" / "HBM2_8Gb_x128.ini")
    if not config.is_file():
        ap.error(f"--config {config} does not exist")
    traces = make_traces(a.requests, a.seed)
    names = [t.strip() for t in a.traces.split(",") if t.strip()]
    for t in names:
        if t not in traces:
            ap.error(f"--traces: unknown trace {t!r} (known: {', '.join(traces)})")
    variants = [v.strip() for v in a.variants.split(",") if v.strip()]
    for v in variants:
        if v not in ("burst", "paced"):
            ap.error(f"--variants: unknown variant {v!r} (burst, paced)")

    rows: list[Metrics] = []
    with tempfile.TemporaryDirectory(prefix="cmp_dramsim3_") as tmp:
        work = a.workdir or Path(tmp)
        for name in names:
            acc = traces[name]
            for v in variants:
                cyc = issue_cycles(len(acc), v, a.gap)
                rows.append(run_dramsim3(exe, config, name, v, acc, cyc, work, a.epoch))
                rows.append(run_reference(name, v, acc, cyc))
                if v == "burst" and a.diag:
                    # diagnostic: issue cycle i (so still at most one new request per cycle)
                    # and 4 response ports, removing the single response port's 64 GB/s cap
                    rows.append(run_reference(name, v, acc, list(range(len(acc))), ports=4,
                                              label="ref-4resp"))
                print(f"  done {name} {v}", file=sys.stderr)
    print(f"DRAMSim3 ({exe}, {config.name}) vs reference model (preset HBM2, ports=1); "
          f"{a.requests} requests per trace, paced gap {a.gap} cycles; times in ns (tCK 1 ns)")
    print(_table(rows))
    a.out.parent.mkdir(parents=True, exist_ok=True)
    with open(a.out, "w", newline="") as f:
        w = csv.writer(f)
        fields = list(Metrics.__dataclass_fields__)
        w.writerow(fields)
        for m in rows:
            w.writerow([round(getattr(m, k), 4) if isinstance(getattr(m, k), float)
                        else getattr(m, k) for k in fields])
    print(f"wrote {a.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
