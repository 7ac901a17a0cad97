"""Drivers: run a compiled kernel on a target and check nothing was lost on the way.

The same user-facing call (:func:`run_kernel`) runs on either transport:

* ``golden`` — :func:`sw.runtime.golden.run_golden`, the functional model (no cycles);
* ``rtl`` — the Amaranth access unit under Verilator (``sim.system.run_on_rtl``; the C++ harness
  by default, cocotb with ``engine="cocotb"``),
  which also reports cycles and counters. With ``coupled=True`` the output queues are consumed
  by a model of the core in the same simulation (``RunResult.dae_cycles``; the schedule comes
  from executing the golden model's tokens first).

Flow (one direction only): inputs → memory image + argument registers → access unit (tokens) →
execute side (callbacks) → results.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Protocol, Sequence

import numpy as np

from .execute import CoreCostModel, ExecuteError, ExecuteResult, execute_tokens
from .golden import AccessFault, run_golden
from .image import MemoryImage, bind_arguments, build_image
from .isa import Fault, Limits, SrcKind
from .kernel import ArgKind, Kernel

__all__ = ["AccessRun", "Transport", "GoldenTransport", "RtlTransport", "ReplayTransport", "RunResult", "run_kernel",
           "explain_fault",
           "TARGETS"]

TARGETS = ("golden", "rtl")
RTL_OPTIONS = ("config", "backpressure", "seed", "memory", "engine")   # RtlTransport's
RUN_OPTIONS = ("limits", *RTL_OPTIONS, "coupled", "core", "dlc")        # run_kernel's **options


@dataclass
class AccessRun:
    """What the access unit produced for one program run."""
    data_tokens: list[int]
    control_tokens: list[int]
    fault_code: int = 0
    fault_addr: int = 0
    cycles: int | None = None                 # access-unit clock cycles, start to done (RTL only)
    stats: dict[str, int] = field(default_factory=dict)
    # The memory model's statistics (docs/hbm_model.md §5; RTL only, empty otherwise).
    memory_stats: dict = field(default_factory=dict)
    # The simulated core of a coupled run (sim.system.CoreRun; None otherwise).
    core: object | None = None
    # The stream whose evaluation raised the fault (MISALIGNED, ADDR_RANGE, ADDR_OVERFLOW,
    # BLOCK_LENGTH): the golden model's AccessFault.stream, the RTL's STATUS.FAULT_STREAM.
    fault_stream: int | None = None

    @classmethod
    def from_rtl(cls, r) -> "AccessRun":
        """The access run of a ``sim.system.RtlResult``."""
        return cls(r.data_tokens, r.control_tokens, r.fault_code, r.fault_addr, r.cycles,
                   dict(r.stats), dict(r.memory_stats or {}), getattr(r, "core", None),
                   getattr(r, "fault_stream", None))


class Transport(Protocol):
    name: str

    def run(self, program: bytes, memory: bytes, args: Sequence[int]) -> AccessRun: ...


class GoldenTransport:
    """The golden model as a transport."""
    name = "golden"

    def __init__(self, limits: Limits | None = None):
        self.limits = limits

    def run(self, program: bytes, memory: bytes, args: Sequence[int]) -> AccessRun:
        r = run_golden(program, memory, args, limits=self.limits)
        return AccessRun(r.data_tokens, r.control_tokens, r.fault_code, r.fault_addr, None,
                         {"loads": r.loads, "bytes_loaded": r.bytes_loaded},
                         fault_stream=r.fault_stream)


class RtlTransport:
    """The RTL access unit under Verilator. ``config`` is a ``sim.system.TmuConfig``,
    ``memory`` the memory model's preset (``"simple"``, ``"HBM2"``, ``"HBM3"``; docs/hbm_model.md),
    ``engine`` ``"cpp"`` (default: the C++ harness, ``sim.fast``) or ``"cocotb"``; both give
    identical results (``sim.system.run_many_on_rtl``)."""
    name = "rtl"

    def __init__(self, config=None, backpressure: float = 0.0, seed: int = 0, memory="simple",
                 engine: str = "cpp"):
        self.config, self.backpressure, self.seed, self.memory = config, backpressure, seed, memory
        self.engine = engine

    def run(self, program: bytes, memory: bytes, args: Sequence[int], *, core=None,
            core_schedule: Sequence[int] | None = None) -> AccessRun:
        """Run the program; with ``core`` (a :class:`CoreCostModel`) and ``core_schedule``
        (``ExecuteResult.pops_per_control``) the queues are consumed by the simulated core
        (``sim.system.RtlJob.core``; ``engine="cpp"`` only)."""
        from sim.system import run_on_rtl   # imported lazily: only the RTL target needs cocotb
        return AccessRun.from_rtl(run_on_rtl(program, memory, args, config=self.config,
                                             backpressure=self.backpressure, seed=self.seed,
                                             memory=self.memory, engine=self.engine, core=core,
                                             core_schedule=core_schedule))


class ReplayTransport:
    """A run already made, handed back as a transport: e.g. many programs run on the RTL in one
    simulator process (``sim.system.run_many_on_rtl``), then each checked and executed by
    :func:`run_kernel`. ``run`` raises ``ValueError`` if asked for another program."""

    def __init__(self, program: bytes, run: AccessRun, name: str = "rtl"):
        self.program, self.access, self.name = program, run, name

    def run(self, program: bytes, memory: bytes, args: Sequence[int]) -> AccessRun:
        if program != self.program:
            raise ValueError("ReplayTransport: the program differs from the one that was run")
        return self.access


@dataclass
class RunResult:
    results: tuple                 # the kernel's results (NumPy arrays / scalars), in order
    access: AccessRun
    execute: ExecuteResult
    image: MemoryImage
    target: str
    #: The coupled core made from the execute side (``core="replay"``/``"fitted"``:
    #: ``sw.runtime.coupled_core.CoupledCore``); None otherwise.
    coupled_core: object | None = None

    @property
    def cycles(self) -> int | None:
        return self.access.cycles

    @property
    def dae_cycles_estimate(self) -> int | None:
        """``max(access, core)``: the access unit's cycles (START to done) against the core's
        :class:`CoreCostModel` estimate, as if neither ever waited for the other (RTL only)."""
        return None if self.access.cycles is None else max(self.access.cycles, self.execute.core_cycles)

    @property
    def dae_cycles(self) -> int | None:
        """Cycles from START until the simulated core popped DONE, with the unit and the core
        coupled through the queues (``coupled=True``); None for an uncoupled run."""
        core = self.access.core
        if core is None or not core.finished or core.schedule_mismatch:
            return None
        return core.finish_cycles


def _transport(target: str | Transport, kernel: Kernel, **options) -> Transport:
    if not isinstance(target, str):
        if not callable(getattr(target, "run", None)):       # None failed with an AttributeError
            raise ValueError(f"target must be one of {', '.join(TARGETS)} or a transport (an "
                             f"object with run()), not {target!r}")
        return target
    if target == "golden":
        return GoldenTransport(options.get("limits") or kernel.limits)
    if target == "rtl":
        return RtlTransport(options.get("config"), options.get("backpressure", 0.0),
                            options.get("seed", 0), options.get("memory", "simple"),
                            options.get("engine", "cpp"))
    raise ValueError(f"target must be one of {', '.join(TARGETS)}, not {target!r}")


def _stream_param(kernel: Kernel, stream: int | None) -> int | None:
    """The parameter whose base address is the base of ``stream``'s region, or None."""
    if stream is None or not 0 <= stream < len(kernel.program.streams):
        return None
    region = getattr(kernel.program.streams[stream], "region", None)
    if region is None or not 0 <= region < len(kernel.program.regions):
        return None
    base = kernel.program.regions[region].base
    if base.kind == SrcKind.ARG and kernel.arg_map[base.value].kind == ArgKind.BASE:
        return kernel.arg_map[base.value].param
    return None


