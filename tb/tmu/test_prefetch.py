"""Unit tests of the run-ahead engine in the Amaranth simulator."""

import random

import pytest

from hw.tmu.prefetch import Prefetcher
from tb.seeds import fresh_seed
from tb.sim_helpers import run_sim
from tb.tmu.engine_ranges import pop_ranges

MASK64 = (1 << 64) - 1


async def _start(ctx, dut, params, mem_limit):
    """Start ``dut`` with ``p_<name>`` = ``params[name]`` (one cycle)."""
    for name, value in params.items():
        ctx.set(getattr(dut, f"p_{name}"), value)
    ctx.set(dut.mem_limit, mem_limit)
    ctx.set(dut.start, 1)
    await ctx.tick()
    ctx.set(dut.start, 0)


def _run(params, *, words, take, latency=3, grant_p=0.7, seed=0, cycles=400, line_bytes=8,
         depth=4, mem_limit=MASK64, each_cycle=None, output_queue=True):
    """Start the engine, answer its loads from ``words`` (8-byte words) after ``latency``
    cycles (out of order among the due ones), pop ``take`` values at random; return (issued
    addresses, values popped). ``each_cycle(ctx, dut, issued, popped)`` runs at the start of
    every cycle."""
    dut = Prefetcher(depth, line_bytes, output_queue=output_queue)
    lw = line_bytes // 8
    issued, popped = [], []

    async def testbench(ctx):
        rng = random.Random(seed)
        await _start(ctx, dut, params, mem_limit)
        pending = []
        for cycle in range(cycles):
            if each_cycle is not None:
                each_cycle(ctx, dut, issued, popped)
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


@pytest.mark.parametrize("output_queue", [True, False])
def test_issues_the_range_in_order_and_delivers_in_order(output_queue):
    # a = 0x100, element index i + 1, stride 8, i in [2, 9) step 2: addresses 0x100 + 8 (i + 1)
    words = {0x100 + 8 * n: 1000 + n for n in range(20)}
    params = dict(base=0x100, lb=2, ub=9, step=2, c=1, stride=8, log2=3, sign=0,
                  region_base=0x100, region_size=8 * 20)
    issued, popped, _ = _run(params, words=words, take=4, output_queue=output_queue)
    assert issued == [0x100 + 8 * (i + 1) for i in (2, 4, 6, 8)]
    assert popped == [1000 + i + 1 for i in (2, 4, 6, 8)]


@pytest.mark.parametrize("output_queue", [True, False])
def test_urgent_while_few_loads_are_ahead(output_queue):
    """``req_urgent`` (the arbiter's priority, docs/rtl.md §2.4): fewer than ``depth // 2``
    entries issued and not popped. One element per entry (a stride of two elements), slow
    pops: the engine fills up (not urgent) and drains (urgent)."""
    params = dict(base=0x100, lb=0, ub=40, step=1, c=0, stride=16, log2=3, sign=0,
                  region_base=0, region_size=1 << 20)
    seen = set()

    def check(ctx, dut, issued, popped):
        ahead = len(issued) - len(popped)
        assert ctx.get(dut.req_urgent) == (ahead < 4), (ahead, len(issued))
        seen.add(ahead < 4)

    issued, popped, _ = _run(params, words={}, take=40, depth=8, cycles=300, each_cycle=check,
                             output_queue=output_queue)
    assert len(issued) == 40 and len(popped) == 40
    assert seen == {True, False}


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
    # Exact first addresses 2**65 (lb 2**61, stride 16), 2**66 + 16 and 2**65 + 8 (an offset
    # below 2**65 and a base near 2**63) are 0, 16 and 8 in 65 bits: still nothing.
    for base, lb in ((0, 1 << 61), (0, (1 << 62) + 1),
                     ((1 << 63) - 8, (1 << 61) - (1 << 59) + 1)):
        params = dict(base=base, lb=lb, ub=lb + 8, step=1, c=0, stride=16, log2=3, sign=0,
                      region_base=0, region_size=64)
        issued, popped, _ = _run(params, words=words, take=8)
        assert issued == [] and popped == [], base


