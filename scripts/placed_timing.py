"""Which paths placement makes slow: a static timing analysis of nextpnr's SDF after placement.

nextpnr-ecp5 prints only its Fmax and a slack histogram after placement (``--no-route``; the
critical path report comes after routing, which this design does not finish in hours). Its SDF
writer (``--sdf FILE``) also runs without routing: every cell arc carries nextpnr's own delay
for the device and speed grade, and every net arc its *predicted* delay from the placed
distance (``Context::getNetinfoRouteDelay`` falls back to ``predictArcDelay`` for an unrouted
net). This module reads that SDF and finds, for every register input, the latest arrival along
``clock -> Q``, the cells' ``IOPATH`` arcs and the nets' ``INTERCONNECT`` arcs, plus its setup
time — the analysis behind nextpnr's post-placement estimate — and names the endpoints, groups
them by signal and traces the path into one.

The SDF names cells, not signals; ``placed.json`` (nextpnr's ``--write`` after placement) gives
each cell's nets, whose names are the Amaranth signal names Yosys kept, and its BEL (``X``,
``Y`` on the device grid). Without it the report names cells only.

Delays are in picoseconds in the SDF (``TIMESCALE 1ps``) and in nanoseconds in the report.
Usage, on what ``scripts/synth.py --out DIR`` writes (nextpnr's ``--sdf timing.sdf --write
placed.json``)::

    python scripts/placed_timing.py --sdf DIR/small/timing.sdf --placed DIR/small/placed.json

``--histogram 10,20,40,50,55,60,65`` also counts the register inputs settling after each time
(how many would have to change for a clock, ``docs/synthesis.md``, "The value registers
written a cycle late").
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from collections import defaultdict
from pathlib import Path

_SCRIPTS = str(Path(__file__).resolve().parent)
if _SCRIPTS not in sys.path:
    sys.path.insert(0, _SCRIPTS)

from path_delay import bit_names  # noqa: E402

_TOKEN = re.compile(r'"[^"]*"|\(|\)|(?:\\.|[^\s()"\\])+')


def _tokens(text: str):
    for m in _TOKEN.finditer(text):
        yield m.group(0)


def _sexpr(text: str) -> list:
    """The SDF text as nested lists of atoms (strings); raises ValueError on unbalanced
    parentheses."""
    stack: list[list] = [[]]
    for tok in _tokens(text):
        if tok == "(":
            stack.append([])
        elif tok == ")":
            if len(stack) == 1:
                raise ValueError("SDF has an unmatched ')'")
            done = stack.pop()
            stack[-1].append(done)
        else:
            stack[-1].append(tok)
    if len(stack) != 1:
        raise ValueError("SDF ends inside a parenthesis")
    return stack[0]


def _unescape(name: str) -> str:
    return re.sub(r"\\(.)", r"\1", name)


def _split_pin(ref: str) -> tuple[str, str]:
    """``inst/port`` (``inst`` escaped, so its own '/' appear as '\\/') -> (inst, port)."""
    for i in range(len(ref) - 1, -1, -1):
        if ref[i] == "/" and (i == 0 or ref[i - 1] != "\\"):
            return _unescape(ref[:i]), _unescape(ref[i + 1:])
    raise ValueError(f"SDF pin reference {ref!r} has no '/'")


def _delay_ps(values: list) -> float:
    """The largest of an SDF delay's ``(min:typ:max)`` triples (rise, fall), ps; 0 if empty."""
    best = 0.0
    for v in values:
        if isinstance(v, list) and v:
            for part in v[0].split(":"):
                if part:
                    best = max(best, float(part))
    return best


def _port(item) -> str:
    """An SDF port specification: ``Q`` or ``(posedge CLK)`` -> the port's name."""
    return _unescape(item[-1] if isinstance(item, list) else item)


