"""The main job's driver (``make sim`` / ``python -m sim.main_job``) on the golden model.

The RTL runs of the same path are covered by tests/e2e/test_regression.py and tb/system; here the
option plumbing: every -O level compiles for configs/tmu_rtl.json, the golden model decodes it with
that configuration, and the result is checked against PyTorch inside ``main`` (exit status 0).
"""

import argparse

import pytest

from sim import main_job


def _args(*argv):
    p = argparse.ArgumentParser()
    main_job.add_arguments(p)
    return p.parse_args(list(argv))


@pytest.mark.parametrize("level", ["0", "1", "2", "3"])
def test_compiled_levels_pass_on_golden(level, capsys):
    assert main_job.main(_args("--target", "golden", "--nodes", "60", "--dim", "13", "-O", level)) == 0
    out = capsys.readouterr().out
    assert f"-O{level})" in out and "PASS" in out


@pytest.mark.parametrize("mode", ["mean", "max"])
def test_mode_sets_the_kernel_and_the_reference(mode, capsys):
    """``--mode`` pools as ``embedding_bag(mode=...)`` does: its default kernel is
    ``examples/embedding_bag_<mode>.mlir`` and the reference (computed in ``main``) follows.
    dim 13, 60 nodes of Cora (some without neighbours: PyTorch's empty bags give 0 in every
    mode)."""
    assert main_job.main(_args("--target", "golden", "--nodes", "60", "--dim", "13",
                               "--mode", mode)) == 0
    out = capsys.readouterr().out
    assert f"embedding_bag_{mode}.mlir, -O3)" in out
    assert f"workload: {mode}-aggregation" in out
    assert f"PASS: matches torch.nn.functional.embedding_bag(mode='{mode}')" in out


def test_a_kernel_with_another_pooling_than_mode_fails(capsys):
    """The reference is ``--mode``'s, not the kernel's: the sum kernel checked as max fails."""
    sum_kernel = str(main_job.REPO / "examples" / "embedding_bag_sum.mlir")
    assert main_job.main(_args("--target", "golden", "--nodes", "60", "--mode", "max",
                               "--kernel", sum_kernel)) == 1
    out = capsys.readouterr().out
    assert "embedding_bag_sum.mlir, -O3)" in out
    assert "FAIL: result differs from torch.nn.functional.embedding_bag(mode='max')" in out


@pytest.mark.parametrize("argv, message", [
    (("--backpressure", "2"), r"--backpressure must be a probability in \[0, 1\), not 2.0"),
    (("--backpressure", "-0.1"), r"not -0.1"),
    (("--backpressure", "0.5", "--target", "golden"), r"applies to --target rtl only"),
])
def test_bad_backpressure_is_refused_before_compiling(argv, message, monkeypatch):
    monkeypatch.setattr(main_job, "_kernel", lambda ns: pytest.fail("compiled before the check"))
    with pytest.raises(ValueError, match=message):
        main_job.main(_args("--nodes", "5", *argv))


def test_handwritten_max_is_refused_before_running():
    with pytest.raises(ValueError, match="--mode max has no hand-written program"):
        main_job.main(_args("--target", "golden", "--program", "handwritten", "--mode", "max"))


def test_handwritten_mean_passes_on_golden(capsys):
    assert main_job.main(_args("--target", "golden", "--nodes", "60", "--program", "handwritten",
                               "--mode", "mean")) == 0
    assert "PASS: matches torch.nn.functional.embedding_bag(mode='mean')" in capsys.readouterr().out


def test_default_is_o3_on_hbm2():
    ns = _args()
    main_job.resolve_target_options(ns)
    assert (ns.opt_level, ns.memory, ns.target, ns.program) == (3, "HBM2", "rtl", "compiled")
    assert (ns.engine, ns.core, ns.core_only_mshrs) == ("cpp", None, 16)
    assert ns.mode == "sum" and main_job.kernel_path(ns).name == "embedding_bag_sum.mlir"


