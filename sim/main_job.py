"""The main job (``make sim`` / ``ember sim``): Cora sum-aggregation, compiled and run on the RTL.

Workload: one GNN message-passing step, ``h[v] = Σ_{u ∈ N(v)} x[u]`` over the Cora citation graph
(2,708 nodes, 10,556 directed edges, ``sw.runtime.datasets.load_cora``) with generated features
``x`` of shape (2708, dim), float32, seed 0 — i.e. ``F.embedding_bag(indices, x, offsets, mode="sum")``;
``--mode mean`` / ``max`` aggregate with PyTorch's other EmbeddingBag modes instead (the kernel,
the hand-written program and the reference follow).

Steps: compile ``examples/embedding_bag_<mode>.mlir`` (at ``-O3`` for ``configs/tmu_rtl.json`` by default) (or use the hand-written access program with
``--program handwritten``), lay out the memory image, build the Verilator model (once per
configuration and memory preset, cached under ``build/``), run, execute the callbacks, compare
with PyTorch. Prints cycles, bytes loaded per cycle, lookups per cycle, the memory model's
statistics (``--memory``: ``docs/hbm_model.md`` §5; bandwidth against the preset's peak, row-buffer
outcomes, read latency, per-channel utilisation and queue occupancy) and ``PASS``/``FAIL``.

The options, their checks and the kernel they select are ``sim.main_job_options``; this module
runs and reports (and re-exports the options' public names, which ``sw.cli`` imports from here).
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

import numpy as np

from sim.main_job_options import (  # noqa: F401  (re-exported: sw.cli and tests import them from here)
    DEFAULT_CORE_ONLY_MSHRS, DEFAULT_DIM, DEFAULT_MEMORY, DEFAULT_OPT_LEVEL, DEFAULT_TMU_CONFIG,
    HANDWRITTEN_MODES, MEMORIES, MODES, REPO, RTL_ONLY_DEFAULTS, add_arguments, check_options,
    is_coupled, kernel_path, mode_kernel, resolve_target_options)


def _graph(name: str, nodes: int):
    """The graph (CSR), restricted to the first ``nodes`` bags, and the number of feature rows."""
    from sw.runtime.datasets import Graph, load_cora, load_edge_list
    g = load_cora() if name == "cora" else load_edge_list(name)
    rows = g.num_nodes
    if nodes:
        if not 0 < nodes <= g.num_nodes:
            raise ValueError(f"--nodes must be in [1, {g.num_nodes}], not {nodes}")
        offsets = g.offsets[:nodes + 1]
        g = Graph(g.name, offsets.copy(), g.indices[:offsets[-1]].copy())
    return g, rows


def main(ns: argparse.Namespace) -> int:
    import torch

    from sw.runtime.datasets import node_features

    from sim import profile_guided
    coupled = check_options(ns)
    g, rows = _graph(ns.graph, ns.nodes)
    distinct = len(np.unique(g.indices))
    x = node_features(rows, ns.dim, seed=ns.seed)
    mode = getattr(ns, "mode", "sum")
    expected = torch.nn.functional.embedding_bag(torch.from_numpy(g.indices), torch.from_numpy(x),
                                                 torch.from_numpy(g.offsets[:-1]), mode=mode).numpy()
    print(f"workload: {mode}-aggregation over {g.name}: {g.num_nodes} nodes, {g.num_edges} edges, "
          f"features {x.shape[0]}x{ns.dim} float32 ({distinct} distinct rows gathered)")
    memory = f"; memory: {ns.memory}" if ns.target == "rtl" else ""
    compiled = f" ({kernel_path(ns)}, -O{ns.opt_level})" if ns.program == "compiled" else ""
    print(f"program: {ns.program}{compiled}; "
          f"target: {ns.target}{memory}")

    # The core-only baseline's trace needs only the inputs: it runs beside the RTL.
    baseline = (start_core_only(g, x, ns)
                if ns.target == "rtl" and getattr(ns, "core_only_mshrs", 0) else None)
    t0 = time.perf_counter()
    try:
        got, run, core_wall = _run(g, x, ns, coupled)
    except BaseException:
        stop_core_only(baseline)       # not left running (and waited for at exit) after an error
        raise
    access = run.access
    wall = time.perf_counter() - t0 - core_wall

    ok = got.shape == expected.shape and np.allclose(got, expected, rtol=1e-5, atol=1e-5)
    stats = access.stats
    bytes_loaded = stats.get("bytes_loaded", 0)
    if access.cycles:
        cycles = access.cycles
        print(f"cycles: {cycles}")
        print(f"bytes loaded: {bytes_loaded} ({bytes_loaded / cycles:.3f} bytes/cycle)")
        print(f"lookups: {g.num_edges} rows ({g.num_edges / cycles:.5f} rows/cycle, "
              f"{g.num_edges * ns.dim / cycles:.3f} elements/cycle)")
        for key in ("loads", "peak_inflight", "stall_cycles", "tokens"):
            if key in stats:
                print(f"{key.replace('_', ' ')}: {stats[key]}")
        if stats.get("uops"):
            run_cycles = cycles - stats.get("decode_cycles", 0)
            print(f"uops: {stats['uops']} (microcode entries the traversal completed, at most one "
                  f"per cycle: {100 * stats['uops'] / run_cycles:.1f} % of the {run_cycles} "
                  f"cycles after decoding)")
            waits = [(stats.get(k, 0), what) for k, what in (
                ("fetch_bubble_cycles", "fetch bubbles"),
                ("block_wait_cycles", "blocking-load waits"),
                ("rob_full_cycles", "reorder buffer full"),
                ("issue_wait_cycles", "request or row issue full"),
                ("evaluate_cycles", "evaluate cycles (two stages)"))]
            print("  cycles without a uop: " + ", ".join(f"{n} {what}" for n, what in waits)
                  + f"; the rest ({run_cycles - stats['uops'] - sum(n for n, _ in waits)}): "
                  f"the other waits (output, engines, rows of several chunks) and the drain")
        mem_stats = access.memory_stats
        if mem_stats:
            print_memory_stats(mem_stats, ns.memory, cycles)
            from hw.tmu import TmuConfig
            print_ceiling(g.indices, ns.dim, ns.memory, cycles, 8 * TmuConfig().output_tokens)
        dae = run.dae_cycles if coupled else None
        if coupled:
            print(f"DAE cycles (access unit + core model coupled through the queues, START until the "
                  f"core popped DONE): {dae}; max(access, core estimate) = {run.dae_cycles_estimate}")
        print(f"simulation: {wall:.1f} s wall, {cycles / wall:,.0f} cycles/s (including build, "
              f"load and the golden run; the execute side's run on the core model above took "
              f"{core_wall:.1f} s more)")
        if stats.get("sim_cycles_per_s"):
            build = (", profile-guided build" if getattr(ns, "engine", "cpp") == "cpp"
                     and profile_guided.requested() else "")
            print(f"simulation loop ({getattr(ns, 'engine', 'cpp')} engine{build}): "
                  f"{stats['sim_cycles_per_s']:,} cycles/s (start to finished, without start-up and load)")
    else:
        print(f"loads: {stats.get('loads', 0)}, bytes loaded: {bytes_loaded} (golden model: no cycles); {wall:.1f} s")
    if access.cycles and getattr(ns, "core_only_mshrs", 0):
        ok = _compare_core_only(g, x, ns, expected, dae if coupled else None, access.cycles,
                                baseline) and ok
    if ok:
        print(f"PASS: matches torch.nn.functional.embedding_bag(mode={mode!r})")
        return 0
    err = np.abs(got - expected).max() if got.shape == expected.shape else float("nan")
    print(f"FAIL: result differs from torch.nn.functional.embedding_bag(mode={mode!r}) "
          f"(shape {got.shape} vs {expected.shape}, max abs error {err}; --mode sets the "
          f"reference's pooling)")
    return 1


def memory_summary(stats: dict, preset_name: str, cycles: int) -> dict:
    """Derived memory figures of a run: :func:`sim.system.memory_summary` (it moved there, so
    that ``sim.multi`` can use it without importing this main job)."""
    from sim.system import memory_summary as summary
    return summary(stats, preset_name, cycles)


def print_ceiling(indices: np.ndarray, dim: int, preset_name: str, cycles: int,
                  output_bytes: int = 64) -> None:
    """Print the unit's useful bytes per cycle (the float32 table rows it gathered, ``len(indices)
    * dim * 4`` bytes over ``cycles``) against the memory's own ceiling for the same row trace
    (``hw.hbm_model.traces.ceiling``: every 64-byte line read of the rows in order, offered at
    cycle 0, enough ports for the preset's peak, no cap; table at address 0) and against
    ``min(ceiling, output_bytes)``, the unit's data output bound (``output_tokens * 8`` bytes per
    cycle). Issue 10's ratios."""
    from hw.hbm_model.presets import get_preset
    from hw.hbm_model.traces import ceiling, embedding_gather
    if len(indices) == 0:
        print("memory's ceiling for this row trace: none (no rows gathered: every bag is empty)")
        return
    preset = get_preset(preset_name)
    bound, ports, _ = ceiling(preset, embedding_gather(dim, indices=indices))
    useful = len(indices) * dim * 4 / cycles
    print(f"memory's ceiling for this row trace: {bound:.1f} bytes/cycle ({ports} port{'s' if ports != 1 else ''}, no cap); "
          f"the unit's useful bytes/cycle: {useful:.2f} = {100 * useful / bound:.1f} % of it")
    limit = min(bound, output_bytes)
    print(f"min(memory's ceiling, the unit's output bound of {output_bytes} bytes/cycle) = "
          f"{limit:.1f} bytes/cycle; the unit reaches {100 * useful / limit:.1f} % of it")


