"""`ember compile` and `ember run` on a kernel written independently of the compiler's examples."""

import json
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


GATHER_INTO = str(Path(__file__).resolve().parent / "kernels" / "gather_rows_into.mlir")


@pytest.mark.parametrize("target", ["golden", pytest.param("rtl", marks=pytest.mark.rtl)])
def test_run_writes_the_output_argument_of_a_kernel_that_returns_nothing(tmp_path, capsys,
                                                                         target):
    """A destination-passing kernel (``out[j, :] = table[ids[j], :]``, no result): ``ember run``
    writes its output argument as ``arg2`` (the only memref the access unit does not read), bit
    for bit NumPy's gather, and nothing else."""
    from tb.seeds import fresh_seed
    rng = np.random.default_rng(fresh_seed("gather_rows_into"))
    table = rng.standard_normal((int(rng.integers(1, 40)), int(rng.integers(1, 20)))).astype(
        np.float32)
    ids = rng.integers(0, len(table), int(rng.integers(0, 30))).astype(np.int64)
    np.savez(tmp_path / "in.npz", arg0=table, arg1=ids,
             arg2=np.full((len(ids), table.shape[1]), np.nan, np.float32))
    assert main(["run", GATHER_INTO, "--inputs", str(tmp_path / "in.npz"), "--target", target,
                 "--out", str(tmp_path / "out.npz")]) == 0
    assert "results=0" in capsys.readouterr().out
    with np.load(tmp_path / "out.npz") as out:
        assert out.files == ["arg2"]
        np.testing.assert_array_equal(out["arg2"], table[ids])


@pytest.mark.rtl
def test_run_rtl_prints_cycles(tmp_path, capsys):
    expected = write_inputs(tmp_path / "in.npz")
    assert main(["run", KERNEL, "--inputs", str(tmp_path / "in.npz"), "--target", "rtl",
                 "--out", str(tmp_path / "out.npz")]) == 0
    assert "cycles=" in capsys.readouterr().out
    with np.load(tmp_path / "out.npz") as out:
        np.testing.assert_allclose(out["result0"], expected, rtol=1e-6)


@pytest.mark.rtl
@pytest.mark.parametrize("core, printed", [([], "core=replay execute_side_cycles="),
                                           (["--core", "fitted"], "core=fitted execute_side_cycles="),
                                           (["--core", "flat"], "core=flat")])
def test_run_rtl_coupled_prints_the_dae_cycles(tmp_path, capsys, core, printed):
    """``--coupled``: the core model pops DONE after the unit pushed it (DAE >= the unit's
    cycles); by default it replays the kernel's execute side, which ran on the core model."""
    expected = write_inputs(tmp_path / "in.npz")
    assert main(["run", KERNEL, "--inputs", str(tmp_path / "in.npz"), "--target", "rtl",
                 "--coupled", *core, "--out", str(tmp_path / "out.npz"),
                 "--stats", str(tmp_path / "stats.json")]) == 0
    out = capsys.readouterr().out
    cycles = int(out.split("cycles=")[1].split()[0])
    dae = int(out.split("dae_cycles=")[1].split()[0])
    assert cycles <= dae, out
    assert printed in out, out
    stats = json.loads((tmp_path / "stats.json").read_text())["core"]
    assert stats["model"] == printed.split()[0].split("=")[1] and stats["dae_cycles"] == dae
    if "execute_side_cycles=" in printed:
        assert int(out.split("execute_side_cycles=")[1].split()[0]) == stats["execute_side_cycles"] > 0
    else:
        assert stats["execute_side_cycles"] is None
    with np.load(tmp_path / "out.npz") as result:
        np.testing.assert_allclose(result["result0"], expected, rtol=1e-6)


@pytest.mark.parametrize("extra, message", [
    (["--target", "golden"], "--coupled applies to --target rtl only"),
    (["--target", "rtl", "--backpressure", "0.5"], "--backpressure 0.5 applies without --coupled"),
])
def test_run_coupled_refuses_what_it_cannot_do(tmp_path, capsys, extra, message):
    write_inputs(tmp_path / "in.npz")
    assert main(["run", KERNEL, "--inputs", str(tmp_path / "in.npz"), "--coupled", *extra,
                 "--out", str(tmp_path / "o.npz")]) == 2
    assert message in capsys.readouterr().err