def explain_fault(kernel: Kernel, image: MemoryImage, code: int, addr: int,
                  stream: int | None = None) -> str:
    """A user-level explanation of an access-unit fault (which input was wrong, and how).

    ``stream``: the stream that raised the fault (``AccessRun.fault_stream``), None if unknown.
    ``ADDR_RANGE``: the address (signed) relative to the tensor the faulting ``stream`` loads
    from when it is known, else to the tensor nearest the
    address, and the arguments whose values select positions in that tensor
    (``Kernel.host_checks``: index arrays and loop bounds); ``RANGE_ORDER``: the arguments that
    give loop bounds.
    """
    code = Fault(code)

    def names(params) -> str:
        return " or ".join(f"arg{n} ({kernel.params[n].name!r})" for n in params)

    if code == Fault.ADDR_RANGE:
        target = _stream_param(kernel, stream)
        where = image.describe(addr, outside=True, tensor=target)
        found = image.nearest(addr, outside=True, tensor=target)
        sources = []
        if found is not None:
            sources = list(dict.fromkeys(c.source for c in kernel.host_checks
                                         if c.target == found[0] and c.kind in ("index", "bound")))
        blame = (f"a value of {names(sources)}, which selects positions in {found[1].name!r}, is out of range"
                 if sources else
                 f"an index used to address {found[1].name!r} is out of range" if found is not None
                 else "an index is out of range")
        return (f"access unit fault ADDR_RANGE: a load at {where} is outside the memory region it was "
                f"granted; {blame}")
    if code == Fault.RANGE_ORDER:
        bounds = list(dict.fromkeys(c.source for c in kernel.host_checks if c.kind == "bound"))
        what = f"{names(bounds)} must be non-decreasing" if bounds else "loop bounds must be non-decreasing"
        return (f"access unit fault RANGE_ORDER: layer {addr} got an upper bound below its lower bound; "
                f"{what}")
    if code == Fault.MISALIGNED:
        target = _stream_param(kernel, stream)
        of = ("" if stream is None else f" of stream {stream}" + (
            "" if target is None else f" (from arg{target} ({kernel.params[target].name!r}))"))
        return (f"access unit fault MISALIGNED: a load{of} at {image.describe(addr)} is not aligned "
                f"to its size")
    if code == Fault.ADDR_OVERFLOW:
        target = _stream_param(kernel, addr)        # ADDR_OVERFLOW's address is the stream id
        if target is None:
            return (f"access unit fault ADDR_OVERFLOW: the address computation of stream {addr} "
                    f"left the signed 64-bit range; an index is too large for the array it selects from")
        sources = list(dict.fromkeys(c.source for c in kernel.host_checks     # whose values index it
                                     if c.target == target and c.kind in ("index", "bound", "last")))
        blame = f"; a value of {names(sources)} is too large" if sources else ""
        return (f"access unit fault ADDR_OVERFLOW: the address computation of stream {addr} (a load "
                f"from arg{target} ({kernel.params[target].name!r})) left the signed 64-bit range{blame}")
    if code == Fault.BLOCK_LENGTH and kernel.limits is not None:
        return (f"access unit fault BLOCK_LENGTH: block stream {addr} got a length above max_block = "
                f"{kernel.limits.max_block} of the TMU configuration {kernel.limits.name or '(unnamed)'} "
                f"or below 0")
    return f"access unit fault {code.name} at {addr:#x}"


