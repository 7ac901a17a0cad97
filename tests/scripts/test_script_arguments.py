"""Bad arguments of the benchmark scripts: exit status 2 and a message naming the option and its
value, before any run (argument parsing only; nothing here builds or runs the RTL).

Each script's heavy entry points are replaced by a function that fails the test, so a check that
is missing shows as a failure, never as a long run. Before these checks a negative ``--seed``
reached ``numpy.random.default_rng`` ("expected non-negative integer", a traceback), ``sweep.py
--levels x`` was an ``int()`` traceback, ``--jobs 0`` went on to the grid, ``--replot`` of a
missing file was a ``FileNotFoundError`` traceback, and ``bench_slice.py`` ran with ``--nodes -4``
(all but the last 4 bags) or failed in ``node_features`` with ``--dims -4``."""

from __future__ import annotations

import pytest

from script_under_test import load_script


def _ran(*_, **__):
    raise AssertionError("the script went on to run with a bad argument")


def _exits_2(module, argv, message, capsys):
    with pytest.raises(SystemExit) as e:
        module.main(argv)
    assert e.value.code == 2
    err = capsys.readouterr().err
    assert err.rstrip().endswith(f"error: {message}"), err
    assert "Traceback" not in err


@pytest.mark.parametrize("argv, message", [
    (["--ceiling-only", "--seed", "-1"], "--seed must be an integer >= 0, not -1"),
    (["--replot", "/nonexistent/runs.csv"], "--replot '/nonexistent/runs.csv' does not exist or is not a file"),
])
def test_bench_bandwidth(argv, message, capsys, monkeypatch, tmp_path):
    bench = load_script("bench_bandwidth")
    for name in ("case_args", "memory_ceiling", "unit_run", "plot", "read_csv"):
        monkeypatch.setattr(bench, name, _ran)
    _exits_2(bench, [*argv, "--out", str(tmp_path / "bw")], message, capsys)


def test_bench_multiunit_negative_seed(capsys, monkeypatch, tmp_path):
    bench = load_script("bench_multiunit")
    monkeypatch.setattr(bench, "call_args", _ran)
    monkeypatch.setattr(bench, "run_point", _ran)
    _exits_2(bench, ["--model-only", "--seed", "-2", "--csv", str(tmp_path / "m.csv")],
             "--seed must be an integer >= 0, not -2", capsys)


def test_bench_mapping_negative_seed(capsys, monkeypatch, tmp_path):
    import sw.runtime.mapping as mapping
    bench = load_script("bench_mapping")
    monkeypatch.setattr(mapping, "table_set", _ran)
    _exits_2(bench, ["--seed", "-1", "--csv", str(tmp_path / "m.csv")],
             "--seed must be an integer >= 0, not -1", capsys)


def test_bench_hbm_negative_seed(capsys, monkeypatch, tmp_path):
    import hw.hbm_model.reference as reference
    bench = load_script("bench_hbm")
    monkeypatch.setattr(reference, "run_requests", _ran)
    _exits_2(bench, ["--seed", "-3", "--csv", str(tmp_path / "h.csv")],
             "--seed must be an integer >= 0, not -3", capsys)


@pytest.mark.parametrize("argv, message", [
    (["--levels", "x"], "--levels: 'x': levels are 0, 1, 2, 3"),
    (["--levels", "1,y"], "--levels: '1,y': levels are 0, 1, 2, 3"),
    (["--jobs", "0"], "--jobs must be a positive integer, not 0"),
    (["--jobs", "-2"], "--jobs must be a positive integer, not -2"),
])
def test_sweep(argv, message, capsys, monkeypatch, tmp_path):
    sweep = load_script("sweep")
    monkeypatch.setattr(sweep, "run_grid", _ran)
    _exits_2(sweep, [*argv, "--out", str(tmp_path / "s.csv")], message, capsys)


@pytest.mark.parametrize("argv, message", [
    (["--dims", "8", "-4"], "--dims must be positive, not -4"),
    (["--nodes", "-4"], "--nodes must be >= 0 (0: all), not -4"),
    (["--nodes", "2709"], "--nodes must be at most Cora's 2708 nodes, not 2709"),
])
def test_bench_slice(argv, message, capsys, monkeypatch, tmp_path):
    import sw.runtime.drivers as drivers
    monkeypatch.setattr(drivers, "run_kernel", _ran)
    bench = load_script("bench_slice")
    _exits_2(bench, [*argv, "--target", "golden", "--csv", str(tmp_path / "s.csv")], message, capsys)


def test_bench_hbm_unknown_preset(capsys, monkeypatch, tmp_path):
    """Was a ValueError traceback from get_preset (exit 1) after the argument parsing."""
    import hw.hbm_model.reference as reference
    bench = load_script("bench_hbm")
    monkeypatch.setattr(reference, "run_requests", _ran)
    _exits_2(bench, ["--presets", "HBM2", "HBM9", "--csv", str(tmp_path / "h.csv")],
             "argument --presets: invalid choice: 'HBM9' (choose from 'HBM2', 'HBM3', 'simple')", capsys)


@pytest.mark.parametrize("option", ["--tables", "--bags", "--median-rows", "--max-rows"])
def test_bench_mapping_sizes_name_the_option_and_value(option, capsys, monkeypatch, tmp_path):
    """Was one message for the four options, naming no value."""
    import sw.runtime.mapping as mapping
    bench = load_script("bench_mapping")
    monkeypatch.setattr(mapping, "table_set", _ran)
    _exits_2(bench, [option, "-1", "--csv", str(tmp_path / "m.csv")], f"{option} must be >= 1, not -1", capsys)


def test_bench_core_only_missing_config_before_the_core_only_runs(capsys, monkeypatch, tmp_path):
    """--config is read by the DAE runs, which came after the core-only model's (minutes at the
    full size): a missing file was an error only then."""
    bench = load_script("bench_core_only")
    monkeypatch.setattr(bench, "core_only_rows", _ran)
    monkeypatch.setattr(bench, "dae_rows", _ran)
    missing = str(tmp_path / "nosuch.json")
    _exits_2(bench, ["--config", missing, "--out", str(tmp_path / "c.csv")],
             f"--config: [Errno 2] No such file or directory: {missing!r}", capsys)