def print_memory_stats(stats: dict, preset_name: str, cycles: int) -> None:
    """Print the memory model's statistics of a run (see :func:`memory_summary`)."""
    from hw.hbm_model.presets import get_preset
    preset = get_preset(preset_name)
    m = memory_summary(stats, preset_name, cycles)
    print(f"memory ({preset_name}): {m['bytes']} bytes moved in {preset.access_bytes}-byte accesses, "
          f"{m['bytes_per_cycle']:.2f} bytes/cycle = {m['gbps']:.1f} GB/s at "
          f"{preset.unit_cycle_ns:g} ns/cycle ({100 * m['peak_fraction']:.1f} % of the "
          f"{preset.peak_gbps:.1f} GB/s peak)")
    classified = m["row_hits"] + m["row_misses"] + m["row_conflicts"]
    if classified:
        print(f"  row buffer: {m['row_hits']} hits, {m['row_misses']} misses, {m['row_conflicts']} "
              f"conflicts ({100 * m['row_hits'] / classified:.1f} % hits); "
              f"{stats['activates']} ACT, {stats['precharges']} PRE, {stats['refreshes']} REF")
    if m["reads"]:
        print(f"  read latency (cycles): min {m['lat_min']}, mean {m['lat_mean']:.1f}, "
              f"p50 <= {m['lat_p50']}, p99 <= {m['lat_p99']}, max {m['lat_max']}")
    util = m["utilisation"]
    if len(util) > 1:
        occ_mean, occ_max = m["occupancy_mean"], m["occupancy_max"]
        print("  per channel: data-bus utilisation % / mean / max queue occupancy:")
        cells = [f"ch{c}: {100 * u:.1f}/{o:.1f}/{x}" for c, (u, o, x)
                 in enumerate(zip(util, occ_mean, occ_max))]
        for i in range(0, len(cells), 8):
            print("    " + "  ".join(cells[i:i + 8]))


