"""The cases of ``scripts/bench_bandwidth.py`` (issue 10's benchmark) and what one run of a case
measures: the inputs of each case, its kernel (compiled at ``-O3`` or hand-written), its 64-byte
line trace and the memory's ceiling on it, one checked run on the RTL system with the unit's and
the memory's counters, and the ratios of the unit's useful bytes per cycle to the bounds.

The cases, the checks and the CSV columns are described in ``scripts/bench_bandwidth.py``'s module
doc; that script chooses the runs (table, sweeps) and writes the CSV and the plot.
"""

from __future__ import annotations

import time
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parents[1]

ROWS, DIM, BAGS, POOLING = 100_000, 64, 256, 32
LINE = 64
GRQC = REPO / "data" / "graphs" / "ca-GrQc.txt"
CASES = ("dlrm_uniform", "dlrm_reuse", "cora_d16", "cora_d64", "grqc_d16", "grqc_d64")
#: case family -> (example kernel, workload whose references check it, hand-written name)
FAMILY = {"dlrm": ("embedding_bag_sum.mlir", "eb_sum"), "spmm": ("spmm_csr.mlir", "spmm_cora")}


def dlrm_args(seed: int, reuse: bool = False) -> list:
    """EmbeddingBag arguments: table (ROWS x DIM f32), indices (int64; uniform, or with Meta's reuse
    distribution and variable bag lengths), offsets (BAGS + 1, int64), output (BAGS x DIM f32)."""
    rng = np.random.default_rng(seed)
    table = rng.standard_normal((ROWS, DIM)).astype(np.float32)
    if reuse:
        from sw.workloads import dlrm_trace
        indices, offsets = dlrm_trace(ROWS, BAGS, POOLING, seed=seed)
    else:
        indices = rng.integers(0, ROWS, BAGS * POOLING, dtype=np.int64)
        offsets = np.arange(0, BAGS * POOLING + 1, POOLING, dtype=np.int64)
    return [table, indices, offsets, np.zeros((BAGS, DIM), np.float32)]


def spmm_args(graph_name: str, dim: int, seed: int, grqc: Path = GRQC) -> list:
    """SpMM arguments (``spmm_csr.mlir``): rowptr, col (int64), GCN-normalised values (f32), a
    dense (nodes, dim) f32 matrix, nrows, output (nodes, dim) zeros."""
    from sw.runtime.datasets import load_cora, load_edge_list
    from sw.workloads import gcn_normalised
    if graph_name == "cora":
        g = load_cora()
    else:       # SNAP's file starts with its URL: keep the comment and edge lines
        clean = REPO / "build" / "graphs" / "ca-GrQc.txt"
        clean.parent.mkdir(parents=True, exist_ok=True)
        clean.write_text("".join(line for line in Path(grqc).read_text().splitlines(True)
                                 if line.startswith("#") or line[:1].isdigit()))
        g = load_edge_list(clean, name="ca-GrQc")
    x = np.random.default_rng(seed).standard_normal((g.num_nodes, dim)).astype(np.float32)
    n = g.num_nodes
    return [g.offsets.copy(), g.indices.copy(), gcn_normalised(g), x, np.array([n], np.int64),
            np.zeros((n, dim), np.float32)]


def case_args(case: str, seed: int, grqc: Path = GRQC) -> list:
    if case.startswith("dlrm"):
        return dlrm_args(seed, reuse=case == "dlrm_reuse")
    graph, dim = case.split("_d")
    return spmm_args(graph, int(dim), seed, grqc)


def family(case: str) -> str:
    return "dlrm" if case.startswith("dlrm") else "spmm"


def kernel_for(case: str, program: str):
    """The compiled ``-O3`` kernel or the hand-written one (``program`` "O3" / "hand")."""
    example, workload = FAMILY[family(case)]
    if program == "hand":
        from sw.runtime.handwritten.suite import handwritten_kernel
        return handwritten_kernel(workload)
    from sw.compiler import compile_mlir
    path = REPO / "examples" / example
    return compile_mlir(path.read_text(), filename=path.name, opt_level=3)


