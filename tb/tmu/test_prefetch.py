"""Unit tests of the run-ahead engine in the Amaranth simulator."""

import random

import pytest

from hw.tmu.prefetch import Prefetcher
from tb.sim_helpers import run_sim

MASK64 = (1 << 64) - 1


def _run(params, *, words, take, latency=3, grant_p=0.7, seed=0, cycles=400, line_bytes=8,
         depth=4, mem_limit=MASK64):
    """Start the engine, answer its loads from ``words`` (8-byte words) after ``latency``
    cycles (out of order among the due ones), pop ``take`` values at random; return (issued
    addresses, values popped)."""
    dut = Prefetcher(depth, line_bytes)
    lw = line_bytes // 8
    issued, popped = [], []

    async def testbench(ctx):
        rng = random.Random(seed)
        for name, value in params.items():
            ctx.set(getattr(dut, f"p_{name}"), value)
        ctx.set(dut.mem_limit, mem_limit)
        ctx.set(dut.start, 1)
        await ctx.tick()
        ctx.set(dut.start, 0)
        pending = []
        for cycle in range(cycles):
            due = [p for p in pending if p[0] <= cycle]
            if due:
                p = rng.choice(due)
                pending.remove(p)
                ctx.set(dut.resp_valid, 1)
                ctx.set(dut.resp_slot[0], p[1])
                line = p[2] & -line_bytes
                ctx.set(dut.resp_data[0], sum(words.get(line + 8 * w, 0) << (64 * w)
                                              for w in range(lw)))
            else:
                ctx.set(dut.resp_valid, 0)
            grant = rng.random() < grant_p
            ctx.set(dut.req_grant, grant)
            if ctx.get(dut.req_valid) and grant:
                addr = ctx.get(dut.req_addr)
                issued.append(addr)
                pending.append((cycle + latency, ctx.get(dut.req_slot), addr))
            pop = len(popped) < take and ctx.get(dut.head_valid) and rng.random() < 0.5
            if pop:
                popped.append(ctx.get(dut.head_data))
            ctx.set(dut.pop, pop)
            await ctx.tick()
        ctx.set(dut.pop, 0)

    run_sim(dut, testbench)
    return issued, popped, dut


def test_issues_the_range_in_order_and_delivers_in_order():
    # a = 0x100, element index i + 1, stride 8, i in [2, 9) step 2: addresses 0x100 + 8 (i + 1)
    words = {0x100 + 8 * n: 1000 + n for n in range(20)}
    params = dict(base=0x100, lb=2, ub=9, step=2, c=1, stride=8, log2=3, sign=0,
                  region_base=0x100, region_size=8 * 20)
    issued, popped, _ = _run(params, words=words, take=4)
    assert issued == [0x100 + 8 * (i + 1) for i in (2, 4, 6, 8)]
    assert popped == [1000 + i + 1 for i in (2, 4, 6, 8)]


def test_extracts_sub_word_elements_with_sign():
    words = {0: 0x8000_7FFF_FFFE_0001}
    params = dict(base=0, lb=0, ub=4, step=1, c=0, stride=2, log2=1, sign=1,
                  region_base=0, region_size=8)
    issued, popped, _ = _run(params, words=words, take=4)
    assert issued == [0]                    # contiguous: one request for the line's 4 elements
    assert popped == [0x0001, (-2) & MASK64, 0x7FFF, (-0x8000) & MASK64]


def test_stops_before_an_address_that_would_fault():
    # The region holds 3 elements: the 4th address is never issued.
    words = {8 * n: n for n in range(8)}
    params = dict(base=0, lb=0, ub=8, step=1, c=0, stride=8, log2=3, sign=0,
                  region_base=0, region_size=24)
    issued, popped, _ = _run(params, words=words, take=8)
    assert issued == [0, 8, 16]
    assert popped == [0, 1, 2]
    # A misaligned start issues nothing.
    params = dict(base=4, lb=0, ub=8, step=1, c=0, stride=8, log2=3, sign=0,
                  region_base=0, region_size=64)
    issued, popped, _ = _run(params, words=words, take=8)
    assert issued == [] and popped == []


