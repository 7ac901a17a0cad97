"""``ember``: compile embedding kernels to access programs and run them on the golden model or RTL.

Sub-commands::

    ember compile KERNEL.mlir --emit {scf,slc,slcv,dlc,tmu,asm,bin,c} [-O{0,1,2,3}] [--tmu-config FILE] [-o FILE]
    ember opt FILE.mlir --passes a,b{opt=v},c [--split-input-file]   run passes by name (like mlir-opt)
    ember run KERNEL.mlir --inputs IN.npz --target {golden,rtl} [-O{0..3}] [--tmu-config FILE] --out OUT.npz
              [--memory {simple,HBM2,HBM3}] [--stats FILE.json]
    ember asm PROGRAM.s [-o PROGRAM.bin]        assemble the text form of docs/isa.md
    ember disasm PROGRAM.bin [--tmu-config FILE] [-o PROGRAM.s]   disassemble (checks the program like the RTL decoder)
    ember sim [--dim N] [--target rtl] ...      the default workload: Cora sum-aggregation (make sim)
    ember hbm-trace TRACE --preset HBM2 ...     run a DRAMSim3-format trace through the HBM model

Exit status: 0 on success, 1 when a result check fails (``sim``), 2 on bad input (with a message
on stderr naming the argument and the bad value).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np

STAGES = ("scf", "slc", "slcv", "dlc", "tmu", "asm", "bin", "c")


def _limits(ns):
    """The --tmu-config file as ``sw.runtime.isa.Limits``; without the option the configuration
    the RTL builds (``configs/tmu_rtl.json``, ``sw.compiler.pipelines.default_limits``)."""
    from sw.runtime.isa import Limits
    if getattr(ns, "tmu_config", None) is None:
        from sw.compiler.pipelines import default_limits
        return default_limits()
    try:
        return Limits.from_file(ns.tmu_config)
    except FileNotFoundError:
        raise UserError(f"--tmu-config {ns.tmu_config!r} does not exist") from None
    except ValueError as e:
        raise UserError(f"--tmu-config: {e}") from None


def _add_tmu_config_argument(p) -> None:
    p.add_argument("--tmu-config", metavar="FILE",
                   help="TMU configuration (JSON, configs/*.json, or a name such as tmu_vector); "
                        "default: configs/tmu_rtl.json, what the RTL builds")


def _add_opt_arguments(p) -> None:
    p.add_argument("-O", dest="opt_level", type=int, choices=(0, 1, 2, 3), default=0,
                   metavar="{0,1,2,3}",
                   help="optimisation level (docs/compiler.md): 0 decoupled scalar code, "
                        "1 + vectorisation, 2 + bufferisation, 3 + queue alignment and stream "
                        "simplification; default 0")
    _add_tmu_config_argument(p)


class UserError(Exception):
    """Bad input from the command line: printed as ``ember: error: ...``, exit status 2."""


def _read_text(path: str, what: str = "KERNEL") -> str:
    """The text of the file ``path``, given as the argument ``what``; ``UserError`` naming both
    when it is missing or not UTF-8 text (a binary program or an .npz given by mistake)."""
    p = Path(path)
    if not p.is_file():
        raise UserError(f"{what} {path!r} does not exist or is not a file")
    try:
        return p.read_text(encoding="utf-8")
    except UnicodeDecodeError as e:
        raise UserError(f"{what} {path!r} is not UTF-8 text (byte 0x{e.object[e.start]:02x} at "
                        f"offset {e.start})") from None


def _check_output(path: str, option: str) -> None:
    """Refuse (``UserError`` naming ``option``) an output path that cannot be written as a file:
    a directory, or one whose directory does not exist. Checked before any work is done."""
    p = Path(path)
    if p.is_dir():
        raise UserError(f"{option} {path!r} is a directory; give a file name")
    if not p.parent.is_dir():
        raise UserError(f"{option} {path!r}: directory {str(p.parent)!r} does not exist")


def _write(out: str | None, payload: str | bytes) -> None:
    if out is not None and out != "-":
        _check_output(out, "-o")
    if out is None or out == "-":
        if isinstance(payload, bytes):
            if sys.stdout.isatty():
                raise UserError("refusing to write a binary program to a terminal; use -o FILE")
            sys.stdout.buffer.write(payload)
        else:
            sys.stdout.write(payload if payload.endswith("\n") else payload + "\n")
        return
    Path(out).write_bytes(payload) if isinstance(payload, bytes) else Path(out).write_text(payload)


def cmd_compile(ns) -> int:
    from sw.compiler import emit
    text = _read_text(ns.kernel)
    _write(ns.output, emit(text, ns.emit, filename=ns.kernel, limits=_limits(ns),
                           opt_level=ns.opt_level))
    return 0


def load_inputs(path: str, n_params: int) -> list:
    """Bind ``arg0 … argN-1`` of an .npz file by position; 0-d arrays become Python scalars."""
    p = Path(path)
    if not p.is_file():
        raise UserError(f"--inputs {path!r} does not exist or is not a file")
    import zipfile
    if not zipfile.is_zipfile(p):               # np.load would read a .npy, or try a pickle
        raise UserError(f"--inputs {path!r} is not an .npz archive (numpy.savez's format)")
    with np.load(p, allow_pickle=False) as npz:
        names = set(npz.files)
        missing = [f"arg{n}" for n in range(n_params) if f"arg{n}" not in names]
        if missing:
            raise UserError(f"--inputs {path!r} must hold arrays arg0..arg{n_params - 1}; missing "
                            f"{', '.join(missing)} (has {', '.join(sorted(names)) or 'nothing'})")
        extra = sorted(names - {f"arg{n}" for n in range(n_params)})
        if extra:
            raise UserError(f"--inputs {path!r} has arrays the kernel does not take: {', '.join(extra)}")
        args = []
        for n in range(n_params):
            try:
                a = npz[f"arg{n}"]
            except ValueError as e:             # an object array (pickled), a corrupt member
                raise UserError(f"--inputs {path!r}: arg{n} cannot be read: {e}") from None
            args.append(a.item() if a.ndim == 0 else np.array(a))
        return args


def output_arguments(kernel) -> list[int]:
    """Positions of ``kernel``'s output arguments: its memref parameters that the access unit
    does not read (``ParamSpec.in_image`` false), which only the execute side writes."""
    from sw.runtime.kernel import ParamKind
    return [n for n, p in enumerate(kernel.params)
            if p.kind == ParamKind.MEMREF and not p.in_image]


def cmd_run(ns) -> int:
    from sw.compiler.pipelines import run_pipeline
    from sw.runtime.drivers import run_kernel
    _check_output(ns.out, "--out")
    if ns.stats is not None:
        _check_output(ns.stats, "--stats")
    if not 0.0 <= ns.backpressure < 1.0:
        raise UserError(f"--backpressure must be a probability in [0, 1), not {ns.backpressure}")
    if ns.target != "rtl":
        given = [f"--{name} {value}" for name, value in (("backpressure", ns.backpressure),
                                                         ("seed", ns.seed)) if value]
        if given:
            raise UserError(f"{' and '.join(given)} applies to --target rtl only (the golden model "
                            f"has no cycles)")
    limits = _limits(ns)
    compiled = run_pipeline(_read_text(ns.kernel), filename=ns.kernel, limits=limits,
                            opt_level=ns.opt_level)
    kernel = compiled.kernel
    args = load_inputs(ns.inputs, len(kernel.params))
    options = {}
    if ns.core is not None and not ns.coupled:
        raise UserError(f"--core {ns.core} chooses the core model of --coupled: give --coupled too")
    if ns.target == "rtl":
        options = {"backpressure": ns.backpressure, "seed": ns.seed, "memory": ns.memory or "simple"}
        if ns.coupled:
            if ns.backpressure:
                raise UserError(f"--coupled: the core model is the back-pressure; --backpressure "
                                f"{ns.backpressure} applies without --coupled only")
            options["coupled"] = True
            if (ns.core or "replay") != "flat":
                options.update(core=ns.core or "replay", dlc=compiled.dlc)
    elif ns.memory is not None:
        raise UserError(f"--memory {ns.memory} applies to --target rtl only (the golden model has no timing)")
    elif ns.coupled:
        raise UserError("--coupled applies to --target rtl only (the golden model has no timing)")
    result = run_kernel(kernel, args, ns.target, **options)
    arrays = {f"result{n}": np.asarray(r) for n, r in enumerate(result.results)}
    if not result.results:
        # destination-passing style: the kernel returns nothing and writes its output arguments
        arrays = {f"arg{n}": np.asarray(args[n]) for n in output_arguments(kernel)}
    with open(ns.out, "wb") as f:       # exactly --out (np.savez(path) would add ".npz")
        np.savez(f, **arrays)
    stats = result.access.stats
    print(f"target={ns.target} kernel={kernel.name} results={len(result.results)} -> {ns.out}"
          + ("" if result.results else f" (output arguments: {', '.join(arrays) or 'none'})"))
    print(f"loads={stats.get('loads', 0)} bytes_loaded={stats.get('bytes_loaded', 0)} "
          f"operands={result.execute.operands} callbacks={sum(result.execute.calls.values())}")
    if result.cycles is not None:
        print(f"cycles={result.cycles}")
    if ns.target == "rtl" and ns.coupled:
        made = result.coupled_core
        core = (f"core={made.mode} execute_side_cycles={made.execute_cycles}" if made is not None
                else "core=flat")
        print(f"dae_cycles={result.dae_cycles} dae_cycles_estimate={result.dae_cycles_estimate} {core}")
    if ns.stats is not None:
        write_stats(ns.stats, result, kernel.name, options.get("memory"))
        print(f"stats -> {ns.stats}")
    return 0


def write_stats(path: str, result, kernel_name: str, memory: str | None) -> None:
    """``--stats FILE``: the run's counters as JSON — what ``make sim`` prints.

    Keys: ``target``, ``kernel``, ``cycles`` (unit clock cycles, start to done; null on the
    golden model), ``unit`` (the access unit's counters: ``loads``, ``bytes_loaded``,
    ``peak_inflight``, ``stall_cycles``, ``tokens``, ... as the target reports them), ``execute``
    (``operands`` popped, ``callbacks`` run per callback id), ``memory`` (rtl: ``preset``, the
    memory model's raw ``statistics`` of docs/hbm_model.md §5 and the derived ``summary`` of
    ``sim.main_job.memory_summary``: bytes/cycle, fraction of peak, row-buffer outcomes, read
    latency percentiles, per-channel utilisation; null on the golden model), ``core`` (a
    ``--coupled`` run: ``model`` — ``replay``, ``fitted`` or ``flat`` —, ``dae_cycles`` from START
    until the simulated core popped DONE, ``dae_cycles_estimate`` = max(unit, core estimate),
    ``execute_side_cycles``, the execute side alone on the out-of-order core model, null for
    ``flat``; null without ``--coupled``).
    """
    import json
    access = result.access
    made = getattr(result, "coupled_core", None)
    report = {
        "target": result.target, "kernel": kernel_name, "cycles": access.cycles,
        "unit": dict(access.stats),
        "execute": {"operands": result.execute.operands,
                    "callbacks": {str(k): v for k, v in sorted(result.execute.calls.items())}},
        "memory": None,
        "core": None if access.core is None else {
            "model": made.mode if made is not None else "flat",
            "dae_cycles": result.dae_cycles, "dae_cycles_estimate": result.dae_cycles_estimate,
            "execute_side_cycles": made.execute_cycles if made is not None else None},
    }
    if memory is not None and access.memory_stats:
        from sim.main_job import memory_summary
        report["memory"] = {"preset": memory, "statistics": access.memory_stats,
                            "summary": memory_summary(access.memory_stats, memory, access.cycles or 0)}
    try:
        Path(path).write_text(json.dumps(report, indent=1, default=_json_number) + "\n")
    except OSError as e:
        raise UserError(f"--stats {path!r} cannot be written: {e.strerror}") from None


def _json_number(value):
    """NumPy scalars and arrays in the statistics, as JSON numbers and lists."""
    if hasattr(value, "tolist"):
        return value.tolist()
    raise TypeError(f"{type(value).__name__} is not JSON serialisable")


def cmd_asm(ns) -> int:
    from sw.runtime.isa import Program
    prog = Program.from_asm(_read_text(ns.source, "PROGRAM.s"))
    out = ns.output or str(Path(ns.source).with_suffix(".bin"))
    Path(out).write_bytes(prog.encode())
    print(f"{out}: {len(prog.encode()) // 4} words")
    return 0


def cmd_disasm(ns) -> int:
    from sw.runtime.isa import Program
    p = Path(ns.program)
    if not p.is_file():
        raise UserError(f"PROGRAM {ns.program!r} does not exist or is not a file")
    _write(ns.output, Program.decode(p.read_bytes(), _limits(ns)).to_asm())
    return 0


def cmd_opt(ns) -> int:
    from sw.compiler.opt import run_passes, run_passes_split
    if ns.list_passes:
        from sw.compiler.pipelines import OPT_LEVELS, PASSES, pipeline_spec
        for name, cls in sorted(PASSES.items()):
            summary = " ".join((cls.__doc__ or "").strip().split("\n\n")[0].split())
            print(f"{name:22} {summary}")
        for level in OPT_LEVELS:
            print(f"-O{level}: {pipeline_spec(level)}")
        return 0
    if ns.file is None or ns.passes is None:
        raise UserError("opt needs FILE.mlir and --passes (or --list-passes)")
    text = _read_text(ns.file, "FILE.mlir")
    if not ns.split_input_file:
        _write(ns.output, run_passes(text, ns.passes, filename=ns.file))
        return 0
    result = run_passes_split(text, ns.passes, filename=ns.file)
    _write(ns.output, "// -----\n".join(out for out in result.outputs if out is not None))
    for error in result.errors:
        print(f"ember: error: {error}", file=sys.stderr)
    return 2 if result.errors else 0


def cmd_sim(ns) -> int:
    from sim.main_job import main as sim_main
    return sim_main(ns)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="ember", description="Compile embedding operations to access programs for a decoupled "
        "access-execute unit, and run them on the golden model or the RTL.")
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")

    p = sub.add_parser("compile", help="compile an MLIR kernel and print one stage",
                       description="Lower KERNEL.mlir (func/scf/arith/memref) and print the chosen stage.")
    p.add_argument("kernel", metavar="KERNEL.mlir")
    p.add_argument("--emit", choices=STAGES, default="asm",
                   help="stage to print: scf (parsed input), slc, slcv (after the SLC optimisations), "
                        "dlc, tmu (the program mapped onto the configuration), asm (readable access "
                        "program), bin (binary access program), c (execute side in C); default: asm")
    _add_opt_arguments(p)
    p.add_argument("-o", "--output", metavar="FILE", help="write to FILE instead of stdout")
    p.set_defaults(func=cmd_compile)

    p = sub.add_parser("opt", help="run compiler passes by name on an IR file (like mlir-opt)",
                       description="Parse FILE.mlir (any IR level: scf, slc, slcv, dlc), run the "
                       "passes of --passes in order (verifying after each) and print the result. "
                       "Pass names: ember opt --list-passes.")
    p.add_argument("file", metavar="FILE.mlir", nargs="?")
    p.add_argument("--passes", metavar="PIPELINE",
                   help="comma-separated passes with options, e.g. "
                        "'move-to-callback,vectorize-access{vlen=4}'")
    p.add_argument("--split-input-file", action="store_true",
                   help="run each piece between '// -----' lines on its own; diagnostics of a piece "
                        "go to stderr and the others still run")
    p.add_argument("--list-passes", action="store_true",
                   help="print the pass names and the pipeline of each -O level, then exit")
    p.add_argument("-o", "--output", metavar="FILE", help="write to FILE instead of stdout")
    p.set_defaults(func=cmd_opt)

    p = sub.add_parser("run", help="compile and run an MLIR kernel on inputs from an .npz file",
                       description="Arguments are bound by position to arrays arg0, arg1, ... of "
                       "--inputs (a 0-d array for an index scalar, int64 for memref<?xindex>); every "
                       "returned memref is written as result0, result1, ... to --out, or, for a "
                       "kernel that returns nothing (destination-passing style), every output "
                       "argument (a memref the access unit does not read) under its own name, "
                       "argN.")
    p.add_argument("kernel", metavar="KERNEL.mlir")
    p.add_argument("--inputs", required=True, metavar="IN.npz")
    p.add_argument("--target", choices=("golden", "rtl"), default="golden")
    p.add_argument("--out", required=True, metavar="OUT.npz")
    p.add_argument("--backpressure", type=float, default=0.0,
                   help="rtl: probability (0..1) that the core is not ready for a token in a cycle")
    p.add_argument("--seed", type=int, default=0, help="rtl: seed of the back-pressure pattern")
    p.add_argument("--memory", choices=("simple", "HBM2", "HBM3"), default=None,
                   help="rtl: memory model behind the unit (docs/hbm_model.md): simple = fixed "
                        "latency (default), HBM2/HBM3 = the JEDEC-timed presets")
    p.add_argument("--coupled", action="store_true",
                   help="rtl: the output queues consumed by a model of the core in the same "
                        "simulation; prints the DAE cycles (START until the core popped DONE); not "
                        "with --backpressure")
    p.add_argument("--core", choices=("replay", "fitted", "flat"), default=None,
                   help="with --coupled, the core model: replay (default) = the kernel's execute "
                        "side run on the out-of-order core model, replayed callback by callback; "
                        "fitted = the flat rate nearest that run; flat = 6 cycles per callback, 8 "
                        "tokens per cycle, no run (sw.runtime.coupled_core)")
    p.add_argument("--stats", metavar="FILE",
                   help="write the run's counters as JSON: cycles, the unit's counters, the execute "
                        "side's, and (rtl) the memory model's statistics that make sim prints")
    _add_opt_arguments(p)
    p.set_defaults(func=cmd_run)

    p = sub.add_parser("asm", help="assemble the text form of an access program")
    p.add_argument("source", metavar="PROGRAM.s")
    p.add_argument("-o", "--output", metavar="FILE")
    p.set_defaults(func=cmd_asm)

    p = sub.add_parser("disasm", help="check and disassemble a binary access program",
                       description="Decode PROGRAM.bin with the checks the RTL decoder of the "
                       "configuration makes (--tmu-config) and print it as assembly text.")
    p.add_argument("program", metavar="PROGRAM.bin")
    _add_tmu_config_argument(p)
    p.add_argument("-o", "--output", metavar="FILE")
    p.set_defaults(func=cmd_disasm)

    p = sub.add_parser("sim", help="run the default workload (Cora sum-aggregation) and check it",
                       description="Compile sum-aggregation (or --mode mean/max) of node features "
                       "over the Cora citation graph, run it on the RTL (or golden model), and "
                       "check against torch.nn.functional.embedding_bag. Exit status 1 on FAIL. "
                       "EMBER_PROFILE_GUIDED=1 in the environment: the profile-guided build of "
                       "the C++ harness (make sim PGO=1).")
    from sim.main_job import add_arguments
    add_arguments(p)
    p.set_defaults(func=cmd_sim)

    from sw.hbm_trace import add_parser as add_hbm_trace
    add_hbm_trace(sub)
    return parser


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    ns = parser.parse_args(argv)
    from sw.compiler import CompileError
    from sw.runtime.golden import AccessFault
    try:
        return ns.func(ns)
    except (UserError, CompileError, AccessFault, ValueError, TypeError, OSError) as e:
        # ValueError covers ProgramError (a malformed program) and bad arguments; OSError a file
        # that cannot be read or written (its message names the path).
        print(f"ember: error: {e}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
