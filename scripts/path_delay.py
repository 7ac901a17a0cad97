"""The longest register-to-register path of a mapped ECP5 netlist, weighted by an estimate of
each cell's and each net's delay (``scripts/logic_depth.py`` reports it beside Yosys' ``ltp``).

``ltp`` counts cells: a carry-chain cell (``CCU2C``, two bits, its carry in to carry out on the
slice's dedicated wire in well under 0.1 ns) weighs as much as a LUT level (a LUT and, nearly
always, a routed net: 1-2 ns after placement on a crowded device). The placed clocks of
2026-11-29 (``docs/synthesis.md``, "A delay target for the LUT mapping") showed the cell count
hiding what matters: netlists with fewer cells on their longest path but more LUT levels placed
slower. This module weighs each arc instead (it put the fastest of four placed netlists first;
differences of ~10 % between the others were placement's to decide):

* a cell's delay from an input port to an output port (``CELL_DELAY_NS``: the ECP5 data sheet's
  order of magnitude for speed grade 6, not nextpnr's exact numbers);
* plus ``routing_ns`` for the net into every input that is not on a dedicated in-slice wire
  (``LOCAL_INPUTS``: a carry in, the wide multiplexers' inputs from the LUTs beside them).

Flip-flops (``TRELLIS_FF``) and block RAMs (``DP16KD``) start and end paths; a LUT RAM
(``TRELLIS_DPR16X4``) is a cell of the path on its asynchronous read (read address -> data out)
and ends one at its write ports. Constant bits are not nodes. An estimate, not a timing analysis:
placement decides the real routing delays (nextpnr's post-placement estimate is the number to
trust for the whole design); this one ranks paths and variants without placing them.
"""

from __future__ import annotations

import json
import re
from collections import Counter, defaultdict, deque
from pathlib import Path

#: (cell type, input port prefix, output port prefix) -> delay in ns; the first match wins,
#: ``None`` matches any port. Orders of magnitude from the ECP5 family data sheet (speed 6).
CELL_DELAY_NS = (
    ("LUT4", None, None, 0.40),
    ("PFUMX", "C0", None, 0.40),
    ("PFUMX", None, None, 0.20),
    ("L6MUX21", "SD", None, 0.40),
    ("L6MUX21", None, None, 0.20),
    ("CCU2C", "CIN", "COUT", 0.06),
    ("CCU2C", "CIN", "S", 0.30),
    ("CCU2C", None, None, 0.45),
    ("MULT18X18D", None, None, 3.50),      # combinational 18 x 18 (no input/output registers)
    ("TRELLIS_DPR16X4", "RAD", "DO", 0.50),
)
#: Inputs fed by a dedicated wire inside a slice (no routed net in front of them).
LOCAL_INPUTS = {("CCU2C", "CIN"), ("PFUMX", "ALUT"), ("PFUMX", "BLUT"),
                ("L6MUX21", "D0"), ("L6MUX21", "D1")}
#: A routed net after placement on a crowded LFE5U-85F, ns (an assumption: see the docstring).
ROUTING_NS = 1.0
#: Cells that start and end paths.
ENDPOINTS = {"TRELLIS_FF", "DP16KD"}


def cell_delay(kind: str, in_port: str, out_port: str) -> float | None:
    """The delay of ``kind`` from ``in_port`` to ``out_port`` in ns, or None when the cell
    has no such combinational arc (a LUT RAM's write ports, an unknown cell type)."""
    for k, i, o, ns in CELL_DELAY_NS:
        if k == kind and (i is None or in_port.startswith(i)) and \
                (o is None or out_port.startswith(o)):
            return ns
    return None


