"""Python API: compile a PyTorch embedding op and run it on the golden model or the RTL.

>>> bag = torch.nn.EmbeddingBag(10, 4, mode="sum")
>>> op = compile_torch(bag, (torch.tensor([1, 2, 2]), torch.tensor([0, 1])))
>>> op(torch.tensor([1, 2, 2]), torch.tensor([0, 1]), target="golden")     # like bag(...)
tensor(...)

Supported (see ``sw.compiler.frontends.torch`` for the exact set of arguments):
``nn.EmbeddingBag`` / ``F.embedding_bag`` in every mode, several embedding bags of one module in
one program (returned as a tuple or concatenated along dim 1, as in DLRM), ``nn.Embedding`` /
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

__all__ = ["CompiledOp", "compile_torch"]


class CompiledOp:
    """A compiled PyTorch embedding op. Call it like the original module or function.

    Attributes
    ----------
    kernel : sw.runtime.kernel.Kernel
        The access program, argument map and execute-side code.
    last_run : RunResult or None
        Tokens, cycles (RTL) and counters of the latest call.
    """

    def __init__(self, torch_kernel: Any):
        self._tk = torch_kernel
        self.kernel = torch_kernel.kernel
        self.last_run: RunResult | None = None

    def __call__(self, *inputs, target: str = "golden", **options):
        """Run on ``target`` (``"golden"`` or ``"rtl"``) and return a ``torch.Tensor``.

        ``options`` go to :func:`sw.runtime.drivers.run_kernel` (``backpressure``, ``seed``, ...).

        Raises
        ------
        ValueError
            Inputs PyTorch would reject (an index out of range, decreasing offsets), naming them.
        sw.runtime.golden.AccessFault
            The access unit faulted.
        """
        args = self._tk.bind(*inputs)
        self.last_run = run_kernel(self.kernel, args, target, **options)
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
    return CompiledOp(frontend(module_or_fn, example_inputs, opt_level=opt_level, limits=limits))