def _kernel(ns):
    """The kernel to run (the compiler's output for ``--kernel``, or the hand-written program)
    and its DLC module (the compute loop; None for the hand-written program)."""
    if ns.program == "handwritten":
        from sw.runtime.handwritten import embedding_bag_kernel
        return embedding_bag_kernel("float32", getattr(ns, "mode", "sum")), None
    from sw.compiler.pipelines import run_pipeline
    from sw.runtime.isa import Limits
    path = kernel_path(ns)
    if not path.is_file():
        raise FileNotFoundError(f"--kernel {str(path)!r} does not exist")
    limits = Limits.from_file(getattr(ns, "tmu_config", DEFAULT_TMU_CONFIG))
    comp = run_pipeline(path.read_text(), filename=str(path), limits=limits,
                        opt_level=getattr(ns, "opt_level", DEFAULT_OPT_LEVEL))
    return comp.kernel, comp.dlc


def core_only_baseline(kernel_path: str, x, indices, offsets, num_nodes: int, memory: str,
                       mshrs: int):
    """The core-only baseline's run (``sim.core_only``, ``mshrs`` MSHRs, the default Golden Cove
    caches, memory preset ``memory``; accumulators kept in registers, ``promote``) on the
    sequential form of the kernel at ``kernel_path`` over ``x`` (``(rows, dim)`` float32),
    ``indices`` and ``offsets`` (int64, CSR), ``num_nodes`` bags. Returns ``(cycles,
    bytes_per_cycle, out)``, ``out`` the ``(num_nodes, dim)`` float32 sums it computed. A
    module-level function of plain arguments, so that ``main`` can run it in a second process
    while the RTL runs (``start_core_only``)."""
    from hw.hbm_model.presets import get_preset
    from sim.core_only import CoreConfig, run_core
    from sim.core_trace import trace_kernel
    from sw.compiler.frontends.mlir import parse_mlir
    path = Path(kernel_path)
    out = np.zeros((num_nodes, x.shape[1]), dtype=np.float32)
    trace = trace_kernel(parse_mlir(path.read_text(), str(path)), [x, indices, offsets, out],
                         promote=True)
    result = run_core(trace, get_preset(memory), CoreConfig(mshrs=mshrs))
    return result.cycles, result.bytes_per_cycle, np.asarray(trace.results[0])