def _arrivals(module: dict, routing_ns: float):
    """Every bit's latest arrival in ``module`` (ns from the registers), by a topological walk of
    the combinational arcs: ``(arrival, came_from, kinds, unknown, unordered_bits)`` with
    ``came_from[bit] = (bit before it, cell)`` on its latest path and ``kinds[cell] = type``."""
    successors = defaultdict(list)          # bit -> [(bit, ns, cell)]
    indegree = Counter()
    kinds = {}
    unknown = Counter()
    for name, cell in module["cells"].items():
        kind = cell["type"]
        if kind in ENDPOINTS:
            continue
        if kind.startswith("$"):             # Yosys' bookkeeping ($scopeinfo), not logic
            continue
        if not any(k == kind for k, *_ in CELL_DELAY_NS):
            unknown[kind] += 1
            continue
        kinds[name] = kind
        directions, connections = cell.get("port_directions", {}), cell["connections"]
        inputs = [(p, b) for p, bits in connections.items() if directions.get(p) == "input"
                  for b in bits if isinstance(b, int)]
        outputs = [(p, b) for p, bits in connections.items() if directions.get(p) == "output"
                   for b in bits if isinstance(b, int)]
        for p, b in inputs:
            net = 0.0 if (kind, p) in LOCAL_INPUTS else routing_ns
            for q, o in outputs:
                d = cell_delay(kind, p, q)
                if d is not None:
                    successors[b].append((o, net + d, name))
                    indegree[o] += 1
    nodes = set(successors) | set(indegree)
    arrival = dict.fromkeys(nodes, 0.0)
    came_from = {}
    ready = deque(b for b in nodes if indegree[b] == 0)
    ordered = 0
    while ready:
        b = ready.popleft()
        ordered += 1
        for o, ns, name in successors.get(b, ()):
            if arrival[b] + ns > arrival[o]:
                arrival[o] = arrival[b] + ns
                came_from[o] = (b, name)
            indegree[o] -= 1
            if indegree[o] == 0:
                ready.append(o)
    return arrival, came_from, kinds, unknown, len(nodes) - ordered


def longest_weighted_path(netlist: dict, top: str, *, routing_ns: float = ROUTING_NS) -> dict:
    """The longest path of module ``top`` of a Yosys JSON netlist (``write_json``), arcs
    weighted as the module docstring says. Returns ``{"ns": float, "cells": [cell names, in
    order], "kinds": {cell type: count on the path}, "nets": [net names, in order],
    "arrival_ns": [the estimated time each of those nets settles, from the path's start],
    "unordered_bits": int, "cells_without_arcs": {cell type: count}}`` (``unordered_bits``:
    bits left on a combinational loop, which a sound design has none of;
    ``cells_without_arcs``: cells of a type ``CELL_DELAY_NS`` does not know, which the path
    cannot go through: a new cell type to add). Raises ``KeyError`` when ``top`` is not in
    the netlist."""
    module = netlist["modules"][top]
    arrival, came_from, kinds, unknown, unordered = _arrivals(module, routing_ns)
    end = max(arrival, key=arrival.get) if arrival else None
    cells, bits = [], [end] if end is not None else []
    while bits and bits[-1] in came_from:
        b, name = came_from[bits[-1]]
        cells.append(name)
        bits.append(b)
    cells.reverse()
    bits.reverse()
    names = bit_names(module)
    return {"ns": round(arrival[end], 2) if end is not None else 0.0, "cells": cells,
            "kinds": dict(Counter(kinds[c] for c in cells)),
            "nets": [names.get(b, f"bit{b}") for b in bits],
            "arrival_ns": [round(arrival[b], 2) for b in bits],
            "unordered_bits": unordered, "cells_without_arcs": dict(unknown)}


