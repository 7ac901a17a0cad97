"""The Ember-style compiler: MLIR SCF (or PyTorch) -> SLC -> SLCV -> DLC -> access program + execute code.

Public API::

    compile_mlir(text, *, filename="<input>", limits=None, opt_level=0) -> sw.runtime.kernel.Kernel
    emit(text, stage, *, filename="<input>", limits=None, opt_level=0) -> str | bytes  # stage in STAGES
    CompileError                                                                       # .location, .message

See docs/compiler.md for the pipeline, the passes, the -O levels and the supported subset.
"""

from __future__ import annotations

from ..runtime.isa import Limits
from ..runtime.kernel import Kernel
from .errors import CompileError, Location
from .pipelines import (OPT_LEVELS, STAGES, Compilation, _backend, _kernel_fn, check_opt_level,
                        run_pipeline)

__all__ = ["compile_mlir", "emit", "CompileError", "Location", "STAGES", "OPT_LEVELS"]


def compile_mlir(text: str, *, filename: str = "<input>", limits: Limits | None = None,
                 opt_level: int = 0) -> Kernel:
    """Compile one MLIR SCF function into a :class:`~sw.runtime.kernel.Kernel`.

    ``limits`` is the TMU configuration (default ``None``: ``configs/tmu_rtl.json``, what the RTL
    builds, ``sw.compiler.pipelines.default_limits()``; the kernel's ``limits`` is the one used);
    ``opt_level`` 0…3 as Ember's ``-O`` levels (docs/compiler.md, "Optimisation levels").

    Raises
    ------
    ValueError
        ``opt_level`` is not 0, 1, 2 or 3.
    CompileError
        The input is outside the supported subset, does not fit ``limits``, or the level needs an
        ISA version-1 feature the configuration lacks; the message names the operation, resource
        or feature and ``.location`` is where it is in the input.
    """
    result = run_pipeline(text, filename=filename, limits=limits, opt_level=opt_level)
    assert isinstance(result, Compilation)
    return result.kernel


def emit(text: str, stage: str, *, filename: str = "<input>", limits: Limits | None = None,
         opt_level: int = 0) -> str | bytes:
    """The input after ``stage``: MLIR text for ``scf``/``slc``/``slcv``/``dlc``, the mapped TMU
    program for ``tmu``, assembly text for ``asm``, the binary access program (bytes) for ``bin``,
    C source of the execute side for ``c``.

    Raises
    ------
    ValueError
        ``stage`` is not one of ``STAGES`` or ``opt_level`` not one of 0…3.
    CompileError
        As :func:`compile_mlir`; also for ``tmu``/``c`` when the backend module for that stage is
        not available yet.
    """
    if stage not in STAGES:
        raise ValueError(f"stage must be one of {', '.join(STAGES)}, not {stage!r}")
    check_opt_level(opt_level)
    if stage in ("scf", "slc", "slcv", "dlc"):
        return str(run_pipeline(text, filename=filename, limits=limits, until=stage,
                                opt_level=opt_level)) + "\n"
    result = run_pipeline(text, filename=filename, limits=limits, opt_level=opt_level)
    assert isinstance(result, Compilation)
    if stage == "bin":
        return result.kernel.program.encode()
    if stage == "asm":
        return result.kernel.program.to_asm()
    if stage == "c":
        module = _backend("c")
        if module is None or not hasattr(module, "generate_c"):
            raise CompileError("--emit c is not available yet: sw/compiler/backend/c.py "
                               "(generate_c) has not landed")
        return module.generate_c(_kernel_fn(result.dlc))
    module = _backend("resources")
    if module is None or not hasattr(module, "to_tmu"):
        raise CompileError("--emit tmu is not available yet: sw/compiler/backend/resources.py "
                           "(to_tmu) has not landed")
    return str(module.to_tmu(result.kernel.program, result.kernel.arg_map,
                             result.kernel.limits)) + "\n"