def test_contiguous_ranges_continue_the_sequence():
    """[0, 3), then [3, 5), then [5, 8): loads are issued once each, in order; after the first
    continuation the engine runs past ub; a non-contiguous range restarts it."""
    params = dict(base=0, step=1, c=0, stride=8, log2=3, sign=0, region_base=0,
                  region_size=8 * 16)
    issued, popped, marks = _run_ranges(params, [(0, 3), (3, 5), (5, 8), (2, 4)],
                                        lambda address: 500 + address // 8, line_bytes=8)
    assert marks[0] == 3 and issued[:3] == [0, 8, 16]   # no speculation before a continuation
    assert issued[:5] == [0, 8, 16, 24, 32]
    assert marks[1] > 5                                  # ran past ub = 5
    assert issued.count(16) == 2                         # not contiguous: restart from index 2
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


def test_stops_at_the_signed_64_bit_range_inside_a_line():
    """Contiguous bytes whose index ``i + c`` reaches 2**63 - 1 in the middle of a line: the
    request for that line carries the elements up to it and the engine stops there (the
    traversal faults ADDR_OVERFLOW on the next one); an exact address reaching 2**63 at a line's
    start stops it too, though the region and the memory go on."""
    c = 100
    lb = (1 << 63) - c - 5                              # i + c = 2**63 - 5 + k
    words = {0xF8: 0x1716_1514_1312_1110, 0x100: 0x2726_2524_2322_2120}
    params = dict(base=-(1 << 63) + 0x102, lb=lb, ub=(1 << 63) - 1, step=1, c=c, stride=1,
                  log2=0, sign=0, region_base=0, region_size=0x200)
    issued, popped, _ = _run(params, words=words, take=10)
    assert issued == [0xFD, 0x100]                      # 3 elements, then 2 (not the line's 8)
    assert popped == [0x15, 0x16, 0x17, 0x20, 0x21]
    # 4-byte elements up to the address 2**63 - 4; the region runs 64 bytes past 2**63.
    top = 1 << 63
    words = {top - 16: 0x0000_0002_0000_0001, top - 8: 0x0000_0004_0000_0003}
    params = dict(base=top - 16, lb=0, ub=100, step=1, c=0, stride=4, log2=2, sign=0,
                  region_base=top - 64, region_size=128)
    issued, popped, _ = _run(params, words=words, take=10)
    assert issued == [top - 16, top - 8]
    assert popped == [1, 2, 3, 4]
    # Negative addresses are signed 64-bit ones: a region across 0.
    words = {(-16) & MASK64: 0x0000_0002_0000_0001, (-8) & MASK64: 3, 0: 4, 8: 5}
    params = dict(base=-16, lb=0, ub=4, step=1, c=0, stride=8, log2=3, sign=0,
                  region_base=-64, region_size=128)
    issued, popped, _ = _run(params, words=words, take=10)
    assert issued == [(-16) & MASK64, (-8) & MASK64, 0, 8]
    assert popped == [0x0000_0002_0000_0001, 3, 4, 5]


def test_stops_before_an_index_below_the_signed_64_bit_range():
    """A descending index (step -1, stride 0: one address): ``i + c`` reaches -2**63 after
    three elements, and the fourth is not issued."""
    lb = -(1 << 63) + 4
    params = dict(base=0x100, lb=lb, ub=lb + 1, step=-1, c=-2, stride=0, log2=3, sign=0,
                  region_base=0, region_size=0x200)
    issued, popped, _ = _run(params, words={0x100: 42}, take=10, depth=8)
    assert issued == [0x100] * 3
    assert popped == [42] * 3


def _run_ranges(params, ranges, element, *, line_bytes=64, depth=4, cycles=2000):
    """Start the engine on each ``(lb, ub)`` of ``ranges`` in turn (once ``idle``), grant every
    request, answer it 3 cycles later (line of elements of ``1 << params["log2"]`` bytes,
    ``element(address)``), pop the range's values; return (issued addresses, values popped,
    the number issued after each range). Raises ``AssertionError`` after ``cycles`` cycles."""
    dut = Prefetcher(depth, line_bytes)
    size = 1 << params["log2"]
    issued, popped, marks = [], [], []

    async def testbench(ctx):
        ctx.set(dut.mem_limit, MASK64)
        for name, value in params.items():
            ctx.set(getattr(dut, f"p_{name}"), value)
        pending = []
        cycle = 0

        async def step_cycle(pop=False):
            nonlocal cycle
            assert cycle < cycles, (issued, popped)
            ctx.set(dut.resp_valid, 0)
            if pending and pending[0][0] <= cycle:
                _, slot, addr = pending.pop(0)
                line = addr & -line_bytes
                ctx.set(dut.resp_valid, 1)
                ctx.set(dut.resp_slot[0], slot)
                ctx.set(dut.resp_data[0], sum(element(line + size * k) << (8 * size * k)
                                              for k in range(line_bytes // size)))
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

        for lb, ub in ranges:
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
            marks.append(len(issued))

    run_sim(dut, testbench)
    return issued, popped, marks


def test_a_range_ending_inside_a_line_continues_there():
    """4-byte elements, 64-byte lines: [0, 3) is one request for 3 elements; its continuation
    [3, 5) issues from the 4th element (address 12) up to the line's end, then whole lines past
    ub; [5, 40) pops them; [2, 4) restarts at index 2."""
    params = dict(base=0, step=1, c=0, stride=4, log2=2, sign=0, region_base=0,
                  region_size=4 * 128)
    issued, popped, marks = _run_ranges(params, [(0, 3), (3, 5), (5, 40), (2, 4)],
                                        lambda a: 7000 + a // 4)
    assert issued[:marks[0]] == [0]
    assert issued[:4] == [0, 12, 64, 128]
    assert issued[marks[2]] == 8                     # the restart
    assert popped == [7000 + n for n in range(40)] + [7002, 7003]


def test_a_continuation_stops_at_the_signed_64_bit_index_inside_a_line():
    """Bytes at ``i - L`` for ``i`` from ``L = 2**63 - 40``: [L, L + 3) cut inside the first
    line, its continuation runs to the last index below 2**63 (address 39, same line) and
    stops there."""
    top = 1 << 63
    low = top - 40
    params = dict(base=-low, step=1, c=0, stride=1, log2=0, sign=0, region_base=0,
                  region_size=256)
    issued, popped, _ = _run_ranges(params, [(low, low + 3), (low + 3, low + 5),
                                             (low + 5, top - 1)], lambda a: a + 1)
    assert issued == [0, 3]
    assert popped == [a + 1 for a in range(39)]


@pytest.mark.parametrize("cut_by", ["range", "region"])
def test_strided_elements_share_line_requests(cut_by):
    """Elements ``step * stride`` bytes apart, not contiguous but closer than a 64-byte line
    (TransE's ``triples[3t + k]``: 24 bytes): the engine collects the elements of each line
    into one request (its first element's address). The range or the region ends mid-line.
    Element size, step, stride, ``c``, bounds, latencies, grants and pops random; requests
    and values against a model of the element addresses."""
    from tb.seeds import fresh_seed
    seed = fresh_seed(f"prefetch strided coalescing, cut by the {cut_by}")
    rng = random.Random(seed)
    log2 = rng.randrange(4)
    size = 1 << log2
    while True:
        step, stride = rng.randrange(1, 4), size * rng.randrange(1, 12)
        delta = step * stride
        if size < delta < 64 and not (step == 1 and stride == size):
            break
    c, lb = rng.randrange(0, 4), rng.randrange(0, 8)
    ub = lb + step * rng.randrange(8, 40)
    base = 0x40 * rng.randrange(1, 4) + size * rng.randrange(0, 8)
    memory = bytes(rng.randrange(256) for _ in range(4096))
    words = {a: int.from_bytes(memory[a:a + 8], "little") for a in range(0, 4096, 8)}
    addrs = [base + (i + c) * stride for i in range(lb, ub, step)]
    if cut_by == "region":
        end = rng.randrange(addrs[len(addrs) // 2] + 1, addrs[-1] + size)
    else:
        end = 4096
    params = dict(base=base, lb=lb, ub=ub, step=step, c=c, stride=stride, log2=log2, sign=0,
                  region_base=0, region_size=end)
    issued, popped, _ = _run(params, words=words, take=len(addrs), line_bytes=64, depth=4,
                             latency=rng.randrange(1, 9), seed=seed, cycles=1500)
    addrs = [a for a in addrs if a + size <= end]         # the first one past the region stops
    firsts = [a for k, a in enumerate(addrs) if k == 0 or a // 64 != addrs[k - 1] // 64]
    assert issued == firsts, (seed, issued, firsts)
    assert popped == [int.from_bytes(memory[a:a + size], "little") for a in addrs], seed


def test_strided_ranges_continue_the_sequence():
    """8-byte elements 24 bytes apart (``triples[3t]``) over ranges [0, 5), [5, 9), [9, 40):
    once continued, the engine collects across the ranges' ends and requests each line once;
    every value in order."""
    params = dict(base=0, step=1, c=0, stride=24, log2=3, sign=0, region_base=0,
                  region_size=24 * 64)
    issued, popped, marks = _run_ranges(params, [(0, 5), (5, 9), (9, 40)],
                                        lambda a: 9000 + a // 8)
    assert popped == [9000 + 3 * t for t in range(40)]
    assert issued[:2] == [0, 72]                           # lines 0 and 64: 3 elements each
    # Every later request is the first element of a new line (past ub too, once continued);
    # only the line where [0, 5) ended, before any continuation, is requested twice.
    assert issued == sorted(issued)
    assert issued[marks[0]] == 120 and issued[marks[0] - 1] == 72
    assert len({a // 64 for a in issued}) == len(issued) - 1
    assert all(a == 24 * -(-a // 24) and (a - 24) // 64 != a // 64 for a in issued[marks[0] + 1:])


@pytest.mark.parametrize("output_queue", [True, False])
@pytest.mark.parametrize("line_bytes", [8, 16])
def test_a_line_gives_the_head_two_cycles_after_it_arrives(line_bytes, output_queue):
    """The engine's head is registers (``hw/tmu/engine_head.py``) that cost no cycle, and the
    output queue in front of the traversal one more (``hw/tmu/engine_queue.py``): popped as
    soon as it is valid, the ``n``-th element is the head in cycle ``max(r + 2, v + 1)``, ``r``
    the cycle its line arrived, ``v`` the cycle the element before it was (a line arriving
    while the head waits for it, and one arriving as the entry before it moves on, are taken
    from the response port; the queue passes one value per cycle). Without the queue (a chain
    engine's root): ``max(r + 1, v + 1)``. Random latencies, one response per cycle."""
    seed = fresh_seed(f"prefetch head timing {line_bytes} queue={output_queue}")
    rng = random.Random(seed)
    n = 24
    params = dict(base=0, lb=0, ub=n, step=1, c=0, stride=8, log2=3, sign=0,
                  region_base=0, region_size=8 * n)
    dut = Prefetcher(4, line_bytes, output_queue=output_queue)
    lw = line_bytes // 8
    arrivals = {}               # element -> cycle its line arrived
    seen = []                   # (cycle, value) of each pop

    async def testbench(ctx):
        await _start(ctx, dut, params, MASK64)
        pending = []            # (due cycle, slot, address)
        for cycle in range(400):
            if len(seen) == n:
                break
            due = [p for p in pending if p[0] <= cycle]
            if due:
                p = min(due)
                pending.remove(p)
                ctx.set(dut.resp_valid, 1)
                ctx.set(dut.resp_slot[0], p[1])
                ctx.set(dut.resp_data[0], sum((p[2] // 8 + w + 100) << (64 * w)
                                              for w in range(lw)))
                for w in range(lw):
                    arrivals[p[2] // 8 + w] = cycle
            else:
                ctx.set(dut.resp_valid, 0)
            ctx.set(dut.req_grant, 1)
            if ctx.get(dut.req_valid):
                pending.append((cycle + rng.randrange(1, 8), ctx.get(dut.req_slot),
                                ctx.get(dut.req_addr)))
            pop = ctx.get(dut.head_valid)
            if pop:
                seen.append((cycle, ctx.get(dut.head_data)))
            ctx.set(dut.pop, pop)
            await ctx.tick()

    run_sim(dut, testbench)
    assert [v for _, v in seen] == [k + 100 for k in range(n)]
    expected, previous = [], -1
    for k in range(n):
        previous = max(arrivals[k] + 1 + output_queue, previous + 1)
        expected.append(previous)
    assert [c for c, _ in seen] == expected


def test_ranges_with_random_grants_deliver_each_range_in_order():
    """Contiguous ranges (continued: the engine runs past ``ub``) and others (restarts), random
    grants, latencies and pops, a response per cycle: each range's values are its own, in order.
    A start that does not continue must not come while a request is offered (``idle``): a
    load granted in the start's cycle would be of the old sequence and its line would land in
    an entry of the new one."""
    seed = fresh_seed("prefetch ranges, random grants")
    rng = random.Random(seed)
    params = dict(base=0, step=1, c=0, stride=8, log2=3, sign=0, region_base=0,
                  region_size=8 * 256)          # (the ranges end below index 140)
    ranges = []
    for _ in range(48):
        lb = (ranges[-1][1] if ranges and ranges[-1][1] < 120 and rng.random() < 0.5
              else rng.randrange(0, 40))
        ranges.append((lb, lb + rng.randrange(0, 9)))
    dut = Prefetcher(4, 16)
    got = []

    async def testbench(ctx):
        ctx.set(dut.mem_limit, MASK64)
        for name, value in params.items():
            ctx.set(getattr(dut, f"p_{name}"), value)
        pending = []

        async def step():
            due = [p for p in pending if p[0] <= 0]
            ctx.set(dut.resp_valid, 0)
            if due:
                p = rng.choice(due)
                pending.remove(p)
                line = p[2] & -16
                ctx.set(dut.resp_valid, 1)
                ctx.set(dut.resp_slot[0], p[1])
                ctx.set(dut.resp_data[0], (1000 + line // 8) | (1001 + line // 8) << 64)
            for p in pending:
                p[0] -= 1
            grant = rng.random() < 0.4
            ctx.set(dut.req_grant, grant)
            if grant and ctx.get(dut.req_valid):
                pending.append([rng.randrange(1, 8), ctx.get(dut.req_slot),
                                ctx.get(dut.req_addr)])
            await ctx.tick()

        got.extend(await pop_ranges(ctx, dut, ranges, step, rng, gap=3))

    run_sim(dut, testbench)
    assert got == [[1000 + i for i in range(lb, ub)] for lb, ub in ranges], (seed, ranges)
