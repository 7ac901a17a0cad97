"""CoreReplay (sw/runtime/execute.py): the execute side replayed callback by callback. Its
estimate is a cycle-by-cycle simulation (the harness's replay mode, sim/harness/core_model.h,
does the same with the waits); the reference here is written per callback from the model's
definition instead: when each control token pops (one per cycle, after the previous callback's
operands, when the window of not yet completed instructions has room), when its operands are all
taken (``tokens_per_cycle`` per cycle, the pop's cycle shared with the previous callback's last
operands), and when it completes (its pace after the previous completion, not before its
operands)."""

from __future__ import annotations

import random

import pytest

from sw.runtime.execute import CoreReplay


def reference_cycles(pace, pops, width, instructions=None, window=512):
    """The cycle the core is done in, per callback with every operand present."""
    n = len(pops)
    instructions = instructions or [1] * (n + 1)
    popped_at, completed_at = [], []
    earliest, used = 0, 0          # the next pop's earliest cycle; operands already taken then
    for i in range(n + 1):
        cycle = earliest
        while True:                # the window: instructions of callbacks not completed before
            waiting = sum(instructions[j] for j in range(i) if completed_at[j] >= cycle)
            if waiting == 0 or waiting + instructions[i] <= window:
                break
            cycle += 1
        if cycle != earliest:
            used = 0
        popped_at.append(cycle)
        if i == n:
            return max(cycle, completed_at[-1]) if n else cycle
        first = min(pops[i], width - used)
        rest = pops[i] - first
        if rest:
            taken = cycle + -(-rest // width)
            earliest, used = taken, rest - width * (-(-rest // width) - 1)
        else:
            taken = cycle
            earliest, used = cycle + 1, 0
        before = completed_at[-1] if i else popped_at[0]
        completed_at.append(max(before + pace[i], taken))


@pytest.mark.parametrize("width", [1, 8, 16])
def test_the_estimate_is_the_per_callback_reference(width, seed):
    rng = random.Random(seed)
    for _ in range(60):
        n = rng.randrange(0, 40)
        pops = [rng.choice((0, 1, 3, 8, 9, 16, 25, rng.randrange(0, 70))) for _ in range(n)]
        pace = tuple(rng.choice((0, 1, 2, 5, rng.randrange(0, 30), rng.randrange(0, 300)))
                     for _ in range(n + 1))
        instructions = tuple(rng.randrange(1, 60) for _ in range(n + 1))
        window = rng.choice((1, 20, 64, 512))
        replay = CoreReplay(pace, instructions, window, tokens_per_cycle=width)
        assert replay.cycles(pops) == reference_cycles(pace, pops, width, instructions, window), \
            (pops, pace, instructions, window)


def test_with_a_large_window_the_replay_takes_the_pace_sum():
    """Every operand at hand and room for all: the callbacks complete at their pace, one after
    another from the first pop, whatever their operands (up to 16 per cycle)."""
    pace = (7, 0, 30, 2, 0)
    assert CoreReplay(pace).cycles([16, 16, 32, 16]) == sum(pace)
    # a window of one callback: each pops the cycle after the one before completed. Pops at
    # 0, 8, 9, 39, DONE at 41; completions at 7, max(7 + 0, 8) = 8, 8 + 30 = 38, 38 + 2 = 40
    assert CoreReplay(pace, window=1).cycles([1, 1, 1, 1]) == 41


def test_hand_counted_cases():
    """At 8 operands per cycle (the default is 16, two 512-bit pops), paces 0 or dominating."""
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
    with pytest.raises(ValueError, match=r"instructions must be one int >= 1 per control token \(2"):
        CoreReplay((0, 0), instructions=(1,))
    with pytest.raises(ValueError, match="instructions must be one int >= 1"):
        CoreReplay((0, 0), instructions=(1, 0))
    with pytest.raises(ValueError, match="window must be an int >= 1, not 0"):
        CoreReplay((0,), window=0)
    with pytest.raises(ValueError, match="buffer_beats must be an int >= 1, not True"):
        CoreReplay((0,), buffer_beats=True)
    with pytest.raises(ValueError, match=r"one entry per control token \(3, DONE included\), not 2"):
        CoreReplay((0, 0)).cycles([1, 2])
    assert CoreReplay([3, 0]).pace == (3, 0)        # a list is kept as a tuple (hashable)
    assert CoreReplay((0,)).tokens_per_cycle == 16
