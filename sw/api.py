"""Python API: compile a PyTorch embedding op and run it on the golden model or the RTL.

>>> bag = torch.nn.EmbeddingBag(10, 4, mode="sum")
>>> op = compile_torch(bag, (torch.tensor([1, 2, 2]), torch.tensor([0, 1])))
>>> op(torch.tensor([1, 2, 2]), torch.tensor([0, 1]), target="golden")     # like bag(...)
tensor(...)

Supported (the vertical slice): ``nn.EmbeddingBag`` and functions calling
``torch.nn.functional.embedding_bag`` with ``mode`` ``"sum"`` or ``"mean"`` — see
``sw.compiler.frontends.torch`` for the exact set of arguments.
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


def compile_torch(module_or_fn: Callable, example_inputs: tuple, **options) -> CompiledOp:
    """Compile ``module_or_fn`` (an ``nn.EmbeddingBag`` or a function calling ``F.embedding_bag``)
    traced on ``example_inputs`` into a :class:`CompiledOp`.

    Raises
    ------
    sw.compiler.CompileError
        The module uses something the compiler does not support; the message names it.
    """
    from sw.compiler.frontends.torch import compile_torch as frontend
    return CompiledOp(frontend(module_or_fn, example_inputs, **options))