def _core_only_arguments(g, x, ns) -> tuple:
    path = kernel_path(ns) if ns.program == "compiled" else mode_kernel(ns)
    return (str(path), x, g.indices, g.offsets, g.num_nodes, ns.memory, ns.core_only_mshrs)


def start_core_only(g, x, ns):
    """Start :func:`core_only_baseline` for this run in a second (spawned) process, so that its
    instruction trace overlaps the RTL run on a machine with two or more cores (``make sim``:
    ~15 s of its ~34 s); returns the ``concurrent.futures.Future`` (its pool, ``future.pool``,
    is shut down when ``_compare_core_only`` takes the result), or None on a one-core machine
    (``_compare_core_only`` then runs it in this process). A spawned process imports the
    calling script again: a script calling ``main`` needs ``if __name__ == "__main__"``, or
    the baseline falls back to this process (``_compare_core_only``)."""
    import concurrent.futures
    import multiprocessing
    import os
    if (os.cpu_count() or 1) < 2:
        return None
    pool = concurrent.futures.ProcessPoolExecutor(
        max_workers=1, mp_context=multiprocessing.get_context("spawn"))
    future = pool.submit(core_only_baseline, *_core_only_arguments(g, x, ns))
    future.pool = pool          # shut down when the result is taken, or by stop_core_only
    return future


def stop_core_only(future) -> None:
    """Stop the process of :func:`start_core_only`'s ``future`` (None: nothing to stop), e.g.
    when the RTL run raised: Python would otherwise wait for it at exit. Uses
    ``ProcessPoolExecutor.terminate_workers`` (Python 3.14) or, before it, terminates the
    pool's processes."""
    pool = getattr(future, "pool", None)
    if pool is None:
        return
    if hasattr(pool, "terminate_workers"):
        pool.terminate_workers()
        return
    for process in list((getattr(pool, "_processes", None) or {}).values()):
        process.terminate()
    pool.shutdown(wait=False, cancel_futures=True)


