"""The core-only baseline model (sim/core_only.py) against closed forms and the HBM reference.

Hand-built instruction streams (no MLIR): chains of dependent loads cost the idle round trip per
load, independent misses are limited to M lines per round trip by M MSHRs (Little's law), loads
to one line merge into one MSHR and one memory request, the caches are LRU, and the memory sees
exactly what ``run_requests`` gives for the same acceptance cycles.
"""

from __future__ import annotations

import numpy as np
import pytest

from hw.hbm_model.presets import HBM2, SIMPLE
from hw.hbm_model.reference import Request, run_requests
from sim.core_only import CoreConfig, run_core
from sim.core_trace import ALU, LOAD, STORE, Trace

NO_CACHE = dict(l1_bytes=0, l2_bytes=0)



def make_trace(instrs, forwarded=()) -> Trace:
    """``instrs``: (kind, deps, lines, latency) tuples; ``forwarded``: indices of loads served
    by store-to-load forwarding."""
    t = Trace()
    for n, (kind, deps, lines, latency) in enumerate(instrs):
        t.forwarded.append(n in forwarded)
        t.kind.append(kind)
        t.deps.append(tuple(deps))
        t.lines.append(tuple(lines))
        t.latency.append(latency)
        t.nbytes.append(8 if kind != ALU else 0)
        t.array.append("x" if kind != ALU else "")
        t.addrs.append(list(lines))
    return t


def chain(addrs):
    return make_trace([(LOAD, [k - 1] if k else [], [a], 0) for k, a in enumerate(addrs)])


def independent(addrs):
    return make_trace([(LOAD, [], [a], 0) for a in addrs])


def distinct_closed_banks(n):
    """``n`` line addresses of HBM2, each in a different (channel, bank): every access is a
    row miss on a closed bank."""
    out = []
    for k in range(n):
        ch, bank = k % HBM2.channels, k // HBM2.channels
        out.append(HBM2.encode(ch, bank // HBM2.banks_per_group, bank % HBM2.banks_per_group,
                               3 + k, k % HBM2.columns))
    return out


@pytest.mark.parametrize("l2_latency", [1, 7])
def test_dependent_chain_costs_the_round_trip_per_load_on_the_fixed_latency_memory(l2_latency, seed):
    rng = np.random.default_rng(seed)
    n = int(rng.integers(5, 40))
    addrs = [int(a) * 64 for a in rng.choice(1 << 20, n, replace=False)]
    r = run_core(chain(addrs), SIMPLE, CoreConfig(l2_latency=l2_latency, **NO_CACHE))
    trip = l2_latency + SIMPLE.fixed_latency + 1
    # load k issues at 1 + k * trip (dispatched at 0), the last completes and retires at
    # 1 + n * trip; cycles count that cycle too
    assert r.cycles == 2 + n * trip
    assert r.memory_requests == n and r.mshr_peak == 1
    assert [a.complete_cycle - a.accept_cycle for a in r.accesses] == [SIMPLE.fixed_latency] * n


def test_dependent_chain_on_hbm2_costs_the_row_miss_latency_per_load():
    n = 100                                   # < tREFI / trip: no refresh inside the run
    l2 = 4
    r = run_core(chain(distinct_closed_banks(n)), HBM2, CoreConfig(l2_latency=l2, **NO_CACHE))
    t = HBM2.timing
    row_miss = 1 + t.tRCD + t.tCL + t.tBURST   # docs/hbm_model.md §2 closed form
    assert [a.complete_cycle - a.accept_cycle for a in r.accesses] == [row_miss] * n
    assert r.cycles == 2 + n * (l2 + row_miss + 1)
    assert r.stats["row_misses"] == n and r.stats["activates"] == n


@pytest.mark.parametrize("mshrs", [1, 4, 8, 16])
def test_independent_misses_are_limited_to_mshrs_lines_per_round_trip(mshrs, seed):
    rng = np.random.default_rng(seed)
    l2 = int(rng.integers(1, 8))
    trip = l2 + SIMPLE.fixed_latency + 1       # >= mshrs: the one-request-per-cycle port is not the limit
    cfg = CoreConfig(mshrs=mshrs, l2_latency=l2, load_ports=mshrs, width=max(6, mshrs),
                     rob_entries=4096, load_buffer=4096, **NO_CACHE)

    def cycles(groups):
        addrs = [int(a) * 64 for a in rng.choice(1 << 20, groups * mshrs, replace=False)]
        return run_core(independent(addrs), SIMPLE, cfg)

    a, b = cycles(6), cycles(10)
    # Little's law: M requests in flight, each for one round trip -> M lines per trip
    assert b.cycles - a.cycles == 4 * trip
    assert b.mshr_peak == mshrs
    assert b.mshr_mean > 0.8 * mshrs


