"""PyTorch frontend: embedding ops traced with ``torch.export`` -> SCF -> Kernel.

Graphs recognised (``compile_torch``; anything else is a CompileError naming the first
unsupported aten op):

=============================================  =============================  ==================
PyTorch                                         SCF (generator)                agreement
=============================================  =============================  ==================
one ``aten.embedding_bag`` (below), f32, f64,  ``scf_for_bag`` (16-bit: an   bit-exact
f16, bf16; then ``relu``/``* / + -`` a number   f32 accumulator row, one
(f32, f64)                                      rounding; fused ops: a loop
                                                in the bag's last callback)
``F.embedding(x, w).sum(1)`` / ``.mean(1)``     a fixed-length bag             within a bound
several embedding bags (DLRM's sparse part),    ``torch_bags``: one table-     bit-exact
any dims/modes/dtypes/padding, returned as a    batched program per group of
pytree or ``torch.cat(..., dim=1)``             compatible bags (BagGroups)
torchrec's jagged layout                        ``torch_jagged.compile_jagged`` bit-exact
``aten.embedding`` (``nn.Embedding``,           ``scf_for_gather``             bit-exact (a copy)
``F.embedding``), any index shape
``x.index_select(0, src)`` / ``x[src]`` then    ``scf_for_segment``: edges in  bit-exact (PyTorch's
``index_add(_)(0, dst, .)`` or                  order, sum/mean/amax/amin,     CPU kernels reduce
``scatter_reduce(0, dst[:, None].expand(..),``  ``include_self`` both ways     in edge order; f32,
``., reduce, include_self)``                                                   f64, i32, i64)
sparse CSR input ``@`` dense (``matmul``,       ``scf_for_csr_mm``: CSR order, bit-exact (PyTorch's
``torch.sparse.mm``)                            ``math.fma``                   CPU kernel uses an
                                                                               FMA per term)
=============================================  =============================  ==================

Bit-exactness is checked in ``tests/compiler/test_torch_frontend.py`` (float32, float64 and,
where PyTorch allows them, int32/int64 data); the float32 FMA is emulated in float64 on the
execute side, which differs from a true FMA only in rare double-rounding ties
(``docs/compiler.md``). The rest of this docstring is about the single-bag path.

The frontend is four modules by job: ``torch_graph`` (tracing and graph matching),
``torch_scf`` (MLIR text building), ``torch_bind`` (run-time argument binding) and
``torch_plans`` (the graphs other than one bag), with ``torch_bags`` (several bags) and
``torch_jagged`` (the KeyedJaggedTensor layout); this module holds :func:`compile_torch`.

How the op is found:

* ``torch.export`` traces the module (a function is wrapped in a module) on the example inputs;
  the graph must hold exactly one ``aten.embedding_bag`` (whose first result is the output) and
  nothing else but ``getitem``. Its arguments give the mode, ``per_sample_weights``,
  ``include_last_offset`` and ``padding_idx``; the weight is a parameter, a constant or an input.
* What ``F.embedding_bag``/``F.embedding`` put around the aten op is folded: a 2-D input
  (``reshape(input, [-1])`` and offsets ``arange(0, numel, bag length)``; the call binds the
  actual shape, so any batch size and bag length run) and ``max_norm`` (``detach`` +
  ``embedding_renorm_`` of the weight: at each call the looked-up rows are renormalised in place
  on the host with ``torch.embedding_renorm_`` itself, then the lookup runs on the access unit).
* For an ``nn.EmbeddingBag`` whose export graph is still not that simple, the frontend reads the
  module's attributes instead: its ``forward`` is exactly ``F.embedding_bag`` with them.

Supported: modes ``sum``, ``mean`` and ``max``; ``per_sample_weights`` (mode ``sum``, as in
PyTorch; float32 accumulates with ``math.fma`` like PyTorch's CPU kernel, and multiplies then
adds, as it does, with ``padding_idx``); ``include_last_offset``;
``padding_idx``; ``max_norm``/``norm_type``; float32, float64, float16 and bfloat16 weights; 1-D
input with offsets or 2-D input (fixed-length bags); element-wise ops and a final ``.to(dtype)``
after a float32/float64 bag, on the execute side (``BagSpec.post``, ``BagSpec.cast``). Not
supported (CompileError): other ops in the traced function, other weight dtypes (8- and 4-bit
rowwise-quantised tables and the ``torch.ao.nn.quantized.EmbeddingBag`` module: ``torch_quant``).

The generated SCF function is::

    @embedding_bag(%table: memref<?x?xT>, %indices: memref<?xi64>, %offsets: memref<?xi64>,
                   [%weights: memref<?xT>,] %out: memref<?x?xT>) -> memref<?x?xT>

with ``nbags + 1`` offsets; :meth:`TorchKernel.bind` converts PyTorch's inputs to these arguments.
"""

