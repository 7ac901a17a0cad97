"""The compiler's pipelines, stage by stage (``emit`` shows the IR after each), and the ``-O`` levels.

    scf    parse + check the supported subset                    frontends/mlir.py
           choose-decoupling: mark loops/values for the unit      transforms/choose_decoupling.py
    slc    decouple: loops/streams vs callbacks                   conversion/scf_to_slc.py
           canonicalise callbacks (merge, dedupe, sink ALU)       transforms/move_to_callback.py
    slcv   -O2: bufferise compound operands (one per loop)        transforms/bufferize.py
           -O3: sequential memory streams -> block loads of rows  transforms/simplify_streams.py
           -O3: a loop over consecutive rows -> one block load    transforms/coalesce_rows.py
           -O1: vectorise the access code (SLC -> SLCV)           transforms/vectorize_access.py
           -O1: vectorise the callbacks                           transforms/vectorize_callbacks.py
    dlc    layers, addresses, marshaling, compute loop            conversion/slc_to_dlc.py
           -O3: affine indices -> stride and base offset          transforms/affine_streams.py
           -O3: hoist loop-invariant ALU streams                  transforms/hoist_streams.py
           -O3: one callback per segment, not per lookup          transforms/segment_callbacks.py
           -O3: a CSR segment's index counted on the core         transforms/count_segment_index.py
           -O3: layer 0's index kept on the core (get_var)        transforms/replace_to_val_ops.py
           -O3: queue alignment (pack operands, drop redundant)   transforms/align_queues.py
    tmu    the program mapped onto one TMU configuration          (ISA/backend modules, when present)
    asm    access program as assembly text                        backend/tmu.py
    bin    access program as binary                               backend/tmu.py
    c      execute side as C                                      (backend/c.py, when present)
           execute side as Python/NumPy                           backend/python.py

Levels (Ember, arXiv 2504.09870, §7 evaluation): ``-O0`` decoupled scalar code; ``-O1`` +
vectorisation; ``-O2`` + bufferisation (one collected buffer per loop); ``-O3`` + stream
simplification (rows as block loads, affine indices folded into strides), hoisting, the outer index kept on the core and queue
alignment. ``-O0`` output is the
slice's output, byte for byte. simplify-streams runs before vectorize-access (the rows leave
their loop before it would be vectorised); hoist-streams and align-queues work on the DLC.

Every step is an xDSL ``ModulePass`` (``PASSES``, by its kebab-case name); the pipelines are
``xdsl.passes.PassPipeline`` objects of them (:func:`pipeline`), and :func:`pipeline_spec` gives a
level's pipeline as the text ``ember opt --passes`` takes, e.g. ``-O0`` is
``choose-decoupling,convert-scf-to-slc,convert-slc-to-dlc``.
"""

from __future__ import annotations

import importlib
from dataclasses import dataclass

from xdsl.dialects import func
from xdsl.dialects.builtin import MemRefType, ModuleOp
from xdsl.passes import ModulePass, PassPipeline
from xdsl.utils.exceptions import VerifyException

from ..runtime.isa import Limits
from ..runtime.kernel import Kernel
from .backend.host_checks import host_checks
from .backend.python import generate_execute
from .context import make_context
from .conversion.scf_to_slc import ConvertScfToSlc
from .conversion.slc_to_dlc import ConvertSlcToDlc
from .dialects import dlc
from .errors import CompileError, location_of
from .frontends.mlir import check_supported, element_type_name, parse_mlir
from .transforms.affine_streams import AffineStreams
from .transforms.align_queues import AlignQueues
from .transforms.bufferize import Bufferize
from .transforms.coalesce_rows import CoalesceRows
from .transforms.count_segment_index import CountSegmentIndex
from .transforms.choose_decoupling import ChooseDecoupling
from .transforms.hoist_streams import HoistStreams
from .transforms.move_to_callback import MoveToCallback
from .transforms.replace_to_val_ops import ReplaceToValOps
from .transforms.segment_callbacks import SegmentCallbacks
from .transforms.simplify_streams import SimplifyStreams
from .transforms.vectorize_access import VectorizeAccess
from .transforms.vectorize_callbacks import VectorizeCallbacks

