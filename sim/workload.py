"""The main job (``make sim`` / ``ember sim``): Cora sum-aggregation, compiled and run on the RTL.

Workload: one GNN message-passing step, ``h[v] = Σ_{u ∈ N(v)} x[u]`` over the Cora citation graph
(2,708 nodes, 10,556 directed edges, ``sw.runtime.datasets.load_cora``) with generated features
``x`` of shape (2708, dim), float32, seed 0 — i.e. ``F.embedding_bag(indices, x, offsets, mode="sum")``.

Steps: compile ``examples/embedding_bag_sum.mlir`` (or use the hand-written access program with
``--program handwritten``), lay out the memory image, build the Verilator model (once per
configuration, cached under ``build/``), run, execute the callbacks, compare with PyTorch.
Prints cycles, bytes loaded per cycle, lookups per cycle and ``PASS``/``FAIL``.
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parents[1]
DEFAULT_KERNEL = REPO / "examples" / "embedding_bag_sum.mlir"
DEFAULT_DIM = 16


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--graph", default="cora",
                   help="'cora' (shipped) or the path of an edge list (two node ids per line, '#' comments)")
    p.add_argument("--dim", type=int, default=DEFAULT_DIM, help=f"feature width in elements (default {DEFAULT_DIM})")
    p.add_argument("--nodes", type=int, default=0,
                   help="aggregate only the first NODES nodes (0: all); for quick runs")
    p.add_argument("--target", choices=("rtl", "golden"), default="rtl")
    p.add_argument("--program", choices=("compiled", "handwritten"), default="compiled",
                   help="compiled: the compiler's output for --kernel; handwritten: sw/runtime/handwritten.py")
    p.add_argument("--kernel", default=str(DEFAULT_KERNEL), help="MLIR kernel for --program compiled")
    p.add_argument("--backpressure", type=float, default=0.0,
                   help="probability (0..1) that the core is not ready for a token in a cycle")
    p.add_argument("--seed", type=int, default=0, help="seed of the features and of the back-pressure")


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

    if ns.dim <= 0:
        raise ValueError(f"--dim must be positive, not {ns.dim}")
    g, rows = _graph(ns.graph, ns.nodes)
    distinct = len(np.unique(g.indices))
    x = node_features(rows, ns.dim, seed=ns.seed)
    expected = torch.nn.functional.embedding_bag(torch.from_numpy(g.indices), torch.from_numpy(x),
                                                 torch.from_numpy(g.offsets[:-1]), mode="sum").numpy()
    print(f"workload: sum-aggregation over {g.name}: {g.num_nodes} nodes, {g.num_edges} edges, "
          f"features {x.shape[0]}x{ns.dim} float32 ({distinct} distinct rows gathered)")
    print(f"program: {ns.program}{' (' + ns.kernel + ')' if ns.program == 'compiled' else ''}; target: {ns.target}")

    t0 = time.perf_counter()
    got, access = _run(g, x, ns)
    wall = time.perf_counter() - t0

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
        print(f"simulation: {wall:.1f} s wall, {cycles / wall:,.0f} cycles/s (including build and load)")
    else:
        print(f"loads: {stats.get('loads', 0)}, bytes loaded: {bytes_loaded} (golden model: no cycles); {wall:.1f} s")
    if ok:
        print("PASS: matches torch.nn.functional.embedding_bag(mode='sum')")
        return 0
    err = np.abs(got - expected).max() if got.shape == expected.shape else float("nan")
    print(f"FAIL: result differs from torch.nn.functional.embedding_bag(mode='sum') "
          f"(shape {got.shape} vs {expected.shape}, max abs error {err})")
    return 1


def _kernel(ns):
    """The kernel to run: the compiler's output for ``--kernel``, or the hand-written program."""
    if ns.program == "handwritten":
        from sw.runtime.handwritten import embedding_bag_kernel
        return embedding_bag_kernel("float32", "sum")
    from sw.compiler import compile_mlir
    path = Path(ns.kernel)
    if not path.is_file():
        raise FileNotFoundError(f"--kernel {ns.kernel!r} does not exist")
    return compile_mlir(path.read_text(), filename=str(path))


def _run(g, x, ns):
    from sw.runtime.drivers import run_kernel
    options = {"backpressure": ns.backpressure, "seed": ns.seed} if ns.target == "rtl" else {}
    out = np.zeros((g.num_nodes, ns.dim), dtype=np.float32)
    result = run_kernel(_kernel(ns), [x, g.indices, g.offsets, out], ns.target, **options)
    return np.asarray(result.results[0]), result.access


if __name__ == "__main__":
    import sys
    parser = argparse.ArgumentParser(prog="python -m sim.workload", description=__doc__.splitlines()[0])
    add_arguments(parser)
    sys.exit(main(parser.parse_args()))
