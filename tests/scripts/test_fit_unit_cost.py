"""scripts/fit_unit_cost.py without the RTL: its arguments and the pieces it draws (the RTL runs
are the fit itself; ``UnitCostModel.fit`` is tested in tests/runtime/test_mapping.py)."""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest

from sw.runtime.mapping import split_bags
from script_under_test import load_script

REPO = Path(__file__).resolve().parents[2]


def _load():
    sys.path.insert(0, str(REPO / "scripts"))
    return load_script("fit_unit_cost")


fit = _load()


@pytest.mark.parametrize("argv", [["--tables", "0"], ["--sets", "nonsense"],
                                  ["--memory", "DDR4"]])
def test_bad_arguments_exit_2(argv, capsys):
    with pytest.raises(SystemExit) as e:
        fit.main(argv)
    assert e.value.code == 2
    assert argv[-2].lstrip("-") in capsys.readouterr().err


@pytest.mark.parametrize("kind", ["balanced", "extreme"])
def test_pieces_are_each_table_whole_and_in_2_and_4_ranges(kind):
    tables, data, pieces = fit.draw_pieces(kind, 5, tables=3, bags=9, median_rows=50,
                                           max_rows=200)
    assert len(data) == len(tables)
    for i, (t, (table, indices)) in enumerate(zip(tables, data)):
        assert table.shape == (t.rows, t.dim) and table.dtype == np.float32
        assert indices.shape == (t.lookups,) and indices.min(initial=0) >= 0
        assert indices.max(initial=0) < t.rows
        mine = [p for p in pieces if p.table == i]
        # per split, its ranges are pieces and tile the bags (independent of split_bags)
        for parts in fit.SPLITS:
            ranges = [(p.bag_start, p.bag_stop) for p in mine
                      if (p.bag_start, p.bag_stop) in set(split_bags(t.offsets, parts))]
            assert len(ranges) == len(split_bags(t.offsets, parts))
            edges = sorted(ranges)
            assert edges[0][0] == 0 and edges[-1][1] == t.bags
            assert all(a[1] == b[0] for a, b in zip(edges, edges[1:]))
        assert any(p.bag_start == 0 and p.bag_stop == t.bags for p in mine)   # whole
        covered = np.zeros(t.bags, int)
        for p in mine:
            covered[p.bag_start:p.bag_stop] += 1
        assert covered.min() >= 1 and len(set(mine)) == len(mine)
