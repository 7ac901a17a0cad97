"""Run a call split by batch (``sw.runtime.partition``) on the units of the multi-unit system
(``hw.multi_system.MultiSystem``, ``sim.system.run_multi_on_rtl``) and execute each unit's tokens:
the multi-unit counterpart of ``sw.runtime.drivers.run_kernel`` (same layer)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence

from .drivers import AccessRun, RunResult, check_block_lengths, explain_fault
from .execute import execute_tokens
from .golden import AccessFault
from .image import MemoryImage
from .isa import Fault
from .partition import shared_image

__all__ = ["PartitionedRun", "run_partitioned"]


@dataclass
class PartitionedRun:
    """A call split across units: per unit its ``RunResult`` (``sw.runtime.drivers``; results
    are views of the caller's arrays), the multi-unit run (``sim.system.MultiRtlResult``:
    per-unit cycles, makespan) and the shared image."""
    units: list
    system: object
    image: MemoryImage

    @property
    def makespan(self) -> int:
        return self.system.makespan


def run_partitioned(kernel, unit_args: Sequence[Sequence], *, shared: Sequence[int] = (),
                    memory="simple", config=None, backpressure: float = 0.0,
                    seed: int = 0) -> PartitionedRun:
    """Run ``kernel`` on ``len(unit_args)`` units of ``hw.multi_system.MultiSystem`` (one slice
    per unit, one shared image: ``sw.runtime.partition.shared_image``), then execute each
    unit's tokens on its own arguments (``sw.runtime.execute.execute_tokens``: arrays the
    kernel writes are written in place, so slices that are views of one output fill it).

    Raises
    ------
    ValueError
        The unit count is not 1, 2, 4 or 8 (naming ``units``), or bad arguments (see
        ``shared_image``).
    AccessFault
        A unit faulted (the message names the unit's input and address).
    """
    from sim.system import UnitJob, run_multi_on_rtl   # lazily: only the RTL needs the simulator
    image, regs = shared_image(kernel, unit_args, shared=shared)
    for r in regs:
        check_block_lengths(kernel, r, kernel.limits)
    program = kernel.program.encode()
    jobs = [UnitJob(program, r, backpressure=backpressure, seed=seed + u)
            for u, r in enumerate(regs)]
    system = run_multi_on_rtl(jobs, image.data, units=len(unit_args), memory=memory,
                              config=config)
    units = []
    for u, (args, rtl) in enumerate(zip(unit_args, system.units)):
        access = AccessRun.from_rtl(rtl)
        if access.fault_code != Fault.NONE:
            raise AccessFault(Fault(access.fault_code), access.fault_addr,
                              f"unit {u}: " + explain_fault(kernel, image, access.fault_code,
                                                            access.fault_addr))
        executed = execute_tokens(kernel, args, access.data_tokens, access.control_tokens, None)
        units.append(RunResult(executed.results, access, executed, image, "rtl"))
    return PartitionedRun(units, system, image)
