"""Python API: compile a PyTorch embedding op and run it on the golden model or the RTL.

>>> bag = torch.nn.EmbeddingBag(10, 4, mode="sum")
>>> op = compile_torch(bag, (torch.tensor([1, 2, 2]), torch.tensor([0, 1])))
>>> op(torch.tensor([1, 2, 2]), torch.tensor([0, 1]), target="golden")     # like bag(...)
tensor(...)

Supported (see ``sw.compiler.frontends.torch`` and ``docs/compiler.md`` for the exact set):
``nn.EmbeddingBag`` / ``F.embedding_bag`` in every mode (f32, f64, f16, bf16; ``max_norm``;
``relu`` and arithmetic with a number after it fused), a whole DLRM sparse module (bags with
different dims, modes and dtypes, returned as a tensor, tuple, dict or concatenated along dim 1;
one program per compatible group) and its jagged ``(keys, values, lengths)`` input
(:func:`compile_jagged`), ``nn.Embedding`` /
``F.embedding``, ``x.index_select(0, src)`` (or ``x[src]``) followed by ``index_add(_)`` or
``scatter_reduce`` (sum/mean/amax/amin: GNN aggregation), and a sparse CSR tensor ``@`` a dense
matrix. ``opt_level`` (0..3, Ember's ``-O`` levels) and ``limits`` (the TMU configuration,
``sw.runtime.isa.Limits``; default ``configs/tmu_rtl.json``, what the RTL builds) go to the
compiler; levels above 0 need a configuration with the vector extension (ISA v1: ``tmu_rtl`` or
``configs/tmu_vector.json``; ``Limits()`` with no arguments is the smallest version-0 unit).
"""

from __future__ import annotations

from typing import Any, Callable

from sw.runtime.drivers import RunResult, run_kernel

__all__ = ["CompiledOp", "compile_jagged", "compile_torch"]


class CompiledOp:
    """A compiled PyTorch embedding op. Call it like the original module or function.

    Attributes
    ----------
    kernel : sw.runtime.kernel.Kernel or None
        The access program, argument map and execute-side code (None when the module compiled
        into several programs: see ``kernels``).
    kernels : list of sw.runtime.kernel.Kernel
        Every program, run one after the other at each call (one, except for a module of
        embedding bags that differ in mode, dtype, dim or padding: one per group).
    last_run : RunResult or None
        Tokens, cycles (RTL) and counters of the latest call (of its last program).
    last_runs : list of RunResult
        The latest call's runs, one per program (``sum(r.cycles for r in op.last_runs)``).
    """

    def __init__(self, torch_kernel: Any, opt_level: int = 0, n_inputs: int | None = None):
        self._tk = torch_kernel
        self._n_inputs = n_inputs               # the example inputs' count: what a call may give
        self._opt_level = opt_level
        self._parts = list(getattr(torch_kernel, "parts", [torch_kernel]))
        self._dlcs: list | None = None
        self.kernel = torch_kernel.kernel
        self.kernels = [p.kernel for p in self._parts]
        self.last_run: RunResult | None = None
        self.last_runs: list[RunResult] = []

    def dlc_modules(self) -> list:
        """The DLC module (the execute side's IR) of each program, in ``kernels``' order:
        compiled again from the SCF text each was compiled from (once, then kept); what
        ``run_kernel(..., core=...)`` runs on the core model.

        Raises ``RuntimeError`` if a recompilation gives another access program than the one
        compiled (it would model another kernel's core)."""
        if self._dlcs is None:
            from sw.compiler.pipelines import run_pipeline
            dlcs = []
            for part, kernel in zip(self._parts, self.kernels):
                comp = run_pipeline(part.scf, filename="<torch>", limits=kernel.limits,
                                    opt_level=self._opt_level)
                if comp.kernel.program.encode() != kernel.program.encode():
                    raise RuntimeError(f"recompiling {kernel.name!r} for its DLC module gave "
                                       f"another access program")
                dlcs.append(comp.dlc)
            self._dlcs = dlcs
        return self._dlcs

    def _variant_dlc(self, kernel):
        """The DLC module of the variant ``kernel`` the torch kernel compiled for some calls
        (``TorchKernel.kernel_for``, from ``variant_scf``): compiled once, then kept, with the
        same check as :meth:`dlc_modules`."""
        if getattr(self, "_variant", (None, None))[0] is not kernel:
            from sw.compiler.pipelines import run_pipeline
            comp = run_pipeline(self._tk.variant_scf, filename="<torch>", limits=kernel.limits,
                                opt_level=self._opt_level)
            if comp.kernel.program.encode() != kernel.program.encode():
                raise RuntimeError(f"recompiling {kernel.name!r} for its DLC module gave "
                                   f"another access program")
            self._variant = (kernel, comp.dlc)
        return self._variant[1]

    def __call__(self, *inputs, target: str = "golden", **options):
        """Run on ``target`` (``"golden"`` or ``"rtl"``) and return what the module returns (a
        ``torch.Tensor``, or the tuple/list/dict of a module of several embedding bags).

        ``options`` go to :func:`sw.runtime.drivers.run_kernel` (``cost``, ``backpressure``, ``seed``,
        ``memory``, ``coupled``, ...); with ``core="replay"`` or ``"fitted"`` (and
        ``coupled=True``) each program's DLC module (:meth:`dlc_modules`) goes with it, so the
        coupled core replays the op's own execute side as ``make sim``'s does.

        Raises
        ------
        TypeError
            More inputs than the op was compiled with (``example_inputs``: a
            ``per_sample_weights`` the traced op did not take would be ignored), or a keyword
            that is not a run option (inputs are positional, as traced).
        ValueError
            Inputs PyTorch would reject (an index out of range, decreasing offsets), naming them.
        sw.runtime.golden.AccessFault
            The access unit faulted.
        """
        from sw.runtime.drivers import RUN_OPTIONS
        if self._n_inputs is not None and len(inputs) > self._n_inputs:
            raise TypeError(f"the op was compiled with {self._n_inputs} example input(s) and "
                            f"called with {len(inputs)}: input {self._n_inputs} and after would be "
                            f"ignored; compile it with them (e.g. per_sample_weights) in "
                            f"example_inputs")
        known = ("cost", *RUN_OPTIONS)
        unknown = [k for k in options if k not in known]
        if unknown:
            raise TypeError(f"{', '.join(map(repr, unknown))} is not a run option (options: "
                            f"{', '.join(known)}); inputs are given by position, as in "
                            f"example_inputs")
        per_part = [dict(options) for _ in self.kernels]
        if options.get("core") is not None and "dlc" not in options:
            for opts, dlc in zip(per_part, self.dlc_modules()):
                opts["dlc"] = dlc
        if hasattr(self._tk, "parts"):
            runs = [run_kernel(k, a, target, **opts)
                    for k, a, opts in zip(self.kernels, self._tk.bind(*inputs), per_part)]
            self.last_runs, self.last_run = runs, runs[-1]
            return self._tk.unbind([r.results for r in runs])
        args = self._tk.bind(*inputs)
        kernel = self._tk.kernel_for(*inputs) if hasattr(self._tk, "kernel_for") else self.kernel
        if kernel is not self.kernel and options.get("core") is not None and "dlc" not in options:
            per_part[0]["dlc"] = self._variant_dlc(kernel)     # the variant's own execute side
        self.last_run = run_kernel(kernel, args, target, **per_part[0])
        self.last_runs = [self.last_run]
        return self._tk.unbind(self.last_run.results)


