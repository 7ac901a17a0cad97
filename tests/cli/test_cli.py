"""The `ember` command line: asm/disasm round trip and error reporting (exit status 2, message names the input)."""

import subprocess
import sys

import pytest

from sw.cli import main
from sw.runtime.handwritten import embedding_bag_program


def test_asm_then_disasm_round_trip(tmp_path, capsys):
    src = tmp_path / "eb.s"
    src.write_text(embedding_bag_program(4).to_asm())
    assert main(["asm", str(src), "-o", str(tmp_path / "eb.bin")]) == 0
    assert (tmp_path / "eb.bin").read_bytes() == embedding_bag_program(4).encode()
    capsys.readouterr()
    assert main(["disasm", str(tmp_path / "eb.bin")]) == 0
    assert capsys.readouterr().out == embedding_bag_program(4).to_asm()


def test_disasm_of_a_malformed_program(tmp_path, capsys):
    path = tmp_path / "bad.bin"
    path.write_bytes(b"\x00" * 16)
    assert main(["disasm", str(path)]) == 2
    assert capsys.readouterr().err == ("ember: error: word 0: magic must be 0x554d5445, not 0x00000000 "
                                       "(fault BAD_MAGIC)\n")


def test_missing_file(capsys):
    assert main(["disasm", "/nonexistent.bin"]) == 2
    assert "PROGRAM '/nonexistent.bin' does not exist" in capsys.readouterr().err


def test_help_lists_the_commands():
    out = subprocess.run([sys.executable, "-m", "sw.cli", "--help"], capture_output=True, text=True, check=True).stdout
    for command in ("compile", "run", "asm", "disasm", "sim"):
        assert command in out


def test_bad_choice_exits_2():
    with pytest.raises(SystemExit) as info:
        main(["compile", "x.mlir", "--emit", "llvm"])
    assert info.value.code == 2
