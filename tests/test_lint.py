"""Verilator lint of the default system's Verilog against ``sim/lint_waivers.vlt``.

One ``verilator --lint-only -Wall`` run of the files ``make verilog`` writes (``sim.write_verilog``:
default configuration, ``simple`` memory) with the waiver file must print no warning; the other
tests show the check can fail (an unused signal in the hand-written wrapper is reported, the
generated Verilog without the waivers has thousands of warnings) and that every waiver has its
reason. ``docs/rtl.md`` ("Lint") has the counts per rule. The RTL changes under the waivers: when
this test fails after an RTL change, read the new warnings, fix the RTL or add a waiver scoped by
rule and file, with its reason.

The same Verilog is also checked for what makes the C++ model slow without any warning: a
memory line shifted by a variable amount in a run-ahead engine or the traversal (Verilator
computes the whole 512-bit shift every cycle; ``docs/performance.md``, "The engines' element
extraction without wide shifts").
"""

from __future__ import annotations

import collections
import re
import shutil
import subprocess
from pathlib import Path

import pytest

from sim.verilator import LINT_WAIVERS, MIN_MEM_WORDS, TOPLEVEL

pytestmark = pytest.mark.skipif(shutil.which("verilator") is None, reason="needs verilator")

_WARNING = re.compile(r"^%Warning-([A-Z0-9_]+): ([^:]+):(\d+):(\d+): (.*)$")


def lint(directory: Path, waivers: Path | None = LINT_WAIVERS) -> tuple[list[tuple], str]:
    """Run ``verilator --lint-only -Wall`` on the Verilog files of ``directory`` (top: the
    testbench wrapper) with the ``waivers`` file; returns ([(rule, file, line, message)], the
    whole output)."""
    from hw.tmu import TmuConfig
    files = sorted(str(p) for p in directory.glob("*.v"))
    # The wrapper's parameters as sim.verilator.build_model sets them (make verilog: default
    # configuration, smallest memory).
    parameters = [f"-GABITS={(MIN_MEM_WORDS - 1).bit_length()}",
                  f"-GDATA_TOKENS={TmuConfig().output_tokens}"]
    cmd = ["verilator", "--lint-only", "-Wall", "-Wno-fatal", "--timing",
           "--top-module", TOPLEVEL, *parameters] + ([str(waivers)] if waivers else []) + files
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=300)
    output = proc.stdout + proc.stderr
    warnings = []
    for line in output.splitlines():
        m = _WARNING.match(line)
        if m:
            warnings.append((m.group(1), Path(m.group(2)).name, int(m.group(3)), m.group(5)))
    errors = [line for line in output.splitlines() if line.startswith("%Error")]
    assert proc.returncode == 0 and not errors, f"verilator failed:\n{output[-3000:]}"
    return warnings, output


def _summary(warnings) -> str:
    counts = collections.Counter((rule, file) for rule, file, _, _ in warnings)
    lines = [f"{n:6d} {rule} in {file}" for (rule, file), n in counts.most_common()]
    lines += [f"  {file}:{line}: {rule}: {msg}" for rule, file, line, msg in warnings[:20]]
    return "\n".join(lines)


@pytest.fixture(scope="module")
def verilog_dir(tmp_path_factory):
    from sim.write_verilog import write_verilog
    out = tmp_path_factory.mktemp("verilog")
    write_verilog(out, "simple")
    return out


def test_default_system_has_no_unwaived_warning(verilog_dir):
    warnings, _ = lint(verilog_dir)
    assert not warnings, ("verilator --lint-only -Wall warnings not waived in "
                          f"{LINT_WAIVERS}:\n{_summary(warnings)}")


def test_an_unused_signal_in_hand_written_verilog_is_reported(verilog_dir, tmp_path):
    for path in verilog_dir.glob("*.v"):
        shutil.copy(path, tmp_path / path.name)
    wrapper = tmp_path / f"{TOPLEVEL}.v"
    text = wrapper.read_text()
    anchor = "    reg clk /*verilator public_flat_rw*/ = 1'b0;\n"
    assert anchor in text
    wrapper.write_text(text.replace(anchor, anchor + "    wire lint_probe = clk;\n"))
    warnings, _ = lint(tmp_path)
    assert [(rule, file) for rule, file, _, msg in warnings if "lint_probe" in msg] == \
        [("UNUSEDSIGNAL", wrapper.name)], _summary(warnings)


