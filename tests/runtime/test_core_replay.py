"""CoreReplay (sw/runtime/execute.py): the execute side replayed callback by callback, against a
cycle-by-cycle reference written here from the model's definition (the same rules as the
simulated core's replay mode, sim/harness/core_model.h: one control token per cycle, at most
``tokens_per_cycle`` operands per cycle shared by the callback finishing and the one starting,
the next control token no earlier than its predecessor's pop + its pace)."""

from __future__ import annotations

import random

import pytest

from sw.runtime.execute import CoreReplay


def reference_cycles(pace, pops, width):
    """The cycle in which DONE pops, simulated one cycle at a time with every operand present."""
    cycle, need, allowed, nxt = 0, 0, 0, 0
    while True:
        take = min(width, need)            # the current callback's operands
        need -= take
        if need == 0 and cycle >= allowed:
            if nxt == len(pops):
                return cycle               # DONE
            first = min(pops[nxt], width - take)
            need = pops[nxt] - first
            allowed = cycle + pace[nxt]
            nxt += 1
        cycle += 1


@pytest.mark.parametrize("width", [1, 8, 16])
def test_the_estimate_is_the_cycle_by_cycle_model(width, seed):
    rng = random.Random(seed)
    for _ in range(50):
        n = rng.randrange(0, 40)
        pops = [rng.choice((0, 1, 3, 8, 9, 16, 25, rng.randrange(0, 70))) for _ in range(n)]
        pace = tuple(rng.choice((0, 1, 2, 5, rng.randrange(0, 30))) for _ in range(n + 1))
        replay = CoreReplay(pace, tokens_per_cycle=width)
        assert replay.cycles(pops) == reference_cycles(pace, pops, width), (pops, pace)


def test_hand_counted_cases():
    """At 8 operands per cycle (the default is 16, two 512-bit pops)."""
    # 20 operands at 8 per cycle: cycles 0, 1, 2 (8 + 8 + 4); DONE pops with the last ones
    assert CoreReplay((0, 0), tokens_per_cycle=8).cycles([20]) == 2
    # one control token per cycle: two callbacks of 8 in cycles 0 and 1, DONE in 2
    assert CoreReplay((0, 0, 0), tokens_per_cycle=8).cycles([8, 8]) == 2
    # 5 then 3, each within the cycle of its pop: cycles 0 and 1 (one control token per
    # cycle), DONE in 2
    assert CoreReplay((0, 0, 0), tokens_per_cycle=8).cycles([5, 3]) == 2
    # 12 then 12: the first takes 8 (cycle 0) + 4 (cycle 1); the second pops in cycle 1 and
    # takes the other 4 of it, then 8 in cycle 2; DONE pops in cycle 2
    assert CoreReplay((0, 0, 0), tokens_per_cycle=8).cycles([12, 12]) == 2
    # the pace dominates: a callback of 1 operand that the core spent 5 cycles on
    assert CoreReplay((5, 0), tokens_per_cycle=8).cycles([1]) == 5
    assert CoreReplay((5, 7, 0), tokens_per_cycle=8).cycles([1, 1]) == 12
    # no callbacks: DONE pops at once
    assert CoreReplay((0,), tokens_per_cycle=8).cycles([]) == 0


def test_bad_arguments_are_named():
    with pytest.raises(ValueError, match="pace must be a non-empty sequence of ints >= 0"):
        CoreReplay(())
    with pytest.raises(ValueError, match="pace must be a non-empty sequence of ints >= 0"):
        CoreReplay((1, -1))
    with pytest.raises(ValueError, match="pace must be a non-empty sequence of ints >= 0"):
        CoreReplay((1.5,))
    with pytest.raises(ValueError, match="tokens_per_cycle must be an int >= 1, not 0"):
        CoreReplay((0,), tokens_per_cycle=0)
    with pytest.raises(ValueError, match="buffer_beats must be an int >= 1, not True"):
        CoreReplay((0,), buffer_beats=True)
    with pytest.raises(ValueError, match=r"one entry per control token \(3, DONE included\), not 2"):
        CoreReplay((0, 0)).cycles([1, 2])
    assert CoreReplay([3, 0]).pace == (3, 0)        # a list is kept as a tuple (hashable)
    assert CoreReplay((0,)).tokens_per_cycle == 16
