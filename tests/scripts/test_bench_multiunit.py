"""scripts/bench_multiunit.py without the RTL: its arguments and the workload it builds (the RTL
runs are the benchmark itself; docs/performance.md "System bandwidth of K units")."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import numpy as np
import pytest

REPO = Path(__file__).resolve().parents[2]


def _load():
    spec = importlib.util.spec_from_file_location("bench_multiunit",
                                                  REPO / "scripts" / "bench_multiunit.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


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
