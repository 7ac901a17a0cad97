"""scripts/sweep.py: the grid, its checks (they fail on wrong RTL tokens), the process pool and
Ray paths giving the same rows as a plain loop, and the CLI's errors (exit 2, no traceback)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]


# importable by name: the process pool's spawned workers unpickle run_point as sweep.run_point
sys.path.insert(0, str(REPO / "scripts"))
import sweep  # noqa: E402
POINT = {"memory": "simple"}              # the default unit on the simple memory (a cached build)
TIMING = ("rtl_wall_s",)


def _strip(rows):
    return [{k: v for k, v in r.items() if k not in TIMING} for r in rows]


def test_hardware_points_are_the_product_of_the_given_axes():
    pts = sweep.hardware_points({"max_inflight": [64, 512], "ports": [1, 2], "lanes": []},
                                ["simple", "HBM2"])
    assert len(pts) == 8
    assert {"memory": "HBM2", "max_inflight": 512, "ports": 1} in pts
    cfg = sweep.config_for({"memory": "HBM2", "max_inflight": 64, "ports": 1, "output_tokens": 4})
    # five engines of 8 loads fit in 64 lines (16 would not)
    assert (cfg.max_inflight, cfg.memory_ports, cfg.output_tokens, cfg.prefetch_depth) == (64, 1, 4, 8)
    assert [sweep.config_for({"memory": "HBM2", "max_inflight": n}).prefetch_depth
            for n in (16, 128, 256, 512)] == [2, 16, 32, 32]
    assert sweep.config_for({"memory": "HBM2", "drain_entries": 1}).drain_lines == 1
    assert sweep.config_for({"memory": "HBM2"}).drain_lines == 2


def test_memory_columns_from_the_hbm_counters():
    """Mean and largest latency, reads of 200+ cycles and the fullest channel queue, from the
    counters the HBM model reports (its histogram: 64 bins of 4 cycles, the last one open)."""
    from hw.hbm_model.reference import HIST_BIN_CYCLES, HIST_BINS
    latencies = [17, 17, 40, 199, 200, 203, 256, 900]
    hist = [0] * HIST_BINS
    for lat in latencies:
        hist[min(lat // HIST_BIN_CYCLES, HIST_BINS - 1)] += 1
    stats = {"reads": len(latencies), "read_latency_sum": sum(latencies),
             "read_latency_max": max(latencies), "read_latency_hist": hist,
             "queue_occupancy_max": [3, 64, 12]}
    assert sweep.memory_columns(stats) == {
        "read_latency_mean": round(sum(latencies) / len(latencies), 1), "read_latency_max": 900,
        "slow_reads": sum(lat >= 200 for lat in latencies), "channel_queue_peak": 64}
    # the simple memory counts no latencies: empty cells, not zeros
    assert sweep.memory_columns({}) == {"read_latency_mean": "", "read_latency_max": "",
                                        "slow_reads": "", "channel_queue_peak": ""}


def test_unattributed_cycles_are_what_no_wait_counter_claims():
    stats = {"cycles": 1000, "decode_cycles": 100, "uops": 700, "rob_full_cycles": 50,
             "issue_wait_cycles": 5, "block_wait_cycles": 60, "evaluate_cycles": 20,
             "fetch_bubble_cycles": 3}
    assert sweep.unattributed_cycles(stats) == 1000 - 100 - 700 - 50 - 5 - 60 - 20 - 3


@pytest.mark.rtl
def test_a_point_runs_every_workload_and_level_checked():
    rows = sweep.run_grid([POINT], ["eb_sum", "spmv_csr"], [0, 3], "small", progress=False)
    assert [(r["workload"], r["level"]) for r in rows] == [("eb_sum", 0), ("eb_sum", 3),
                                                          ("spmv_csr", 0), ("spmv_csr", 3)]
    for r in rows:
        assert r["error"] == "" and r["access_cycles"] > 0
        assert r["dae_cycles"] == max(r["access_cycles"], r["core_cycles"])
        assert r["useful_bytes_per_cycle"] > 0
        assert all(r[k] >= 0 for k in sweep.WAIT_COUNTERS) and r["unattributed_cycles"] >= 0


@pytest.mark.rtl
def test_wrong_rtl_tokens_are_caught(monkeypatch):
    import sim.system
    real = sim.system.run_many_on_rtl

    def corrupt(jobs, **kw):
        results = real(jobs, **kw)
        results[0].data_tokens[0] ^= 1
        return results
    monkeypatch.setattr(sim.system, "run_many_on_rtl", corrupt)
    with pytest.raises(AssertionError, match="RTL tokens differ from the golden model's"):
        sweep.run_point(POINT, ["eb_sum"], [3], "small")


@pytest.mark.rtl
def test_process_pool_gives_the_plain_loop_rows():
    points = [POINT, dict(POINT)]
    plain = sweep.run_grid(points, ["eb_sum"], [3], "small", jobs=1, progress=False)
    pooled = sweep.run_grid(points, ["eb_sum"], [3], "small", jobs=2, progress=False)
    assert _strip(pooled) == _strip(plain)


@pytest.mark.rtl
def test_ray_gives_the_plain_loop_rows():
    ray = pytest.importorskip("ray")
    plain = sweep.run_grid([POINT], ["eb_sum"], [3], "small", progress=False)
    remote = sweep.run_grid([POINT], ["eb_sum"], [3], "small", ray_address="local", progress=False)
    assert not ray.is_initialized()
    assert _strip(remote) == _strip(plain)


@pytest.mark.parametrize("args, message", [
    (["--workloads", "eb_summ"], "--workloads: 'eb_summ' is not one of"),
    (["--levels", "4"], "--levels: '4': levels are 0, 1, 2, 3"),
    (["--memory", "DDR4"], "--memory: 'DDR4' is not one of"),
    (["--max-inflight", "64,x"], "--max-inflight: '64,x' is not a comma-separated list"),
    (["--ports", "0"], "--ports: '0': values must be >= 1"),
    (["--drain-entries", "5"], "drain_entries must be 0 (automatic) or an integer in 1..4, not 5"),
])
def test_cli_errors_exit_2_without_traceback(args, message):
    p = subprocess.run([sys.executable, str(REPO / "scripts" / "sweep.py"), *args],
                       capture_output=True, text=True)
    assert p.returncode == 2
    assert message in p.stderr and "Traceback" not in p.stderr
