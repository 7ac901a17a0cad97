"""Compare RTL results with the golden model, token by token.

Two kinds of runs: a hand-made :class:`~tb.programs.Case` (:func:`assert_matches`, faults
included), and a compiled kernel on its inputs (:func:`compiled_job`, then
:func:`replay_checked`: the RTL's tokens equal the golden model's, and the kernel's execute side
replayed from the RTL's tokens gives the results the caller checks against PyTorch or NumPy).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from sw.runtime.golden import run_golden
from sw.runtime.isa import Limits, ProgramError

from tb.programs import Case

MASK64 = (1 << 64) - 1


#: ``RtlResult.stats`` entries that are host-side measurements, not results of the run
WALL_CLOCK_STATS = ("sim_cycles_per_s", "sim_wall_ms")


def comparable(result) -> tuple:
    """What two simulations of the same job must agree on (a ``sim.system.RtlResult``): tokens,
    cycles, fault code and address, counters without ``WALL_CLOCK_STATS``, memory statistics
    and the final memory. For comparing two engines or builds of the same RTL."""
    stats = {k: v for k, v in result.stats.items() if k not in WALL_CLOCK_STATS}
    return (result.data_tokens, result.control_tokens, result.cycles, result.fault_code,
            result.fault_addr, stats, result.memory_stats, result.memory)


def expected(case: Case, config):
    """(data tokens, control tokens, fault code, fault address, faulting stream or None) the
    golden model gives."""
    try:
        g = run_golden(case.program, case.memory, case.args, limits=Limits.from_tmu_config(config))
    except ProgramError as e:
        return [], [], int(e.code), e.pc, None
    return (list(g.data_tokens), list(g.control_tokens), int(g.fault_code),
            g.fault_addr & MASK64, g.fault_stream)


def assert_matches(case: Case, result, config):
    """``result`` has ``data_tokens``, ``control_tokens``, ``fault_code``, ``fault_addr`` and
    ``fault_stream`` (the stream that raised the fault, None for none)."""
    data, ctrl, code, addr, stream = expected(case, config)
    got = (int(result.fault_code), int(result.fault_addr) & MASK64, result.fault_stream)
    assert got == (code, addr, stream), \
        f"{case.name}: fault (code, addr, stream) {got} != golden {(code, addr, stream)}"
    _assert_tokens(case.name, data, ctrl, result)


def _assert_tokens(name: str, data, ctrl, result):
    for kind, exp, act in (("data", list(data), result.data_tokens),
                           ("control", list(ctrl), result.control_tokens)):
        if list(act) != exp:
            n = next((i for i, (x, y) in enumerate(zip(act, exp)) if x != y), min(len(act), len(exp)))
            raise AssertionError(
                f"{name}: {kind} tokens differ at #{n} (rtl {len(act)}, golden {len(exp)} tokens): "
                f"rtl {list(act[n:n + 4])} golden {exp[n:n + 4]}")


@dataclass
class CompiledJob:
    """A compiled kernel's run prepared for the RTL: ``job`` (a ``sim.system.RtlJob``: the
    program, memory image and argument registers) and the golden model's run of it."""
    kernel: object
    args: list
    program: bytes
    job: object
    golden: object


def compiled_job(kernel, args, *, backpressure: float = 0.0, seed: int = 0,
                 limits=None) -> CompiledJob:
    """Lay out ``kernel``'s inputs ``args`` (``sw.runtime.image``), run the golden model on them
    (``limits``: the kernel's own by default) and make the RTL job (``backpressure``: the
    probability that the core is not ready for a token in a cycle, ``seed`` its generator's)."""
    from sim.system import RtlJob
    from sw.runtime.image import bind_arguments, build_image
    image = build_image(kernel, args)
    regs = bind_arguments(kernel, args, image)
    program = kernel.program.encode()
    golden = run_golden(program, image.data, regs, limits=limits or kernel.limits)
    return CompiledJob(kernel, args, program,
                       RtlJob(program, image.data, regs, backpressure=backpressure, seed=seed),
                       golden)


def replay_checked(compiled: CompiledJob, rtl, where: str = ""):
    """Check the RTL run ``rtl`` (a ``sim.system.RtlResult`` of ``compiled.job``) against the
    golden model (no fault; data and control tokens equal, the first difference named), then
    run the kernel's execute side on the RTL's tokens (``sw.runtime.drivers.run_kernel``
    through a ``ReplayTransport``, on copies of the array inputs) and return its ``RunResult``.
    Raises ``AssertionError`` naming ``where``."""
    from sw.runtime.drivers import AccessRun, ReplayTransport, run_kernel
    where = where or compiled.kernel.name
    assert rtl.fault_code == 0, f"{where}: fault code {rtl.fault_code} at {rtl.fault_addr:#x}"
    _assert_tokens(where, compiled.golden.data_tokens, compiled.golden.control_tokens, rtl)
    args = [a.copy() if isinstance(a, np.ndarray) else a for a in compiled.args]
    return run_kernel(compiled.kernel, args,
                      ReplayTransport(compiled.program, AccessRun.from_rtl(rtl)))
