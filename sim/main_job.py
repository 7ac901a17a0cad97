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
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parents[1]
#: ``torch.nn.functional.embedding_bag``'s pooling modes; the default kernel of each is
#: ``examples/embedding_bag_<mode>.mlir``
MODES = ("sum", "mean", "max")
#: the modes of the hand-written program (``sw.runtime.handwritten.embedding_bag_kernel``)
HANDWRITTEN_MODES = ("sum", "mean")
DEFAULT_DIM = 16
MEMORIES = ("simple", "HBM2", "HBM3")
DEFAULT_MEMORY = "HBM2"
DEFAULT_OPT_LEVEL = 3
DEFAULT_TMU_CONFIG = REPO / "configs" / "tmu_rtl.json"
DEFAULT_CORE_ONLY_MSHRS = 16


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--graph", default="cora",
                   help="'cora' (shipped) or the path of an edge list (two node ids per line, '#' comments)")
    p.add_argument("--dim", type=int, default=DEFAULT_DIM, help=f"feature width in elements (default {DEFAULT_DIM})")
    p.add_argument("--nodes", type=int, default=0,
                   help="aggregate only the first NODES nodes (0: all); for quick runs")
    p.add_argument("--target", choices=("rtl", "golden"), default="rtl")
    p.add_argument("--program", choices=("compiled", "handwritten"), default="compiled",
                   help="compiled: the compiler's output for --kernel; handwritten: sw/runtime/handwritten.py")
    p.add_argument("--mode", choices=MODES, default="sum",
                   help="how each node's neighbours are pooled, as torch.nn.functional.embedding_bag's "
                        "mode (default sum): the reference, the default --kernel and the hand-written "
                        "program's mode (sum, mean) follow it")
    p.add_argument("--kernel", default=None,
                   help="MLIR kernel for --program compiled, with embedding_bag_sum.mlir's signature "
                        "(table, indices, offsets, out) and --mode's pooling (default "
                        "examples/embedding_bag_<mode>.mlir)")
    p.add_argument("-O", "--opt-level", type=int, choices=(0, 1, 2, 3), default=DEFAULT_OPT_LEVEL,
                   help=f"compiler optimisation level for --program compiled (default {DEFAULT_OPT_LEVEL}; "
                        "docs/compiler.md)")
    p.add_argument("--tmu-config", default=str(DEFAULT_TMU_CONFIG),
                   help="TMU configuration the compiler maps onto (default: configs/tmu_rtl.json, what the RTL builds)")
    p.add_argument("--backpressure", type=float, default=0.0,
                   help="probability (0..1) that the core is not ready for a token in a cycle")
    p.add_argument("--seed", type=int, default=0, help="seed of the features and of the back-pressure")
    p.add_argument("--memory", choices=MEMORIES, default=None,
                   help=f"memory model behind the access unit (default {DEFAULT_MEMORY}): simple = "
                        f"fixed latency, HBM2/HBM3 = docs/hbm_model.md presets; rtl target only")
    p.add_argument("--engine", choices=("cpp", "cocotb"), default=None,
                   help="how the RTL is simulated (default cpp: the Verilator C++ harness "
                        "sim/harness.cpp; cocotb: sim/system_top.py; identical results); rtl target only")
    p.add_argument("--core", choices=("replay", "fitted", "model", "free"), default=None,
                   help="the execute side behind the output queues (rtl target), consuming the "
                        "queues in the same simulation, coupled, so the run gives the DAE cycles: "
                        "replay = the kernel's execute side run on the core-only baseline's "
                        "out-of-order core (sim.execute_trace), each callback replayed at its own "
                        "pace, operands as that core pops them (sw.runtime.execute.CoreReplay; "
                        "compiled programs); fitted = a flat rate (sw.runtime.execute.CoreCostModel) "
                        "whose cycles per callback are fitted to that run; model = the flat default "
                        "rate (6 cycles per callback); free = a consumer that takes every token "
                        "when offered (or with --backpressure). Default: replay (model for "
                        "--program handwritten) on the cpp engine without --backpressure, free "
                        "otherwise")
    p.add_argument("--core-only-mshrs", type=int, default=None, metavar="M",
                   help="also run the core-only baseline (sim.core_only: an out-of-order core doing "
                        "the same gathers itself, M L1 misses in flight, on the same memory model) and "
                        f"print DAE / core-only (default {DEFAULT_CORE_ONLY_MSHRS}; 0 skips it: tracing "
                        "the kernel's sequential form takes ~8 s of CPU on Cora); rtl target only")


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
    if ns.dim <= 0:
        raise ValueError(f"--dim must be positive, not {ns.dim}")
    if ns.seed < 0:             # numpy's default_rng said only "expected non-negative integer"
        raise ValueError(f"--seed must be an integer >= 0, not {ns.seed}")
    if ns.nodes < 0:
        raise ValueError(f"--nodes must be >= 0 (0: all), not {ns.nodes}")
    if not 0.0 <= ns.backpressure < 1.0:
        raise ValueError(f"--backpressure must be a probability in [0, 1), not {ns.backpressure}")
    if ns.backpressure and ns.target != "rtl":
        raise ValueError(f"--backpressure {ns.backpressure} applies to --target rtl only (the "
                         f"golden model has no cycles)")
    profile_guided.requested()       # a bad EMBER_PROFILE_GUIDED: an error before any work
    resolve_target_options(ns)
    if ns.program == "handwritten" and getattr(ns, "mode", "sum") not in HANDWRITTEN_MODES:
        raise ValueError(f"--mode {ns.mode} has no hand-written program (it has "
                         f"{', '.join(HANDWRITTEN_MODES)}); use --program compiled")
    if ns.program == "compiled":    # before the graph is read and the baseline started
        _check_compiled_inputs(ns)
    coupled = _coupled(ns)
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