def test_loads_to_one_line_merge_into_one_mshr_and_one_request(seed):
    rng = np.random.default_rng(seed)
    line = int(rng.integers(0, 1 << 20)) * 64
    k = int(rng.integers(2, 30))
    r = run_core(independent([line] * k), SIMPLE, CoreConfig(mshrs=1, **NO_CACHE))
    assert r.memory_requests == 1
    assert r.merged == k - 1
    assert r.mshr_wait_cycles == 0              # merging needs no second MSHR


def test_l1_is_lru_per_set():
    cfg = CoreConfig(l1_bytes=2 * 64, l1_ways=2, l2_bytes=0)        # one set of two lines
    A, B, C = 0, 64 * 10, 64 * 20
    assert run_core(chain([A, B, C, A]), SIMPLE, cfg).memory_requests == 4   # A evicted by C
    assert run_core(chain([A, B, A, C, A]), SIMPLE, cfg).memory_requests == 3  # B evicted
    r = run_core(chain([A, A, A]), SIMPLE, cfg)
    assert r.memory_requests == 1 and r.l1_hits == 2


def test_l2_hit_costs_l2_latency_without_memory_traffic():
    cfg = CoreConfig(l1_bytes=64, l1_ways=1, l2_latency=9)
    A, B = 0, 64 * 7
    r = run_core(chain([A, B, A]), SIMPLE, cfg)   # A evicted from the 1-line L1, still in L2
    assert r.memory_requests == 2 and r.l2_hits == 1
    trip = 9 + SIMPLE.fixed_latency + 1
    assert r.cycles == 2 + 2 * trip + 9


def test_stores_and_alu_follow_dependences():
    # load -> alu(4) -> store; a second load of the stored line hits in L1 after the store
    t = make_trace([(LOAD, [], [0], 0), (ALU, [0], [], 4), (STORE, [1], [640], 0),
                    (LOAD, [2], [640], 0)])
    cfg = CoreConfig(l2_latency=2)
    r = run_core(t, SIMPLE, cfg)
    trip = 2 + SIMPLE.fixed_latency + 1
    # load completes at 1 + trip, the ALU at + 4, the store at + 1, the load at + l1_latency
    assert r.cycles == 1 + trip + 4 + 1 + cfg.l1_latency + 1
    assert r.memory_requests == 1 and r.l1_hits == 1


def test_forwarded_load_needs_no_cache_and_no_memory():
    t = make_trace([(LOAD, [], [0], 0), (STORE, [0], [640], 0), (LOAD, [1], [640], 0)],
                   forwarded={2})
    cfg = CoreConfig(l2_latency=2, **NO_CACHE)
    r = run_core(t, SIMPLE, cfg)
    assert r.memory_requests == 1 and r.forwarded == 1
    assert r.cycles == 1 + (2 + SIMPLE.fixed_latency + 1) + 1 + cfg.l1_latency + 1


def test_the_memory_sees_what_run_requests_gives_for_the_same_acceptance_cycles(seed):
    rng = np.random.default_rng(seed)
    # a gather: random rows, each read through an index loaded from a sequential array
    n = 300
    instrs = []
    for j in range(n):
        instrs.append((LOAD, [], [(1 << 24) + (j * 8) // 64 * 64], 0))
        instrs.append((LOAD, [len(instrs) - 1], [int(rng.integers(0, 1 << 22)) * 64], 0))
    r = run_core(make_trace(instrs), HBM2, CoreConfig(mshrs=16, **NO_CACHE))
    reqs = [Request(a.line, issue_cycle=a.accept_cycle) for a in sorted(r.accesses, key=lambda a: a.accept_cycle)]
    ref = run_requests(HBM2, reqs)
    got = sorted((a.accept_cycle, a.complete_cycle) for a in r.accesses)
    want = [(c.accept_cycle, c.complete_cycle) for c in ref.completions]
    assert got == want
    for k, v in ref.stats.items():
        if k != "cycles":
            assert r.stats[k] == v, k


def test_more_mshrs_never_hurt_a_gather_on_hbm2(seed):
    rng = np.random.default_rng(seed)
    addrs = [int(a) * 64 for a in rng.integers(0, 1 << 22, 400)]
    c = [run_core(independent(addrs), HBM2, CoreConfig(mshrs=m, **NO_CACHE)).cycles
         for m in (4, 8, 16, 32)]
    assert c == sorted(c, reverse=True) and c[0] > 2 * c[-1]


@pytest.mark.parametrize("field,value", [("mshrs", 0), ("rob_entries", -1), ("l2_latency", 0),
                                          ("clock_ratio", 1.5), ("l1_bytes", 1000)])
def test_bad_config_names_the_field(field, value):
    with pytest.raises(ValueError, match=field):
        CoreConfig(**{field: value})


def test_bad_arguments_are_rejected():
    with pytest.raises(ValueError, match="trace"):
        run_core([1, 2], SIMPLE)
    with pytest.raises(ValueError, match="ports"):
        run_core(chain([0]), SIMPLE, ports=0)
    with pytest.raises(RuntimeError, match="max_cycles"):
        run_core(chain([0, 64]), SIMPLE, max_cycles=10)
