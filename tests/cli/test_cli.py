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


def _bag_inputs(tmp_path):
    import numpy as np
    table = np.arange(15, dtype=np.float32).reshape(5, 3)
    np.savez(tmp_path / "in.npz", arg0=table, arg1=np.array([4, 0, 4], np.int64),
             arg2=np.array([0, 1, 3], np.int64), arg3=np.zeros((2, 3), np.float32))
    return table, str(tmp_path / "in.npz")


def test_run_writes_exactly_the_out_path(tmp_path):
    """np.savez(path) would add '.npz' to a path without it and the command would name a file it
    did not write."""
    import numpy as np
    table, inputs = _bag_inputs(tmp_path)
    out = tmp_path / "result.bin"
    assert main(["run", EXAMPLE, "--inputs", inputs, "--out", str(out)]) == 0
    assert not (tmp_path / "result.bin.npz").exists()
    with np.load(out) as got:
        np.testing.assert_array_equal(got["result0"], np.stack([table[4], table[0] + table[4]]))


@pytest.mark.parametrize("argv, message", [
    (["--backpressure", "2", "--target", "rtl"], "--backpressure must be a probability in [0, 1), not 2.0"),
    (["--backpressure", "-1"], "--backpressure must be a probability in [0, 1), not -1.0"),
    (["--backpressure", "nan", "--target", "rtl"], "--backpressure must be a probability in [0, 1), not nan"),
    (["--backpressure", "0.5"], "--backpressure 0.5 applies to --target rtl only"),
    (["--seed", "3"], "--seed 3 applies to --target rtl only"),
])
def test_run_refuses_backpressure_out_of_range_or_without_the_rtl(tmp_path, capsys, argv, message):
    """Refused before anything is compiled or run (no RTL build): exit 2, the option named."""
    _, inputs = _bag_inputs(tmp_path)
    assert main(["run", EXAMPLE, "--inputs", inputs, "--out", str(tmp_path / "o.npz"), *argv]) == 2
    assert message in capsys.readouterr().err
    assert not (tmp_path / "o.npz").exists()


def test_an_output_path_that_cannot_be_a_file_is_refused_before_the_run(tmp_path, capsys):
    _, inputs = _bag_inputs(tmp_path)
    assert main(["run", EXAMPLE, "--inputs", inputs, "--out", str(tmp_path)]) == 2
    assert f"--out {str(tmp_path)!r} is a directory" in capsys.readouterr().err
    assert main(["run", EXAMPLE, "--inputs", inputs, "--out", str(tmp_path / "o.npz"),
                 "--stats", str(tmp_path / "no" / "s.json")]) == 2
    assert f"--stats {str(tmp_path / 'no' / 's.json')!r}: directory" in capsys.readouterr().err
    assert not (tmp_path / "o.npz").exists()
    assert main(["compile", EXAMPLE, "--emit", "asm", "-o", str(tmp_path)]) == 2
    assert f"-o {str(tmp_path)!r} is a directory" in capsys.readouterr().err


@pytest.mark.parametrize("text, kind", [("[1, 2]", "list"), ('"tmu_rtl"', "str"), ("3", "int")])
def test_a_tmu_config_that_is_not_a_json_object_is_refused(tmp_path, capsys, text, kind):
    (tmp_path / "c.json").write_text(text)
    assert main(["compile", EXAMPLE, "--emit", "asm", "--tmu-config", str(tmp_path / "c.json")]) == 2
    assert f"c.json must be a JSON object, not {kind}" in capsys.readouterr().err


@pytest.mark.parametrize("dlc_pass", ["hoist-streams", "align-queues"])
def test_dlc_passes_leave_a_function_not_in_dlc_form_alone(dlc_pass, capsys):
    """As the other DLC passes do (segment-callbacks, replace-to-val-ops, ...): the SCF input is
    printed unchanged, exit 0 (it raised StopIteration)."""
    from sw.compiler.opt import run_passes
    text = open(EXAMPLE).read()
    assert main(["opt", EXAMPLE, "--passes", dlc_pass]) == 0
    assert capsys.readouterr().out == run_passes(text, ())


def _not_text(tmp_path):
    path = tmp_path / "prog.bin"
    path.write_bytes(b"UM\x00\xff\x01\x02")         # 0xff is never UTF-8: offset 3
    return str(path)


@pytest.mark.parametrize("argv, what", [
    (["compile", "{f}", "--emit", "asm"], "KERNEL"),
    (["opt", "{f}", "--passes", "move-to-callback"], "FILE.mlir"),
    (["asm", "{f}", "-o", "{d}/x.bin"], "PROGRAM.s"),
])
def test_a_file_that_is_not_text_is_refused_naming_the_argument(tmp_path, capsys, argv, what):
    """A binary file given as the text input: exit 2 naming the argument and the file (was
    "'utf-8' codec can't decode byte ..." with neither; ember asm called its input KERNEL)."""
    f = _not_text(tmp_path)
    assert main([a.format(f=f, d=tmp_path) for a in argv]) == 2
    assert capsys.readouterr().err == f"ember: error: {what} {f!r} is not UTF-8 text (byte 0xff at offset 3)\n"
    assert not (tmp_path / "x.bin").exists()


