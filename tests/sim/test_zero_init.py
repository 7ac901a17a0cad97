"""``sim.zero_init``: element-by-element zero initialisation of memories rewritten as loops (what
lets the 8-unit system's C++ compile in bounded memory), only where the block is exactly that,
and the result still Verilog that Verilator reads and simulates to the same contents."""

import shutil
import subprocess

import pytest

from sim.zero_init import compact_zero_init, zero_init_lines


def _block(name, width, values, indent="    "):
    return ["  initial begin"] + [f"{indent}{name}[{i}] = {width}'h{v};"
                                  for i, v in enumerate(values)] + ["  end"]


def test_zero_block_becomes_a_loop():
    text = "\n".join(["module m;", "  reg [515:0] storage [0:4];"]
                     + _block("storage", 516, ["0" * 129] * 5) + ["endmodule", ""])
    out = compact_zero_init(text)
    assert zero_init_lines(text) == 5 and zero_init_lines(out) == 0
    assert "for (i = 0; i < 5; i = i + 1) storage[i] = 516'h0;" in out
    assert out.startswith("module m;\n  reg [515:0] storage [0:4];\n  initial begin : ember_zero_init_0")
    assert out.endswith("  end\nendmodule\n")


@pytest.mark.parametrize("values, names", [
    (["00", "00", "01", "00"], "mmmm"),      # one element is not zero
    (["00", "00", "00", "00"], "mmnm"),      # another memory in the middle
])
def test_other_blocks_are_left_alone(values, names):
    lines = ["  initial begin"] + [f"    {n}[{i}] = 8'h{v};" for i, (n, v) in enumerate(zip(names, values))]
    text = "\n".join(lines + ["  end"])
    assert compact_zero_init(text) == text


def test_indices_out_of_order_are_left_alone():
    text = "\n".join(["  initial begin", "    m[1] = 8'h00;", "    m[0] = 8'h00;", "  end"])
    assert compact_zero_init(text) == text


def test_two_blocks_get_distinct_names():
    text = "\n".join(_block("a", 8, ["00"] * 3) + _block("b", 16, ["0000"] * 2))
    out = compact_zero_init(text)
    assert "ember_zero_init_0" in out and "ember_zero_init_1" in out
    assert "a[i] = 8'h0;" in out and "b[i] = 16'h0;" in out


@pytest.mark.slow
@pytest.mark.skipif(shutil.which("verilator") is None, reason="needs verilator")
def test_verilator_simulates_the_loop_as_the_elements(tmp_path):
    """Both forms, built with Verilator (``--binary``), print the same memory contents
    (a block of 100 elements: kept as a loop, above Verilator's --unroll-count of 64)."""
    body = ["  reg [69:0] mem [0:99];"] + _block("mem", 70, ["0" * 18] * 100) + [
        "  integer k;",
        "  initial begin #1; for (k = 0; k < 100; k = k + 1) if (mem[k] != 0) $display(\"bad %0d\", k);",
        "    mem[7] = 70'h5; $display(\"mem7 %0d sum %0d\", mem[7], mem[99]); $finish; end"]
    outputs = []
    for form, compact in (("elements", False), ("loop", True)):
        text = "\n".join(["module top;"] + body + ["endmodule", ""])
        if compact:
            text = compact_zero_init(text)
            assert "for (i = 0; i < 100;" in text
        src = tmp_path / f"{form}.v"
        src.write_text(text)
        subprocess.run(["verilator", "--binary", "-Wno-fatal", "--Mdir", str(tmp_path / form),
                        "-o", "sim", str(src)], check=True, capture_output=True)
        run = subprocess.run([str(tmp_path / form / "sim")], check=True, capture_output=True,
                             text=True)
        outputs.append([line for line in run.stdout.splitlines() if not line.startswith("-")])
    assert outputs[0] == outputs[1] == ["mem7 5 sum 0"]