def test_contiguous_ranges_continue_the_sequence():
    """[0, 3), then [3, 5), then [5, 8): loads are issued once each, in order; after the first
    continuation the engine runs past ub; a non-contiguous range restarts it."""
    dut = Prefetcher(4)
    words = {8 * n: 500 + n for n in range(16)}
    issued, popped = [], []
    base = dict(base=0, step=1, c=0, stride=8, log2=3, sign=0, region_base=0, region_size=8 * 16)

    async def testbench(ctx):
        ctx.set(dut.mem_limit, MASK64)
        for name, value in base.items():
            ctx.set(getattr(dut, f"p_{name}"), value)
        pending = []
        cycle = 0

        async def step_cycle(pop=False):
            nonlocal cycle
            due = [p for p in pending if p[0] <= cycle]
            if due:
                pending.remove(due[0])
                ctx.set(dut.resp_valid, 1)
                ctx.set(dut.resp_slot[0], due[0][1])
                ctx.set(dut.resp_data[0], words[due[0][2]])
            else:
                ctx.set(dut.resp_valid, 0)
            ctx.set(dut.req_grant, 1)
            if ctx.get(dut.req_valid):
                issued.append(ctx.get(dut.req_addr))
                pending.append((cycle + 3, ctx.get(dut.req_slot), ctx.get(dut.req_addr)))
            ctx.set(dut.pop, pop)
            if pop:
                popped.append(ctx.get(dut.head_data))
            await ctx.tick()
            ctx.set(dut.pop, 0)
            cycle += 1

        async def run_range(lb, ub):
            ctx.set(dut.p_lb, lb)
            ctx.set(dut.p_ub, ub)
            while not ctx.get(dut.idle):
                await step_cycle()
            ctx.set(dut.start, 1)
            await step_cycle()
            ctx.set(dut.start, 0)
            for _ in range(lb, ub):
                while not ctx.get(dut.head_valid):
                    await step_cycle()
                await step_cycle(pop=True)
            for _ in range(6):
                await step_cycle()

        await run_range(0, 3)
        assert issued == [0, 8, 16]                  # no speculation before a continuation
        await run_range(3, 5)
        assert issued[:5] == [0, 8, 16, 24, 32]
        assert len(issued) > 5                        # ran past ub = 5
        await run_range(5, 8)
        await run_range(2, 4)                         # not contiguous: restart from index 2
        assert issued.count(16) == 2

    run_sim(dut, testbench)
    assert popped == [500 + n for n in range(8)] + [502, 503]


@pytest.mark.parametrize("cut_by", ["region", "memory"])
def test_contiguous_elements_share_line_requests(cut_by):
    """4-byte elements, 64-byte lines, a range starting mid-line inside a region (or a memory:
    ``mem_limit``) that ends mid-line: one request per line the range touches (counted
    independently from the addresses), the values in order, sign-extended; random grants,
    latencies and pops."""
    from tb.seeds import fresh_seed
    seed = fresh_seed(f"prefetch coalescing, cut by the {cut_by}")
    rng = random.Random(seed)
    lb, ub = rng.randrange(0, 16), rng.randrange(20, 60)
    base = 0x40 * rng.randrange(1, 4)
    elems = {i: rng.randrange(1 << 32) for i in range(64)}
    words = {base + 8 * w: elems[2 * w] | (elems[2 * w + 1] << 32) for w in range(32)}
    # the region may cut the range short; the memory does, mid-line (not at a line's end)
    end = base + 4 * (rng.randrange(ub - 3, 64) if cut_by == "region"
                      else rng.choice([k for k in range(lb + 1, ub) if k % 16]))
    region_end, mem_limit = (end, MASK64) if cut_by == "region" else (base + 4 * 64, end)
    params = dict(base=base, lb=lb, ub=ub, step=1, c=0, stride=4, log2=2, sign=1,
                  region_base=base, region_size=region_end - base)
    issued, popped, _ = _run(params, words=words, take=64, line_bytes=64, depth=4,
                             latency=rng.randrange(1, 9), seed=seed, cycles=800,
                             mem_limit=mem_limit)
    last = min(ub, (end - base) // 4)                     # elements that pass the checks
    addrs = [base + 4 * i for i in range(lb, last)]
    # A request carries the address of its first element: the first one in each line.
    firsts = [a for k, a in enumerate(addrs) if k == 0 or a // 64 != addrs[k - 1] // 64]
    assert issued == firsts, (seed, issued)
    sx = [(v - (1 << 32)) & MASK64 if v >> 31 else v for v in (elems[i] for i in range(lb, last))]
    assert popped == sx, seed
