"""Table-to-unit mapping: which access unit serves which embedding table (or which share of it).

A DLRM-style model looks up many EmbeddingBag tables per batch, of very different sizes and
lookup counts. With K access units (issue 11, "Table-to-unit mapping"), the batch takes as long as
the busiest unit (the *makespan*); a mapping assigns every bag of every table to exactly one unit.
The mappers here, from the naive to the informed:

* :func:`round_robin` — table ``i`` to unit ``i mod K`` (whole tables).
* :func:`size_greedy` — whole tables, largest first (bytes = rows × dim × element bytes), each to
  the unit with the fewest bytes so far: the classic capacity-balancing rule of table placement
  (it balances memory, not work).
* :func:`batch_split` — every table split into K equal bag ranges, one per unit (data parallel):
  balanced lookups, but every unit runs every table (K times the per-run fixed cost).
* :func:`stats_guided` — from the index statistics of the batch (lookups per table, bags, row
  lines), a cost per table (:class:`UnitCostModel`); tables whose cost exceeds the ideal share
  ``total / K`` are cut into bag ranges of about that cost ("row ranges of hot tables" become bag
  ranges here: the unit has no cache, so what balances is lookups, not rows), then the pieces are
  placed largest first on the least-loaded unit (Graham's LPT rule: within 4/3 of the optimal
  makespan for the pieces, Graham 1969). The asymmetric-mapping idea of "Deep Recommender Models
  Inference: Automatic Asymmetric Data Flow Optimization" (2025) and OPER (USENIX ATC 2024):
  place by measured cost, and split only what is too large to place.

Cost (:class:`UnitCostModel`): a piece of ``B`` bags and ``L`` lookups of rows of ``n`` 64-byte
lines costs ``run + B × bag + L × max(n × line, lookup)`` cycles. The defaults are fitted to this
unit on the RTL (:meth:`UnitCostModel.fit`, ``scripts/fit_unit_cost.py``: 168 pieces of the three
table sets, 8 tables × 32 bags, HBM2, the default unit after strided lines and the decoder's
line reads, 2026-11-28; on 168 held-out pieces the mean error is 4.0 %, the largest 12.8 %):
0.97 cycles per line (the 512-bit output drains one line per cycle), 1.08 cycles per lookup
when the traversal bounds it (one uop per lookup), 1.3 per bag, 417 per run (decode, start,
the first latency and the drain).

Units run their pieces back to back; the makespan of a mapping is the largest per-unit sum of
its pieces' cycles — estimated (:meth:`Mapping.makespan` with the cost model) or measured (with
each piece's RTL cycles, ``scripts/bench_mapping.py``).
"""

from __future__ import annotations

import heapq
import math
from dataclasses import dataclass
from typing import Callable, Sequence

import numpy as np

__all__ = ["TableStats", "Piece", "UnitCostModel", "Mapping", "round_robin", "size_greedy",
           "batch_split", "stats_guided", "MAPPERS", "map_tables", "split_bags", "table_set",
           "TABLE_SETS"]


@dataclass(frozen=True)
class TableStats:
    """One EmbeddingBag table and its index statistics for one batch.

    ``rows`` × ``dim`` elements of ``elem_bytes`` bytes; ``offsets`` (int64, shape ``(bags + 1,)``,
    non-decreasing from 0) cut the batch's lookups into bags, as ``torch.nn.functional.embedding_bag``'s
    ``offsets`` with ``include_last_offset=True``.
    """
    rows: int
    dim: int
    offsets: np.ndarray
    elem_bytes: int = 4
    name: str = ""

    def __post_init__(self):
        for field_name in ("rows", "dim", "elem_bytes"):
            value = getattr(self, field_name)
            if not isinstance(value, (int, np.integer)) or value < 1:
                raise ValueError(f"TableStats {self.name!r}: {field_name} must be an integer >= 1, "
                                 f"not {value!r}")
        off = np.asarray(self.offsets)
        if off.ndim != 1 or len(off) < 2 or off[0] != 0 or np.any(np.diff(off) < 0):
            raise ValueError(f"TableStats {self.name!r}: offsets must be 1-D, start at 0, be "
                             f"non-decreasing and hold at least one bag; got shape {off.shape}")

    @property
    def bags(self) -> int:
        return len(self.offsets) - 1

    @property
    def lookups(self) -> int:
        return int(self.offsets[-1])

    @property
    def table_bytes(self) -> int:
        return self.rows * self.dim * self.elem_bytes

    def lines_per_row(self, line_bytes: int = 64) -> int:
        """64-byte lines per row (rows aligned to their size, as the memory image lays them out)."""
        return math.ceil(self.dim * self.elem_bytes / line_bytes)


