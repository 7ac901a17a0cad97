"""Table-to-unit mapping (sw.runtime.mapping): coverage, Graham's LPT bound, the errors."""

import itertools

import numpy as np
import pytest

from sw.runtime.mapping import (MAPPERS, Mapping, Piece, TableStats, UnitCostModel, map_tables,
                                split_bags, stats_guided, round_robin, table_set)
from tb.seeds import fresh_seed


def _table(lengths, rows=1000, dim=16, name=""):
    return TableStats(rows, dim, np.concatenate([[0], np.cumsum(lengths)]).astype(np.int64), name=name)


@pytest.mark.parametrize("kind", ["balanced", "imbalanced", "extreme"])
@pytest.mark.parametrize("units", [1, 2, 3, 8])
def test_every_mapper_covers_every_bag_once(kind, units):
    seed = fresh_seed()
    print(f"seed={seed}")
    tables = table_set(kind, 7, bags=40, seed=seed)
    for strategy in MAPPERS:
        m = map_tables(tables, units, strategy)
        assert len(m.units) == units
        # independent count: every (table, bag) once
        seen = {}
        for pieces in m.units:
            for p in pieces:
                for b in range(p.bag_start, p.bag_stop):
                    seen[(p.table, b)] = seen.get((p.table, b), 0) + 1
        assert seen == {(i, b): 1 for i, t in enumerate(tables) for b in range(t.bags)}, strategy


def test_check_complete_names_the_missing_bag():
    tables = [_table([1, 2, 3])]
    with pytest.raises(ValueError, match="bag 2 of table 0 is in 0 pieces"):
        Mapping("x", [[Piece(0, 0, 2)]]).check_complete(tables)
    with pytest.raises(ValueError, match="bag 1 of table 0 is in 2 pieces"):
        Mapping("x", [[Piece(0, 0, 2)], [Piece(0, 1, 3)]]).check_complete(tables)


def test_round_robin_places_table_i_on_unit_i_mod_k():
    tables = [_table([1]) for _ in range(5)]
    m = round_robin(tables, 2)
    assert [[p.table for p in u] for u in m.units] == [[0, 2, 4], [1, 3]]


def test_split_bags_balances_lookups_within_one_bag():
    seed = fresh_seed()
    print(f"seed={seed}")
    rng = np.random.default_rng(seed)
    lengths = rng.integers(0, 30, 200)
    t = _table(lengths)
    for parts in (1, 2, 3, 7, 200, 500):
        ranges = split_bags(t.offsets, parts)
        assert ranges[0][0] == 0 and ranges[-1][1] == t.bags
        assert all(a[1] == b[0] for a, b in zip(ranges, ranges[1:]))
        sums = [int(t.offsets[b] - t.offsets[a]) for a, b in ranges]
        ideal = t.lookups / min(parts, t.bags)
        # each cut lands on a bag boundary at or after its target: off by less than one bag
        assert max(sums) <= ideal + 2 * lengths.max(), (parts, sums)


def _optimal(weights, units):
    best = float("inf")
    for assign in itertools.product(range(units), repeat=len(weights)):
        loads = [0.0] * units
        for w, u in zip(weights, assign):
            loads[u] += w
        best = min(best, max(loads))
    return best


@pytest.mark.parametrize("units", [2, 3])
def test_stats_guided_is_within_grahams_bound_of_the_optimum(units):
    seed = fresh_seed()
    print(f"seed={seed}")
    rng = np.random.default_rng(seed)
    cost = UnitCostModel()
    for _ in range(20):
        tables = [_table(rng.integers(0, int(rng.integers(1, 60)), int(rng.integers(1, 12))),
                         dim=int(rng.choice([16, 64]))) for _ in range(int(rng.integers(2, 7)))]
        m = stats_guided(tables, units, cost)
        pieces = [p for u in m.units for p in u]
        weights = [cost.piece_cycles(p, tables) for p in pieces]
        opt = _optimal(weights, units)
        got = m.makespan(lambda p: cost.piece_cycles(p, tables))
        assert got <= (4 / 3 - 1 / (3 * units)) * opt + 1e-6, (got, opt)


def test_stats_guided_splits_a_hot_table_that_round_robin_cannot_balance():
    hot = _table([100] * 64, dim=64, name="hot")        # 6,400 lookups of 4-line rows
    cold = [_table([2] * 64, name=f"c{i}") for i in range(7)]
    tables = [hot] + cold
    cost = UnitCostModel()
    est = lambda p: cost.piece_cycles(p, tables)
    hot_alone = cost.piece_cycles(Piece(0, 0, 64), tables)
    assert round_robin(tables, 4).makespan(est) >= hot_alone
    m = stats_guided(tables, 4)
    assert m.makespan(est) < 0.5 * hot_alone
    assert sum(p.table == 0 for u in m.units for p in u) == 4


def test_errors_name_the_argument():
    t = [_table([1, 2])]
    with pytest.raises(ValueError, match="units must be an integer >= 1, not 0"):
        map_tables(t, 0)
    with pytest.raises(ValueError, match="strategy must be one of .* not 'fastest'"):
        map_tables(t, 2, "fastest")
    with pytest.raises(ValueError, match="tables must hold"):
        map_tables([], 2)
    with pytest.raises(ValueError, match="offsets must be 1-D"):
        TableStats(10, 4, np.array([1, 2]))
    with pytest.raises(ValueError, match="dim must be an integer >= 1, not 0"):
        TableStats(10, 0, np.array([0, 2]))
    with pytest.raises(ValueError, match="kind must be one of"):
        table_set("skewed", 3, bags=4)
    with pytest.raises(ValueError, match="bags must be >= 1, not 0"):
        table_set("balanced", 3, bags=0)


