"""PyTorch frontend, the jagged input of a DLRM sparse module without torchrec: ``(keys,
values, lengths or offsets[, weights])``, the layout of torchrec's ``KeyedJaggedTensor``.

torchrec's ``EmbeddingBagCollection`` looks up, for each feature ``key``, the bags of a batch of
``B`` samples in its table: ``values`` holds every key's ids one key after the other,
``lengths[k * B + b]`` is the number of ids of sample ``b`` for key ``keys[k]`` (``offsets`` is
its running sum with a leading 0, ``len(keys) * B + 1`` entries), ``weights`` (optional) the
per-id weights of weighted features. :func:`compile_jagged` takes the tables as a dict
``{key: nn.EmbeddingBag}`` (the same module under two keys shares its table), builds the module
that calls each table on its key's slice, and compiles it with :func:`compile_torch` (one
table-batched program per compatible group, ``torch_bags``). The output is torchrec's
``KeyedTensor.values()`` layout — ``(B, sum of dims)``, the tables' outputs concatenated along
dim 1 in the dict's order — or, with ``output="dict"``, ``{key: (B, dim) tensor}``.

torchrec itself is not imported (torchrec 1.9.2 does not load beside torch 2.13 on the CPU:
its ``fbgemm-gpu-cpu`` dependency fails to load); a torchrec ``KeyedJaggedTensor`` is accepted
as input too, read through its ``keys()``, ``values()``, ``lengths()``/``offsets()`` and
``weights_or_none()`` methods.
"""

from __future__ import annotations

from typing import Mapping, NamedTuple

import numpy as np
import torch

from .integers import require_integers

__all__ = ["Jagged", "JaggedBags", "compile_jagged"]


class Jagged(NamedTuple):
    """A ``KeyedJaggedTensor`` as plain tensors (see the module docstring): ``keys`` (list of
    str), ``values`` (int64, all ids), ``lengths`` (``len(keys) * B``) or ``offsets``
    (``len(keys) * B + 1``), ``weights`` (the values' per-id weights, or None)."""
    keys: list
    values: torch.Tensor
    lengths: torch.Tensor | None = None
    offsets: torch.Tensor | None = None
    weights: torch.Tensor | None = None


def _as_jagged(kjt) -> Jagged:
    if isinstance(kjt, Jagged):
        return kjt
    if hasattr(kjt, "keys") and hasattr(kjt, "values") and hasattr(kjt, "offsets"):   # torchrec
        weights = kjt.weights_or_none() if hasattr(kjt, "weights_or_none") else None
        return Jagged(list(kjt.keys()), kjt.values(), None, kjt.offsets(), weights)
    raise ValueError(f"the input must be a Jagged(keys, values, lengths, offsets, weights) or a "
                     f"KeyedJaggedTensor, not {type(kjt).__name__}")