__all__ = ["STAGES", "OPT_LEVELS", "DEFAULT_VLEN", "DEFAULT_TMU_CONFIG", "PASSES", "Compilation",
           "default_limits", "run_pipeline", "pipeline", "pipeline_spec", "v1_features"]

STAGES = ("scf", "slc", "slcv", "dlc", "tmu", "asm", "bin", "c")
#: Every pass of the compiler by its name (``ember opt --passes``, ``PassPipeline.parse_spec``).
PASSES: dict[str, type[ModulePass]] = {p.name: p for p in (
    ChooseDecoupling, ConvertScfToSlc, MoveToCallback, Bufferize, SimplifyStreams, CoalesceRows,
    VectorizeAccess,
    VectorizeCallbacks, ConvertSlcToDlc, AffineStreams, HoistStreams, SegmentCallbacks, CountSegmentIndex,
    ReplaceToValOps, AlignQueues)}
OPT_LEVELS = (0, 1, 2, 3)
#: Lanes of a vector layer when the configuration does not say (the MICRO'23 TMU has 8).
DEFAULT_VLEN = 8
#: The TMU configuration the compiler maps onto when the caller gives none (``limits=None``):
#: what the RTL builds (``configs/tmu_rtl.json``, ISA versions 0 and 1), as ``make sim`` uses.
#: ``sw.runtime.isa.Limits()`` (no arguments) is a different thing: the smallest version-0 unit.
DEFAULT_TMU_CONFIG = "tmu_rtl"


def default_limits() -> Limits:
    """The configuration of ``DEFAULT_TMU_CONFIG`` (``configs/tmu_rtl.json``), read afresh."""
    return Limits.from_file(DEFAULT_TMU_CONFIG)


@dataclass
class Compilation:
    """Every stage's result for one input."""
    scf: ModuleOp
    slc: ModuleOp
    dlc: ModuleOp
    access: object
    kernel: Kernel
    slcv: ModuleOp | None = None


def _verified(module: ModuleOp, stage: str) -> ModuleOp:
    try:
        module.verify()
    except VerifyException as e:  # a compiler bug: say where it came from
        raise CompileError(f"internal error: the {stage} IR does not verify: {e}") from None
    return module


def _kernel_fn(module: ModuleOp) -> func.FuncOp:
    return next(op for op in module.ops if isinstance(op, func.FuncOp))


def check_opt_level(opt_level) -> int:
    if opt_level not in OPT_LEVELS or isinstance(opt_level, bool):
        raise ValueError(f"opt_level must be one of 0, 1, 2, 3, not {opt_level!r}")
    return opt_level


def vlen_for(limits: Limits | None) -> int:
    """Lanes the vectoriser uses: the configuration's lanes if it has vector layers, else 8."""
    lanes = getattr(limits, "lanes", 1) if limits is not None else 1
    return lanes if lanes > 1 else DEFAULT_VLEN


def v1_features(fn: func.FuncOp) -> list[tuple[str, object]]:
    """The ISA version-1 features a DLC function uses: (feature name, first op using it).

    Names are ``sw.runtime.isa.Feature`` values: ``lockstep`` (vector layers, FIRST/COUNT),
    ``broadcast`` (broadcast layers), ``block`` (buffer streams), ``pack`` (packed operands).
    """
    found: dict[str, object] = {}
    for op in fn.walk():
        if isinstance(op, dlc.TuOp) and op.config_name != "scalar":
            found.setdefault("lockstep" if op.config_name == "vector" else "broadcast", op)
        elif isinstance(op, dlc.BufStreamOp):
            found.setdefault("block", op)
        elif isinstance(op, dlc.RegisterOperandOp) and (op.packed is not None or op.join is not None):
            found.setdefault("pack", op)
    return list(found.items())


