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


# Defaults: what the RTL builds (configs/tmu_rtl.json), as `make sim` uses (issue 8 item 5).
EXAMPLE = str(__import__("pathlib").Path(__file__).resolve().parents[2] / "examples" / "embedding_bag_sum.mlir")


def _v0_config(tmp_path):
    """A version-0-only configuration (the former default, sw.runtime.isa.Limits())."""
    from sw.runtime.isa import Limits
    path = tmp_path / "tmu_v0.json"
    Limits(name="tmu_v0").to_file(path)
    return str(path)


def test_compile_O3_and_disasm_default_to_the_rtl_configuration(tmp_path, capsys):
    assert main(["compile", EXAMPLE, "-O3", "--emit", "bin", "-o", str(tmp_path / "k.bin")]) == 0
    assert main(["compile", EXAMPLE, "-O3", "--emit", "asm", "-o", str(tmp_path / "k.s")]) == 0
    capsys.readouterr()
    assert main(["disasm", str(tmp_path / "k.bin")]) == 0
    assert capsys.readouterr().out == (tmp_path / "k.s").read_text()
    # the same bytes for a version-0 unit: refused as its decoder would
    assert main(["disasm", str(tmp_path / "k.bin"), "--tmu-config", _v0_config(tmp_path)]) == 2
    assert capsys.readouterr().err == "ember: error: word 1: version must be 0, not 1 (fault BAD_VERSION)\n"


def test_compile_O3_for_an_explicit_v0_configuration_is_refused(tmp_path, capsys):
    assert main(["compile", EXAMPLE, "-O3", "--tmu-config", _v0_config(tmp_path)]) == 2
    assert "the kernel needs ISA version 1" in capsys.readouterr().err


def test_run_O3_defaults_to_the_rtl_configuration(tmp_path, capsys):
    import numpy as np
    rng = np.random.default_rng(0)
    table = rng.standard_normal((5, 3)).astype(np.float32)
    np.savez(tmp_path / "in.npz", arg0=table, arg1=np.array([4, 0, 4], np.int64),
             arg2=np.array([0, 1, 3], np.int64), arg3=np.zeros((2, 3), np.float32))
    assert main(["run", EXAMPLE, "-O3", "--inputs", str(tmp_path / "in.npz"),
                 "--out", str(tmp_path / "out.npz")]) == 0
    with np.load(tmp_path / "out.npz") as out:
        np.testing.assert_array_equal(out["result0"], np.stack([table[4], table[0] + table[4]]))


def test_compile_mlir_and_compile_torch_default_to_the_rtl_configuration():
    import torch

    from sw.api import compile_torch
    from sw.compiler import compile_mlir
    from sw.compiler.pipelines import default_limits
    from sw.runtime.isa import Limits
    kernel = compile_mlir(open(EXAMPLE).read(), opt_level=3)
    assert kernel.limits == Limits.from_file("configs/tmu_rtl.json") == default_limits()
    assert kernel.program.version == 1
    bag = torch.nn.EmbeddingBag(10, 4, mode="sum")
    op = compile_torch(bag, (torch.tensor([1, 2, 2]), torch.tensor([0, 1])), opt_level=3)
    assert op.kernel.limits.name == "tmu_rtl"
    with torch.no_grad():
        expected = bag(torch.tensor([1, 2, 2]), torch.tensor([0, 1]))
    assert torch.equal(op(torch.tensor([1, 2, 2]), torch.tensor([0, 1])), expected)