def _mode_kernel(ns) -> Path:
    return REPO / "examples" / f"embedding_bag_{getattr(ns, 'mode', 'sum')}.mlir"


def kernel_path(ns) -> Path:
    """The MLIR kernel of a compiled run: ``--kernel``, or ``examples/embedding_bag_<mode>.mlir``
    for ``--mode`` (``sum`` when the namespace has no mode)."""
    kernel = getattr(ns, "kernel", None)
    return Path(kernel) if kernel is not None else _mode_kernel(ns)


def _check_compiled_inputs(ns) -> None:
    """``--kernel`` exists and ``--tmu-config`` reads; else an error naming the option."""
    from sw.runtime.isa import Limits
    if not kernel_path(ns).is_file():
        raise FileNotFoundError(f"--kernel {str(kernel_path(ns))!r} does not exist")
    try:
        Limits.from_file(getattr(ns, "tmu_config", DEFAULT_TMU_CONFIG))
    except (OSError, ValueError) as e:
        raise ValueError(f"--tmu-config: {e}") from None


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


#: Options that only the RTL target reads, with their defaults there (``None`` in the parser, so
#: that a value given with ``--target golden`` is refused instead of silently ignored).
RTL_ONLY_DEFAULTS = {"memory": DEFAULT_MEMORY, "engine": "cpp", "core": None,
                     "core_only_mshrs": DEFAULT_CORE_ONLY_MSHRS}


def resolve_target_options(ns: argparse.Namespace) -> None:
    """Fill in the RTL-only options' defaults, in place.

    Raises ``ValueError`` naming the options if any of ``--memory``, ``--engine``, ``--core`` or
    ``--core-only-mshrs`` is given with a target other than ``rtl`` (the golden model has no
    memory timing, no simulator and no cycles to compare)."""
    if ns.target != "rtl":
        given = [f"--{name.replace('_', '-')} {getattr(ns, name)}" for name in RTL_ONLY_DEFAULTS
                 if getattr(ns, name, None) is not None]
        if given:
            raise ValueError(f"{', '.join(given)}: only --target rtl reads "
                             f"{'this option' if len(given) == 1 else 'these options'} "
                             f"(the golden model has no cycles), not --target {ns.target}")
    for name, default in RTL_ONLY_DEFAULTS.items():
        if getattr(ns, name, None) is None:
            setattr(ns, name, default)


def _coupled(ns) -> bool:
    """Whether the run couples the core model to the unit (``--core``; see ``add_arguments``).

    Raises ``ValueError`` for ``--core model`` with the cocotb engine or with ``--backpressure``
    (the core model is the back-pressure), and for ``--core-only-mshrs`` below 0."""
    def option(name):            # as given, else its RTL default (resolve_target_options)
        value = getattr(ns, name, None)
        return RTL_ONLY_DEFAULTS[name] if value is None else value
    mshrs = option("core_only_mshrs")
    if not isinstance(mshrs, int) or mshrs < 0:
        raise ValueError(f"--core-only-mshrs must be an integer >= 0, not {mshrs!r}")
    core, engine = option("core"), option("engine")
    if ns.target != "rtl":
        return False
    if core in ("model", "fitted", "replay"):
        if engine != "cpp":
            raise ValueError(f"--core {core} needs --engine cpp (the C++ harness simulates the "
                             f"core), not --engine {engine}")
        if ns.backpressure:
            raise ValueError(f"--core {core} sets the back-pressure itself; --backpressure "
                             f"{ns.backpressure} needs --core free")
        return True
    return core is None and engine == "cpp" and not ns.backpressure


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
    path = kernel_path(ns) if ns.program == "compiled" else _mode_kernel(ns)
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