def test_run_core_without_coupled_is_refused(tmp_path, capsys):
    write_inputs(tmp_path / "in.npz")
    assert main(["run", KERNEL, "--inputs", str(tmp_path / "in.npz"), "--target", "rtl",
                 "--core", "fitted", "--out", str(tmp_path / "o.npz")]) == 2
    assert "--core fitted chooses the core model of --coupled" in capsys.readouterr().err
    assert not (tmp_path / "o.npz").exists()


def test_run_reports_a_bad_index(tmp_path, capsys):
    write_inputs(tmp_path / "in.npz", bad_index=True)
    assert main(["run", KERNEL, "--inputs", str(tmp_path / "in.npz"), "--out", str(tmp_path / "o.npz")]) == 2
    assert capsys.readouterr().err == (
        f"ember: error: arg3 (idx)[2] = 9 is outside [0, 9): it indexes axis 0 of arg1 (tbl), which "
        f"has 9 entries (the load at {KERNEL}:13:7)\n")
    assert not (tmp_path / "o.npz").exists()


# Indices whose byte offset wraps past 2^64 once read another row (issue 8 item 2): the host
# checks every index before the unit runs, on either target, as the PyTorch path does.
@pytest.mark.parametrize("target", ["golden", pytest.param("rtl", marks=pytest.mark.rtl)])
@pytest.mark.parametrize("index, overflow", [
    (-1, ""), (-(2 ** 59), ""), (2 ** 59, ""),
    (2 ** 61 + 5, "; its byte offset 2305843009213693957 * 12 does not fit in 64 bits")])
def test_run_refuses_an_index_outside_the_table(tmp_path, capsys, index, overflow, target):
    write_inputs(tmp_path / "in.npz")
    with np.load(tmp_path / "in.npz") as npz:
        arrays = dict(npz)
    arrays["arg3"][3] = index
    np.savez(tmp_path / "in.npz", **arrays)
    assert main(["run", KERNEL, "--inputs", str(tmp_path / "in.npz"), "--target", target,
                 "--out", str(tmp_path / "o.npz")]) == 2
    assert capsys.readouterr().err == (
        f"ember: error: arg3 (idx)[3] = {index} is outside [0, 9): it indexes axis 0 of arg1 (tbl), "
        f"which has 9 entries (the load at {KERNEL}:13:7){overflow}\n")


@pytest.mark.parametrize("position, value", [(3, 5), (1, -2)])
def test_run_names_offsets_past_the_indices(tmp_path, capsys, position, value):
    """An offset past the end of (or before) the indices is blamed on the offsets (issue 8 item 7)."""
    write_inputs(tmp_path / "in.npz")
    with np.load(tmp_path / "in.npz") as npz:
        arrays = dict(npz)
    arrays["arg0"][position] = value
    np.savez(tmp_path / "in.npz", **arrays)
    assert main(["run", KERNEL, "--inputs", str(tmp_path / "in.npz"), "--out", str(tmp_path / "o.npz")]) == 2
    assert capsys.readouterr().err == (
        f"ember: error: arg0 (offs)[{position}] = {value} is outside [0, 4]: it is a bound of the loop "
        f"at {KERNEL}:12:5 whose index selects along axis 0 of arg3 (idx), which has 4 entries\n")


def test_run_with_an_output_narrower_than_the_table(tmp_path, capsys):
    """The row loop runs over the output's columns in this kernel; a table narrower than the
    output was an IndexError traceback with exit status 1 (issue 8 item 7)."""
    write_inputs(tmp_path / "in.npz")
    with np.load(tmp_path / "in.npz") as npz:
        arrays = dict(npz)
    arrays["arg2"] = np.zeros((3, 5), np.float32)
    np.savez(tmp_path / "in.npz", **arrays)
    assert main(["run", KERNEL, "--inputs", str(tmp_path / "in.npz"), "--out", str(tmp_path / "o.npz")]) == 2
    assert capsys.readouterr().err == (
        f"ember: error: arg1 (tbl) has 3 entries along axis 1, fewer than the loop at {KERNEL}:14:7 "
        f"that indexes it runs over (5, the size of arg2 (out) along axis 1)\n")