def slowest_registers(netlist: dict, top: str, *, routing_ns: float = ROUTING_NS,
                      count: int = 20) -> list[dict]:
    """The ``count`` registers of module ``top`` whose inputs settle last, slowest first: one
    row per register (a flip-flop's output net, its bit index dropped, so a 64-bit register is
    one row), ``{"register": name, "ns": the latest arrival at any of its flip-flops' inputs
    (data, clock enable, set/reset), "from": the net its latest path starts at}``. Where the
    longest path (:func:`longest_weighted_path`) shows one path, this shows how many registers
    are nearly as late: a cut pays only when the paths behind it are shorter. Raises
    ``KeyError`` when ``top`` is not in the netlist."""
    module = netlist["modules"][top]
    arrival, came_from, *_ = _arrivals(module, routing_ns)
    names = bit_names(module)

    def start_of(bit):
        while bit in came_from:
            bit = came_from[bit][0]
        return names.get(bit, f"bit{bit}")

    latest = _latest_inputs(module, arrival, names)
    rows = sorted(latest.items(), key=lambda kv: (-kv[1][0], kv[0]))[:count]
    return [{"register": r, "ns": round(ns, 2), "from": start_of(b)} for r, (ns, b) in rows]


def path_to_register(netlist: dict, top: str, register: str, *,
                     routing_ns: float = ROUTING_NS) -> dict:
    """The latest path into ``register`` (a row of :func:`slowest_registers`: a flip-flop
    output's net name without its bit index) of module ``top``: ``{"register", "ns", "from",
    "cells": [{"ns": arrival after the cell, "kind": cell type, "net": the net it drives}],
    "segments": [{"kind", "cells", "from_ns", "to_ns"}]}``, the segments being the runs of
    consecutive cells of one kind (a carry chain, a DSP, a run of LUT levels), so the path reads
    as where its nanoseconds go. Raises ``KeyError`` when ``top`` is not in the netlist or no
    flip-flop drives ``register``."""
    module = netlist["modules"][top]
    arrival, came_from, kinds, *_ = _arrivals(module, routing_ns)
    names = bit_names(module)
    latest = _latest_inputs(module, arrival, names).get(register)     # (ns, bit)
    if latest is None:
        raise KeyError(f"no flip-flop drives a net named {register!r}")
    steps, bit = [], latest[1]
    while bit in came_from:
        before, cell = came_from[bit]
        steps.append({"ns": round(arrival[bit], 2), "kind": kinds[cell],
                      "net": names.get(bit, f"bit{bit}")})
        bit = before
    steps.reverse()
    segments, start_ns = [], 0.0
    for step in steps:
        if segments and segments[-1]["kind"] == step["kind"]:
            segments[-1]["cells"] += 1
            segments[-1]["to_ns"] = step["ns"]
        else:
            segments.append({"kind": step["kind"], "cells": 1, "from_ns": start_ns,
                             "to_ns": step["ns"]})
        start_ns = step["ns"]
    return {"register": register, "ns": round(latest[0], 2),
            "from": names.get(bit, f"bit{bit}"), "cells": steps, "segments": segments}


def _latest_inputs(module: dict, arrival: dict, names: dict) -> dict:
    """Register (a flip-flop output's net name without its bit index) -> ``(ns, bit)``: the
    latest arrival at any input (data, clock enable, set/reset) of its flip-flops, and that
    input's bit."""
    latest = {}
    for cell in module["cells"].values():
        if cell["type"] != "TRELLIS_FF":
            continue
        q = [b for b in cell["connections"].get("Q", []) if isinstance(b, int)]
        register = re.sub(r"\[\d+\]$", "", names.get(q[0], "?")) if q else "?"
        for port in ("DI", "M", "CE", "LSR"):
            for b in cell["connections"].get(port, []):
                if isinstance(b, int) and arrival.get(b, 0.0) >= latest.get(register, (-1,))[0]:
                    latest[register] = (arrival.get(b, 0.0), b)
    return latest


def bit_names(module: dict) -> dict:
    """Bit -> the shortest visible net name holding it (Yosys' internal names last)."""
    names = {}
    for name, net in sorted(module["netnames"].items(),
                            key=lambda kv: (kv[1].get("hide_name", 0), len(kv[0]))):
        for b in net["bits"]:
            if isinstance(b, int):
                names.setdefault(b, name)
    return names


def from_file(path: Path, top: str, **kw) -> dict:
    """:func:`longest_weighted_path` of the Yosys JSON netlist at ``path``."""
    with open(path) as f:
        return longest_weighted_path(json.load(f), top, **kw)