@dataclass(frozen=True)
class Piece:
    """Bags ``[bag_start, bag_stop)`` of table ``table`` (an index into the mapped table list)."""
    table: int
    bag_start: int
    bag_stop: int

    def lookups(self, tables: Sequence[TableStats]) -> int:
        off = tables[self.table].offsets
        return int(off[self.bag_stop] - off[self.bag_start])


@dataclass(frozen=True)
class UnitCostModel:
    """Estimated cycles of one access unit for one piece (see the module docstring; cycles)."""
    cycles_per_run: float = 416.8      # decode, start, first latency, drain
    cycles_per_bag: float = 1.34       # traversal uops per bag
    cycles_per_lookup: float = 1.08    # traversal-bound floor per lookup
    cycles_per_line: float = 0.968     # output-bound cost of a 64-byte line
    line_bytes: int = 64

    def piece_cycles(self, piece: Piece, tables: Sequence[TableStats]) -> float:
        t = tables[piece.table]
        per_lookup = max(t.lines_per_row(self.line_bytes) * self.cycles_per_line,
                         self.cycles_per_lookup)
        return (self.cycles_per_run + (piece.bag_stop - piece.bag_start) * self.cycles_per_bag
                + piece.lookups(tables) * per_lookup)

    def fit(self, samples: Sequence[tuple[Piece, float]], tables: Sequence[TableStats],
            iterations: int = 32) -> "UnitCostModel":
        """A model of the same form fitted to measured cycles (least squares, every rate >= 0).

        ``samples``: ``(piece, cycles)`` pairs, the cycles one unit took for the piece (e.g. the
        RTL's ``cycles`` counter, ``scripts/fit_unit_cost.py``). The ``max`` makes the model
        piecewise linear: each piece is either *line-bound* (``lines_per_row × cycles_per_line``
        is the larger) or *lookup-bound*; the regime depends only on a table's lines per row, so
        the possible assignments are the thresholds on it (line-bound from ``L`` lines per row
        up, for every ``L`` present, or none). From each threshold, and from this model's rates,
        the fit solves the linear least-squares problem of the assignment with non-negative
        rates (exactly: every subset of the four rates, NumPy ``lstsq``, the best feasible one),
        reassigns each piece its regime under the new rates and repeats until the assignment is
        stable (at most ``iterations`` times); it returns the start's result with the smallest
        sum of squared errors of the piecewise model itself. (One start alone can stop at a
        stable assignment that is not the best.) A rate no sample determines (its column is all
        zero: no piece in its regime) keeps this model's value. ``line_bytes`` is kept.

        Raises ``ValueError`` when ``samples`` holds fewer than 4 pairs or a cycle count that is
        not finite and >= 0.
        """
        if len(samples) < 4:
            raise ValueError(f"samples must hold at least 4 (piece, cycles) pairs, not "
                             f"{len(samples)}")
        y = np.array([float(c) for _, c in samples])
        if not np.all(np.isfinite(y) & (y >= 0)):
            bad = next(c for _, c in samples if not (np.isfinite(float(c)) and float(c) >= 0))
            raise ValueError(f"samples: cycles must be finite and >= 0, not {bad!r}")
        bags = np.array([p.bag_stop - p.bag_start for p, _ in samples], float)
        lookups = np.array([p.lookups(tables) for p, _ in samples], float)
        lines = np.array([tables[p.table].lines_per_row(self.line_bytes) for p, _ in samples],
                         float)
        prior = np.array([self.cycles_per_run, self.cycles_per_bag, self.cycles_per_line,
                          self.cycles_per_lookup])

        def solve(regime):
            x = np.stack([np.ones_like(y), bags, np.where(regime, lookups * lines, 0.0),
                          np.where(regime, 0.0, lookups)], axis=1)
            return _nonnegative_least_squares(x, y, prior)

        def squared_error(rates):
            model = rates[0] + rates[1] * bags + lookups * np.maximum(lines * rates[2], rates[3])
            return float(np.sum((model - y) ** 2))

        starts = [lines * prior[2] >= prior[3]] + [lines >= threshold for threshold in
                                                    [*np.unique(lines), math.inf]]
        best, best_error = None, math.inf
        tolerance = 1e-12 * float(np.sum(y ** 2))
        for regime in starts:
            rates = solve(regime)
            for _ in range(iterations):
                new_regime = lines * rates[2] >= rates[3]
                if np.array_equal(new_regime, regime):
                    break
                regime = new_regime
                rates = solve(regime)
            error = squared_error(rates)
            if error < best_error - tolerance:        # ties keep the earlier start (the prior's)
                best, best_error = rates, error
        rates = best
        return UnitCostModel(cycles_per_run=float(rates[0]), cycles_per_bag=float(rates[1]),
                             cycles_per_line=float(rates[2]), cycles_per_lookup=float(rates[3]),
                             line_bytes=self.line_bytes)