def _split(kjt: Jagged, wanted: list[str], last_offset: dict[str, bool],
           weighted: dict[str, bool]) -> tuple:
    """The per-key ``(indices, offsets[, per_sample_weights])`` inputs of the module, in
    ``wanted`` order.

    Raises
    ------
    ValueError
        A missing key, lengths/offsets that do not match ``values``, naming them.
    """
    keys = list(kjt.keys)
    values = torch.as_tensor(kjt.values)
    if kjt.offsets is not None:
        # a float 1.5 would be truncated to 1
        offsets = require_integers(torch.as_tensor(kjt.offsets), "offsets").to(torch.int64)
        if offsets.numel() == 0 or int(offsets[0]) != 0:
            raise ValueError(f"offsets must start with 0, not {offsets[:1].tolist()}")
        lengths = offsets.diff()
    elif kjt.lengths is not None:
        lengths = require_integers(torch.as_tensor(kjt.lengths), "lengths").to(torch.int64)
    else:
        raise ValueError("lengths or offsets must be given")
    if lengths.numel() % max(len(keys), 1):
        raise ValueError(f"lengths has {lengths.numel()} entries, not a multiple of the "
                         f"{len(keys)} keys")
    if bool((lengths < 0).any()):
        k = int(torch.nonzero(lengths < 0)[0])
        raise ValueError(f"lengths[{k}] = {int(lengths[k])} is negative")
    if int(lengths.sum()) != values.numel():
        raise ValueError(f"lengths sum to {int(lengths.sum())}, but values has {values.numel()} ids")
    batch = lengths.numel() // max(len(keys), 1)
    ends = np.concatenate([[0], np.cumsum(lengths.numpy())])
    out = []
    for key in wanted:
        if key not in keys:
            raise ValueError(f"key {key!r} is not in the input's keys {keys}")
        k = keys.index(key)
        lo, hi = int(ends[k * batch]), int(ends[(k + 1) * batch])
        starts = torch.from_numpy(ends[k * batch:(k + 1) * batch + 1] - lo).to(torch.int64)
        out += [values[lo:hi], starts if last_offset[key] else starts[:-1]]
        if weighted[key]:
            if kjt.weights is None:
                raise ValueError(f"weights must be given: the table of key {key!r} was compiled "
                                 "with per-sample weights")
            out.append(torch.as_tensor(kjt.weights)[lo:hi])
    return tuple(out)


class _Tables(torch.nn.Module):
    def __init__(self, tables: Mapping[str, torch.nn.EmbeddingBag], weighted: dict, output: str):
        super().__init__()
        self.keys_ = list(tables)
        self.tables = torch.nn.ModuleList(tables[k] for k in self.keys_)
        self.weighted, self.output = weighted, output

    def forward(self, *args):
        outs, pos = [], 0
        for key, table in zip(self.keys_, self.tables):
            n = 3 if self.weighted[key] else 2
            outs.append(table(*args[pos:pos + n]))
            pos += n
        if self.output == "dict":
            return dict(zip(self.keys_, outs))
        return torch.cat(outs, dim=1)


class JaggedBags:
    """A compiled jagged lookup: ``bind(kjt)`` splits the jagged input by key and binds the
    tables' module; the rest (``kernel``, ``parts``, ``unbind``) is the compiled module's."""

    def __init__(self, inner, keys: list[str], last_offset: dict, weighted: dict):
        self._inner, self._keys, self._last, self._weighted = inner, keys, last_offset, weighted
        self.kernel = inner.kernel
        if hasattr(inner, "parts"):
            self.parts = inner.parts
        self.kind, self.spec, self.scf = "jagged", inner.spec, inner.scf
        self.traced_with = inner.traced_with

    def split(self, kjt) -> tuple:
        return _split(_as_jagged(kjt), self._keys, self._last, self._weighted)

    def bind(self, kjt) -> list:
        return self._inner.bind(*self.split(kjt))

    def unbind(self, results):
        return self._inner.unbind(results)


def compile_jagged(tables: Mapping[str, torch.nn.EmbeddingBag], example, *, output: str = "cat",
                   opt_level: int = 0, limits=None) -> JaggedBags:
    """Compile the lookup of ``tables`` (``{key: nn.EmbeddingBag}``) on a jagged input shaped
    like ``example`` (a :class:`Jagged` or a torchrec ``KeyedJaggedTensor``; its weights decide
    which keys are weighted: all of them when it has weights).

    Raises
    ------
    CompileError
        A table the frontend does not support (naming it), or ``output`` not "cat"/"dict".
    """
    from ..errors import CompileError
    from .torch import compile_torch

    if output not in ("cat", "dict"):
        raise CompileError(f"output must be 'cat' or 'dict', not {output!r}")
    kjt = _as_jagged(example)
    keys = list(tables)
    weighted = {k: kjt.weights is not None for k in keys}
    last = {k: bool(tables[k].include_last_offset) for k in keys}
    module = _Tables(tables, weighted, output)
    inner = compile_torch(module, _split(kjt, keys, last, weighted), opt_level=opt_level, limits=limits)
    return JaggedBags(inner, keys, last, weighted)