def slc_passes() -> tuple[ModulePass, ...]:
    """SCF -> SLC (the -O0 SLC, unchanged by the canonicalisation)."""
    return (ChooseDecoupling(),                  # mark loops and read-only memrefs for the unit
            ConvertScfToSlc())                   # decouple: loops/streams vs callbacks


def slcv_passes(opt_level: int, vlen: int) -> tuple[ModulePass, ...]:
    """The SLC/SLCV optimisations of ``opt_level`` (none at -O0)."""
    passes: list[ModulePass] = []
    if opt_level >= 1:
        passes.append(MoveToCallback())          # merge/dedupe callbacks, sink ALU streams
    if opt_level >= 2:
        passes.append(Bufferize())               # one value per loop = one collected buffer
    if opt_level >= 3:
        passes.append(SimplifyStreams())         # rows -> block loads, element loop removed
        passes.append(CoalesceRows())            # consecutive rows -> one block load
    if opt_level >= 1:
        passes.append(VectorizeAccess(vlen))     # innermost loop -> vector layer
        passes.append(VectorizeCallbacks())      # per-lane callback loops -> vector ops
    return tuple(passes)


def dlc_passes(opt_level: int) -> tuple[ModulePass, ...]:
    """SLC/SLCV -> DLC and the DLC optimisations of ``opt_level``."""
    passes: list[ModulePass] = [ConvertSlcToDlc()]   # layers, addresses, marshaling, compute loop
    if opt_level >= 3:
        passes.append(AffineStreams())           # a*i + c indices -> affine MEM streams
        passes.append(HoistStreams())            # loop-invariant ALU streams to outer layers
        passes.append(SegmentCallbacks())        # one callback per segment of the inner layer
        passes.append(CountSegmentIndex())       # the segment's index j counted on the core
        passes.append(ReplaceToValOps())         # layer 0's index counted on the core
        passes.append(AlignQueues())             # pack operands, drop redundant ones
    return tuple(passes)


def pipeline(opt_level: int, vlen: int = DEFAULT_VLEN) -> PassPipeline:
    """The whole SCF -> DLC pipeline of ``opt_level`` as one ``PassPipeline``."""
    opt_level = check_opt_level(opt_level)
    return PassPipeline(slc_passes() + slcv_passes(opt_level, vlen) + dlc_passes(opt_level))


def pipeline_spec(opt_level: int, vlen: int = DEFAULT_VLEN) -> str:
    """The pipeline of ``opt_level`` as pass-pipeline text (``ember opt --passes``)."""
    return ",".join(str(p.spec()) for p in pipeline(opt_level, vlen).passes)


def _apply(passes: tuple[ModulePass, ...], module: ModuleOp) -> ModuleOp:
    PassPipeline(passes).apply(make_context(), module)
    return module


def _slc(scf_fn: func.FuncOp) -> ModuleOp:
    """choose-decoupling, convert-scf-to-slc on ``scf_fn`` (left unchanged) -> a new module."""
    return _apply(slc_passes(), ModuleOp([scf_fn.clone()]))


def _slcv(slc_module: ModuleOp, opt_level: int, vlen: int) -> ModuleOp:
    """The SLC/SLCV optimisations of ``opt_level`` on a copy of ``slc_module``."""
    return _apply(slcv_passes(opt_level, vlen), slc_module.clone())


def _dlc(slcv_module: ModuleOp, opt_level: int) -> ModuleOp:
    """convert-slc-to-dlc and the DLC optimisations of ``opt_level`` on a copy of ``slcv_module``."""
    return _apply(dlc_passes(opt_level), slcv_module.clone())