def compile_torch(module_or_fn: Callable, example_inputs: tuple, *, opt_level: int = 0,
                  limits=None) -> CompiledOp:
    """Compile ``module_or_fn`` (a module or function of the supported ops, traced with
    ``torch.export`` on ``example_inputs``) into a :class:`CompiledOp`.

    ``opt_level`` 0..3 is passed to :func:`sw.compiler.compile_mlir`; ``limits`` is the TMU
    configuration (default ``None``: ``configs/tmu_rtl.json``, what the RTL builds, as
    ``make sim`` uses; ``sw.runtime.isa.Limits()`` is the smallest ISA-v0 unit, one lane). The
    golden model runs the program with the configuration it was compiled for.

    Raises
    ------
    sw.compiler.CompileError
        The module uses something the compiler does not support (the message names the op), or
        the level needs a feature the configuration lacks.
    ValueError
        ``opt_level`` is not 0, 1, 2 or 3.
    """
    from sw.compiler.frontends.torch import compile_torch as frontend
    return CompiledOp(frontend(module_or_fn, example_inputs, opt_level=opt_level, limits=limits),
                      opt_level, n_inputs=len(example_inputs))


def compile_jagged(tables, example, *, output: str = "cat", opt_level: int = 0,
                   limits=None) -> CompiledOp:
    """Compile a DLRM sparse lookup on torchrec's jagged layout without torchrec: ``tables`` is
    ``{key: nn.EmbeddingBag}``, ``example`` a ``sw.compiler.frontends.torch_jagged.Jagged(keys,
    values, lengths, offsets, weights)`` (or a torchrec ``KeyedJaggedTensor``). Call the result
    with one such input: it returns ``(B, sum of dims)`` (``KeyedTensor.values()``'s layout) or,
    with ``output="dict"``, ``{key: (B, dim)}``. See ``sw.compiler.frontends.torch_jagged``.

    Raises
    ------
    sw.compiler.CompileError
        A table the frontend does not support. At the call, ``ValueError`` names a missing key or
        lengths/offsets that do not match the values.
    """
    from sw.compiler.frontends.torch_jagged import compile_jagged as frontend
    return CompiledOp(frontend(tables, example, output=output, opt_level=opt_level, limits=limits),
                      opt_level, n_inputs=1)
