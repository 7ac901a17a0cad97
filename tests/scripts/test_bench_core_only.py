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
                                       "tokens_per_cycle must be an int >= 1, not 0")])
def test_bad_arguments_exit_2(argv, msg, capsys):
    with pytest.raises(SystemExit) as e:
        bench_core_only.main(["--no-rtl", *argv])
    assert e.value.code == 2 and msg in capsys.readouterr().err