@pytest.mark.parametrize("argv, named", [
    (("--memory", "HBM2"), "--memory HBM2"),          # the RTL default, given: still refused
    (("--memory", "simple"), "--memory simple"),
    (("--engine", "cocotb"), "--engine cocotb"),
    (("--core", "free"), "--core free"),
    (("--core-only-mshrs", "8"), "--core-only-mshrs 8"),
    (("--core-only-mshrs", "0", "--memory", "HBM3"), "--memory HBM3, --core-only-mshrs 0"),
])
def test_rtl_only_options_are_refused_on_golden(argv, named, monkeypatch):
    """Options that only the RTL run reads are an error with ``--target golden``, naming each
    one given (before: silently ignored), and refused before anything is compiled."""
    monkeypatch.setattr(main_job, "_kernel", lambda ns: pytest.fail("compiled before the check"))
    with pytest.raises(ValueError, match=f"^{named}: only --target rtl reads"):
        main_job.main(_args("--target", "golden", "--nodes", "5", *argv))


def test_bad_level_is_refused():
    with pytest.raises(SystemExit):
        _args("-O", "4")


def test_ceiling_line_puts_the_useful_bytes_against_the_memory_alone(capsys):
    """100 rows of 16 f32 (64 B, one line each) in 1,000 cycles: 6.4 useful bytes/cycle against
    the fixed-latency memory's 100 * 64 / (100 + 32) bytes/cycle for the same 100 line reads."""
    import numpy as np
    main_job.print_ceiling(np.arange(100), 16, "simple", 1000)
    out = capsys.readouterr().out
    bound = 100 * 64 / 132
    assert out == (f"memory's ceiling for this row trace: {bound:.1f} bytes/cycle (1 port, no cap); "
                   f"the unit's useful bytes/cycle: 6.40 = {100 * 6.4 / bound:.1f} % of it\n"
                   f"min(memory's ceiling, the unit's output bound of 64 bytes/cycle) = "
                   f"{bound:.1f} bytes/cycle; the unit reaches {100 * 6.4 / bound:.1f} % of it\n")
    main_job.print_ceiling(np.arange(100), 16, "simple", 1000, output_bytes=16)
    assert capsys.readouterr().out.endswith(
        "min(memory's ceiling, the unit's output bound of 16 bytes/cycle) = 16.0 bytes/cycle; "
        "the unit reaches 40.0 % of it\n")


def test_a_graph_without_edges_has_no_ceiling_and_still_passes(tmp_path, capsys):
    """A graph whose only edges are self-loops (dropped) gives all-empty bags: no row trace, so
    no ceiling line (it raised ValueError from the trace builder after the RTL run), and the
    golden run equals embedding_bag's zeros."""
    import numpy as np
    main_job.print_ceiling(np.zeros(0, dtype=np.int64), 16, "HBM2", 300)
    assert capsys.readouterr().out == ("memory's ceiling for this row trace: none (no rows "
                                       "gathered: every bag is empty)\n")
    graph = tmp_path / "loops.txt"
    graph.write_text("3 3\n4 4\n")
    assert main_job.main(_args("--graph", str(graph), "--target", "golden")) == 0
    assert capsys.readouterr().out.rstrip().endswith("PASS: matches torch.nn.functional.embedding_bag(mode='sum')")


def test_core_option_defaults_to_the_coupled_core_model_where_it_can():
    """Default: the core model coupled on the cpp engine; free with cocotb or --backpressure;
    the golden target has no core."""
    assert main_job.is_coupled(_args()) is True
    assert main_job.is_coupled(_args("--engine", "cocotb")) is False
    assert main_job.is_coupled(_args("--backpressure", "0.5")) is False
    assert main_job.is_coupled(_args("--core", "free")) is False
    assert main_job.is_coupled(_args("--target", "golden", "--core", "model")) is False


@pytest.mark.parametrize("argv, names", [
    (("--core", "model", "--engine", "cocotb"), "--engine cocotb"),
    (("--core", "model", "--backpressure", "0.25"), "--backpressure 0.25"),
    (("--core-only-mshrs", "-1"), "-1"),
])
def test_contradictory_core_options_name_the_argument(argv, names):
    with pytest.raises(ValueError, match=names.replace("-", r"\-")):
        main_job.is_coupled(_args(*argv))