def _nonnegative_least_squares(x: np.ndarray, y: np.ndarray, prior: np.ndarray) -> np.ndarray:
    """``argmin |x r - y|`` over ``r >= 0`` for a handful of columns: the best of the
    unconstrained solutions on every subset of the columns that are feasible (the optimum of a
    non-negative least-squares problem is one of them). Columns that are all zero keep
    ``prior``."""
    free = [j for j in range(x.shape[1]) if np.any(x[:, j])]
    best, best_residual = None, math.inf
    for mask in range(1 << len(free)):
        cols = [free[k] for k in range(len(free)) if mask >> k & 1]
        r = np.zeros(x.shape[1])
        if cols:
            r[cols] = np.linalg.lstsq(x[:, cols], y, rcond=None)[0]
        if np.any(r < 0):
            continue
        residual = float(np.sum((x @ r - y) ** 2))
        if best is None or residual < best_residual * (1 - 1e-12):
            best, best_residual = r, residual
    out = best.copy()
    for j in range(x.shape[1]):
        if j not in free:
            out[j] = prior[j]
    return out


@dataclass
class Mapping:
    """Pieces per unit: ``units[u]`` lists the pieces unit ``u`` runs, in order."""
    strategy: str
    units: list[list[Piece]]

    def check_complete(self, tables: Sequence[TableStats]) -> None:
        """Raise ``ValueError`` unless every bag of every table is in exactly one piece."""
        covered = [np.zeros(t.bags, np.int64) for t in tables]
        for pieces in self.units:
            for p in pieces:
                if not (0 <= p.bag_start < p.bag_stop <= tables[p.table].bags):
                    raise ValueError(f"{self.strategy}: piece {p} is empty or outside table "
                                     f"{p.table}'s {tables[p.table].bags} bags")
                covered[p.table][p.bag_start:p.bag_stop] += 1
        for i, c in enumerate(covered):
            if not np.all(c == 1):
                bad = int(np.flatnonzero(c != 1)[0])
                raise ValueError(f"{self.strategy}: bag {bad} of table {i} is in {int(c[bad])} "
                                 f"pieces, not 1")

    def unit_cycles(self, cycles: Callable[[Piece], float]) -> list[float]:
        """Per unit, the sum of its pieces' cycles (``cycles(piece)``: estimated or measured)."""
        return [sum(cycles(p) for p in pieces) for pieces in self.units]

    def makespan(self, cycles: Callable[[Piece], float]) -> float:
        return max(self.unit_cycles(cycles))

    def imbalance(self, cycles: Callable[[Piece], float]) -> float:
        """Makespan ÷ mean unit cycles (1.0 = perfectly balanced)."""
        loads = self.unit_cycles(cycles)
        mean = sum(loads) / len(loads)
        return max(loads) / mean if mean else 1.0