def parse_sdf(text: str) -> dict:
    """The arcs of an SDF as ``{"celltype": {inst: type}, "arcs": [(from_pin, to_pin, ps)],
    "launch": [(pin, ps)], "setup": {pin: ps}}``; a pin is ``(instance, port)``. A cell's
    clock ports are those its timing checks name as the reference (``(SETUPHOLD (posedge M)
    (posedge CLK) setup hold)``, as nextpnr writes them); ``launch`` holds the arcs out of a
    clock port (``IOPATH CLK Q``: clock to output), ``setup`` each checked input's setup time.
    Raises ValueError if the text is not a DELAYFILE."""
    tree = _sexpr(text)
    if not tree or not isinstance(tree[0], list) or not tree[0] or tree[0][0] != "DELAYFILE":
        raise ValueError("text is not an SDF DELAYFILE")
    celltype, arcs, launch, setup = {}, [], [], {}
    for cell in tree[0][1:]:
        if not (isinstance(cell, list) and cell and cell[0] == "CELL"):
            continue
        kind, inst, paths, clocks = "", "", [], set()
        for item in cell[1:]:
            if item[0] == "CELLTYPE":
                kind = item[1].strip('"')
            elif item[0] == "INSTANCE":
                inst = _unescape(item[1]) if len(item) > 1 else ""
            elif item[0] == "DELAY":
                for absolute in item[1:]:
                    paths.extend(absolute[1:])
            elif item[0] == "TIMINGCHECK":
                for chk in item[1:]:
                    if chk[0] in ("SETUP", "SETUPHOLD") and len(chk) >= 4:
                        pin, clock = (inst, _port(chk[1])), _port(chk[2])
                        clocks.add(clock)
                        setup[pin] = max(setup.get(pin, 0.0), _delay_ps(chk[3:4]))
        celltype[inst] = kind
        for arc in paths:
            if arc[0] == "INTERCONNECT":
                arcs.append((_split_pin(arc[1]), _split_pin(arc[2]), _delay_ps(arc[3:])))
            elif arc[0] == "IOPATH":
                src, dst, ps = _port(arc[1]), (inst, _port(arc[2])), _delay_ps(arc[3:])
                if src in clocks or isinstance(arc[1], list):
                    launch.append((dst, ps))
                else:
                    arcs.append(((inst, src), dst, ps))
    return {"celltype": celltype, "arcs": arcs, "launch": launch, "setup": setup}


def arrivals(sdf: dict) -> tuple[dict, dict]:
    """Latest arrival (ps after the clock edge) at every pin reachable from a launch, and each
    pin's predecessor on that latest path (``None`` at a launch). Raises ValueError on a
    combinational loop."""
    fanout = defaultdict(list)
    for src, dst, ps in sdf["arcs"]:
        fanout[src].append((dst, ps))
    arrival, before = {}, {}
    for pin, ps in sdf["launch"]:
        if ps >= arrival.get(pin, -1.0):
            arrival[pin], before[pin] = ps, None
    # Kahn's order over the pins reachable from the launches only.
    reach, stack = set(arrival), list(arrival)
    while stack:
        for dst, _ in fanout[stack.pop()]:
            if dst not in reach:
                reach.add(dst)
                stack.append(dst)
    pending = {p: 0 for p in reach}
    for src in reach:
        for dst, _ in fanout[src]:
            pending[dst] += 1
    ready = [p for p in reach if pending[p] == 0]
    done = 0
    while ready:
        src = ready.pop()
        done += 1
        for dst, ps in fanout[src]:
            t = arrival.get(src, 0.0) + ps
            if t > arrival.get(dst, -1.0):
                arrival[dst], before[dst] = t, src
            pending[dst] -= 1
            if pending[dst] == 0:
                ready.append(dst)
    if done != len(reach):
        raise ValueError(f"combinational loop: {len(reach) - done} pins never settle")
    return arrival, before


def endpoints(sdf: dict, arrival: dict) -> list[tuple[float, tuple]]:
    """Every register input with a setup check that a launch reaches, as (arrival + setup in
    ps, pin), slowest first: the clock period each one needs."""
    return sorted(((arrival[p] + s, p) for p, s in sdf["setup"].items() if p in arrival),
                  reverse=True)


def trace(before: dict, arrival: dict, pin: tuple) -> list[tuple[tuple, float]]:
    """The latest path into ``pin``: [(pin, arrival ps)] from its launch."""
    path = []
    while pin is not None:
        path.append((pin, arrival[pin]))
        pin = before[pin]
    return path[::-1]


class Placed:
    """Net names and BEL locations of nextpnr's placed JSON (``--write``): ``net(inst, port)``
    is the name of the net on a cell's port, ``location(inst)`` its (x, y) on the grid."""

    def __init__(self, netlist: dict):
        module = next(iter(netlist["modules"].values()))
        self.cells = module["cells"]
        self._names = bit_names(module)        # the shortest visible name of each bit

    def net(self, inst: str, port: str) -> str:
        bits = self.cells.get(inst, {}).get("connections", {}).get(port, [])
        return self._names.get(bits[0], "?") if bits and isinstance(bits[0], int) else "?"

    def location(self, inst: str) -> tuple[int, int] | None:
        bel = self.cells.get(inst, {}).get("attributes", {}).get("NEXTPNR_BEL", "")
        m = re.match(r"X(\d+)/Y(\d+)/", bel)
        return (int(m.group(1)), int(m.group(2))) if m else None


