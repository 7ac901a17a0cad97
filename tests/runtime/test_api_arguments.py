"""Arguments of the Python entry points that are not what they take: an exception naming the
argument and the value, not an AttributeError from deep inside (run_kernel's and a compiled op's
``target``)."""

from __future__ import annotations

import pytest
import torch

from sw.api import compile_torch
from sw.runtime.drivers import run_kernel

INPUTS = (torch.tensor([1, 2, 3]), torch.tensor([0, 1]))


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