def test_bad_input_exits_2_without_a_traceback():
    import subprocess
    import sys
    r = subprocess.run([sys.executable, "-m", "sim.main_job", "--dim", "0", "--target", "golden"],
                       capture_output=True, text=True)
    assert r.returncode == 2, r
    assert "--dim must be positive, not 0" in r.stderr and "Traceback" not in r.stderr


def test_core_only_baseline_runs_the_same_inputs_and_checks_them(capsys):
    """The core-only model's result is compared with the reference it is given: the true sums
    pass, a perturbed reference fails (so the check can fail)."""
    import numpy as np
    import torch
    from sw.runtime.datasets import node_features
    ns = _args("--nodes", "40", "--dim", "8", "--memory", "simple", "--core-only-mshrs", "4")
    g, rows = main_job._graph("cora", 40)
    x = node_features(rows, 8, seed=0)
    expected = torch.nn.functional.embedding_bag(torch.from_numpy(g.indices), torch.from_numpy(x),
                                                 torch.from_numpy(g.offsets[:-1]), mode="sum").numpy()
    assert main_job._compare_core_only(g, x, ns, expected, 1000, 900)
    out = capsys.readouterr().out
    assert "4 MSHRs" in out and "DAE / core-only speedup" in out and "FAIL" not in out
    cycles = int(out.split("): ")[1].split(" cycles")[0])
    assert f"= {cycles / 1000:.2f}x" in out
    assert not main_job._compare_core_only(g, x, ns, expected + 1, None, 500)
    out = capsys.readouterr().out
    assert "access unit / core-only speedup" in out and "FAIL" in out


def test_core_only_baseline_in_a_second_process_gives_the_same_run(capsys):
    """``make sim`` runs the core-only baseline in a spawned process beside the RTL: the same
    cycles and sums as in this process; a pool that broke (a calling script without the
    ``__main__`` guard) falls back to this process and says so."""
    from concurrent.futures import Future
    from concurrent.futures.process import BrokenProcessPool

    import numpy as np
    import torch
    from sw.runtime.datasets import node_features
    ns = _args("--nodes", "30", "--dim", "4", "--memory", "simple", "--core-only-mshrs", "2")
    g, rows = main_job._graph("cora", 30)
    x = node_features(rows, 4, seed=1)
    here = main_job.core_only_baseline(*main_job._core_only_arguments(g, x, ns))
    future = main_job.start_core_only(g, x, ns)
    there = future.result() if future is not None else here
    assert here[:2] == there[:2] and np.array_equal(here[2], there[2])
    expected = torch.nn.functional.embedding_bag(torch.from_numpy(g.indices), torch.from_numpy(x),
                                                 torch.from_numpy(g.offsets[:-1]), mode="sum").numpy()
    running = main_job.start_core_only(g, x, ns)      # stopped, e.g. after a failed RTL run
    if running is not None:
        main_job.stop_core_only(running)
        with pytest.raises(BrokenProcessPool):
            running.result(timeout=60)
    broken = Future()
    broken.set_exception(BrokenProcessPool("test"))
    assert main_job._compare_core_only(g, x, ns, expected, 100, 90, broken)
    out = capsys.readouterr().out
    assert "its second process failed; running it here" in out
    assert f"): {here[0]} cycles" in out


def test_a_failed_rtl_run_stops_the_baseline_process(monkeypatch):
    """An error in the RTL run stops the core-only baseline's second process (Python would wait
    for it at exit) and is raised as it was."""
    stopped = []
    real_stop = main_job.stop_core_only

    def fail(*args, **kwargs):
        raise RuntimeError("the C++ harness failed (test)")

    monkeypatch.setattr(main_job, "_run", fail)
    monkeypatch.setattr(main_job, "stop_core_only", lambda f: (stopped.append(f), real_stop(f)))
    with pytest.raises(RuntimeError, match="harness failed"):
        main_job.main(_args("--nodes", "30", "--memory", "simple", "--core-only-mshrs", "2"))
    assert len(stopped) == 1


