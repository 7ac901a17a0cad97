"""CoreCostModel.fitted (sw/runtime/execute.py): the flat rate nearest a cycle count, against a
search over every rate."""

from __future__ import annotations

import random

import pytest

from sw.runtime.execute import CoreCostModel


@pytest.mark.parametrize("tokens_per_cycle", [1, 8, 16])
def test_the_fitted_rate_is_the_nearest_of_all_rates(tokens_per_cycle, seed):
    rng = random.Random(seed)
    pops = [rng.randrange(0, 40) for _ in range(rng.randrange(1, 30))]
    target = rng.randrange(0, 2000)
    fit = CoreCostModel.fitted(pops, target, tokens_per_cycle)
    assert fit.tokens_per_cycle == tokens_per_cycle and fit.cycles_per_control >= 1
    assert fit.dispatch == min(2, fit.cycles_per_control)
    best = min(abs(CoreCostModel(dispatch=1, per_callback=c - 1, tokens_per_cycle=tokens_per_cycle)
                   .cycles(pops) - target) for c in range(1, 4000))
    assert abs(fit.cycles(pops) - target) == best


def test_no_callbacks_and_bad_arguments():
    assert CoreCostModel.fitted([], 100).cycles_per_control == 1
    with pytest.raises(ValueError, match="target_cycles must be an int >= 0, not -1"):
        CoreCostModel.fitted([1], -1)
    with pytest.raises(ValueError, match="tokens_per_cycle must be an int >= 1, not 0"):
        CoreCostModel.fitted([1], 10, 0)