def _compare_core_only(g, x, ns, expected, dae_cycles, access_cycles, future=None) -> bool:
    """Run the core-only baseline (:func:`core_only_baseline`, or take ``future``'s result from
    :func:`start_core_only`) on the kernel's sequential form over the same inputs, print its
    cycles and DAE ÷ core-only (the unit's cycles when the run was not coupled), and return
    whether its result matches ``expected``."""
    from concurrent.futures.process import BrokenProcessPool
    arguments = _core_only_arguments(g, x, ns)
    path = Path(arguments[0])
    try:
        taken = future.result() if future is not None else None
    except BrokenProcessPool:      # e.g. a calling script without ``if __name__ == "__main__"``
        print("core-only baseline: its second process failed; running it here")
        taken = None
    finally:
        # (waiting: its one task is done; a pool left running races Python's exit, which
        # then printed "OSError: Bad file descriptor" after a passing run)
        if getattr(future, "pool", None) is not None:
            future.pool.shutdown(wait=True)
    cycles, bytes_per_cycle, out = taken or core_only_baseline(*arguments)
    same = np.allclose(out, expected, rtol=1e-5, atol=1e-5)
    dae, what = (dae_cycles, "DAE") if dae_cycles else (access_cycles, "access unit")
    print(f"core-only baseline (sim.core_only: {ns.core_only_mshrs} MSHRs, L1/L2 caches, {ns.memory}; "
          f"{path.name}'s sequential form): {cycles} cycles, "
          f"{bytes_per_cycle:.2f} bytes/cycle; {what} / core-only speedup = "
          f"{cycles / dae:.2f}x{'' if same else ' (its result differs from PyTorch: FAIL)'}")
    return bool(same)


def _run(g, x, ns, coupled=False):
    """Run the kernel on ``ns.target``; returns ``(out, RunResult, core_wall)``: the sums, the
    run, and the seconds spent running the execute side for the coupled core (0 if none).

    The coupled core (``--core replay``, the default, or ``fitted``) is made by ``run_kernel``
    from the execute side (``sw.runtime.coupled_core``): the golden model's tokens go through
    the kernel's DLC compute loop (``sim.execute_trace``, accumulators kept in registers) on
    ``sim.core_only``'s out-of-order core (the default Golden Cove ``CoreConfig``, the same
    memory preset) with every token ready; ``replay`` replays that run's callbacks at their own
    pace, ``fitted`` is the flat rate nearest its cycles. A line says which, after the run.
    ``--core model`` and the hand-written program (no DLC module) use the flat default rate."""
    from sw.runtime.drivers import run_kernel
    kernel, dlc = _kernel(ns)
    options = {}
    out = np.zeros((g.num_nodes, ns.dim), dtype=np.float32)
    if ns.target == "rtl":
        options = {"memory": getattr(ns, "memory", DEFAULT_MEMORY),
                   "backpressure": ns.backpressure, "seed": ns.seed,
                   "engine": getattr(ns, "engine", "cpp"), "coupled": coupled}
        if coupled and getattr(ns, "core", None) in (None, "replay", "fitted") and dlc is not None:
            options.update(core=getattr(ns, "core", None) or "replay", dlc=dlc)
        elif coupled:
            print("coupled core at the flat default rate (sw.runtime.execute.CoreCostModel: "
                  "6 cycles per callback, 8 tokens per cycle)")
    result = run_kernel(kernel, [x, g.indices, g.offsets, out], ns.target, **options)
    made = result.coupled_core
    if made is not None:
        print(made.describe(result.execute.pops_per_control[:-1]))
    return np.asarray(result.results[0]), result, made.seconds if made is not None else 0.0


if __name__ == "__main__":
    import sys
    parser = argparse.ArgumentParser(prog="python -m sim.main_job", description=__doc__.splitlines()[0])
    add_arguments(parser)
    ns = parser.parse_args()
    from sw.compiler import CompileError
    from sw.runtime.golden import AccessFault
    try:
        sys.exit(main(ns))
    except (CompileError, AccessFault, ValueError, TypeError, FileNotFoundError) as e:
        parser.exit(2, f"{parser.prog}: error: {e}\n")
