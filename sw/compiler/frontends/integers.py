"""The frontends' one check that ids, offsets or lengths hold integers.

PyTorch and TensorFlow refuse a floating-point index where a cast would truncate it (1.7 read as
row 1); the frontends refuse the same before they cast. NumPy arrays and torch tensors are both
accepted (told apart by their dtype, so this module imports neither framework).
"""

from __future__ import annotations

__all__ = ["require_integers"]


def require_integers(a, name: str):
    """``a`` (a NumPy array or a torch tensor), unchanged; ``ValueError`` ``"<name> must be an
    integer tensor, not <dtype>"`` unless its dtype is an integer type (booleans, floating-point
    and complex types are refused). ``<dtype>`` is NumPy's name, or torch's without ``torch.``."""
    dtype = a.dtype
    if hasattr(dtype, "is_floating_point"):                   # a torch.dtype
        shown = str(dtype).removeprefix("torch.")
        integer = not (dtype.is_floating_point or dtype.is_complex or shown == "bool")
    else:                                                     # a numpy.dtype
        shown, integer = str(dtype), dtype.kind in "iu"
    if not integer:
        raise ValueError(f"{name} must be an integer tensor, not {shown}")
    return a