def _check(tables: Sequence[TableStats], units: int) -> None:
    if not isinstance(units, (int, np.integer)) or units < 1:
        raise ValueError(f"units must be an integer >= 1, not {units!r}")
    if not tables:
        raise ValueError("tables must hold at least one table")


def _whole(tables) -> list[Piece]:
    return [Piece(i, 0, t.bags) for i, t in enumerate(tables)]


def _greedy(pieces: list[Piece], weights: list[float], units: int) -> list[list[Piece]]:
    """Graham's LPT: heaviest first, each to the least-loaded unit (ties: the lower unit)."""
    order = sorted(range(len(pieces)), key=lambda k: (-weights[k], k))
    heap = [(0.0, u) for u in range(units)]
    out: list[list[Piece]] = [[] for _ in range(units)]
    for k in order:
        load, u = heapq.heappop(heap)
        out[u].append(pieces[k])
        heapq.heappush(heap, (load + weights[k], u))
    return out


def split_bags(offsets: np.ndarray, parts: int) -> list[tuple[int, int]]:
    """Cut bags into at most ``parts`` non-empty contiguous ranges of about equal lookups
    (each bag whole; ranges with no bag are dropped)."""
    bags = len(offsets) - 1
    parts = max(1, min(parts, bags))
    total = int(offsets[-1])
    if total == 0:
        cuts = np.linspace(0, bags, parts + 1).round().astype(int)
    else:
        targets = np.arange(1, parts) * total / parts
        inner = np.searchsorted(offsets[1:], targets, side="left") + 1
        cuts = np.concatenate([[0], inner, [bags]])
    cuts = np.clip(cuts, 0, bags)
    return [(int(a), int(b)) for a, b in zip(cuts[:-1], cuts[1:]) if b > a]


def round_robin(tables: Sequence[TableStats], units: int) -> Mapping:
    """Table ``i`` to unit ``i mod units``."""
    _check(tables, units)
    out: list[list[Piece]] = [[] for _ in range(units)]
    for p in _whole(tables):
        out[p.table % units].append(p)
    return Mapping("round_robin", out)


def size_greedy(tables: Sequence[TableStats], units: int) -> Mapping:
    """Whole tables by LPT on their bytes (balances capacity, not lookups)."""
    _check(tables, units)
    pieces = _whole(tables)
    return Mapping("size_greedy", _greedy(pieces, [float(t.table_bytes) for t in tables], units))


def batch_split(tables: Sequence[TableStats], units: int) -> Mapping:
    """Every table cut into ``units`` bag ranges of about equal lookups, range ``u`` to unit ``u``."""
    _check(tables, units)
    out: list[list[Piece]] = [[] for _ in range(units)]
    for i, t in enumerate(tables):
        for u, (a, b) in enumerate(split_bags(t.offsets, units)):
            out[u].append(Piece(i, a, b))
    return Mapping("batch_split", out)


def stats_guided(tables: Sequence[TableStats], units: int,
                 cost: UnitCostModel | None = None) -> Mapping:
    """Cost from the index statistics; tables above ``total / units`` cut into bag ranges of
    about that cost; LPT over the pieces (module docstring)."""
    _check(tables, units)
    cost = cost or UnitCostModel()
    whole = _whole(tables)
    est = [cost.piece_cycles(p, tables) for p in whole]
    share = sum(est) / units
    pieces: list[Piece] = []
    for p, c in zip(whole, est):
        parts = min(units, math.ceil(c / share)) if share > 0 else 1
        pieces += [Piece(p.table, a, b) for a, b in split_bags(tables[p.table].offsets, parts)]
    weights = [cost.piece_cycles(p, tables) for p in pieces]
    return Mapping("stats_guided", _greedy(pieces, weights, units))


