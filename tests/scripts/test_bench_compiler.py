"""scripts/bench_compiler.py without the RTL: the CSV it writes, checked against the golden model
and the core cost model recomputed by hand (the RTL path is exercised by running the script with
``--rtl``; docs/performance.md)."""

from __future__ import annotations

import csv
import warnings
from pathlib import Path

import pytest

from script_under_test import load_script

REPO = Path(__file__).resolve().parents[2]


def _load():
    return load_script("bench_compiler")


bench = _load()


def _read(path: Path) -> tuple[list[str], list[dict]]:
    with path.open(newline="") as f:
        r = csv.DictReader(f)
        return list(r.fieldnames), list(r)


def test_golden_levels_0_and_3_csv(tmp_path, capsys):
    out = tmp_path / "bench.csv"
    assert bench.main(["--size", "small", "--levels", "0", "3", "--out", str(out)]) == 0
    fields, rows = _read(out)
    assert fields == bench.FIELDS
    from sw.workloads import WORKLOADS
    assert [(r["workload"], int(r["level"])) for r in rows] == \
        [(w, lv) for w in WORKLOADS for lv in (0, 3)]
    by = {(r["workload"], int(r["level"])): r for r in rows}
    for name in WORKLOADS:
        o0, o3 = by[name, 0], by[name, 3]
        assert o0["error"] == o3["error"] == ""
        assert int(o0["isa"]) == 0 and int(o3["isa"]) in (0, 1)
        tok0 = int(o0["data_tokens"]) + int(o0["control_tokens"])
        tok3 = int(o3["data_tokens"]) + int(o3["control_tokens"])
        assert tok3 <= tok0, name
        assert float(o3["token_speedup"]) == pytest.approx(tok0 / tok3)
        assert float(o0["token_speedup"]) == 1.0
        for r in (o0, o3):
            lookups = int(r["lookups"])
            assert float(r["data_per_lookup"]) == pytest.approx(int(r["data_tokens"]) / lookups)
            assert int(r["descriptors"]) >= int(r["layers"]) + int(r["streams"]) + int(r["actions"])
            # CoreCostModel defaults: 2 (dispatch) + 4 (body) per callback, ceil(k / 8) for a
            # callback popping k operands; the control stream ends with one DONE token that runs
            # no callback. From the totals: ceil(data / 8) <= sum ceil(k / 8) <= data
            calls, data = int(r["control_tokens"]) - 1, int(r["data_tokens"])
            assert 6 * calls + -(-data // 8) <= int(r["core_cycles"]) <= 6 * calls + data, name
            assert r["rtl_cycles"] == r["dae_cycles"] == r["rtl_speedup"] == ""
    # the -O0 token counts of EmbeddingBag sum recomputed from its inputs: per gathered element
    # one operand each for the bag id, the column and the value, and one control token (the
    # callback), plus one DONE token
    w = WORKLOADS["eb_sum"]
    args = w.make("small", 0)
    elements = len(args[1]) * args[0].shape[1]
    assert int(by["eb_sum", 0]["data_tokens"]) == 3 * elements
    assert int(by["eb_sum", 0]["control_tokens"]) == elements + 1
    # ... and each of its callbacks pops its 3 operands in one cycle of 8: 7 cycles per callback
    assert int(by["eb_sum", 0]["core_cycles"]) == 7 * elements
    text = capsys.readouterr().out
    assert "-O3 over -O0, tokens" in text and "geomean" in text


def test_fit_gives_each_kernel_the_rate_of_its_execute_side_on_the_core_model():
    """``fit``: every level gets the rate fitted to the execute side's cycles on the core-only
    baseline's core (the estimate within half a cycle per callback, or the 1-cycle floor)."""
    from sw.runtime.isa import Limits
    limits = Limits.from_file(REPO / "configs" / "tmu_rtl.json")
    rows = bench.measure(["eb_sum"], [0, 1, 3], "small", limits, fit=True)
    by = {r["level"]: r for r in rows}
    for level in (0, 1, 3):
        r = by[level]
        assert r["core_rate"] == "fitted" and r["fitted_cycles_per_control"] >= 1
        callbacks = r["control_tokens"] - 1
        assert (r["fitted_cycles_per_control"] == 1
                or abs(r["core_cycles"] - r["execute_ooo_cycles"]) <= callbacks / 2 + 1), r


def test_replay_gives_each_kernel_its_execute_side_callback_by_callback():
    """``replay``: every level's core replays the execute side's run on the core-only baseline's
    core: its estimate at least the data tokens at 16 per cycle and at least that run's cycles
    less its start (a few cycles before the first control pop retires)."""
    from sw.runtime.isa import Limits
    limits = Limits.from_file(REPO / "configs" / "tmu_rtl.json")
    rows = bench.measure(["eb_sum"], [0, 3], "small", limits, replay=True)
    for r in rows:
        assert r["core_rate"] == "replay" and "fitted_cycles_per_control" not in r, r
        assert r["core_cycles"] >= max(-(-r["data_tokens"] // 16), r["execute_ooo_cycles"] - 20), r


def test_fit_and_replay_are_one_or_the_other(capsys):
    with pytest.raises(SystemExit) as e:
        bench.main(["--fit", "--replay"])
    assert e.value.code == 2 and "--fit and --replay" in capsys.readouterr().err


def test_compile_error_becomes_a_row(tmp_path):
    """tmu_small has 3 regions; SpMV needs 4: the row carries the compiler's resource message."""
    out = tmp_path / "bench.csv"
    assert bench.main(["--levels", "0", "--workloads", "spmv_csr", "eb_sum", "--config",
                       str(REPO / "configs" / "tmu_small.json"), "--out", str(out)]) == 0
    _, rows = _read(out)
    by = {r["workload"]: r for r in rows}
    assert by["spmv_csr"]["error"] == ("does not compile for tmu_small: the kernel does not fit the "
                                       "access unit: it needs 4 regions, the unit has 3 "
                                       "(Limits.regions)")
    assert by["spmv_csr"]["data_tokens"] == ""
    assert by["eb_sum"]["error"] == "" and int(by["eb_sum"]["data_tokens"]) > 0


def test_geomean_and_summary():
    assert bench.geomean([2.0, 8.0]) == pytest.approx(4.0)
    with pytest.raises(ValueError, match=r"^values must be a non-empty sequence of positive "
                                         r"numbers, not \[\]$"):
        bench.geomean([])
    rows = [dict(level=3, token_speedup=2.0, core_speedup=None),
            dict(level=3, token_speedup=8.0, core_speedup=3.0)]
    s = {x["metric"]: x for x in bench.summary(rows, [0, 3])}
    assert set(s) == {"token", "core"}
    assert s["token"]["geomean"] == pytest.approx(4.0) and s["token"]["n"] == 2
    assert s["core"]["min"] == s["core"]["max"] == 3.0


def test_rtl_config_for():
    from hw.tmu import TmuConfig
    from sw.runtime.isa import Limits
    assert bench.rtl_config_for(Limits.from_file(REPO / "configs" / "tmu_rtl.json")) == TmuConfig()
    with pytest.raises(ValueError, match=r"^config 'tmu_vector' cannot be built as RTL: "
                                         r"streams_per_layer must be None, not 16$"):
        bench.rtl_config_for(Limits.from_file(REPO / "configs" / "tmu_vector.json"))


@pytest.mark.parametrize("argv, message", [
    (["--levels", "4"], "--levels must be in 0..3, not 4"),
    (["--workloads", "nope"], "--workloads must name workloads of sw.workloads"),
    (["--memory", "HBM2"], "--memory HBM2 needs --rtl"),
])
def test_bad_arguments(argv, message, capsys):
    with pytest.raises(SystemExit) as e:
        bench.main(argv)
    assert e.value.code == 2
    assert message in capsys.readouterr().err


@pytest.mark.rtl
def test_rtl_rows_of_the_chained_benchmarks_carry_the_output_bound():
    """The report's ``chained`` step on small inputs: benchmark-only workloads are accepted, every
    run is checked (tokens against the golden model, results against the references), and the
    output bound is the data tokens at the build's 8 tokens per cycle, which the unit cannot beat."""
    from sw.runtime.isa import Limits
    limits = Limits.from_file(REPO / "configs" / "tmu_rtl.json")
    rows = bench.measure(["hashed_gather", "csr_of_csr"], [3], "small", limits, rtl=True)
    for r in rows:
        assert r["error"] == "", r
        assert r["rtl_output_bound_cycles"] == -(-r["data_tokens"] // 8), r
        assert r["rtl_cycles"] >= r["rtl_output_bound_cycles"], r
        assert r["rtl_over_output_bound"] == pytest.approx(r["rtl_cycles"] / r["rtl_output_bound_cycles"])


def test_benchmark_only_workloads_are_accepted(tmp_path):
    out = tmp_path / "bench.csv"
    assert bench.main(["--levels", "3", "--workloads", "hashed_gather", "csr_of_csr", "dlrm_sum",
                       "--out", str(out)]) == 0
    _, rows = _read(out)
    assert [r["workload"] for r in rows] == ["hashed_gather", "csr_of_csr", "dlrm_sum"]
    assert all(r["error"] == "" for r in rows)
