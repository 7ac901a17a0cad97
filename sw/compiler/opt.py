"""``ember opt``: run the compiler's passes by name on IR of any level, like ``mlir-opt``/``xdsl-opt``.

>>> print(run_passes(slc_text, "move-to-callback,vectorize-access{vlen=4}"))

The input is MLIR text in the compiler's dialects (``func``/``scf``/``arith``/``memref``/
``vector``, ``slc``, ``slcv``, ``dlc``), parsed and verified as ``ember compile`` parses its input;
``passes`` is an xDSL pass pipeline (``name{option=value},name``: the names and options of
``sw.compiler.pipelines.PASSES``, e.g. ``vectorize-access{vlen=4}``), run with
``xdsl.passes.PassPipeline``; the IR is verified after every pass. ``pipelines.pipeline_spec(N)``
is the pipeline of ``-O N``. With ``split_input_file`` the input is cut at lines ``// -----`` and
each piece runs on its own (its line numbers stay those of the whole file), as ``mlir-opt
--split-input-file`` does; this is how the golden tests in ``tests/compiler/filecheck/`` keep
several cases, and their diagnostics, in one file.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from xdsl.passes import ModulePass, PassPipeline
from xdsl.utils.arg_spec import parse_pipeline
from xdsl.utils.exceptions import ArgSpecParseError, VerifyException

from .context import make_context
from .errors import CompileError, location_of
from .frontends.mlir import parse_mlir
from .pipelines import PASSES

__all__ = ["parse_passes", "run_passes", "OptResult", "run_passes_split", "SPLIT_MARKER"]

#: The line that separates the cases of one file (``--split-input-file``).
SPLIT_MARKER = re.compile(r"^// -----[ \t]*$", re.MULTILINE)


def parse_passes(spec: str) -> tuple[ModulePass, ...]:
    """The passes of the pipeline text ``spec`` (``"a,b{option=value}"``).

    Raises
    ------
    ValueError
        An empty pipeline, a syntax error, an unknown pass (the message lists the known ones) or
        an unknown or ill-typed option; worded ``"passes ..."``.
    """
    if not isinstance(spec, str) or not spec.strip():
        raise ValueError(f"passes must name at least one pass, not {spec!r}")
    try:
        specs = list(parse_pipeline(spec))
    except ArgSpecParseError as e:       # a BaseException: "...\npass-pipeline:1:COL\n...\nMESSAGE"
        lines = str(e).splitlines()
        where = lines[1].rsplit(":", 1)[-1] if len(lines) > 2 else "?"
        raise ValueError(f"passes {spec!r} is not a pass pipeline: column {where}: "
                         f"{lines[-1].strip()}") from None
    for s in specs:
        if s.name not in PASSES:
            raise ValueError(f"passes: unknown pass {s.name!r} (known: {', '.join(sorted(PASSES))})")
    try:
        return PassPipeline.parse_spec({n: (lambda c=c: c) for n, c in PASSES.items()}, spec).passes
    except ValueError as e:
        raise ValueError(f"passes {spec!r}: {e}") from None


def _verify_after(module, name: str) -> None:
    for op in reversed(list(module.walk())):
        try:
            op.verify(verify_nested_ops=False)
        except VerifyException as e:
            raise CompileError(f"the IR after pass '{name}' does not verify: invalid '{op.name}': {e}",
                               location_of(op)) from None


def run_passes(text: str, passes: str | tuple[ModulePass, ...], *, filename: str = "<input>") -> str:
    """``text`` (MLIR) after ``passes`` (pipeline text or ``ModulePass`` objects), printed.

    Raises
    ------
    ValueError
        ``passes`` is not a valid pipeline (see :func:`parse_passes`).
    CompileError
        The input does not parse or verify, a pass refuses its input, or the IR after a pass does
        not verify; the message names the pass or operation and ``.location`` is in ``text``.
    """
    chosen = parse_passes(passes) if isinstance(passes, str) else tuple(passes)
    module = parse_mlir(text, filename)
    ctx = make_context()
    for p in chosen:
        try:
            p.apply(ctx, module)
        except CompileError:
            raise
        except (ValueError, VerifyException) as e:
            raise CompileError(f"pass '{p.name}': {e}") from None
        _verify_after(module, p.name)
    return str(module) + "\n"


@dataclass
class OptResult:
    """The outputs of the pieces of a split file: printed IR, or ``None`` where it failed, and
    the diagnostics (``str(CompileError)``), in file order."""
    outputs: list[str | None]
    errors: list[str]


def run_passes_split(text: str, passes: str, *, filename: str = "<input>") -> OptResult:
    """:func:`run_passes` on each piece of ``text`` between ``// -----`` lines; a piece that fails
    gives its diagnostic and the others still run. Raises ``ValueError`` for a bad ``passes``."""
    chosen = parse_passes(passes)
    outputs: list[str | None] = []
    errors: list[str] = []
    start = 0
    pieces = []
    for m in SPLIT_MARKER.finditer(text):
        pieces.append((start, text[start:m.start()]))
        start = m.end()
    pieces.append((start, text[start:]))
    for offset, piece in pieces:
        padded = "\n" * text.count("\n", 0, offset) + piece   # keep the file's line numbers
        try:
            outputs.append(run_passes(padded, chosen, filename=filename))
        except CompileError as e:
            outputs.append(None)
            errors.append(str(e))
    return OptResult(outputs, errors)
