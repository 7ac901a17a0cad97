"""Splitting one call across the units of a multi-unit system, by batch (issue 11).

A call is cut into ``units`` contiguous ranges of its batch (bags of an EmbeddingBag, rows of a CSR
matrix); every unit runs the *same* compiled program on its slice. The tensors every slice reads
whole (the embedding table, the dense matrix of an SpMM) are placed once in one shared memory
image, each slice's own tensors (indices, offsets rebased to 0, weights, output rows) after them:

>>> parts = split_embedding_bag(indices, offsets, units=2)
>>> unit_args = [[table, p.indices, p.offsets, out[p.start:p.stop]] for p in parts]
>>> image, regs = shared_image(kernel, unit_args, shared=[0])
>>> result = run_partitioned(kernel, unit_args, shared=[0], memory="HBM2")   # sw.runtime.multi_unit

The slices' results are views of the caller's output, so the output is the whole call's; it equals
the single-unit call's (each bag / row is reduced by one unit, in the same order).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence

import numpy as np

from .image import MemoryImage, bind_arguments

__all__ = ["batch_ranges", "BagSlice", "split_embedding_bag", "RowSlice", "split_csr",
           "shared_image"]


def batch_ranges(batch: int, units: int) -> list[tuple[int, int]]:
    """``units`` contiguous ``[start, stop)`` ranges covering ``0..batch``, sizes differing by at
    most one (unit ``u`` gets ``[batch*u//units, batch*(u+1)//units)``; some empty if ``batch <
    units``). Raises ``ValueError`` naming ``batch`` or ``units`` when negative / below 1."""
    if not isinstance(units, (int, np.integer)) or units < 1:
        raise ValueError(f"units must be a positive integer, not {units!r}")
    if not isinstance(batch, (int, np.integer)) or batch < 0:
        raise ValueError(f"batch must be a non-negative integer, not {batch!r}")
    return [(batch * u // units, batch * (u + 1) // units) for u in range(units)]


def _check_offsets(name: str, offsets: np.ndarray, length: int) -> None:
    if offsets.ndim != 1 or len(offsets) < 1:
        raise ValueError(f"{name} must be a 1-d array of at least one entry, not shape "
                         f"{offsets.shape}")
    if offsets[0] != 0 or offsets[-1] != length or np.any(np.diff(offsets) < 0):
        raise ValueError(f"{name} must rise from 0 to {length} (the length of the indices), "
                         f"not {offsets[0]}..{offsets[-1]}")


@dataclass
class BagSlice:
    """Bags ``start..stop-1`` of an EmbeddingBag call: its ``indices``, ``offsets`` (length
    ``stop - start + 1``, from 0) and ``per_sample_weights`` (or None)."""
    start: int
    stop: int
    indices: np.ndarray
    offsets: np.ndarray
    per_sample_weights: np.ndarray | None = None


def split_embedding_bag(indices: np.ndarray, offsets: np.ndarray, *, units: int,
                        per_sample_weights: np.ndarray | None = None) -> list[BagSlice]:
    """Split an EmbeddingBag call (``torch.nn.functional.embedding_bag`` with
    ``include_last_offset=True``: bag ``b`` is ``indices[offsets[b]:offsets[b+1]]``) into
    ``units`` contiguous bag ranges (:func:`batch_ranges`). ``indices`` (1-d, any integer dtype)
    and ``per_sample_weights`` (same length) are sliced, ``offsets`` (length bags + 1) sliced
    and rebased to 0 in their own dtype. Raises ``ValueError`` naming the argument."""
    indices, offsets = np.asarray(indices), np.asarray(offsets)
    if indices.ndim != 1:
        raise ValueError(f"indices must be 1-d, not shape {indices.shape}")
    _check_offsets("offsets", offsets, len(indices))
    if per_sample_weights is not None and np.shape(per_sample_weights) != indices.shape:
        raise ValueError(f"per_sample_weights must have the shape of indices {indices.shape}, "
                         f"not {np.shape(per_sample_weights)}")
    parts = []
    for start, stop in batch_ranges(len(offsets) - 1, units):
        lo, hi = int(offsets[start]), int(offsets[stop])
        parts.append(BagSlice(start, stop, indices[lo:hi].copy(),
                              (offsets[start:stop + 1] - offsets[start]).astype(offsets.dtype),
                              None if per_sample_weights is None
                              else np.asarray(per_sample_weights)[lo:hi].copy()))
    return parts


@dataclass
class RowSlice:
    """Rows ``start..stop-1`` of a CSR matrix: ``rowptr`` (length ``stop - start + 1``, from 0),
    ``col`` and ``val`` of those rows."""
    start: int
    stop: int
    rowptr: np.ndarray
    col: np.ndarray
    val: np.ndarray


def split_csr(rowptr: np.ndarray, col: np.ndarray, val: np.ndarray, *,
              units: int) -> list[RowSlice]:
    """Split a CSR matrix (``torch.sparse_csr_tensor`` layout: row ``i`` is
    ``col/val[rowptr[i]:rowptr[i+1]]``) into ``units`` contiguous row ranges, for an SpMM/SpMV
    split by rows. Raises ``ValueError`` naming the argument."""
    rowptr, col, val = np.asarray(rowptr), np.asarray(col), np.asarray(val)
    if col.ndim != 1 or val.shape != col.shape:
        raise ValueError(f"col and val must be 1-d of one length, not shapes {col.shape}, "
                         f"{val.shape}")
    _check_offsets("rowptr", rowptr, len(col))
    parts = []
    for start, stop in batch_ranges(len(rowptr) - 1, units):
        lo, hi = int(rowptr[start]), int(rowptr[stop])
        parts.append(RowSlice(start, stop,
                              (rowptr[start:stop + 1] - rowptr[start]).astype(rowptr.dtype),
                              col[lo:hi].copy(), val[lo:hi].copy()))
    return parts


def shared_image(kernel, unit_args: Sequence[Sequence], *,
                 shared: Sequence[int] = ()) -> tuple[MemoryImage, list[list[int]]]:
    """One memory image for all units and each unit's argument registers.

    ``unit_args[u]`` are unit ``u``'s arguments to ``kernel`` (as ``sw.runtime.drivers.
    run_kernel`` takes them). The parameters numbered in ``shared`` must be the same object for
    every unit and are placed once, first; every other parameter the access unit reads is
    placed per unit (unit 0's, then unit 1's, ...). Returns the image and, per unit, the
    registers (``bind_arguments`` against that unit's placements).

    Raises
    ------
    TypeError, ValueError
        A unit's arguments do not match the kernel (``argN``); ``shared`` names a parameter out
        of range or not the same array for every unit; ``unit_args`` is empty.
    """
    if not unit_args:
        raise ValueError("unit_args must have one entry per unit, not none")
    for args in unit_args:
        kernel.check_arguments(args)
    for p in shared:
        if not 0 <= p < len(kernel.params):
            raise ValueError(f"shared must name parameters 0..{len(kernel.params) - 1}, not {p!r}")
        if any(args[p] is not unit_args[0][p] for args in unit_args):
            raise ValueError(f"shared parameter {p} ({kernel.params[p].name}) must be the same "
                             f"array for every unit")
    image = MemoryImage()
    common = {}
    for p in shared:
        spec = kernel.params[p]
        if spec.in_image:
            common[p] = image.add(p, spec.name, np.asarray(unit_args[0][p], dtype=spec.dtype))
    regs = []
    for u, args in enumerate(unit_args):
        view = MemoryImage(placements=dict(common))
        for n, spec in enumerate(kernel.params):
            if spec.in_image and n not in common:
                placed = image.add(len(kernel.params) * (u + 1) + n, f"{spec.name}[unit {u}]",
                                   np.asarray(args[n], dtype=spec.dtype))
                view.placements[n] = placed
        regs.append(bind_arguments(kernel, args, view))
    return image, regs