@pytest.mark.rtl
def test_rtl_run_is_coupled_and_compared_with_the_core_only_baseline(capsys):
    """``make sim``'s path on the RTL (simple memory, 60 nodes): the core model coupled, its DAE
    cycles at least the unit's own cycles (the core pops DONE after the unit pushed it) and
    about the larger of the two sides' own times (``max(access, core estimate)``: the side that
    sets the pace — since the chained uop, the core on this small graph), never the two in
    series; the core-only baseline run and checked, PASS."""
    assert main_job.main(_args("--nodes", "60", "--memory", "simple", "--core-only-mshrs", "8")) == 0
    out = capsys.readouterr().out
    unit = int(out.split("cycles: ")[1].split("\n")[0])
    dae = int(out.split("core popped DONE): ")[1].split(";")[0])
    estimate = int(out.split("max(access, core estimate) = ")[1].split("\n")[0])
    assert unit <= dae, out
    assert estimate - 64 <= dae < unit + estimate, out
    assert "8 MSHRs" in out and "DAE / core-only speedup" in out and "PASS" in out
    # the uops line: the -O3 bag's microcode (tb/tmu/test_chain.py: one uop per node, its
    # ENTER fused, docs/rtl.md §9.5 E), fewer than the cycles
    g, _ = main_job._graph("cora", 60)
    empty = int((g.offsets[1:] == g.offsets[:-1]).sum())
    uops = int(out.split("uops: ")[1].split(" ")[0])
    assert uops == 5 + g.num_nodes + g.num_edges + empty < unit, out


@pytest.mark.rtl
def test_the_default_core_replays_the_execute_side_on_the_baseline_core(capsys):
    """By default the coupled core replays the kernel's execute side run on the core-only
    baseline's out-of-order core, callback by callback (``CoreReplay``): its estimate is at least
    the data tokens at 16 per cycle and at least the out-of-order core's own time less its start
    (the first control pop's retirement, a few cycles). ``--core fitted`` runs at the flat cycles
    per callback fitted to the same run: within half a cycle per callback of that core's cycles
    (unless the 1-cycle floor holds). ``--core model`` keeps the flat 6 cycles per callback and
    prints so."""
    def execute_line(out):
        line = out.split("execute side on the core-only baseline's core")[1].split("\n")[0]
        callbacks = int(line.split("loop over ")[1].split(" control")[0]) - 1     # DONE
        tokens = int(line.split(" control and ")[1].split(" data")[0])
        ooo = int(line.split("all ready): ")[1].split(" cycles")[0])
        estimate = int(line.split(" cycles without waiting")[0].split("(")[-1])
        return line, callbacks, tokens, ooo, estimate

    assert main_job.main(_args("--nodes", "60", "--memory", "simple", "--core-only-mshrs", "0")) == 0
    out = capsys.readouterr().out
    line, callbacks, tokens, ooo, estimate = execute_line(out)
    assert f"replays its {callbacks} callbacks at their own pace" in line, line
    assert estimate >= max(-(-tokens // 16), ooo - 20), line
    assert "PASS" in out
    assert main_job.main(_args("--nodes", "60", "--memory", "simple", "--core-only-mshrs", "0",
                               "--core", "fitted")) == 0
    out = capsys.readouterr().out
    line, callbacks, tokens, ooo, estimate = execute_line(out)
    cpc = int(line.split("fitted to it: ")[1].split(" cycle")[0])
    assert cpc >= 1 and (cpc == 1 or abs(estimate - ooo) <= callbacks / 2 + 1), line
    assert "PASS" in out
    assert main_job.main(_args("--nodes", "60", "--memory", "simple", "--core-only-mshrs", "0",
                               "--core", "model")) == 0
    out = capsys.readouterr().out
    assert "flat default rate" in out and "execute side on the core-only" not in out