def line_trace(case: str, args: list) -> list:
    """The case's 64-byte line reads at the addresses ``build_image`` gives the arrays: every
    gathered row's lines in program order, then each index/offset/value array's lines."""
    from hw.hbm_model.traces import embedding_gather, sequential
    from sw.runtime.image import build_image
    kernel = kernel_for(case, "O3")
    image = build_image(kernel, args)
    table_arg, index_arg = (0, 1) if family(case) == "dlrm" else (3, 1)
    table = image.placements[table_arg]
    reqs = embedding_gather(table.shape[1], indices=args[index_arg], base=table.base)
    for n, p in image.placements.items():
        if n != table_arg and p.nbytes:
            first = p.base // LINE
            reqs += sequential((p.base + p.nbytes - 1) // LINE - first + 1, start=first * LINE)
    return reqs


def memory_ceiling(preset, case: str, args: list) -> dict:
    """The reference model's bytes per cycle on :func:`line_trace` (see
    ``scripts/bench_bandwidth.py``'s module doc)."""
    from hw.hbm_model.traces import ceiling
    reqs = line_trace(case, args)
    bound, ports, cycles = ceiling(preset, reqs)
    return dict(ceiling_ports=ports, ceiling_lines=len(reqs), ceiling_cycles=cycles,
                ceiling_bytes_per_cycle=round(bound, 2))


def check(case: str, args: list, results) -> None:
    """Raise AssertionError unless ``results`` equal the references (``scripts/bench_bandwidth.py``'s
    module doc)."""
    from sw.workloads import WORKLOADS
    WORKLOADS[FAMILY[family(case)][1]].check(args, results)


def unit_run(case: str, program: str, preset_name: str, seed: int, config, grqc: Path) -> dict:
    """Run ``case`` as ``program`` on the RTL system with ``config`` (a ``TmuConfig``) and the
    memory preset; check the results; the unit's and the memory's counters."""
    from sw.runtime.drivers import run_kernel
    args = case_args(case, seed, grqc)
    kernel = kernel_for(case, program)
    t0 = time.perf_counter()
    res = run_kernel(kernel, [a.copy() for a in args], "rtl", memory=preset_name, config=config)
    wall = time.perf_counter() - t0
    check(case, args, res.results)
    cycles, stats, mem = res.access.cycles, res.access.stats, res.access.memory_stats
    latency = mem["read_latency_sum"] / max(1, mem["reads"])
    return dict(unit_cycles=cycles, unit_bytes_loaded=stats["bytes_loaded"],
                unit_useful_bytes_per_cycle=round(stats["bytes_loaded"] / cycles, 2),
                unit_line_requests=stats["loads"],
                unit_peak_lines_in_flight=stats["peak_inflight"],
                unit_mean_lines_in_flight=round(stats["inflight_sum"] / cycles, 1),
                unit_rob_full_cycles=stats["rob_full_cycles"],
                unit_block_wait_cycles=stats["block_wait_cycles"],
                unit_blocking_loads=stats["blocking_loads"],
                unit_out_stall_cycles=stats["out_stall_cycles"],
                unit_data_tokens=stats["data_tokens"],
                read_latency_mean=round(latency, 1), read_latency_max=mem["read_latency_max"],
                littles_law_bound=round(LINE * config.max_inflight / latency, 1),
                unit_wall_s=round(wall, 1))


def ratios(row: dict) -> dict:
    u = row["unit_useful_bytes_per_cycle"]
    return dict(over_ceiling=round(u / row["ceiling_bytes_per_cycle"], 4),
                over_output_bound=round(u / row["output_bound"], 4),
                over_min_ceiling_output=round(u / min(row["ceiling_bytes_per_cycle"],
                                                      row["output_bound"]), 4),
                over_peak=round(u / row["peak_bytes_per_cycle"], 4))
