"""scripts/bench_core_only.py without the RTL: the CSV has one row per workload x caches x MSHRs,
and bad arguments exit 2 with a message."""

from __future__ import annotations

import csv
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "scripts"))
import bench_core_only  # noqa: E402


def test_core_only_rows_without_rtl(tmp_path, capsys):
    out = tmp_path / "b.csv"
    assert bench_core_only.main(["--size", "small", "--no-rtl", "--workloads", "eb_sum", "spmv_csr",
                                 "--mshrs", "4", "32", "--out", str(out)]) == 0
    rows = list(csv.DictReader(out.open()))
    assert [(r["workload"], r["caches"], r["mshrs"]) for r in rows] == [
        (w, c, m) for w in ("eb_sum", "spmv_csr") for c in ("caches", "none") for m in ("4", "32")]
    for r in rows:
        assert int(r["core_only_cycles"]) > 0 and int(r["mshr_peak"]) <= int(r["mshrs"])
    assert "| eb_sum | caches |" in capsys.readouterr().out


@pytest.mark.parametrize("argv,msg", [(["--mshrs", "0"], "--mshrs"),
                                      (["--workloads", "nope"], "--workloads"),
                                      (["--clock-ratio", "0"], "--clock-ratio"),
                                      (["--output-tokens", "64"],
                                       "output_tokens must be 1, 2, 4, 8, 16 or 32, not 64"),
                                      (["--memory-ports", "9"],
                                       "memory_ports must be an integer in 1..8, not 9"),
                                      (["--tokens-per-cycle", "0"],
                                       "tokens_per_cycle must be an int >= 1, not 0"),
                                      (["--max-inflight", "x"],
                                       "argument --max-inflight: invalid int value: 'x'"),
                                      (["--max-inflight", "48"], "--max-inflight 48: max_inflight "
                                       "must be a power of two >= 2, not 48"),
                                      (["--max-inflight", "0"], "--max-inflight 0: max_inflight "
                                       "must be a power of two >= 2, not 0"),
                                      # 5 run-ahead engines of at least 2 loads do not fit in 8
                                      (["--max-inflight", "8"], "--max-inflight 8: prefetchers * "
                                       "prefetch_depth must be at most max_inflight (8), not 10")])
def test_bad_arguments_exit_2(argv, msg, capsys):
    with pytest.raises(SystemExit) as e:
        bench_core_only.main(["--no-rtl", *argv])
    err = capsys.readouterr().err
    assert e.value.code == 2 and msg in err and "Traceback" not in err


def _ran(*_, **__):
    raise AssertionError("the script went on to run with a bad argument")


def test_a_bad_max_inflight_exits_before_the_core_only_runs(capsys, monkeypatch):
    monkeypatch.setattr(bench_core_only, "core_only_rows", _ran)
    monkeypatch.setattr(bench_core_only, "dae_rows", _ran)
    with pytest.raises(SystemExit) as e:
        bench_core_only.main(["--max-inflight", "3"])
    assert e.value.code == 2 and "--max-inflight 3: " in capsys.readouterr().err


@pytest.mark.parametrize("argv, named", [
    (["--max-inflight", "64"], "--max-inflight has"),
    (["--output-tokens", "16"], "--output-tokens has"),
    (["--memory-ports", "4"], "--memory-ports has"),
    (["--tokens-per-cycle", "16"], "--tokens-per-cycle has"),
    (["--level", "1"], "--level has"),
    (["--config", "configs/tmu_small.json"], "--config has"),
    (["--memory-ports", "4", "--max-inflight", "1024"], "--memory-ports, --max-inflight have"),
])
def test_dae_options_with_no_rtl_exit_2(argv, named, capsys, monkeypatch):
    """The unit's options (and the DAE side's other ones) are read only by the RTL runs: with
    --no-rtl they had no effect and the script said nothing. Now exit 2 naming them, no run."""
    monkeypatch.setattr(bench_core_only, "core_only_rows", _ran)
    monkeypatch.setattr(bench_core_only, "dae_rows", _ran)
    with pytest.raises(SystemExit) as e:
        bench_core_only.main(["--no-rtl", *argv])
    err = capsys.readouterr().err
    assert e.value.code == 2 and "Traceback" not in err
    assert f"error: {named} no effect with --no-rtl" in err