def _backend(name: str):
    """An optional backend module of the ISA/backend engineer, or None if it is not there yet."""
    try:
        return importlib.import_module(f"sw.compiler.backend.{name}")
    except ModuleNotFoundError as e:
        if e.name == f"sw.compiler.backend.{name}":
            return None
        raise


def _check_isa(dlc_fn: func.FuncOp, limits: Limits | None, opt_level: int) -> None:
    """Refuse (CompileError) v1 features the configuration or the backend does not implement."""
    features = v1_features(dlc_fn)
    if not features:
        return
    tmu = _backend("tmu")
    if getattr(tmu, "SUPPORTS_V1", False):
        return          # the backend maps v1 and refuses what the configuration lacks
    limits = limits or Limits()
    versions = getattr(limits, "versions", (0,))
    supported = {getattr(f, "value", f) for f in getattr(limits, "features", ())}
    for feature, op in features:
        if 1 not in versions or feature not in supported:
            name = getattr(limits, "name", "") or "the default configuration"
            raise CompileError(
                f"-O{opt_level} needs ISA version 1 feature '{feature}' (docs/isa.md §7); "
                f"the TMU configuration {name} has versions {list(versions)} and features "
                f"{sorted(supported) or 'none'}: compile with -O0 or a configuration that has it "
                "(e.g. --tmu-config configs/tmu_vector.json)", location_of(op))
    if True:
        raise CompileError(
            f"-O{opt_level} needs ISA version 1 feature '{features[0][0]}', and the access-program "
            "backend (sw/compiler/backend/tmu.py) does not emit version 1 yet; the DLC of this "
            "level runs on the reference interpreter (sw.compiler.backend.python.run_access)",
            location_of(features[0][1]))


def run_pipeline(text: str, *, filename: str = "<input>", limits: Limits | None = None,
                 until: str = "bin", opt_level: int = 0) -> Compilation | ModuleOp:
    """Run the stages up to ``until`` (a STAGES name); ``scf``/``slc``/``slcv``/``dlc`` return
    that module, later stages the whole :class:`Compilation`. ``limits=None`` means
    :func:`default_limits` (what the RTL builds)."""
    opt_level = check_opt_level(opt_level)
    if limits is None:
        limits = default_limits()
    elif not isinstance(limits, Limits):        # a name or a dict failed deep in the backend
        raise TypeError(f"limits must be a sw.runtime.isa.Limits (Limits.from_file(path or name), "
                        f"Limits.from_dict(d)) or None, not {type(limits).__name__} {limits!r}")
    scf_module = parse_mlir(text, filename)
    scf_fn = check_supported(scf_module)
    if until == "scf":
        return scf_module
    checks = host_checks(scf_fn)
    slc_module = _verified(_slc(scf_fn), "slc")
    if until == "slc":
        return slc_module
    slcv_module = _verified(_slcv(slc_module, opt_level, vlen_for(limits)), "slcv")
    if until == "slcv":
        return slcv_module
    dlc_module = _verified(_dlc(slcv_module, opt_level), "dlc")
    if until == "dlc":
        return dlc_module
    dlc_fn = _kernel_fn(dlc_module)
    _check_isa(dlc_fn, limits, opt_level)
    from .backend.tmu import build_program, param_specs
    access = build_program(dlc_fn, limits, control_first=opt_level >= 3)
    results = dlc_fn.function_type.outputs.data
    kernel = Kernel(
        name=dlc_fn.sym_name.data,
        params=param_specs(dlc_fn, access.in_image),
        program=access.program,
        arg_map=access.arg_map,
        execute_source=generate_execute(dlc_fn),
        n_results=len(results),
        result_dtypes=[element_type_name(t.element_type if isinstance(t, MemRefType) else t) or str(t)
                       for t in results],
        callbacks=dict(access.callbacks),
        limits=limits,
        host_checks=checks,
    )
    return Compilation(scf_module, slc_module, dlc_module, access, kernel, slcv_module)
