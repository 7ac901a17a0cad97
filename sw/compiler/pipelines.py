"""The compiler's pipeline, stage by stage (``emit`` shows the IR after each).

    scf   parse + check the supported subset           frontends/mlir.py
    slc   decouple: loops/streams vs callbacks          conversion/scf_to_slc.py  (convert-scf-to-slc)
    dlc   layers, addresses, marshaling, compute loop   conversion/slc_to_dlc.py  (convert-slc-to-dlc)
    asm   access program as assembly text               backend/tmu.py
    bin   access program as binary                      backend/tmu.py
          execute side as Python/NumPy                  backend/python.py

Only ``-O0`` exists in this slice: no SLC optimisation pass runs between ``slc`` and ``dlc``.
"""

from __future__ import annotations

from dataclasses import dataclass

from xdsl.dialects import func
from xdsl.dialects.builtin import MemRefType, ModuleOp
from xdsl.utils.exceptions import VerifyException

from ..runtime.isa import Limits
from ..runtime.kernel import Kernel
from .backend.python import generate_execute
from .backend.tmu import AccessProgram, build_program, param_specs
from .conversion.scf_to_slc import decouple_function
from .conversion.slc_to_dlc import lower_function
from .errors import CompileError
from .frontends.mlir import check_supported, element_type_name, parse_mlir

__all__ = ["STAGES", "Compilation", "run_pipeline"]

STAGES = ("scf", "slc", "dlc", "asm", "bin")


@dataclass
class Compilation:
    """Every stage's result for one input."""
    scf: ModuleOp
    slc: ModuleOp
    dlc: ModuleOp
    access: AccessProgram
    kernel: Kernel


def _verified(module: ModuleOp, stage: str) -> ModuleOp:
    try:
        module.verify()
    except VerifyException as e:  # a compiler bug: say where it came from
        raise CompileError(f"internal error: the {stage} IR does not verify: {e}") from None
    return module


def _kernel_fn(module: ModuleOp) -> func.FuncOp:
    return next(op for op in module.ops if isinstance(op, func.FuncOp))


def run_pipeline(text: str, *, filename: str = "<input>", limits: Limits | None = None,
                 until: str = "bin") -> Compilation | ModuleOp:
    """Run the stages up to ``until`` (a STAGES name); ``scf``/``slc``/``dlc`` return that module."""
    scf_module = parse_mlir(text, filename)
    scf_fn = check_supported(scf_module)
    if until == "scf":
        return scf_module
    slc_module = _verified(ModuleOp([decouple_function(scf_fn)]), "slc")
    if until == "slc":
        return slc_module
    dlc_module = _verified(ModuleOp([lower_function(_kernel_fn(slc_module))]), "dlc")
    if until == "dlc":
        return dlc_module
    dlc_fn = _kernel_fn(dlc_module)
    access = build_program(dlc_fn, limits)
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
    )
    return Compilation(scf_module, slc_module, dlc_module, access, kernel)