def check_block_lengths(kernel: Kernel, regs: Sequence[int], limits: Limits | None) -> None:
    """Refuse a run whose block stream (docs/isa.md §7.4: one row loaded as a block) would get a
    length from an argument register above ``limits.max_block`` (the unit would stop with fault
    ``BLOCK_LENGTH``). ``ValueError`` names the argument, its value (the ``embedding_dim``) and
    ``max_block``. Lengths known at compile time are checked by the compiler (CompileError)."""
    if limits is None or not limits.max_block:
        return
    for sid, stream in enumerate(kernel.program.streams):
        count = getattr(stream, "count", None)
        if not getattr(stream, "block", False) or count is None or count.kind != SrcKind.ARG:
            continue
        value = regs[count.value]
        if 0 <= value <= limits.max_block:
            continue
        spec = kernel.arg_map[count.value]
        if spec.kind == ArgKind.DIM:
            what = f"arg{spec.param} ({kernel.params[spec.param].name}) dimension {spec.axis}"
        elif spec.kind == ArgKind.SCALAR:
            what = f"arg{spec.param} ({kernel.params[spec.param].name})"
        else:
            what = f"argument register {count.value} ({spec})"
        raise ValueError(f"{what} is {value}: block stream {sid} would load rows of embedding_dim = "
                         f"{value} elements, more than max_block = {limits.max_block} of the TMU "
                         f"configuration {limits.name or '(unnamed)'} (Limits.max_block); compile at "
                         f"-O2 or lower, or for a configuration with a larger max_block")


