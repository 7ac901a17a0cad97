"""Cora sum aggregation (``examples/embedding_bag_sum.mlir``) compiled at -O0..-O3 for a TMU
configuration and run on the RTL: cycles, loads, tokens, bytes per cycle (``docs/rtl.md`` §9).

    python -m tb.tmu.measure_opt_levels --dim 16 --config configs/tmu_rtl.json

Levels the configuration cannot run are reported as refused (the compiler names the feature).
Every run is checked against PyTorch (``torch.nn.functional.embedding_bag``) and token by token
against the golden model.
"""

from __future__ import annotations

import argparse
from pathlib import Path

import numpy as np
import torch

REPO = Path(__file__).resolve().parents[2]


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--dim", type=int, default=16, help="feature width in elements (default 16)")
    ap.add_argument("--nodes", type=int, default=0, help="first NODES bags only (0: all 2,708)")
    ap.add_argument("--config", default="configs/tmu_rtl.json",
                    help="TMU configuration the compiler targets (must be the default RTL build)")
    ap.add_argument("--levels", default="0,1,2,3", help="comma-separated -O levels")
    ap.add_argument("--profile", action="store_true",
                    help="also print where the cycles go: vector iterations of the LOCKSTEP "
                         "layer, its evaluation uops, vector-operand marshaling cycles, "
                         "reorder-buffer-full and output-stall cycles (docs/rtl.md §2.7)")
    a = ap.parse_args(argv)
    if a.dim < 1:
        ap.error(f"--dim must be >= 1, not {a.dim}")

    from sw.compiler import compile_mlir
    from sw.compiler.errors import CompileError
    from sw.runtime.datasets import load_cora, node_features
    from sw.runtime.drivers import AccessRun, ReplayTransport, run_kernel
    from sw.runtime.golden import run_golden
    from sw.runtime.image import bind_arguments, build_image
    from sw.runtime.isa import Limits
    from sim.system import RtlJob, run_many_on_rtl

    limits = Limits.from_file(a.config)
    g = load_cora()
    offsets = g.offsets if not a.nodes else g.offsets[:a.nodes + 1]
    indices = g.indices[:offsets[-1]]
    x = node_features(g.num_nodes, a.dim)
    ref = torch.nn.functional.embedding_bag(torch.from_numpy(indices.astype(np.int64)),
                                            torch.from_numpy(x),
                                            torch.from_numpy(offsets[:-1].astype(np.int64)),
                                            mode="sum").numpy()
    text = (REPO / "examples" / "embedding_bag_sum.mlir").read_text()
    jobs, runs = [], []
    for level in (int(v) for v in a.levels.split(",")):
        try:
            k = compile_mlir(text, filename="embedding_bag_sum.mlir", opt_level=level, limits=limits)
        except CompileError as e:
            print(f"-O{level}: refused: {e}")
            continue
        out = np.zeros((len(offsets) - 1, a.dim), dtype=np.float32)
        args = [x, indices, offsets, out]
        image = build_image(k, args)
        regs = bind_arguments(k, args, image)
        program = k.program.encode()
        jobs.append(RtlJob(program, image.data, regs))
        runs.append((level, k, args, program, run_golden(program, image.data, regs, limits=limits)))
    results = run_many_on_rtl(jobs)

    print(f"Cora sum aggregation, dim {a.dim}, {len(offsets) - 1} bags, {len(indices)} lookups, "
          f"{a.config}")
    print("| level | ISA | cycles | loads issued | data tokens | control tokens | bytes/cycle "
          "| speedup vs -O0 |")
    print("|---|---|---|---|---|---|---|---|")
    base = None
    for (level, k, args, program, gold), r in zip(runs, results):
        assert r.fault_code == 0 and r.data_tokens == gold.data_tokens \
            and r.control_tokens == gold.control_tokens, f"-O{level}: RTL differs from golden"
        res = run_kernel(k, args, ReplayTransport(program, AccessRun.from_rtl(r)))
        np.testing.assert_allclose(res.results[0], ref, rtol=1e-5, atol=1e-5)
        base = base or r.cycles
        s = r.stats
        print(f"| -O{level} | v{k.program.version} | {r.cycles:,} | {s['loads']:,} | "
              f"{s['data_tokens']:,} | {s['control_tokens']:,} | "
              f"{s['bytes_loaded'] / r.cycles:.2f} | {base / r.cycles:.2f}x |")
    if a.profile:
        print()
        print("| level | vector iterations | cycles / vector iteration | lane-eval uops "
              "| vector marshaling cycles | ROB-full cycles | output-stall cycles "
              "| blocking-wait cycles |")
        print("|---|---|---|---|---|---|---|---|")
        for (level, *_), r in zip(runs, results):
            s = r.stats
            vi = s["vector_iterations"]
            per = f"{r.cycles / vi:.2f}" if vi else "-"
            print(f"| -O{level} | {vi:,} | {per} | {s['lane_eval_uops']:,} | "
                  f"{s['vec_marshal_cycles']:,} | {s['rob_full_cycles']:,} | "
                  f"{s['out_stall_cycles']:,} | {s['block_wait_cycles']:,} |")


if __name__ == "__main__":
    main()
