"""scripts/bench_bandwidth.py (issue 10's benchmark) without the RTL: the memory ceiling of a
case's line trace, the ratios, the sweep points' order, the plot from earlier CSVs and bad
arguments (exit 2). The RTL runs are the benchmark itself (``make report``, docs/report/)."""

from __future__ import annotations

import csv
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

REPO = Path(__file__).resolve().parents[2]
SCRIPT = REPO / "scripts" / "bench_bandwidth.py"
sys.path.insert(0, str(REPO / "scripts"))
import bench_bandwidth  # noqa: E402


def _run(*args):
    return subprocess.run([sys.executable, str(SCRIPT), *args], capture_output=True, text=True,
                          cwd=REPO)


def test_ratios_divide_by_ceiling_output_bound_their_minimum_and_peak():
    row = dict(unit_useful_bytes_per_cycle=48.0, ceiling_bytes_per_cycle=200.0, output_bound=64,
               peak_bytes_per_cycle=256.0)
    assert bench_bandwidth.ratios(row) == dict(over_ceiling=0.24, over_output_bound=0.75,
                                               over_min_ceiling_output=0.75, over_peak=0.1875)
    row["ceiling_bytes_per_cycle"] = 32.0           # a memory below the output bound
    assert bench_bandwidth.ratios(row)["over_min_ceiling_output"] == 1.5


def test_ceiling_only_counts_every_line_of_the_case(tmp_path):
    """Cora at dim 16: one 64-byte line per gathered row (a nonzero's column), then the lines of
    the other arrays the unit reads (rowptr, col, values; not the scalar ``nrows`` nor the
    output, which are not in the memory image), counted here from the arrays themselves."""
    out = tmp_path / "bw"
    p = _run("--ceiling-only", "--no-sweeps", "--cases", "cora_d16", "--presets", "HBM2", "HBM3",
             "--out", str(out))
    assert p.returncode == 0, p.stderr
    rows = list(csv.DictReader(out.with_suffix(".csv").open()))
    assert [(r["case"], r["preset"]) for r in rows] == [("cora_d16", "HBM2"), ("cora_d16", "HBM3")]
    args = bench_bandwidth.case_args("cora_d16", 0)
    rowptr, col = args[0], args[1]
    gathered = len(col)                             # 16 f32 = 64 bytes = one line per row
    assert rowptr[-1] == gathered
    other = args[:3]
    # each array placed at a 64-byte boundary (sw.runtime.image): ceil(nbytes / 64) lines
    assert all(int(r["ceiling_lines"]) == gathered + sum(-(-a.nbytes // 64) for a in other)
               for r in rows)
    for r in rows:
        ceiling, peak = float(r["ceiling_bytes_per_cycle"]), float(r["peak_bytes_per_cycle"])
        assert 0 < ceiling <= peak
        assert int(r["ceiling_ports"]) == -(-int(peak) // 64)
        assert "unit_cycles" not in r                # no RTL run
    assert not out.with_suffix(".png").exists()


def test_sweep_points_take_the_default_units_row_in_order():
    table = dict(sweep="table", case="dlrm_uniform", program="O3", preset="HBM2", unit_cycles=1,
                 max_inflight=512)
    other = dict(table, case="cora_d16", max_inflight=512, unit_cycles=2)
    swept = [dict(table, sweep="max_inflight", max_inflight=v, unit_cycles=v) for v in (1024, 16)]
    points = bench_bandwidth._sweep_points([other, table, *swept], "max_inflight")
    assert [r["max_inflight"] for r in points] == [16, 512, 1024]
    assert points[1] is table
    assert bench_bandwidth._sweep_points([table], "memory_ports") == []


def test_replot_draws_the_table_and_each_sweep(tmp_path):
    base = dict(case="dlrm_uniform", program="O3", preset="HBM2", unit_cycles=100,
                unit_useful_bytes_per_cycle=60.0, ceiling_bytes_per_cycle=200.0, output_bound=64,
                over_min_ceiling_output=0.94, max_inflight=512, memory_ports=2, output_tokens=8,
                littles_law_bound=500.0)
    rows = [dict(base, sweep="table"), dict(base, sweep="table", preset="HBM3")]
    rows += [dict(base, sweep="max_inflight", max_inflight=v, unit_useful_bytes_per_cycle=v / 10)
             for v in (16, 64)]
    path = tmp_path / "runs.csv"
    bench_bandwidth.write_csv(rows, path)
    p = _run("--replot", str(path), "--out", str(tmp_path / "plot"))
    assert p.returncode == 0, p.stderr
    assert (tmp_path / "plot.png").stat().st_size > 10_000


@pytest.mark.parametrize("args, message", [
    (["--inflight", "64,x"], "--inflight must be comma-separated integers, not '64,x'"),
    (["--ports", "9"], "memory_ports"),
    (["--cases", "dlrm"], "--cases: invalid choice: 'dlrm'"),
    (["--presets", "HBM4"], "--presets: invalid choice: 'HBM4'"),
])
def test_bad_arguments_exit_2_without_a_traceback(args, message):
    p = _run("--ceiling-only", *args)
    assert p.returncode == 2, (p.returncode, p.stderr)
    assert message in p.stderr and "Traceback" not in p.stderr


def test_dlrm_arguments_have_the_issue_shape():
    table, indices, offsets, out = bench_bandwidth.dlrm_args(seed=1)
    assert table.shape == (100_000, 64) and table.dtype == np.float32
    assert indices.shape == (256 * 32,) and indices.min() >= 0 and indices.max() < 100_000
    assert np.array_equal(offsets, np.arange(0, 256 * 32 + 1, 32))
    assert out.shape == (256, 64)
