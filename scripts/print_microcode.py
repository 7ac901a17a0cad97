"""Print the traversal microcode the RTL decoder builds for a compiled kernel.

Compiles KERNEL.mlir at the given level for ``--tmu-config`` (default ``configs/tmu_rtl.json``),
loads the binary program into a program memory in front of ``hw.tmu.decoder.Decoder`` and runs
the decoder (program checker, configuration writer, microcode builder; ``docs/rtl.md`` §2.1-§2.2)
in the Amaranth simulator, then prints the microcode entries it wrote (one uop per line, with
its fusions), the run-ahead engine assignment and each layer's ``body_pc``/``exit_pc``.
The argument registers are left at 0: region bases and sizes do not change the microcode; an
ARG factor of a ``chain`` (``hw/tmu/chain.py``) is then 0, which fits in 32 bits, so a run
whose factor does not fit would get the unchained uops instead.

    python scripts/print_microcode.py examples/spmv_csr.mlir -O3

Exit status 2 with a message on a bad argument, a compile error or a decode fault.
"""

from __future__ import annotations

import argparse
import struct
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from amaranth.hdl import Module  # noqa: E402
from amaranth.lib import memory, wiring  # noqa: E402
from amaranth.sim import Simulator  # noqa: E402

from hw.tmu import TmuConfig  # noqa: E402
from hw.tmu.decoder import Decoder  # noqa: E402
from hw.tmu.layouts import UopKind  # noqa: E402
from hw.tmu.signatures import ProgramLine, program_lines  # noqa: E402
from sw.compiler import CompileError, compile_mlir  # noqa: E402
from sw.runtime.isa import Limits  # noqa: E402


__all__ = ["decode_microcode", "format_uop", "main"]

DEFAULT_CONFIG = Path(__file__).resolve().parent.parent / "configs" / "tmu_rtl.json"


class _Bench(wiring.Elaboratable):
    def __init__(self, config: TmuConfig, words: list[int]):
        self.decoder = Decoder(config)
        self._words = words
        self._lines = program_lines(config)

    def elaborate(self, platform):
        m = Module()
        m.submodules.decoder = dec = self.decoder
        words = self._words + [0] * (4 * self._lines - len(self._words))
        m.submodules.program = program = memory.Memory(
            shape=ProgramLine, depth=self._lines,
            init=[words[4 * k:4 * k + 4] for k in range(self._lines)])
        wiring.connect(m, dec.program, program.read_port())
        return m


def decode_microcode(program: bytes, config: TmuConfig | None = None, *, max_cycles: int = 20000):
    """Run the RTL decoder on ``program`` (binary access program, ``docs/isa.md``).

    Returns ``dict(uops=[Uop views as dicts], engines=[(stream, layer, offset)], body_pc=[...],
    exit_pc=[...], decode_cycles=int)``; ``uops`` in microcode address order.

    Raises
    ------
    ValueError
        The decoder faulted (message gives the fault code and word index), or the program is
        longer than ``config.program_words``.
    TimeoutError
        No ``done`` within ``max_cycles`` cycles.
    """
    config = config or TmuConfig()
    if len(program) % 4:
        raise ValueError(f"program: length {len(program)} bytes is not a multiple of 4")
    words = list(struct.unpack(f"<{len(program) // 4}I", program))
    if len(words) > config.program_words:
        raise ValueError(f"program: {len(words)} words > program_words {config.program_words}")
    bench = _Bench(config, words)
    dec = bench.decoder
    out: dict = {}

    async def testbench(ctx):
        ctx.set(dec.prog_len, len(program))
        ctx.set(dec.start, 1)
        await ctx.tick()
        ctx.set(dec.start, 0)
        writes = {}
        for cycle in range(max_cycles):
            if ctx.get(dec.microcode.en):
                writes[ctx.get(dec.microcode.addr)] = ctx.get(dec.microcode.data)
            if ctx.get(dec.done):
                if ctx.get(dec.fault):
                    code = ctx.get(dec.fault_code)
                    raise ValueError(f"program: decode fault {getattr(code, 'name', code)} at word "
                                     f"{ctx.get(dec.fault_pc)}")
                cfg = dec.config
                out["uops"] = [writes[a] for a in sorted(writes)]
                used = {ctx.get(cfg.stream_prefetch_engine[s]) for s in range(config.streams)
                        if ctx.get(cfg.stream_prefetched) >> s & 1}
                out["engines"] = [(ctx.get(cfg.prefetch_stream[e]), ctx.get(cfg.prefetch_layer[e]),
                                   ctx.get(cfg.prefetch_offset[e])) for e in sorted(used)]
                out["skipped"] = [(e, ctx.get(cfg.prefetch_skipped_stream[e]))
                                  for e in sorted(used)
                                  if ctx.get(cfg.prefetch_skipped_valid) >> e & 1]
                out["body_pc"] = [ctx.get(cfg.body_pc[i]) for i in range(config.layers)]
                out["exit_pc"] = [ctx.get(cfg.exit_pc[i]) for i in range(config.layers)]
                out["decode_cycles"] = cycle + 1
                return
            await ctx.tick()
        raise TimeoutError(f"decoder not done after {max_cycles} cycles")

    sim = Simulator(bench)
    sim.add_clock(1e-6)
    sim.add_testbench(testbench)
    sim.run()
    return out