MAPPERS: dict[str, Callable[..., Mapping]] = {
    "round_robin": round_robin, "size_greedy": size_greedy,
    "batch_split": batch_split, "stats_guided": stats_guided,
}


def map_tables(tables: Sequence[TableStats], units: int, strategy: str = "stats_guided") -> Mapping:
    """Map with the named strategy (one of :data:`MAPPERS`); the result covers every bag once.

    Raises ``ValueError`` for an unknown ``strategy``, ``units`` < 1 or no tables."""
    if strategy not in MAPPERS:
        raise ValueError(f"strategy must be one of {', '.join(MAPPERS)}, not {strategy!r}")
    mapping = MAPPERS[strategy](tables, units)
    mapping.check_complete(tables)
    return mapping


# ------------------------------------------------------------------------------------------------
# Table sets drawn from Meta's DLRM statistics
# ------------------------------------------------------------------------------------------------

TABLE_SETS = ("balanced", "imbalanced", "extreme")


def table_set(kind: str, n_tables: int, *, bags: int, mean_pooling: float = 13.6,
              median_rows: int = 20_000, max_rows: int = 100_000, dims: Sequence[int] = (16, 32, 64),
              seed: int = 0) -> list[TableStats]:
    """``n_tables`` EmbeddingBag tables for one batch of ``bags`` bags, with their offsets.

    Meta's 2022 synthetic traces (``data/dlrm/locality_stats_2022_trace0.txt``, from
    facebookresearch/dlrm_datasets: 788 tables, batch 131,072, 1.405e9 lookups) give the mean
    pooling: 1.405e9 / 788 / 131,072 = 13.6 lookups per bag and table. They do not give per-table
    sizes or poolings, so the spread is a stated assumption (log-normal, as table sizes and
    poolings of production DLRMs are heavy-tailed; the OPER and asymmetric-mapping papers show
    factors of 10-1000 between tables):

    * ``balanced``: every table ``median_rows`` rows of ``dims[1]`` elements, pooling ``mean_pooling``;
    * ``imbalanced``: rows log-normal (sigma 1.5, median ``median_rows``, clipped to
      ``[64, max_rows]``), pooling log-normal (sigma 1.0, mean ``mean_pooling``), dim drawn from
      ``dims``;
    * ``extreme``: ``imbalanced`` plus table 0 made hot: pooling 20x the mean (the ">20x under
      extreme imbalance" regime of the asymmetric-mapping paper).

    Bags of one table have lengths uniform in ``[0, 2 * pooling]`` (some empty), so ``offsets``
    vary per bag. Raises ``ValueError`` for an unknown ``kind`` or ``n_tables``/``bags`` < 1.
    """
    if kind not in TABLE_SETS:
        raise ValueError(f"kind must be one of {', '.join(TABLE_SETS)}, not {kind!r}")
    for name, value in (("n_tables", n_tables), ("bags", bags)):
        if value < 1:
            raise ValueError(f"{name} must be >= 1, not {value}")
    rng = np.random.default_rng(seed)
    tables = []
    for i in range(n_tables):
        if kind == "balanced":
            rows, dim, pooling = median_rows, dims[min(1, len(dims) - 1)], mean_pooling
        else:
            rows = int(np.clip(median_rows * np.exp(1.5 * rng.standard_normal()), 64, max_rows))
            dim = int(rng.choice(dims))
            # log-normal with mean mean_pooling: mu = ln(mean) - sigma^2 / 2
            pooling = float(np.exp(np.log(mean_pooling) - 0.5 + rng.standard_normal()))
            if kind == "extreme" and i == 0:
                pooling = 20 * mean_pooling
        lengths = rng.integers(0, int(round(2 * pooling)) + 1, bags)
        offsets = np.concatenate([[0], np.cumsum(lengths)]).astype(np.int64)
        tables.append(TableStats(rows, dim, offsets, name=f"t{i}"))
    return tables