from __future__ import annotations

from typing import Callable

import torch

from ...runtime.kernel import Kernel
from ..errors import CompileError
from .torch_bags import BagGroups
from .torch_bind import PlanKernel, TorchKernel
from .torch_graph import _export, _from_attributes, _from_export, _Graph, _Wrap
from .torch_plans import _plan
from .torch_scf import BagSpec, scf_for_bag, scf_for_csr_mm, scf_for_gather, scf_for_segment

__all__ = ["BagSpec", "BagGroups", "TorchKernel", "PlanKernel", "compile_torch", "scf_for_bag", "scf_for_gather",
           "scf_for_segment", "scf_for_csr_mm"]


def _compile(text: str, limits, opt_level: int) -> Kernel:
    import inspect

    from .. import compile_mlir
    if "opt_level" in inspect.signature(compile_mlir).parameters:
        return compile_mlir(text, filename="<torch>", limits=limits, opt_level=opt_level)
    if opt_level != 0:
        raise CompileError(f"opt_level {opt_level} is not available yet (the compiler has -O0 only)")
    return compile_mlir(text, filename="<torch>", limits=limits)


def _distinct(inputs: tuple) -> tuple:
    """``inputs`` with a tensor given again (the same object at a later position) cloned:
    ``torch.export`` traces such a pair as one input (every use reads the last position's
    placeholder, the other is unused), so the op would read that input for both at every call."""
    seen: set[int] = set()
    out = []
    for value in inputs:
        if isinstance(value, torch.Tensor) and id(value) in seen:
            value = value.clone()
        seen.add(id(value))
        out.append(value)
    return tuple(out)


def compile_torch(module_or_fn: Callable, example_inputs: tuple, *, limits=None,
                  opt_level: int = 0) -> "TorchKernel | PlanKernel":
    """Compile a PyTorch module or function traced with ``torch.export`` on ``example_inputs``.

    Recognised graphs (see the module docstring): one ``embedding_bag`` (``nn.EmbeddingBag``,
    ``F.embedding_bag``) -> :class:`TorchKernel`; several embedding bags returned as a tuple or
    ``torch.cat(..., dim=1)`` (one program, tables batched), ``nn.Embedding``/``F.embedding``,
    ``index_select``/``x[src]`` followed by ``index_add(_)``/``scatter_reduce``, and sparse CSR
    (an input) ``@`` dense -> :class:`PlanKernel`. ``opt_level`` (0..3) goes to
    :func:`sw.compiler.compile_mlir`; ``limits`` is the TMU configuration.

    Raises
    ------
    CompileError
        Naming the unsupported operation, argument or combination.
    """
    from .torch_quant import compile_ao_embedding_bag, is_ao_embedding_bag
    if is_ao_embedding_bag(module_or_fn):       # not traceable: compiled from its packed weight
        return compile_ao_embedding_bag(module_or_fn, example_inputs, lambda m, ins: compile_torch(
            m, ins, limits=limits, opt_level=opt_level))
    module = module_or_fn if isinstance(module_or_fn, torch.nn.Module) else _Wrap(module_or_fn)
    inputs = _distinct(tuple(example_inputs))
    # torch.export bakes these into the graph: a call must give the same (check_traced_numbers)
    numbers = {k: v for k, v in enumerate(inputs) if isinstance(v, (bool, int, float))}
    try:
        ep = _export(module, inputs)
        plan = _plan(_Graph(ep, inputs, module))
        if plan is not None:
            for part in getattr(plan, "parts", [plan]):
                part.kernel = _compile(part.scf, limits, opt_level)
                part.traced_numbers = numbers
            return plan
        found = _from_export(_Graph(ep, inputs, module))
    except CompileError:
        if not isinstance(module_or_fn, torch.nn.EmbeddingBag):
            raise
        found = _from_attributes(module_or_fn)
    if found.spec.per_sample_weights and found.spec.mode != "sum":
        raise CompileError(f"per_sample_weights is only supported with mode='sum' (as in PyTorch), "
                           f"not mode={found.spec.mode!r}")
    # F.embedding(x, w).sum(1)/.mean(1) of 16-bit rows is PyTorch's reduction, not its bag: f32
    # accumulation, the mean divided in f32, one rounding to nearest even
    rows16 = found.reduction is not None and found.spec.dtype in ("float16", "bfloat16")
    text = scf_for_bag(found.spec, padded=rows16, divide_in_f32=rows16)
    tk = TorchKernel(_compile(text, limits, opt_level), found, text,
                     compile_variant=lambda variant: _compile(variant, limits, opt_level))
    tk.traced_numbers = numbers
    return tk
