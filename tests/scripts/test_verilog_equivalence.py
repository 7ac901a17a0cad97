"""``scripts/verilog_equivalence.py``: the normalisation on canned Verilog text (source attributes
dropped, auto-numbered names renumbered canonically, a changed connection still visible), and the
``compare`` exit status on two written directories."""

from __future__ import annotations

from script_under_test import load_script

verilog_equivalence = load_script("verilog_equivalence")
normalise = verilog_equivalence.normalise

BEFORE = """module top(a, b, y);
  (* src = "/work/a/hw/tmu/traversal.py:280" *)
  wire [63:0] \\$12 ;
  (* src = "/work/a/hw/tmu/traversal.py:281" *)
  wire [63:0] \\$13 ;
  reg [63:0] \\stored$7 ;
  assign \\$12 = a + b;
  assign \\$13 = a - b;
  assign y = \\$12 ;
  assign _4_ = \\stored$7 ;
endmodule
"""

# The same netlist after a refactor: other file and line numbers, other auto numbers.
RENAMED = """module top(a, b, y);
  (* src = "/work/b/hw/tmu/stream_evaluation.py:90" *)
  wire [63:0] \\$40 ;
  (* src = "/work/b/hw/tmu/stream_evaluation.py:91" *)
  wire [63:0] \\$41 ;
  reg [63:0] \\stored$3 ;
  assign \\$40 = a + b;
  assign \\$41 = a - b;
  assign y = \\$40 ;
  assign _9_ = \\stored$3 ;
endmodule
"""


def test_source_attributes_and_auto_numbers_are_normalised_away():
    assert "src" not in normalise(BEFORE)
    assert normalise(BEFORE) == normalise(RENAMED)


def test_a_changed_connection_shows():
    # y reads the difference instead of the sum: the renumbering must not hide it.
    rewired = BEFORE.replace("assign y = \\$12 ;", "assign y = \\$13 ;")
    assert normalise(BEFORE) != normalise(rewired)


def test_a_changed_operator_shows():
    assert normalise(BEFORE) != normalise(BEFORE.replace("a - b", "a + b"))


def test_compare_exit_status(tmp_path, capsys):
    for name, text in (("a", BEFORE), ("b", RENAMED), ("c", BEFORE.replace("a - b", "b - a"))):
        (tmp_path / name).mkdir()
        (tmp_path / name / "small.norm.v").write_text(normalise(text))
    assert verilog_equivalence.compare(tmp_path / "a", tmp_path / "b", ["small"]) == 0
    assert "identical" in capsys.readouterr().out
    assert verilog_equivalence.compare(tmp_path / "a", tmp_path / "c", ["small"]) == 1
    assert "DIFFERENT" in capsys.readouterr().out
