"""`ember compile` and `ember run` on a kernel written independently of the compiler's examples."""

from pathlib import Path

import numpy as np
import pytest
import torch

from sw.cli import main

KERNEL = str(Path(__file__).resolve().parent / "kernels" / "foreign_bag_f32.mlir")


def write_inputs(path, *, bad_index=False):
    rng = np.random.default_rng(0)
    table = rng.standard_normal((9, 3)).astype(np.float32)
    indices = np.array([8, 8, 0, 4], dtype=np.int64)
    offsets = np.array([0, 2, 2, 4], dtype=np.int64)
    expected = torch.nn.functional.embedding_bag(torch.from_numpy(indices), torch.from_numpy(table),
                                                 torch.from_numpy(offsets[:-1]), mode="sum").numpy()
    if bad_index:
        indices[2] = 9                                     # one past the last row
    # foreign_bag_f32 takes (offsets, table, out, indices)
    np.savez(path, arg0=offsets, arg1=table, arg2=np.zeros((3, 3), np.float32), arg3=indices)
    return expected


@pytest.mark.parametrize("stage", ["scf", "slc", "dlc", "asm"])
def test_compile_prints_each_stage(stage, capsys):
    assert main(["compile", KERNEL, "--emit", stage]) == 0
    out = capsys.readouterr().out
    marker = {"scf": "scf.for", "slc": "slc.", "dlc": "dlc.", "asm": "layer 0"}[stage]
    assert marker in out


def test_compile_bin_round_trips_through_disasm(tmp_path, capsys):
    assert main(["compile", KERNEL, "--emit", "bin", "-o", str(tmp_path / "k.bin")]) == 0
    assert main(["compile", KERNEL, "--emit", "asm", "-o", str(tmp_path / "k.s")]) == 0
    capsys.readouterr()
    assert main(["disasm", str(tmp_path / "k.bin")]) == 0
    assert capsys.readouterr().out == (tmp_path / "k.s").read_text()


def test_run_golden(tmp_path, capsys):
    expected = write_inputs(tmp_path / "in.npz")
    assert main(["run", KERNEL, "--inputs", str(tmp_path / "in.npz"), "--target", "golden",
                 "--out", str(tmp_path / "out.npz")]) == 0
    with np.load(tmp_path / "out.npz") as out:
        assert out.files == ["result0"]
        np.testing.assert_allclose(out["result0"], expected, rtol=1e-6)


@pytest.mark.rtl
def test_run_rtl_prints_cycles(tmp_path, capsys):
    expected = write_inputs(tmp_path / "in.npz")
    assert main(["run", KERNEL, "--inputs", str(tmp_path / "in.npz"), "--target", "rtl",
                 "--out", str(tmp_path / "out.npz")]) == 0
    assert "cycles=" in capsys.readouterr().out
    with np.load(tmp_path / "out.npz") as out:
        np.testing.assert_allclose(out["result0"], expected, rtol=1e-6)


def test_run_reports_a_bad_index(tmp_path, capsys):
    write_inputs(tmp_path / "in.npz", bad_index=True)
    assert main(["run", KERNEL, "--inputs", str(tmp_path / "in.npz"), "--out", str(tmp_path / "o.npz")]) == 2
    assert "ADDR_RANGE" in capsys.readouterr().err
    assert not (tmp_path / "o.npz").exists()


def test_run_reports_a_missing_argument(tmp_path, capsys):
    np.savez(tmp_path / "in.npz", arg0=np.zeros(2, np.int64))
    assert main(["run", KERNEL, "--inputs", str(tmp_path / "in.npz"), "--out", str(tmp_path / "o.npz")]) == 2
    assert capsys.readouterr().err.endswith("must hold arrays arg0..arg3; missing arg1, arg2, arg3 (has arg0)\n")


def test_unsupported_op_is_reported_with_location(tmp_path, capsys):
    bad = tmp_path / "while.mlir"
    bad.write_text("""func.func @f(%a: memref<?xf32>) {
  %c0 = arith.constant 0 : index
  scf.while : () -> () {
    %t = arith.constant true
    scf.condition(%t)
  } do {
    scf.yield
  }
  return
}
""")
    assert main(["compile", str(bad), "--emit", "slc"]) == 2
    err = capsys.readouterr().err
    assert "scf.while" in err and "3:" in err
