"""scripts/bench_handwritten.py without the RTL: argument errors and the compiled / hand-written
percentages (the RTL path runs in tests/runtime/test_handwritten_suite.py, marked slow, and in
the measurements of docs/performance.md)."""

from __future__ import annotations

import pytest

from script_under_test import load_script


def _load():
    return load_script("bench_handwritten")


bench = _load()


@pytest.mark.parametrize("argv, message", [
    (["--levels", "4"], "--levels must be in 0..3, not 4"),
    (["--workloads", "eb_sum", "nope"], "not 'nope'"),
    (["--memory", "DDR9"], "invalid choice"),
])
def test_bad_arguments_exit_2_with_a_message(argv, message, capsys):
    with pytest.raises(SystemExit) as e:
        bench.main(argv)
    assert e.value.code == 2
    assert message in capsys.readouterr().err


def test_percentages_are_hand_written_cycles_over_compiled_cycles():
    hand = [dict(workload="w", level=-1, rtl_cycles=800, dae_cycles=1000, memory="simple", error="")]
    compiled = [dict(workload="w", level=0, rtl_cycles=1600, dae_cycles=4000, error=""),
                dict(workload="w", level=3, rtl_cycles=1000, dae_cycles=1000, error=""),
                dict(workload="v", level=3, rtl_cycles=1, dae_cycles=1, error=""),
                dict(workload="w", level=2, error="does not compile")]
    rows = bench.compare(hand, compiled)
    assert [(r["level"], r["rtl_pct"], r["dae_pct"]) for r in rows] == [
        (-1, 100.0, 100.0), (0, 50.0, 25.0), (3, 80.0, 100.0), (2, None, None)]
    assert all(r["memory"] == "simple" for r in rows)