def test_run_example_with_an_output_narrower_than_the_table(tmp_path, capsys):
    """examples/embedding_bag_sum.mlir runs its row loop over the table's columns."""
    example = str(Path(__file__).resolve().parents[2] / "examples" / "embedding_bag_sum.mlir")
    table = np.ones((4, 8), np.float32)
    np.savez(tmp_path / "in.npz", arg0=table, arg1=np.array([1, 2], np.int64),
             arg2=np.array([0, 2], np.int64), arg3=np.zeros((1, 4), np.float32))
    assert main(["run", example, "-O3", "--inputs", str(tmp_path / "in.npz"), "--out", str(tmp_path / "o.npz")]) == 2
    assert capsys.readouterr().err == (
        f"ember: error: arg3 (out) has 4 entries along axis 1, fewer than the loop at {example}:12:7 "
        f"that indexes it runs over (8, the size of arg0 (table) along axis 1)\n")


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


# `ember run --memory/--stats` (issue 10): a user measures their own kernel.
def test_run_stats_on_the_golden_model(tmp_path, capsys):
    import json
    write_inputs(tmp_path / "in.npz")
    assert main(["run", KERNEL, "--inputs", str(tmp_path / "in.npz"), "--out", str(tmp_path / "o.npz"),
                 "--stats", str(tmp_path / "stats.json")]) == 0
    assert f"stats -> {tmp_path / 'stats.json'}" in capsys.readouterr().out
    report = json.loads((tmp_path / "stats.json").read_text())
    # 4 lookups of 3-wide f32 rows at -O0: one index, two offsets per bag... counted by the golden model
    assert report["target"] == "golden" and report["kernel"] == "bag" and report["cycles"] is None
    assert report["unit"]["bytes_loaded"] == 4 * 3 * 4 + 4 * 8 + 2 * 3 * 8
    assert report["execute"] == {"operands": 3 * 4 * 3, "callbacks": {"0": 12}}
    assert report["memory"] is None


def test_run_memory_needs_the_rtl_target(tmp_path, capsys):
    write_inputs(tmp_path / "in.npz")
    assert main(["run", KERNEL, "--inputs", str(tmp_path / "in.npz"), "--out", str(tmp_path / "o.npz"),
                 "--memory", "HBM2"]) == 2
    assert capsys.readouterr().err == ("ember: error: --memory HBM2 applies to --target rtl only "
                                       "(the golden model has no timing)\n")
    with pytest.raises(SystemExit) as info:
        main(["run", KERNEL, "--inputs", "x.npz", "--out", "o.npz", "--memory", "DDR4"])
    assert info.value.code == 2


def test_run_stats_to_an_unwritable_file(tmp_path, capsys):
    write_inputs(tmp_path / "in.npz")
    bad = str(tmp_path / "missing" / "stats.json")
    assert main(["run", KERNEL, "--inputs", str(tmp_path / "in.npz"), "--out", str(tmp_path / "o.npz"),
                 "--stats", bad]) == 2
    assert capsys.readouterr().err == (f"ember: error: --stats {bad!r}: directory "
                                       f"{str(tmp_path / 'missing')!r} does not exist\n")
    assert not (tmp_path / "o.npz").exists()          # refused before the run, nothing written


@pytest.mark.rtl
def test_run_rtl_stats_with_the_simple_memory(tmp_path, capsys):
    import json
    expected = write_inputs(tmp_path / "in.npz")
    assert main(["run", KERNEL, "--inputs", str(tmp_path / "in.npz"), "--target", "rtl", "--memory", "simple",
                 "--out", str(tmp_path / "out.npz"), "--stats", str(tmp_path / "stats.json")]) == 0
    report = json.loads((tmp_path / "stats.json").read_text())
    assert report["target"] == "rtl" and report["cycles"] > 0
    assert f"cycles={report['cycles']}" in capsys.readouterr().out
    assert report["unit"]["bytes_loaded"] == 4 * 3 * 4 + 4 * 8 + 2 * 3 * 8     # as on the golden model
    memory = report["memory"]
    assert memory["preset"] == "simple"
    reads = sum(memory["statistics"]["read_latency_hist"])
    assert reads > 0 and memory["summary"]["reads"] == reads
    assert memory["summary"]["bytes_per_cycle"] == memory["summary"]["bytes"] / report["cycles"]
    assert memory["summary"]["lat_min"] == 32                        # the simple preset's fixed latency
    with np.load(tmp_path / "out.npz") as out:
        np.testing.assert_allclose(out["result0"], expected, rtol=1e-6)
