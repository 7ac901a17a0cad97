"""``ember hbm-trace``: feed a DRAMSim3-format request trace into the HBM model and report.

    ember hbm-trace TRACE --preset {HBM2,HBM3,simple} [--max-outstanding N]
                    [--model {reference,rtl}] [--ports N] [--backpressure P] [--seed S]
                    [--json | --csv]

Requests are offered in trace order on the model's ports (``--ports``), each from its issue cycle
on, as fast as the model accepts them and never more than N outstanding (``hw.hbm_model.reference.run_requests``; the RTL runner
``sim.hbm.run_requests_on_rtl`` mirrors the same issue rules). Printed: achieved bandwidth
(GB/s and % of the preset's peak), read latency in ns (mean, p50, p99: exact percentiles of the
per-request latencies, acceptance to response transfer), row-buffer hit rate (classification of
docs/hbm_model.md §2) and activates per request.
"""

from __future__ import annotations

import csv
import io
import json
import sys

__all__ = ["add_parser", "cmd_hbm_trace", "summarise"]


def summarise(result, preset, *, model: str, trace: str = "") -> dict:
    """The report's numbers as a flat dict (units in the key names)."""
    ns = preset.unit_cycle_ns
    s = result.stats
    return {
        "trace": trace, "preset": preset.name, "model": model,
        "requests": len(result.completions), "reads": s["reads"], "writes": s["writes"],
        "cycles": result.cycles, "time_ns": round(result.cycles * ns, 3),
        "bandwidth_gbps": round(result.bandwidth_gbps(preset), 3),
        "peak_gbps": round(preset.peak_gbps, 3),
        "fraction_of_peak": round(result.fraction_of_peak(preset), 4),
        "read_latency_mean_ns": round(result.read_latency_mean() * ns, 3),
        "read_latency_p50_ns": round(result.read_latency_percentile(50) * ns, 3),
        "read_latency_p99_ns": round(result.read_latency_percentile(99) * ns, 3),
        "row_hit_rate": round(result.row_hit_rate(), 4),
        "activates_per_request": round(result.activates_per_request(), 4),
        "row_hits": s["row_hits"], "row_misses": s["row_misses"],
        "row_conflicts": s["row_conflicts"], "refreshes": s["refreshes"],
    }


def _text(d) -> str:
    return (
        f"trace {d['trace']}: {d['requests']} requests ({d['reads']} reads, {d['writes']} writes), "
        f"preset {d['preset']}, model {d['model']}\n"
        f"cycles              {d['cycles']}  ({d['time_ns']:.1f} ns)\n"
        f"bandwidth           {d['bandwidth_gbps']:.2f} GB/s  "
        f"({100 * d['fraction_of_peak']:.1f} % of peak {d['peak_gbps']:.1f} GB/s)\n"
        f"read latency (ns)   mean {d['read_latency_mean_ns']:.1f}  p50 {d['read_latency_p50_ns']:.1f}"
        f"  p99 {d['read_latency_p99_ns']:.1f}\n"
        f"row-buffer hit rate {d['row_hit_rate']:.3f}  (hits {d['row_hits']}, misses "
        f"{d['row_misses']}, conflicts {d['row_conflicts']})\n"
        f"activates/request   {d['activates_per_request']:.3f}\n")


def _read_requests(path: str) -> list:
    """The requests of the trace file ``path`` (the argument TRACE); ``ValueError`` naming TRACE
    and the path when it cannot be read or is not UTF-8 text (a binary file given by mistake).
    A leading UTF-8 byte-order mark (as Windows editors write) is dropped; it is decoded as
    plain UTF-8 first, so the offset of an undecodable byte is its offset in the file."""
    from pathlib import Path

    from hw.hbm_model.traces import parse_trace

    try:
        text = Path(path).read_text(encoding="utf-8")
    except UnicodeDecodeError as e:
        raise ValueError(f"TRACE {path!r} is not UTF-8 text (byte 0x{e.object[e.start]:02x} at "
                         f"offset {e.start})") from None
    except OSError as e:
        raise ValueError(f"TRACE {path!r} cannot be read ({e.strerror or e})") from None
    return parse_trace(io.StringIO(text.removeprefix("\ufeff")), name=path)


