"""scripts/bench_mapping.py without the RTL: its arguments, the reference and the per-unit calls
it gives the K-unit system (``--system``; the RTL runs are the benchmark itself and
``tests/sim/test_multi_sequence.py``)."""

from __future__ import annotations

import numpy as np
import pytest

from sw.runtime.mapping import map_tables, table_set
from script_under_test import load_script


def _load():
    return load_script("bench_mapping")


bench = _load()


@pytest.mark.parametrize("argv", [["--system", "--units", "3"], ["--units", "0"],
                                  ["--sets", "nonsense"]])
def test_bad_arguments_exit_2(argv, capsys):
    with pytest.raises(SystemExit) as e:
        bench.main(argv)
    assert e.value.code == 2
    assert argv[-2].lstrip("-").split("-")[0] in capsys.readouterr().err


def test_unit_calls_cover_every_bag_once_with_each_table_shared():
    tables = table_set("extreme", 5, bags=9, seed=3, median_rows=50, max_rows=200)
    rng = np.random.default_rng(3)
    data = [(rng.standard_normal((t.rows, t.dim)).astype(np.float32),
             rng.integers(0, t.rows, t.lookups, dtype=np.int64)) for t in tables]
    for name in ("round_robin", "stats_guided", "batch_split"):
        mapping = map_tables(tables, 2, name)
        calls = bench._unit_calls(mapping, tables, data)
        assert [len(c) for c in calls] == [len(u) for u in mapping.units]
        whole = [bench.reference_sum(table, indices, t.offsets)
                 for (table, indices), t in zip(data, tables)]
        bags = [0] * len(tables)
        for pieces, unit_args in zip(mapping.units, calls):
            for p, args in zip(pieces, unit_args):
                assert args[0] is data[p.table][0]           # one table array: placed once
                assert args[3].shape == (p.bag_stop - p.bag_start, tables[p.table].dim)
                got = bench.reference_sum(*args[:3])         # the piece's bags, rebased
                assert np.array_equal(got, whole[p.table][p.bag_start:p.bag_stop]), (name, p)
                bags[p.table] += p.bag_stop - p.bag_start
        assert bags == [t.bags for t in tables], name


def test_memory_columns_line_up_with_their_header():
    row = dict(system_mem_bytes_per_cycle=12.345, system_useful_bytes_per_cycle=3.5,
               system_row_hit_rate=0.25, system_read_latency_mean=101.24)
    line = bench.memory_columns(row)
    assert len(line) == len(bench.MEMORY_HEADER)
    assert line.split() == ["12.35", "3.50", "25.0%", "101.2"]
