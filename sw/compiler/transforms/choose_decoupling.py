"""choose-decoupling: decide, on the SCF input, what the access unit runs (Ember's decoupling).

The analysis behind ``convert-scf-to-slc`` (docs/compiler.md, "Decoupling rules"), as its own
pass so that the decision is visible and testable before any IR changes dialect:

* ``ember.readonly`` (on the ``func.func``): the indices of the memref arguments the function
  never stores to — only they are loaded by the access unit;
* ``ember.decoupled`` (on each ``scf.for``): the loop contains, at any depth, a load from a
  read-only memref, so it becomes an ``slc.for`` (one layer of the access program).

Loops without the mark stay on the core (inside a callback: the zero fill, the mean's division
loop). ``convert-scf-to-slc`` reads the marks when present; the callback placement (begin/iter/
end) follows from the position of the ops relative to the marked loops.
"""

from __future__ import annotations

from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects import func, memref, scf
from xdsl.dialects.builtin import ArrayAttr, IntAttr, MemRefType, ModuleOp, UnitAttr
from xdsl.passes import ModulePass

__all__ = ["ChooseDecoupling", "choose_decoupling", "READONLY_ATTR", "DECOUPLED_ATTR"]

READONLY_ATTR = "ember.readonly"
DECOUPLED_ATTR = "ember.decoupled"


def readonly_args(fn: func.FuncOp) -> list[int]:
    """Indices of the memref arguments ``fn`` never ``memref.store``s to."""
    stored = {op.memref for op in fn.walk() if isinstance(op, memref.StoreOp)}
    return [a.index for a in fn.args if isinstance(a.type, MemRefType) and a not in stored]


def choose_decoupling(fn: func.FuncOp) -> None:
    """Mark ``fn`` with ``ember.readonly`` and its decoupled loops with ``ember.decoupled``."""
    ro = readonly_args(fn)
    fn.attributes[READONLY_ATTR] = ArrayAttr([IntAttr(i) for i in ro])
    readonly = {fn.args[i] for i in ro}
    for op in fn.walk():
        if isinstance(op, scf.ForOp) and any(
                isinstance(inner, memref.LoadOp) and inner.memref in readonly for inner in op.walk()):
            op.attributes[DECOUPLED_ATTR] = UnitAttr()


@dataclass(frozen=True)
class ChooseDecoupling(ModulePass):
    """Mark the read-only memrefs and the loops to decouple (rules: module docstring)."""

    name = "choose-decoupling"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        for fn in [f for f in op.ops if isinstance(f, func.FuncOp)]:
            choose_decoupling(fn)
