"""The main job's options (``make sim`` / ``ember sim``): the arguments, their checks, the RTL
target's defaults and the kernel they select.

``sim.main_job`` runs what these describe; ``sw.cli`` adds the same arguments to ``ember sim``
(through ``sim.main_job``, which re-exports the public names here). Every check raises
``ValueError`` (or ``FileNotFoundError``) naming the option, before any input is read or run.
"""

from __future__ import annotations

import argparse
from pathlib import Path

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
                   help="'cora' (shipped) or the path of an edge list (two integer node ids per line, "
                        "'#' comments; ids relabelled 0..N-1 in order, each edge stored both ways, "
                        "self-loops dropped)")
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


def check_options(ns: argparse.Namespace) -> bool:
    """Check the options of a run and fill in the RTL-only defaults (``resolve_target_options``),
    in place; returns whether the run couples the core model to the unit (``is_coupled``).

    Raises ``ValueError`` (``FileNotFoundError`` for a missing ``--kernel``) naming the option,
    before the graph is read, the kernel compiled or the core-only baseline started."""
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
    if ns.program == "compiled":
        check_compiled_inputs(ns)
    return is_coupled(ns)


def mode_kernel(ns) -> Path:
    """``examples/embedding_bag_<mode>.mlir`` for ``--mode`` (``sum`` when the namespace has no
    mode)."""
    return REPO / "examples" / f"embedding_bag_{getattr(ns, 'mode', 'sum')}.mlir"


def kernel_path(ns) -> Path:
    """The MLIR kernel of a compiled run: ``--kernel``, or ``examples/embedding_bag_<mode>.mlir``
    for ``--mode`` (``sum`` when the namespace has no mode)."""
    kernel = getattr(ns, "kernel", None)
    return Path(kernel) if kernel is not None else mode_kernel(ns)


def check_compiled_inputs(ns) -> None:
    """``--kernel`` exists and ``--tmu-config`` reads; else an error naming the option."""
    from sw.runtime.isa import Limits
    if not kernel_path(ns).is_file():
        raise FileNotFoundError(f"--kernel {str(kernel_path(ns))!r} does not exist")
    try:
        Limits.from_file(getattr(ns, "tmu_config", DEFAULT_TMU_CONFIG))
    except (OSError, ValueError) as e:
        raise ValueError(f"--tmu-config: {e}") from None


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


def is_coupled(ns) -> bool:
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
