"""Run calls on the units of the multi-unit system (``hw.multi_system.MultiSystem``) and execute
each unit's tokens: the multi-unit counterpart of ``sw.runtime.drivers.run_kernel`` (same layer).

* :func:`run_partitioned` — one call split by batch (``sw.runtime.partition``), one slice per
  unit, all started together (``sim.multi.run_multi_on_rtl``);
* :func:`run_mapped` — a sequence of calls per unit, run back to back on it (for example one
  EmbeddingBag per table or table piece a ``sw.runtime.mapping`` mapper gave the unit;
  ``sim.multi.run_sequences_on_rtl``), arrays shared between calls placed once."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence

import numpy as np

from .drivers import AccessRun, RunResult, check_block_lengths, explain_fault
from .execute import execute_tokens
from .golden import AccessFault
from .image import MemoryImage, bind_arguments
from .isa import Fault
from .partition import shared_image

__all__ = ["PartitionedRun", "run_partitioned", "MappedRun", "mapped_image", "run_mapped"]


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
                              f"unit {u}: " + explain_fault(
                                  kernel, image, access.fault_code, access.fault_addr,
                                  access.fault_stream), access.fault_stream)
        executed = execute_tokens(kernel, args, access.data_tokens, access.control_tokens, None)
        units.append(RunResult(executed.results, access, executed, image, "rtl"))
    return PartitionedRun(units, system, image)


@dataclass
class MappedRun:
    """Calls run back to back per unit (:func:`run_mapped`): ``calls[u][k]`` is the
    ``RunResult`` of unit ``u``'s ``k``-th call (its ``access.cycles`` from its own START),
    ``system`` the ``sim.multi.SequenceRtlResult`` (per-program START cycles, per-unit cycles,
    makespan), ``image`` the shared image."""
    calls: list
    system: object
    image: MemoryImage

    @property
    def unit_cycles(self) -> list[int]:
        """Per unit, cycles from the common START until its last call was done (0: idle)."""
        return self.system.unit_cycles

    @property
    def makespan(self) -> int:
        """Cycles from the common START until the last unit was done."""
        return self.system.makespan


def mapped_image(kernel, unit_calls: Sequence[Sequence[Sequence]]) -> tuple[MemoryImage, list]:
    """One memory image for every call of every unit, and each call's argument registers.

    ``unit_calls[u][k]`` are the arguments of unit ``u``'s ``k``-th call to ``kernel``. Every
    array the access unit reads is placed once per distinct object (``is``): a table that
    several calls look up is in the image once; everything else per call. Returns the image and
    ``regs[u][k]`` (``bind_arguments`` against that call's placements).

    Raises ``TypeError`` / ``ValueError`` (naming ``argN``) when a call's arguments do not
    match the kernel, ``ValueError`` when there is no call at all."""
    if not any(len(calls) for calls in unit_calls):
        raise ValueError("unit_calls must hold at least one call, not none")
    image = MemoryImage()
    placed: dict[int, object] = {}
    regs = []
    for u, calls in enumerate(unit_calls):
        unit_regs = []
        for k, args in enumerate(calls):
            kernel.check_arguments(args)
            view = MemoryImage()
            for n, spec in enumerate(kernel.params):
                if not spec.in_image:
                    continue
                key = id(args[n])
                if key not in placed:
                    placed[key] = image.add(len(placed), f"{spec.name}[unit {u} call {k}]",
                                            np.asarray(args[n], dtype=spec.dtype))
                view.placements[n] = placed[key]
            unit_regs.append(bind_arguments(kernel, args, view))
        regs.append(unit_regs)
    return image, regs


def run_mapped(kernel, unit_calls: Sequence[Sequence[Sequence]], *, memory="simple", config=None,
               mem_words: int | None = None, max_cycles: int = 50_000_000) -> MappedRun:
    """Run ``kernel`` on ``len(unit_calls)`` units of ``hw.multi_system.MultiSystem`` (1, 2, 4
    or 8), unit ``u`` running the calls ``unit_calls[u]`` back to back (an empty list: idle),
    all units starting together on one shared image (:func:`mapped_image`); then execute each
    call's tokens on its own arguments (``sw.runtime.execute.execute_tokens``: arrays the kernel
    writes are written in place). ``mem_words``: the memory model's size (default: the smallest
    that holds the image; pass one size to reuse one build across runs).

    Raises
    ------
    ValueError
        The unit count is not 1, 2, 4 or 8; bad arguments (see :func:`mapped_image`); a block
        length above the unit's limit.
    AccessFault
        A call faulted (the message names the unit, the call and the input).
    """
    from sim.multi import UnitJob, run_sequences_on_rtl   # lazily: only the RTL needs the simulator
    image, regs = mapped_image(kernel, unit_calls)
    program = kernel.program.encode()
    sequences = []
    for unit_regs in regs:
        for r in unit_regs:
            check_block_lengths(kernel, r, kernel.limits)
        sequences.append([UnitJob(program, r) for r in unit_regs])
    system = run_sequences_on_rtl(sequences, image.data, units=len(unit_calls), memory=memory,
                                  config=config, mem_words=mem_words, max_cycles=max_cycles)
    calls = []
    for u, (unit_args, runs) in enumerate(zip(unit_calls, system.units)):
        unit_results = []
        for k, (args, rtl) in enumerate(zip(unit_args, runs)):
            access = AccessRun.from_rtl(rtl)
            if access.fault_code != Fault.NONE:
                raise AccessFault(Fault(access.fault_code), access.fault_addr,
                                  f"unit {u} call {k}: " + explain_fault(
                                      kernel, image, access.fault_code, access.fault_addr,
                                      access.fault_stream), access.fault_stream)
            executed = execute_tokens(kernel, args, access.data_tokens, access.control_tokens,
                                      None)
            unit_results.append(RunResult(executed.results, access, executed, image, "rtl"))
        calls.append(unit_results)
    return MappedRun(calls, system, image)
