"""``sw.compiler.frontends.integers.require_integers``: the one check, shared by the PyTorch
(embedding bag, plans, jagged) and TensorFlow frontends, that ids/offsets/lengths hold integers.
Each frontend's refusal message is asserted in its own tests (test_torch_frontend.py,
test_torch_dlrm_frontend.py, test_tf_frontend.py); here the rule on both kinds of dtype."""

import numpy as np
import pytest
import torch

from sw.compiler.frontends import integers, tensorflow, torch_bind, torch_jagged
from sw.compiler.frontends.integers import require_integers


@pytest.mark.parametrize("a", [np.array([1, 2], np.int64), np.array([1], np.uint8),
                               np.zeros(0, np.int32), torch.tensor([1, 2]),
                               torch.tensor([3], dtype=torch.uint8), torch.zeros(0, dtype=torch.int16)])
def test_integers_are_returned_unchanged(a):
    assert require_integers(a, "ids") is a


@pytest.mark.parametrize("a, shown", [
    (np.array([1.7]), "float64"), (np.array([1.0], np.float32), "float32"),
    (np.array([True]), "bool"), (np.array([1j]), "complex128"),
    (torch.tensor([1.5]), "float32"), (torch.tensor([True]), "bool"),
    (torch.tensor([1.0], dtype=torch.bfloat16), "bfloat16"), (torch.tensor([1j]), "complex64"),
])
def test_other_dtypes_are_refused_naming_the_argument_and_dtype(a, shown):
    with pytest.raises(ValueError) as info:
        require_integers(a, "offsets")
    assert str(info.value) == f"offsets must be an integer tensor, not {shown}"


def test_the_frontends_share_it():
    """No frontend keeps a copy of the rule (three did: tensorflow._integers,
    torch_jagged._integers and torch_bind's inline checks)."""
    assert not hasattr(tensorflow, "_integers") and not hasattr(torch_jagged, "_integers")
    for module in (tensorflow, torch_bind, torch_jagged):
        assert module.require_integers is integers.require_integers