def test_waivers_are_what_makes_the_generated_verilog_clean(verilog_dir):
    warnings, _ = lint(verilog_dir, waivers=None)
    rules = collections.Counter(rule for rule, _, _, _ in warnings)
    # The three big families of docs/rtl.md "Lint" (thousands of warnings at the default size).
    for rule in ("UNUSEDSIGNAL", "WIDTH", "CASEINCOMPLETE"):
        assert rules[rule] > 100, _summary(warnings)


def test_every_waiver_has_a_reason():
    lines = LINT_WAIVERS.read_text().splitlines()
    assert lines[0].strip() == "`verilator_config"
    previous = ""
    for number, line in enumerate(lines[1:], start=2):
        stripped = line.strip()
        if stripped.startswith("lint_off"):
            assert previous.startswith("//") or previous.startswith("lint_off"), \
                f"{LINT_WAIVERS.name}:{number}: waiver without a comment giving its reason"
            assert "-rule" in stripped and "-file" in stripped, \
                f"{LINT_WAIVERS.name}:{number}: a waiver names a rule and a file"
        elif stripped and not stripped.startswith("//"):
            pytest.fail(f"{LINT_WAIVERS.name}:{number}: unexpected line {line!r}")
        previous = stripped


_DECLARATION = re.compile(
    r"^\s*(?:wire|reg|input|output)\s+(?:signed\s+)?\[(\d+):0\]\s+(\\?\S+?)\s*[;=]", re.M)
_SHIFT = re.compile(r"(\\?[\w$.]+)\s*(?:>>>?|<<)\s*(\\?[\w$.\[\]:]+|\{[^}]*\})")
_CONSTANT = re.compile(r"\d+'[hdb][0-9a-fA-F_]+|\d+")


def wide_variable_shifts(verilog: str, min_bits: int = 256) -> collections.Counter:
    """Per module of ``verilog`` (Yosys' ``write_verilog`` text, as Amaranth writes it), the
    shifts (``>>``, ``>>>``, ``<<``) of a declared signal at least ``min_bits`` wide by an amount
    that is not a constant."""
    found = collections.Counter()
    for body in re.split(r"\nmodule ", verilog)[1:]:
        module = body.split("(")[0].strip()
        widths = {name: int(msb) + 1 for msb, name in _DECLARATION.findall(body)}
        for operand, amount in _SHIFT.findall(body):
            if widths.get(operand, 0) >= min_bits and not _CONSTANT.fullmatch(amount):
                found[module] += 1
    return found


def test_wide_variable_shifts_are_found():
    text = ("module top(a);\n  wire [511:0] line;\n  wire [2:0] k;\n  wire [63:0] w;\n"
            "  assign w = line >> { k, 6'h00 };\n  assign v = line >> 9'h040;\n"
            "  assign u = w >> k;\nendmodule\n")
    assert wide_variable_shifts("\n" + text) == {"top": 1}


def test_engines_and_traversal_shift_no_memory_line(verilog_dir):
    """The run-ahead engines, the chain engine and the traversal (its blocking load) extract an
    element through a multiplexer tree over the line's 64-bit words (``hw.tmu.datapath.
    select_word``), never a variable shift of the line: until 2c38373 each engine had 14 such
    shifts and the traversal 7 (the packer and the reorder buffer keep theirs)."""
    found = wide_variable_shifts((verilog_dir / "ember_system.v").read_text())
    assert found, "the parse found no wide shift at all (the packer has some): check the regex"
    slow = {m: n for m, n in found.items()
            if re.search(r"\.(prefetch_\d+|chain_engine[^.]*(\.root)?|traversal)$", m)}
    assert not slow, f"variable shifts of a memory line per module: {slow}"

