"""Arguments of the Python entry points that are not what they take: an exception naming the
argument and the value, not an AttributeError from deep inside (compile_torch's and compile_mlir's
``limits``, run_kernel's and a compiled op's ``target``)."""

from __future__ import annotations

import pytest
import torch

from sw.api import compile_torch
from sw.compiler import compile_mlir
from sw.runtime.drivers import run_kernel
from sw.runtime.isa import Limits

EXAMPLE = "examples/embedding_bag_sum.mlir"
INPUTS = (torch.tensor([1, 2, 3]), torch.tensor([0, 1]))


@pytest.mark.parametrize("limits, shown", [("tmu_small", "str 'tmu_small'"),
                                           ({"streams": 4}, "dict {'streams': 4}")])
def test_limits_that_are_not_a_limits_object_are_refused(limits, shown):
    """A configuration name or dict failed with "'str' object has no attribute 'args'"."""
    message = (f"limits must be a sw.runtime.isa.Limits (Limits.from_file(path or name), "
               f"Limits.from_dict(d)) or None, not {shown}")
    with pytest.raises(TypeError) as info:
        compile_mlir(open(EXAMPLE).read(), limits=limits)
    assert str(info.value) == message
    with pytest.raises(TypeError) as info:
        compile_torch(torch.nn.EmbeddingBag(10, 4, mode="sum"), INPUTS, limits=limits)
    assert str(info.value) == message
    assert compile_mlir(open(EXAMPLE).read(), limits=Limits.from_file(limits) if isinstance(limits, str)
                        else None).name == "embedding_bag"


@pytest.mark.parametrize("target", [None, 3])
def test_a_target_that_is_neither_a_name_nor_a_transport_is_refused(target):
    """target=None failed with "'NoneType' object has no attribute 'run'"."""
    bag = torch.nn.EmbeddingBag(10, 4, mode="sum")
    op = compile_torch(bag, INPUTS)
    message = f"target must be one of golden, rtl or a transport (an object with run()), not {target!r}"
    with pytest.raises(ValueError) as info:
        op(*INPUTS, target=target)
    assert str(info.value) == message
    with pytest.raises(ValueError) as info:
        run_kernel(op.kernel, op._tk.bind(*INPUTS), target)
    assert str(info.value) == message
    assert torch.equal(op(*INPUTS, target="golden"), bag(*INPUTS).detach())