def test_options_that_matter_without_rtl_are_taken(capsys, monkeypatch, tmp_path):
    """--clock-ratio, --vector-bytes and --no-promote reach the core-only runs with --no-rtl, and
    --level/--config at their defaults (spelled out) are not refused."""
    calls = []

    def rows(workloads, size, memory, mshrs, **kw):
        calls.append(kw)
        return [dict(workload="eb_sum", **{"class": "embedding"}, caches=c, mshrs=8,
                     core_only_cycles=200, error="") for c in bench_core_only.CACHES]
    monkeypatch.setattr(bench_core_only, "core_only_rows", rows)
    monkeypatch.setattr(bench_core_only, "dae_rows", _ran)
    assert bench_core_only.main([
        "--no-rtl", "--workloads", "eb_sum", "--mshrs", "8", "--clock-ratio", "3",
        "--vector-bytes", "0", "--no-promote", "--level", "3",
        "--config", str(bench_core_only.REPO / "configs" / "tmu_rtl.json"),
        "--out", str(tmp_path / "c.csv")]) == 0
    assert calls == [dict(vector_bytes=0, clock_ratio=3, promote=False)]


@pytest.mark.parametrize("argv, changes", [
    ([], {}),
    (["--max-inflight", "1024"], {"max_inflight": 1024, "prefetch_depth": 32}),
    # the run-ahead engines' depth follows the lines in flight (TmuConfig.with_max_inflight)
    (["--max-inflight", "64", "--output-tokens", "16"],
     {"output_tokens": 16, "max_inflight": 64, "prefetch_depth": 8}),
])
def test_max_inflight_reaches_the_units_configuration(argv, changes, monkeypatch, tmp_path):
    """Every DAE run (flat, fitted, replayed core) is measured on the unit built with
    ``--max-inflight`` (``bench_compiler.measure``'s ``config_changes``); no RTL here: measure is
    replaced by one that records its arguments."""
    import dataclasses

    import bench_compiler
    from sw.runtime.isa import Limits
    calls = []

    def measure(workloads, levels, size, limits, **kw):
        calls.append(kw)
        return [dict(workload=w, rtl_cycles=100, core_cycles=50, dae_cycles=100, error="")
                for w in workloads]
    monkeypatch.setattr(bench_compiler, "measure", measure)
    monkeypatch.setattr(bench_core_only, "core_only_rows", lambda *_, **__: [
        dict(workload="eb_sum", **{"class": "embedding"}, caches=c, mshrs=8,
             core_only_cycles=200, error="") for c in bench_core_only.CACHES])
    assert bench_core_only.main(["--size", "small", "--workloads", "eb_sum", "--mshrs", "8",
                                 *argv, "--out", str(tmp_path / "c.csv")]) == 0
    assert [c["config_changes"] for c in calls] == [changes] * 3        # flat, fit, replay
    limits = Limits.from_file(bench_core_only.REPO / "configs" / "tmu_rtl.json")
    built = dataclasses.replace(bench_compiler.rtl_config_for(limits), **changes)
    assert built.max_inflight == changes.get("max_inflight", 512)
    import csv                      # the CSV says which unit ran (it looked like the default's)
    rows = list(csv.DictReader((tmp_path / "c.csv").open()))
    assert rows and all((int(r["dae_max_inflight"]), int(r["dae_output_tokens"]),
                         int(r["dae_memory_ports"])) == (built.max_inflight, built.output_tokens,
                                                         built.memory_ports) for r in rows)

