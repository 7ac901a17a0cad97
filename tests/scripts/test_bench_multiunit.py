"""scripts/bench_multiunit.py without the RTL: its arguments and the workload it builds (the RTL
runs are the benchmark itself; docs/performance.md "System bandwidth of K units")."""

from __future__ import annotations

import numpy as np
import pytest

from script_under_test import load_script


def _load():
    return load_script("bench_multiunit")


bench = _load()


@pytest.mark.parametrize("argv", [["--units", "3"], ["--units", "1,x"], ["--units", ""],
                                  ["--max-inflight", "3"]])
def test_bad_arguments_exit_2(argv, capsys):
    with pytest.raises(SystemExit) as e:
        bench.main(argv)
    assert e.value.code == 2
    assert argv[0] in capsys.readouterr().err


def test_call_has_256_bags_per_unit():
    table, indices, offsets = bench.call_args(2, seed=0)
    assert table.shape == (bench.ROWS, bench.DIM) and table.dtype == np.float32
    assert len(offsets) == 2 * bench.BAGS_PER_UNIT + 1
    assert len(indices) == 2 * bench.BAGS_PER_UNIT * bench.POOLING
    assert indices.min() >= 0 and indices.max() < bench.ROWS


def test_windowed_bound_is_latency_bound_with_one_line_and_output_bound_with_many():
    """The idealised-units bound: a window of one line waits a whole memory latency per line
    (far below the 64 B/cycle output); a wide window comes near the output bound of 2 units
    (this short call: its first latency is a large part of it)."""
    rows = [np.arange(0, 64) * 997 % bench.ROWS, np.arange(64, 128) * 991 % bench.ROWS]
    narrow = bench.windowed_bound("HBM2", rows, window=1)
    wide = bench.windowed_bound("HBM2", rows, window=256)
    assert narrow["model_table_bytes_per_cycle"] < 2 * 64 / 10
    assert 0.6 * 2 * 64 <= wide["model_table_bytes_per_cycle"] <= 2 * 64