def run_kernel(kernel: Kernel, args: Sequence, target: str | Transport = "golden", *,
               cost: CoreCostModel | None = None, **options) -> RunResult:
    """Run a compiled kernel on ``args`` (bound by position) and return its results.

    Parameters
    ----------
    kernel : Kernel
        From ``sw.compiler.compile_mlir`` or the PyTorch frontend.
    args : sequence
        The function's arguments: NumPy arrays for memrefs (dtype as declared; ``index`` → int64),
        Python ints or 0-d arrays for scalars. Arrays the kernel writes are written in place.
    target : {'golden', 'rtl'} or Transport
    cost : CoreCostModel, optional
        The core's rate: the estimate ``ExecuteResult.core_cycles`` and, coupled, the simulated core.
    options
        ``limits`` (golden; default ``kernel.limits``, the configuration it was compiled for),
        ``config``, ``backpressure``, ``seed``, ``memory``, ``engine`` (rtl; ``RtlTransport``),
        ``coupled`` (rtl, default False): first run the golden model and the execute side over
        its tokens (the results and ``pops_per_control``), then the RTL with the output queues
        consumed by a model of the core at ``cost``'s rate in the same simulation
        (``RunResult.dae_cycles``; ``dae_cycles_estimate`` stays as the cross-check). Needs the
        C++ engine. ``core`` (coupled; ``"replay"`` or ``"fitted"``, with ``dlc``, the kernel's
        DLC module, ``sw.compiler.pipelines.Compilation.dlc``): instead of ``cost``, the core
        made from the execute side run on the out-of-order core model over the golden model's
        tokens (``sw.runtime.coupled_core``; ``RunResult.coupled_core``).

    Raises
    ------
    TypeError, ValueError
        Arguments that do not match the kernel's parameters (names ``argN``); an option not
        listed above (``TypeError``), or an rtl option given with target ``"golden"``
        (``ValueError``).
    AccessFault
        The access unit faulted (an index out of range, decreasing offsets, ...): the message says
        which input and address.
    ExecuteError
        Coupled: the RTL's tokens differ from the golden model's, the simulated core could not
        follow its schedule (``CoreRun.schedule_mismatch``), or (``core``) the execute side's
        trace computed other results than the compute loop.
    """
    unknown = [k for k in options if k not in RUN_OPTIONS]
    if unknown:
        raise TypeError(f"run_kernel: unknown option {', '.join(map(repr, unknown))} (options: "
                        f"{', '.join(RUN_OPTIONS)})")
    if target == "golden":
        rtl_only = [f"{k}={options[k]!r}" for k in RTL_OPTIONS if options.get(k) is not None]
        if rtl_only:
            raise ValueError(f"{', '.join(rtl_only)} applies to target 'rtl' only (the golden "
                             f"model has no timing)")
    coupled = options.pop("coupled", False)
    core, dlc = options.pop("core", None), options.pop("dlc", None)
    if coupled and not (target == "rtl" or isinstance(target, RtlTransport)):
        raise ValueError(f"coupled=True needs target 'rtl' (an RtlTransport), not {target!r}")
    if core is not None:
        from .coupled_core import CORE_MODES
        if core not in CORE_MODES:
            raise ValueError(f"core must be one of {', '.join(CORE_MODES)} or None, not {core!r}")
        if not coupled or dlc is None:
            raise ValueError(f"core={core!r} needs coupled=True and the kernel's DLC module "
                             f"(dlc=), not coupled={coupled!r}, dlc={dlc!r}")
        if cost is not None:
            raise ValueError(f"core={core!r} makes the core's rate itself: give it or cost=, "
                             f"not both (cost={cost!r})")
    transport = _transport(target, kernel, **options)
    image = build_image(kernel, args)
    kernel.check_arguments(args)
    regs = bind_arguments(kernel, args, image)
    check_block_lengths(kernel, regs, options.get("limits") or kernel.limits)
    program = kernel.program.encode()
    if coupled:
        return _run_coupled(kernel, args, transport, program, image, regs, cost or CoreCostModel(),
                            options.get("limits") or kernel.limits, core, dlc)
    access = transport.run(program, image.data, regs)
    _raise_fault(kernel, image, access)
    executed = execute_tokens(kernel, args, access.data_tokens, access.control_tokens, cost)
    return RunResult(executed.results, access, executed, image, transport.name)