def test_table_sets_follow_their_description():
    seed = fresh_seed()
    print(f"seed={seed}")
    bal = table_set("balanced", 4, bags=500, seed=seed)
    assert len({(t.rows, t.dim) for t in bal}) == 1
    ext = table_set("extreme", 12, bags=500, seed=seed)
    pool = [t.lookups / t.bags for t in ext]
    # the hot table's mean pooling is 20 x 13.6 = 272 (bag lengths uniform in [0, 544])
    assert 240 < pool[0] < 305 and max(pool[1:]) < pool[0]


def _pieces_of(tables, splits=(1, 2, 4)):
    return sorted({Piece(i, a, b) for i, t in enumerate(tables) for parts in splits
                   for a, b in split_bags(t.offsets, parts)}, key=lambda p: (p.table, p.bag_start))


@pytest.mark.parametrize("drawn", ["fresh", 268, 4144801993])
def test_fit_recovers_the_rates_that_made_the_cycles(drawn):
    """Cycles made by a known model (both regimes present: 1-, 2- and 4-line rows) give back
    that model's rates; with 2 % noise, the per-lookup rates within 10 %, a sum of squares no
    larger than the true model's, and no model on a grid around the fit with a smaller one.
    Seeds 268 and 4144801993 are draws on which a fit started only from the prior's regimes
    stopped at a stable but wrong assignment (per-lookup rate 99 % and 24 % off)."""
    seed = fresh_seed() if drawn == "fresh" else drawn
    print(f"seed={seed}")
    rng = np.random.default_rng(seed)
    tables = [TableStats(t.rows, (16, 32, 64)[i % 3], t.offsets)        # 1, 2, 4 lines per row
              for i, t in enumerate(table_set("imbalanced", 12, bags=32, seed=seed))]
    truth = UnitCostModel(cycles_per_run=float(rng.uniform(50, 400)),
                          cycles_per_bag=float(rng.uniform(1, 8)),
                          cycles_per_lookup=float(rng.uniform(1.6, 3.5)),
                          cycles_per_line=float(rng.uniform(0.9, 1.3)))
    pieces = _pieces_of(tables)
    line_bound = {t.lines_per_row() * truth.cycles_per_line >= truth.cycles_per_lookup
                  for t in tables}
    assert line_bound == {True, False}, f"seed {seed}: the draw must have both regimes"
    exact = UnitCostModel().fit([(p, truth.piece_cycles(p, tables)) for p in pieces], tables)
    for name in ("cycles_per_run", "cycles_per_bag", "cycles_per_lookup", "cycles_per_line"):
        assert getattr(exact, name) == pytest.approx(getattr(truth, name), rel=1e-6), (seed, name)
    noisy = [(p, truth.piece_cycles(p, tables) * (1 + 0.02 * rng.standard_normal()))
             for p in pieces]
    fitted = UnitCostModel().fit(noisy, tables)
    # the per-lookup rates carry the cycles; the per-bag and per-run ones are small beside
    # 2 % of a piece and correlated with the lookups, so only their sum of squares is checked
    for name in ("cycles_per_lookup", "cycles_per_line"):
        assert getattr(fitted, name) == pytest.approx(getattr(truth, name), rel=0.1), (seed, name)

    def sse(model):
        return sum((model.piece_cycles(p, tables) - c) ** 2 for p, c in noisy)
    assert sse(fitted) <= sse(truth) * (1 + 1e-9), seed
    # no model on a grid around the fitted one does better (the fit is a least-squares optimum)
    for dr, db, dk, dl in itertools.product((-0.02, 0, 0.02), repeat=4):
        other = UnitCostModel(cycles_per_run=fitted.cycles_per_run * (1 + dr),
                              cycles_per_bag=fitted.cycles_per_bag * (1 + db),
                              cycles_per_lookup=fitted.cycles_per_lookup * (1 + dk),
                              cycles_per_line=fitted.cycles_per_line * (1 + dl))
        assert sse(fitted) <= sse(other) * (1 + 1e-9), (seed, dr, db, dk, dl)


def test_fit_keeps_rates_no_sample_determines_and_never_goes_negative():
    tables = [_table([4, 4, 4, 4], dim=64), _table([8, 0, 8, 2], dim=64)]   # 4-line rows only
    pieces = _pieces_of(tables)
    prior = UnitCostModel(cycles_per_lookup=2.0)
    # line-bound everywhere (4 lines x 1.0 > 2.0): the lookup floor is not determined
    samples = [(p, 100 + 4.0 * 4 * p.lookups(tables)) for p in pieces]
    fitted = prior.fit(samples, tables)
    assert fitted.cycles_per_lookup == prior.cycles_per_lookup
    assert fitted.cycles_per_line == pytest.approx(4.0)
    assert fitted.cycles_per_bag == pytest.approx(0.0, abs=1e-9)
    # cycles that fall with more bags: the bag rate stops at 0, not below
    falling = [(p, 1000 - 3 * (p.bag_stop - p.bag_start) + 4.0 * 4 * p.lookups(tables))
               for p in pieces]
    clipped = prior.fit(falling, tables)
    assert clipped.cycles_per_bag == 0.0
    assert min(clipped.cycles_per_run, clipped.cycles_per_line) >= 0


def test_fit_errors_name_the_argument():
    tables = [_table([1, 2, 3])]
    with pytest.raises(ValueError, match="samples must hold at least 4"):
        UnitCostModel().fit([(Piece(0, 0, 1), 10.0)], tables)
    with pytest.raises(ValueError, match="samples: cycles must be finite and >= 0, not -1"):
        UnitCostModel().fit([(Piece(0, 0, 1), 10.0)] * 3 + [(Piece(0, 1, 2), -1)], tables)