def cmd_hbm_trace(ns) -> int:
    from pathlib import Path

    from hw.hbm_model.presets import get_preset
    from hw.hbm_model.reference import run_requests

    if not Path(ns.trace).is_file():
        raise ValueError(f"TRACE {ns.trace!r} does not exist or is not a file")
    if ns.seed < 0:
        raise ValueError(f"--seed must be a non-negative integer, not {ns.seed!r}")
    if ns.max_outstanding is not None and ns.max_outstanding < 1:
        raise ValueError(f"--max-outstanding must be a positive integer, not {ns.max_outstanding!r}")
    if ns.ports < 1:
        raise ValueError(f"--ports must be a positive integer, not {ns.ports!r}")
    if not 0.0 <= ns.backpressure < 1.0:
        raise ValueError(f"--backpressure must be a probability in [0, 1), not {ns.backpressure!r}")
    preset = get_preset(ns.preset)
    requests = _read_requests(ns.trace)
    if not requests:
        raise ValueError(f"TRACE {ns.trace!r} holds no requests")
    kw = dict(max_outstanding=ns.max_outstanding, resp_backpressure=ns.backpressure, seed=ns.seed)
    if ns.ports > 1 and preset.fixed_latency is not None:
        raise ValueError(f"--ports must be 1 with --preset {ns.preset} (one fixed-latency pipe), "
                         f"not {ns.ports}")
    kw["ports"] = ns.ports
    if ns.model == "rtl":
        try:
            from sim.hbm import run_requests_on_rtl
        except ImportError as e:
            raise ValueError(f"--model rtl needs sim.hbm.run_requests_on_rtl, which is not "
                            f"available ({e}); use --model reference") from None
        result = run_requests_on_rtl(preset, requests, **kw)
    else:
        result = run_requests(preset, requests, **kw)
    d = summarise(result, preset, model=ns.model, trace=ns.trace)
    if ns.json:
        print(json.dumps(d, indent=2))
    elif ns.csv:
        buf = io.StringIO()
        w = csv.DictWriter(buf, fieldnames=list(d))
        w.writeheader()
        w.writerow(d)
        sys.stdout.write(buf.getvalue())
    else:
        sys.stdout.write(_text(d))
    return 0


def add_parser(sub) -> None:
    """Register ``hbm-trace`` on the ``ember`` sub-command parser ``sub``."""
    p = sub.add_parser(
        "hbm-trace", help="run a DRAMSim3-format request trace through the HBM model",
        description="Feed TRACE (one request per line: '0x<hex byte address> READ|WRITE <issue "
        "cycle>', each a 64-byte access) into the HBM model in trace order, as fast as it accepts, "
        "and print bandwidth (GB/s, % of peak), read latency in ns (mean, p50, p99), row-buffer "
        "hit rate and activates per request. Cycles are memory clock cycles (clock ratio 1).")
    p.add_argument("trace", metavar="TRACE")
    p.add_argument("--preset", choices=("HBM2", "HBM3", "simple"), default="HBM2",
                   help="memory parameter set (hw/hbm_model/presets.py); default HBM2")
    p.add_argument("--max-outstanding", type=int, default=None, metavar="N",
                   help="never more than N requests accepted and not yet answered (default: no limit)")
    p.add_argument("--model", choices=("reference", "rtl"), default="reference",
                   help="reference: the Python model; rtl: the Amaranth model under Verilator")
    p.add_argument("--ports", type=int, default=1, metavar="N",
                   help="request ports and response ports of the model: up to N requests accepted "
                   "and N responses returned per cycle (docs/hbm_model.md §2; default 1)")
    p.add_argument("--backpressure", type=float, default=0.0, metavar="P",
                   help="probability that the response port is not ready in a cycle (default 0)")
    p.add_argument("--seed", type=int, default=0, help="seed of the back-pressure draws, a non-negative integer (default 0)")
    fmt = p.add_mutually_exclusive_group()
    fmt.add_argument("--json", action="store_true", help="print the numbers as JSON")
    fmt.add_argument("--csv", action="store_true", help="print the numbers as one CSV row with header")
    p.set_defaults(func=cmd_hbm_trace)