def _raise_fault(kernel: Kernel, image: MemoryImage, access: AccessRun) -> None:
    """Raise the run's fault, explained (``explain_fault``) with the stream that raised it (the
    golden model's ``AccessFault.stream``, the RTL's ``STATUS.FAULT_STREAM``)."""
    if access.fault_code == Fault.NONE:
        return
    raise AccessFault(Fault(access.fault_code), access.fault_addr,
                      explain_fault(kernel, image, access.fault_code, access.fault_addr,
                                    access.fault_stream),
                      access.fault_stream)


def _run_coupled(kernel: Kernel, args: Sequence, transport: RtlTransport, program: bytes,
                 image: MemoryImage, regs: Sequence[int], cost: CoreCostModel,
                 limits: Limits | None, core: str | None = None, dlc=None) -> RunResult:
    """The golden model's tokens, executed (results and schedule), then the RTL run with the core
    model consuming the queues; its tokens must be the golden model's. With ``core`` the core
    model is made from the execute side first (:func:`_made_core`)."""
    golden = GoldenTransport(limits).run(program, image.data, regs)
    _raise_fault(kernel, image, golden)
    # the execute side's trace needs the arguments as they were: the compute loop writes results
    inputs = (None if core is None else
              [np.array(a, copy=True) if isinstance(a, np.ndarray) else a for a in args])
    executed = execute_tokens(kernel, args, golden.data_tokens, golden.control_tokens, cost)
    made = None
    if core is not None:
        made = _made_core(kernel, inputs, golden, executed, core, dlc, transport.memory)
        cost = made.cost
        executed = replace(executed, core_cycles=made.cost.cycles(executed.pops_per_control[:-1]))
    access = transport.run(program, image.data, regs, core=cost,
                           core_schedule=executed.pops_per_control)
    _raise_fault(kernel, image, access)
    if (access.data_tokens, access.control_tokens) != (golden.data_tokens, golden.control_tokens):
        raise ExecuteError(f"coupled run of {kernel.name!r}: the RTL pushed {len(access.data_tokens)} "
                           f"data / {len(access.control_tokens)} control tokens, not the golden "
                           f"model's {len(golden.data_tokens)} / {len(golden.control_tokens)} "
                           f"(or other values)")
    if access.core is None or access.core.schedule_mismatch or not access.core.finished:
        raise ExecuteError(f"coupled run of {kernel.name!r}: the simulated core did not follow its "
                           f"schedule ({access.core})")
    return RunResult(executed.results, access, executed, image, transport.name, made)


def _made_core(kernel: Kernel, args: Sequence, golden: AccessRun, executed: ExecuteResult,
               core: str, dlc, memory: str):
    """``sw.runtime.coupled_core.core_from_execute_side`` over the golden model's tokens, its
    results checked against the compute loop's (within float32 rounding: the trace rounds a
    fused multiply-add twice, the generated compute loop once)."""
    from .coupled_core import core_from_execute_side
    made = core_from_execute_side(dlc, args, golden.data_tokens, golden.control_tokens,
                                  executed.pops_per_control[:-1], memory, mode=core)
    for n, (a, b) in enumerate(zip(made.results, executed.results)):
        same = np.shape(a) == np.shape(b) and np.allclose(a, b, rtol=1e-5, atol=1e-5,
                                                           equal_nan=True)
        if not same:
            raise ExecuteError(f"kernel {kernel.name!r}: the execute side's trace computed another "
                               f"result {n} than its compute loop (core={core!r})")
    return made

