"""The xDSL context with every dialect the compiler reads or prints."""

from __future__ import annotations

from xdsl.context import Context
from xdsl.dialects.arith import Arith
from xdsl.dialects.builtin import Builtin
from xdsl.dialects.func import Func
from xdsl.dialects.math import Math
from xdsl.dialects.memref import MemRef
from xdsl.dialects.scf import Scf
from xdsl.dialects.vector import Vector

from .dialects.dlc import DLC
from .dialects.slc import SLC
from .dialects.slcv import SLCV

__all__ = ["make_context"]


def make_context() -> Context:
    ctx = Context()
    for dialect in (Builtin, Func, Scf, Arith, Math, MemRef, Vector, SLC, SLCV, DLC):
        ctx.load_dialect(dialect)
    return ctx
