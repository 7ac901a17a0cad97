"""Real input data: graphs as CSR adjacency, and node features.

The graph files ship in ``data/`` (see ``data/README.md`` for provenance). A graph becomes exactly
the ``offsets``/``indices`` pair that ``torch.nn.functional.embedding_bag`` takes: bag ``v`` is the
neighbourhood of node ``v``, so ``embedding_bag(indices, features, offsets[:-1], mode="sum")`` is
sum-aggregation of neighbour features (one GNN message-passing step, or SpMM ``A @ X`` with a 0/1
adjacency ``A``).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np

__all__ = ["Graph", "DATA_DIR", "load_edge_list", "load_cora", "node_features"]

DATA_DIR = Path(__file__).resolve().parents[2] / "data"


@dataclass(frozen=True)
class Graph:
    """A graph in CSR form.

    ``offsets``: int64, shape (num_nodes + 1,), non-decreasing, ``offsets[0] == 0``;
    ``indices``: int64, shape (num_edges,), neighbour ids in ``[0, num_nodes)``, sorted within a row.
    """
    name: str
    offsets: np.ndarray
    indices: np.ndarray

    @property
    def num_nodes(self) -> int:
        return len(self.offsets) - 1

    @property
    def num_edges(self) -> int:
        return len(self.indices)


def load_edge_list(path: str | Path, *, name: str | None = None, symmetric: bool = True) -> Graph:
    """Read a whitespace-separated edge list (``#`` comments) into CSR.

    Node ids are remapped to ``0..N-1`` in increasing order of the original ids (any integers,
    negative ones too). With ``symmetric`` each edge is stored in both directions; duplicate edges
    and self-loops are dropped (a node whose only edges are self-loops keeps an empty row). A
    UTF-8 byte-order mark at the start of the file is skipped.

    Raises
    ------
    FileNotFoundError
        When ``path`` does not exist (the message names it).
    ValueError
        When ``path`` is not a file, holds no edge, or a line does not hold two integer ids.
    """
    path = Path(path)
    if not path.exists():
        raise FileNotFoundError(f"graph file {str(path)!r} does not exist")
    if not path.is_file():
        raise ValueError(f"graph file {str(path)!r} is not a file")
    pairs = []
    text = path.read_text(encoding="utf-8-sig", errors="replace")
    for number, line in enumerate(text.splitlines(), start=1):
        fields = line.split("#", 1)[0].split()
        if not fields:
            continue
        if len(fields) != 2:
            raise ValueError(f"graph file {str(path)!r} must hold two node ids per line, not "
                             f"{len(fields)} (line {number}: {line.strip()!r})")
        try:
            pairs.append((int(fields[0]), int(fields[1])))
        except ValueError:
            raise ValueError(f"graph file {str(path)!r} must hold two integer node ids per line "
                             f"(line {number}: {line.strip()!r})") from None
    if not pairs:
        raise ValueError(f"graph file {str(path)!r} holds no edge (two node ids per line, '#' comments)")
    try:
        edges = np.array(pairs, dtype=np.int64)
    except OverflowError:
        raise ValueError(f"graph file {str(path)!r} has a node id outside the 64-bit integers") from None
    ids, remapped = np.unique(edges, return_inverse=True)
    remapped = remapped.reshape(edges.shape)
    src, dst = remapped[:, 0], remapped[:, 1]
    if symmetric:
        src, dst = np.concatenate([src, dst]), np.concatenate([dst, src])
    keep = src != dst
    pairs = np.unique(np.stack([src[keep], dst[keep]], axis=1), axis=0)   # sorted by (src, dst)
    n = len(ids)
    counts = np.bincount(pairs[:, 0], minlength=n)
    offsets = np.concatenate([[0], np.cumsum(counts)]).astype(np.int64)
    return Graph(name or path.stem, offsets, pairs[:, 1].astype(np.int64))


def load_cora() -> Graph:
    """The Cora citation graph (2,708 nodes), symmetrised: 10,556 directed edges in CSR."""
    return load_edge_list(DATA_DIR / "graphs" / "cora.cites", name="cora")


def node_features(num_nodes: int, dim: int, *, seed: int = 0, dtype=np.float32) -> np.ndarray:
    """Node features, shape (num_nodes, dim), standard normal from ``numpy.random.default_rng(seed)``.

    Cora's own features are 1,433-dimensional bag-of-words vectors that are not shipped here; the
    access pattern depends only on the graph and ``dim``, so generated features serve.
    """
    if dim <= 0:
        raise ValueError(f"dim must be positive, not {dim!r}")
    return np.random.default_rng(seed).standard_normal((num_nodes, dim)).astype(dtype)
