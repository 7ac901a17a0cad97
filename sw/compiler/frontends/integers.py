"""The frontends' one check that ids, offsets or lengths hold integers.

PyTorch and TensorFlow refuse a floating-point index where a cast would truncate it (1.7 read as
row 1); the frontends refuse the same before they cast. NumPy arrays and torch tensors are both
accepted (told apart by their dtype, so this module imports neither framework).
"""

from __future__ import annotations

__all__ = ["TORCH_INDEX_TYPES", "require_integers"]

#: the index dtypes PyTorch's embedding, embedding_bag, index_select and index_add accept
TORCH_INDEX_TYPES = ("int32", "int64")


def require_integers(a, name: str, *, only: tuple[str, ...] = ()):
    """``a`` (a NumPy array or a torch tensor), unchanged; ``ValueError`` ``"<name> must be an
    integer tensor, not <dtype>"`` unless its dtype is an integer type (booleans, floating-point
    and complex types are refused). ``<dtype>`` is NumPy's name, or torch's without ``torch.``.
    ``only``: the integer types accepted (``("int32", "int64")``: PyTorch's index ops refuse
    int8, int16, uint8 and the other unsigned types), else a ``ValueError`` naming them."""
    dtype = a.dtype
    if hasattr(dtype, "is_floating_point"):                   # a torch.dtype
        shown = str(dtype).removeprefix("torch.")
        integer = not (dtype.is_floating_point or dtype.is_complex or shown == "bool")
    else:                                                     # a numpy.dtype
        shown, integer = str(dtype), dtype.kind in "iu"
    if not integer:
        raise ValueError(f"{name} must be an integer tensor, not {shown}")
    if only and shown not in only:
        raise ValueError(f"{name} must be an {' or '.join(only)} tensor, not {shown}")
    return a