def signal_group(net: str) -> str:
    """A net's signal without its bit index: ``tmu.x.value[12]`` -> ``tmu.x.value``."""
    return re.sub(r"\[\d+\]$", "", net.lstrip("\\"))


def register_signal(placed: Placed | None, pin: tuple) -> str:
    """The register a checked input belongs to: Yosys names a flip-flop cell after the signal
    it holds (``tmu.x.value_2_TRELLIS_FF_Q_9``: a bit of ``tmu.x.value_2``); other cells by
    the net on their output ``Q`` (a flip-flop named otherwise), else on the checked port (a
    LUT RAM's write ports), else the cell's own name."""
    inst, port = pin
    m = re.match(r"(.*?)_TRELLIS_FF_Q(_\d+)?$", inst)
    if m:
        return m.group(1)
    if placed is not None:
        for candidate in ("Q", port):
            if placed.net(inst, candidate) != "?":
                return placed.net(inst, candidate)
    return inst


def histogram(ends: list[tuple[float, tuple]], thresholds_ns: list[float]) -> list[tuple]:
    """Per threshold (ns), the register inputs whose latest arrival (``endpoints``' ps) lies
    past it, and the clock (MHz) the slowest of the others would allow, i.e. ``1000 / ns``:
    ``[(ns, count, mhz), ...]`` in the order given."""
    return [(t, sum(1 for ps, _ in ends if ps > t * 1000), 1000 / t) for t in thresholds_ns]


def _thresholds(text: str) -> list[float]:
    """``"10,20,60"`` -> ``[10.0, 20.0, 60.0]`` (ns, each > 0); ``ValueError`` otherwise."""
    values = [float(v) for v in text.split(",")]
    if any(not v > 0 for v in values):
        raise ValueError(f"thresholds must be positive ns, not {text!r}")
    return values


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--sdf", type=Path, required=True, help="nextpnr's --sdf output")
    p.add_argument("--placed", type=Path, help="nextpnr's --write output (names, locations)")
    p.add_argument("--groups", type=int, default=25,
                   help="signals to list, slowest first (default 25)")
    p.add_argument("--trace", type=int, default=1, help="slowest endpoints to trace (default 1)")
    p.add_argument("--histogram", metavar="NS,NS,...",
                   help="count the register inputs settling after each of these times (ns)")
    args = p.parse_args(argv)
    thresholds = []
    if args.histogram is not None:
        try:
            thresholds = _thresholds(args.histogram)
        except ValueError:
            p.error(f"--histogram: comma-separated times in ns, each > 0, not "
                    f"{args.histogram!r}")
    for f in (args.sdf, args.placed):
        if f is not None and not f.is_file():
            p.error(f"no such file: {f}")
    try:
        sdf = parse_sdf(args.sdf.read_text())
        arrival, before = arrivals(sdf)
    except ValueError as e:
        p.error(f"--sdf {args.sdf}: {e}")
    placed = Placed(json.loads(args.placed.read_text())) if args.placed else None
    ends = endpoints(sdf, arrival)
    if not ends:
        print("no register input is reached from a clock edge")
        return 0
    print(f"{len(ends)} register inputs; slowest {ends[0][0] / 1000:.2f} ns "
          f"({1e6 / ends[0][0]:.2f} MHz)\n")
    if thresholds:
        print("| arrival after placement | register inputs | clock they allow |\n|---|---|---|")
        for t, count, mhz in histogram(ends, thresholds):
            print(f"| > {t:g} ns | {count:,} ({100 * count / len(ends):.0f} %) | "
                  f"< {mhz:.1f} MHz |")
        print()
    groups: dict[str, list] = defaultdict(list)
    for ps, pin in ends:
        groups[signal_group(register_signal(placed, pin))].append(ps)
    print("| register (signal) | inputs | slowest ns | median ns |\n|---|---|---|---|")
    ranked = sorted(groups.items(), key=lambda kv: -kv[1][0])
    for name, ps in ranked[:args.groups]:
        print(f"| `{name}` | {len(ps)} | {ps[0] / 1000:.2f} | {ps[len(ps) // 2] / 1000:.2f} |")
    for ps, pin in ends[:args.trace]:
        print(f"\npath into {register_signal(placed, pin)} ({pin[1]}): {ps / 1000:.2f} ns")
        previous = 0.0
        for (inst, port), t in trace(before, arrival, pin):
            where = placed.location(inst) if placed else None
            net = placed.net(inst, port) if placed else ""
            print(f"  {t / 1000:7.2f} (+{(t - previous) / 1000:5.2f})  "
                  f"{sdf['celltype'].get(inst, '?'):14} {port:6} {where or ''}  {net}")
            previous = t
    return 0


if __name__ == "__main__":
    sys.exit(main())