def test_a_tmu_config_that_is_not_text_is_refused(tmp_path, capsys):
    f = _not_text(tmp_path)
    assert main(["compile", EXAMPLE, "--emit", "asm", "--tmu-config", f]) == 2
    assert capsys.readouterr().err == (f"ember: error: --tmu-config: {f}: not valid JSON: "
                                       f"not UTF-8 text (byte 0xff at offset 3)\n")


def test_inputs_that_are_not_an_npz_archive_are_refused_naming_it(tmp_path, capsys):
    """--inputs given a .npy, a text file or an archive holding an object array: exit 2 naming
    --inputs (was numpy's message alone: "'numpy.ndarray' object does not support the context
    manager protocol", "This file contains pickled (object) data ...")."""
    import numpy as np
    table, inputs = _bag_inputs(tmp_path)
    out = str(tmp_path / "o.npz")
    np.save(tmp_path / "t.npy", table)
    (tmp_path / "t.txt").write_text("arg0 = 1\n")
    for name in ("t.npy", "t.txt"):
        path = str(tmp_path / name)
        assert main(["run", EXAMPLE, "--inputs", path, "--out", out]) == 2
        assert capsys.readouterr().err == (f"ember: error: --inputs {path!r} is not an .npz archive "
                                           f"(numpy.savez's format)\n")
    with np.load(inputs) as npz:
        arrays = dict(npz)
    arrays["arg1"] = np.array([{"row": 4}], dtype=object)
    np.savez(tmp_path / "obj.npz", **arrays)
    path = str(tmp_path / "obj.npz")
    assert main(["run", EXAMPLE, "--inputs", path, "--out", out]) == 2
    assert capsys.readouterr().err.startswith(f"ember: error: --inputs {path!r}: arg1 cannot be read: ")
    assert not (tmp_path / "o.npz").exists()


def test_run_refuses_offsets_one_entry_short_before_the_unit_runs(tmp_path, capsys):
    """The bag loop reads offsets[b + 1]: 2 bags need 3 offsets. Given 2 (PyTorch's offsets
    without the last), the run stopped at the unit's ADDR_RANGE fault naming 'offsets' but not
    the rule; now the host check refuses it (exit 2) with both lengths and writes nothing."""
    import numpy as np
    _, inputs = _bag_inputs(tmp_path)
    with np.load(inputs) as npz:
        arrays = dict(npz)
    arrays["arg2"] = arrays["arg2"][:2]
    np.savez(tmp_path / "short.npz", **arrays)
    out = tmp_path / "o.npz"
    assert main(["run", EXAMPLE, "--inputs", str(tmp_path / "short.npz"), "--out", str(out),
                 "--target", "golden"]) == 2
    assert capsys.readouterr().err == (
        f"ember: error: arg2 (offsets) has 2 entries along axis 0, fewer than the 3 that the loop at "
        f"{EXAMPLE}:6:3 reads (it runs over 2, the size of arg3 (out) along axis 0, and reads entry i + 1)\n")
    assert not out.exists()


@pytest.mark.parametrize("argv, message", [
    (["--seed", "-1"], "--seed must be an integer >= 0, not -1"),      # was numpy's "expected non-negative integer"
    (["--nodes", "-3"], "--nodes must be >= 0 (0: all), not -3"),      # was "in [1, 2708]", though 0 is allowed
])
def test_sim_refuses_a_negative_seed_or_nodes_naming_the_option(argv, message, capsys, monkeypatch):
    """Refused before the graph is read or anything runs (the golden target; no RTL)."""
    import sim.main_job as main_job

    def ran(*_, **__):
        raise AssertionError("ember sim went on with a bad argument")
    monkeypatch.setattr(main_job, "_graph", ran)
    monkeypatch.setattr(main_job, "_run", ran)
    assert main(["sim", "--target", "golden", *argv]) == 2
    assert capsys.readouterr().err == f"ember: error: {message}\n"


def test_sim_reads_kernel_and_tmu_config_before_any_work(tmp_path, capsys, monkeypatch):
    """A missing --tmu-config was "[Errno 2] ..." without the option's name, and both files were
    read only after the graph (and, on the RTL target, the core-only baseline's process)."""
    import sim.main_job as main_job

    def ran(*_, **__):
        raise AssertionError("ember sim went on with a bad argument")
    monkeypatch.setattr(main_job, "_graph", ran)
    monkeypatch.setattr(main_job, "_run", ran)
    config, kernel = str(tmp_path / "nosuch.json"), str(tmp_path / "nosuch.mlir")
    assert main(["sim", "--target", "golden", "--tmu-config", config]) == 2
    assert capsys.readouterr().err == f"ember: error: --tmu-config: [Errno 2] No such file or directory: {config!r}\n"
    assert main(["sim", "--target", "golden", "--kernel", kernel]) == 2
    assert capsys.readouterr().err == f"ember: error: --kernel {kernel!r} does not exist\n"
