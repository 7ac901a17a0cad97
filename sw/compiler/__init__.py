"""The Ember-style compiler: MLIR SCF (or PyTorch) -> SLC -> DLC -> access program + execute code.

Public API::

    compile_mlir(text, *, filename="<input>", limits=None) -> sw.runtime.kernel.Kernel
    emit(text, stage, *, filename="<input>", limits=None) -> str | bytes   # stage in STAGES
    CompileError                                                           # .location, .message

See docs/compiler.md for the pipeline, the decoupling rules and the supported subset.
"""

from __future__ import annotations

from ..runtime.isa import Limits
from ..runtime.kernel import Kernel
from .errors import CompileError, Location
from .pipelines import STAGES, Compilation, run_pipeline

__all__ = ["compile_mlir", "emit", "CompileError", "Location", "STAGES"]


def compile_mlir(text: str, *, filename: str = "<input>", limits: Limits | None = None) -> Kernel:
    """Compile one MLIR SCF function into a :class:`~sw.runtime.kernel.Kernel`.

    ``limits`` are the access unit's resources (default: ``sw.runtime.isa.Limits()``).

    Raises
    ------
    CompileError
        The input is outside the supported subset or does not fit ``limits``; the message names
        the operation or resource and ``.location`` is where it is in the input.
    """
    result = run_pipeline(text, filename=filename, limits=limits)
    assert isinstance(result, Compilation)
    return result.kernel


def emit(text: str, stage: str, *, filename: str = "<input>",
         limits: Limits | None = None) -> str | bytes:
    """The input after ``stage``: MLIR text for ``scf``/``slc``/``dlc``, assembly text for ``asm``,
    the binary access program (bytes) for ``bin``.

    Raises
    ------
    ValueError
        ``stage`` is not one of ``STAGES``.
    CompileError
        As :func:`compile_mlir`.
    """
    if stage not in STAGES:
        raise ValueError(f"stage must be one of {', '.join(STAGES)}, not {stage!r}")
    if stage in ("scf", "slc", "dlc"):
        return str(run_pipeline(text, filename=filename, limits=limits, until=stage)) + "\n"
    result = run_pipeline(text, filename=filename, limits=limits)
    assert isinstance(result, Compilation)
    if stage == "bin":
        return result.kernel.program.encode()
    return result.kernel.program.to_asm()
