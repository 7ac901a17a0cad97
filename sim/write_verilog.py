"""``make verilog``: write the system's Verilog (``hw.system.System``: core interface, access unit,
memory model) for the default configuration, the files the Verilator model is built from.

    python3 -m sim.write_verilog [--memory {simple,HBM2,HBM3}] [--out build/verilog]

Writes ``OUT/ember_system.v`` (the Amaranth top, ``sim.verilator.generate_verilog`` of the default
``hw.tmu.config.TmuConfig`` with the smallest memory image, ``MIN_MEM_WORDS`` 64-bit words, and
the memory model's channel modules), ``OUT/ember_hbm_storage.v`` (the memory's storage) and
``OUT/ember_tb_top.v`` (the Verilator wrapper with the queue sinks), and prints their sizes.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from sim.verilator import MIN_MEM_WORDS, REPO, SYSTEM, TB_TOP_VERILOG, TOPLEVEL, _storage_verilog, generate_verilog

DEFAULT_OUT = REPO / "build" / "verilog"
MEMORIES = ("simple", "HBM2", "HBM3")


def write_verilog(out: Path, memory: str = "simple") -> list[Path]:
    """Write the three Verilog files into ``out`` (created if missing); returns their paths."""
    from hw.tmu.config import TmuConfig
    out.mkdir(parents=True, exist_ok=True)
    files = {f"{SYSTEM}.v": generate_verilog(TmuConfig(), MIN_MEM_WORDS, memory),
             "ember_hbm_storage.v": _storage_verilog().read_text(),
             f"{TOPLEVEL}.v": TB_TOP_VERILOG.read_text()}
    paths = []
    for name, text in files.items():
        path = out / name
        path.write_text(text)
        paths.append(path)
    return paths


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m sim.write_verilog", description=__doc__.splitlines()[0])
    p.add_argument("--memory", choices=MEMORIES, default="simple",
                   help="memory model in the system (default simple; make sim uses HBM2)")
    p.add_argument("--out", default=str(DEFAULT_OUT), help=f"output directory (default {DEFAULT_OUT})")
    ns = p.parse_args(argv)
    for path in write_verilog(Path(ns.out), ns.memory):
        print(f"{path}: {path.stat().st_size} bytes")
    return 0


if __name__ == "__main__":
    sys.exit(main())
