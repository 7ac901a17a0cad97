"""The coupled core made from the kernel's own execute side.

A coupled RTL run (``run_kernel(..., coupled=True)``, ``make sim``, ``scripts/bench_compiler.py
--replay``) consumes the output queues with a model of the core in the same simulation. That
model is only as good as its rate. This module measures the rate instead of assuming one: the
kernel's DLC compute loop runs over the golden model's tokens on the core-only baseline's
out-of-order core (``sim.execute_trace.run_execute_side``: Golden Cove's width, reorder buffer,
load ports and caches, every token ready), and the coupled core is made from that run:

* ``"replay"`` (the default): :class:`~sw.runtime.execute.CoreReplay`, each callback at the pace
  it retired at on that core, operands at that core's load rate, run-ahead bounded by its
  reorder buffer (``sim.execute_trace.replay_parameters``; ``docs/performance.md``, "The execute
  side replayed callback by callback");
* ``"fitted"``: the flat :class:`~sw.runtime.execute.CoreCostModel` whose cycles per callback
  make its estimate nearest that run's cycles (``CoreCostModel.fitted``).

The flat default rate (``CoreCostModel()``: 6 cycles per callback, 8 tokens per cycle) needs no
execute-side run; callers that want it pass it as ``cost`` and skip this module.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Sequence

from .execute import CoreCostModel, CoreReplay

__all__ = ["CORE_MODES", "CoupledCore", "core_from_execute_side"]

#: How the coupled core is made from the execute side's run (see the module docstring).
CORE_MODES = ("replay", "fitted")


@dataclass(frozen=True)
class CoupledCore:
    """A coupled core and the execute-side run it was made from.

    ``cost`` is what ``run_kernel(..., cost=...)`` and ``sim.system.RtlJob.core`` take;
    ``execute_cycles`` the execute side alone on the out-of-order core with every token ready
    (memory cycles), ``instructions`` the length of its instruction trace, ``results`` what that
    trace computed (one array or scalar per kernel result, for the caller to check),
    ``control_tokens`` and ``data_tokens`` how many tokens it ran over, ``seconds`` the wall time
    of the trace and the core model's run."""
    mode: str
    cost: CoreCostModel | CoreReplay
    execute_cycles: int
    instructions: int
    results: tuple
    control_tokens: int = 0
    data_tokens: int = 0
    seconds: float = 0.0

    def describe(self, pops: Sequence[int]) -> str:
        """One line for a log: the run and the core made from it (``pops``: operands per
        callback, ``DONE`` excluded, for the estimate without waiting)."""
        ran = (f"execute side on the core-only baseline's core (sim.execute_trace: the compute "
               f"loop over {self.control_tokens} control and {self.data_tokens} data tokens, all "
               f"ready): {self.execute_cycles} cycles, {self.instructions} instructions; ")
        if self.mode == "fitted":
            c = self.cost.cycles_per_control
            return ran + (f"the coupled core's rate fitted to it: {c} cycle{'s' if c != 1 else ''} "
                          f"per callback, {self.cost.tokens_per_cycle} tokens per cycle "
                          f"({self.cost.cycles(pops)} cycles without waiting)")
        return ran + (f"the coupled core replays its {len(pops)} callbacks at their own pace, "
                      f"operands at up to {self.cost.tokens_per_cycle} tokens per cycle from its "
                      f"buffer ({self.cost.cycles(pops)} cycles without waiting)")


def core_from_execute_side(dlc, args: Sequence, data_tokens: Sequence[int],
                           control_tokens: Sequence[int], pops: Sequence[int], memory: str, *,
                           mode: str = "replay", core=None, tokens_per_cycle: int = 8,
                           buffer_beats: int = 2) -> CoupledCore:
    """Run the execute side on the out-of-order core and make the coupled core from it.

    Parameters
    ----------
    dlc : xdsl ModuleOp
        The kernel's DLC module (``sw.compiler.pipelines.Compilation.dlc``).
    args : sequence
        The kernel's arguments, as ``run_kernel`` takes them, before the kernel ran (not
        written: the trace binds copies, ``sim.core_trace``).
    data_tokens, control_tokens : sequence of int
        The golden model's (or the RTL's) token streams (64-bit data, 16-bit control, ``DONE``
        last).
    pops : sequence of int
        Operands popped per callback, ``DONE`` excluded
        (``ExecuteResult.pops_per_control[:-1]``): the fitted rate is fitted to them.
    memory : str
        The memory preset the out-of-order core's caches sit on (``"simple"``, ``"HBM2"``,
        ``"HBM3"``; ``hw.hbm_model.presets``).
    mode : {'replay', 'fitted'}
    core : sim.core_only.CoreConfig, optional
        The out-of-order core (default: Golden Cove at the memory's clock).
    tokens_per_cycle, buffer_beats : int
        ``fitted``: the flat model's vector width (tokens per cycle); both modes: the core's
        operand buffer in data beats.

    Raises
    ------
    ValueError
        ``mode`` or ``memory`` unknown (the message names the value), or an operation of the
        compute loop the trace does not model (``sim.execute_trace``, the message names it).
    """
    if mode not in CORE_MODES:
        raise ValueError(f"mode must be one of {', '.join(CORE_MODES)}, not {mode!r}")
    from hw.hbm_model.presets import get_preset
    from sim.core_only import CoreConfig
    from sim.execute_trace import replay_parameters, run_execute_side
    preset = get_preset(memory)
    core = core or CoreConfig()
    t0 = time.perf_counter()
    try:
        trace, result = run_execute_side(dlc, args, data_tokens, control_tokens, preset, core)
    except ValueError as e:
        raise ValueError(f"mode={mode!r}: the execute side cannot be run on the out-of-order core "
                         f"model ({e}); the flat CoreCostModel needs no run") from None
    if mode == "fitted":
        cost = CoreCostModel.fitted(list(pops), result.cycles, tokens_per_cycle)
        cost = CoreCostModel(cost.dispatch, cost.per_callback, cost.tokens_per_cycle, buffer_beats)
    else:
        cost = CoreReplay(**replay_parameters(trace, result, core), buffer_beats=buffer_beats)
    return CoupledCore(mode, cost, result.cycles, len(trace), tuple(trace.results),
                       len(control_tokens), len(data_tokens), time.perf_counter() - t0)