def format_uop(u, engines) -> str:
    """One line: the uop's kind and id, then its fusions (``docs/rtl.md`` §2.2)."""
    kind = UopKind(u.kind) if not isinstance(u.kind, UopKind) else u.kind
    text = f"{kind.name:<8} {int(u.id)}"
    if kind == UopKind.STREAM:
        text = f"STREAM   s{int(u.id)}"
        pops = [f"s{engines[e][0]}" for e in range(len(engines)) if int(u.pop) >> e & 1]
        if pops:
            text += "  pop " + ",".join(pops)
        if int(u.chain):
            text += f"  chain s{int(u.id) - 1}"
    elif kind == UopKind.ACT:
        text = f"ACT      a{int(u.id)}"
    elif kind in (UopKind.ENTER, UopKind.NEXT, UopKind.LANE):
        text = f"{kind.name:<8} layer {int(u.id)}"
        started = [f"e{e}" for e in range(16) if kind == UopKind.ENTER
                   and int(u.start_engines) >> e & 1]
        if started:      # docs/rtl.md §9.5 B: the layer's armed engines start with it
            text += "  +start " + ",".join(started)
        if kind == UopKind.NEXT and int(u.next_outer):
            text += f" (out: +NEXT layer {int(u.id) - 1})"
    elif kind == UopKind.PREFETCH:
        text = f"PREFETCH engine {int(u.id)} (s{engines[int(u.id)][0]})" \
            if int(u.id) < len(engines) else f"PREFETCH engine {int(u.id)}"
        if int(u.arm):   # latches the engine's parameters; its layer's ENTER starts it
            text += "  arm"
    if kind in (UopKind.STREAM, UopKind.ACT):
        if kind == UopKind.STREAM and int(u.fuse_act):
            text += f"  +act a{int(u.act_id)}"
        if int(u.fuse_act2):
            text += f"  +act2 a{int(u.act2_id)}" + (" (load)" if int(u.act2_load) else "")
        if int(u.fuse_next):
            text += f"  +NEXT layer {int(u.next_layer)}"
            if int(u.next_outer):     # docs/rtl.md §9.5 D
                text += f" (out: +NEXT layer {int(u.next_layer) - 1})"
        if kind == UopKind.STREAM and int(u.fuse_lane):
            text += "  +LANE"
        if kind == UopKind.STREAM and int(u.fuse_enter):     # docs/rtl.md §9.5 E
            text += f"  +ENTER layer {int(u.next_layer)}"
            if int(u.enter_swap):
                text += " (lb = b, ub = a)"
            started = [f"e{e}" for e in range(16) if int(u.start_engines) >> e & 1]
            if started:
                text += "  +start " + ",".join(started)
    return text


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter,
                                 epilog=__doc__.split("\n\n", 1)[1])
    ap.add_argument("kernel", metavar="KERNEL.mlir")
    ap.add_argument("-O", dest="level", type=int, choices=range(4), default=3,
                    help="optimisation level (default 3)")
    ap.add_argument("--tmu-config", default=str(DEFAULT_CONFIG),
                    help="TMU configuration JSON (default configs/tmu_rtl.json)")
    a = ap.parse_args(argv)
    path = Path(a.kernel)
    if not path.is_file():
        ap.error(f"KERNEL.mlir: no such file {a.kernel!r}")
    try:
        limits = Limits.from_file(a.tmu_config)
    except (OSError, ValueError) as e:
        ap.error(f"--tmu-config: {e}")
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    from bench_compiler import rtl_config_for
    try:
        config = rtl_config_for(limits)
    except ValueError as e:
        ap.error(f"--tmu-config: {e}")
    try:
        kernel = compile_mlir(path.read_text(), filename=str(path), limits=limits,
                              opt_level=a.level)
    except CompileError as e:
        ap.error(f"KERNEL.mlir: {e.message}")
    try:
        r = decode_microcode(kernel.program.encode(), config)
    except ValueError as e:
        ap.error(str(e))
    n = len(kernel.program.layers)
    print(f"# {path} -O{a.level}: {len(r['uops'])} uops, decode {r['decode_cycles']} cycles")
    print("# engines: " + ", ".join(f"e{e}=s{s} (layer {lay}, offset {off})"
                                     for e, (s, lay, off) in enumerate(r["engines"])))
    if r["skipped"]:
        print("# skipped (no STREAM uop; evaluated before its engine's fallback step, "
              "docs/rtl.md §9.5 C): " + ", ".join(f"s{s} (read by e{e})"
                                                  for e, s in r["skipped"]))
    labels = {}
    for k in range(n):
        labels.setdefault(r["body_pc"][k], []).append(f"body_{k}")
        labels.setdefault(r["exit_pc"][k], []).append(f"exit_{k}")
    for pc, u in enumerate(r["uops"]):
        for lab in labels.get(pc, []):
            print(f"{lab}:")
        print(f"  {pc:3d}  {format_uop(u, r['engines'])}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
