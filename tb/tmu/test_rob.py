"""Unit tests of the reorder buffer (with the operand packer behind it, as in the unit) in the
Amaranth simulator: operands in, loads answered out of order on several response ports, tokens
out in program order."""

import random

import pytest
from amaranth.hdl import Module
from amaranth.lib import wiring

from hw.tmu.packer import Packer
from hw.tmu.rob import ReorderBuffer
from tb.seeds import fresh_seed
from sw.runtime.golden import _Packer
from tb.tmu.test_packer import line_element, reference_string
from tb.sim_helpers import run_sim



class _RobPacker(wiring.Elaboratable):
    """The reorder buffer draining into the packer; ports are the buffer's, ``data`` the
    packer's output."""

    def __init__(self, depth, line_bytes, ports, tokens, reserve_max=1, row_writes=1, drain=1):
        self.rob = ReorderBuffer(depth, line_bytes, ports, reserve_max, row_writes, drain)
        self.packer = Packer(line_bytes, tokens, drain)
        self.drain = drain
        self.data = self.packer.o

    def __getattr__(self, name):
        return getattr(self.rob, name)

    def elaborate(self, platform):
        m = Module()
        m.submodules.rob = self.rob
        m.submodules.packer = self.packer
        wiring.connect(m, self.rob.data, self.packer.i)
        for k in range(self.drain - 1):
            wiring.connect(m, self.rob.data_more[k], self.packer.i_more[k])
        m.d.comb += self.packer.clear.eq(self.rob.clear)      # as hw/tmu/tmu.py wires them
        return m



def respond(ctx, dut, pending, cycle, ports, rng, probability):
    """Drive the response ports for one cycle: of the ``pending`` responses ``(due_cycle, slot,
    line)`` due by ``cycle``, in random order, port ``k`` returns the ``k``-th with
    ``probability`` (and removes it from ``pending``); the other ports are idle."""
    due = [p for p in pending if p[0] <= cycle]
    rng.shuffle(due)
    for k in range(ports):
        if k < len(due) and rng.random() < probability:
            pending.remove(due[k])
            ctx.set(dut.resp_valid[k], 1)
            ctx.set(dut.resp_slot[k], due[k][1])
            ctx.set(dut.resp_data[k], due[k][2])
        else:
            ctx.set(dut.resp_valid[k], 0)


@pytest.mark.parametrize("depth,line_bytes,ports,tokens", [(8, 8, 1, 1), (16, 64, 2, 8),
                                                           (8, 16, 3, 2)])
@pytest.mark.parametrize("backpressure", [0.0, 0.5])
def test_in_order_drain_with_out_of_order_responses(depth, line_bytes, ports, tokens,
                                                    backpressure):
    """Random mix of immediate operands and line loads answered out of order after random
    delays, up to one response per port per cycle, one or two allocations per cycle: every
    operand comes out once, in allocation order."""
    dut = _RobPacker(depth, line_bytes, ports, tokens)
    seed = fresh_seed(f"rob {depth} {line_bytes} {ports}")
    rng = random.Random(seed)
    n = 200
    entries = []       # (load, value or line, offset, log2, sign)
    for _ in range(n):
        if rng.randrange(2):
            entries.append((0, rng.getrandbits(64), 0, 3, 0))
        else:
            log2 = rng.randrange(4)
            entries.append((1, rng.getrandbits(8 * line_bytes),
                            rng.randrange(0, line_bytes, 1 << log2), log2, rng.randrange(2)))
    expected = [line_element(*e[1:]) if e[0] else e[1] for e in entries]
    out = []

    async def producer(ctx):
        pending = []   # (due_cycle, slot, line)
        i = cycle = 0
        while i < n or pending:
            respond(ctx, dut, pending, cycle, ports, rng, 0.8)
            ctx.set(dut.alloc2_en, 0)
            if i < n and ctx.get(dut.alloc_ready) and rng.random() < 0.8:
                load, value, offset, log2, sign = entries[i]
                slot = ctx.get(dut.alloc_slot)
                ctx.set(dut.alloc_en, 1)
                ctx.set(dut.alloc, {"load": load, "value": 0 if load else value,
                                    "offset": offset, "log2_size": log2, "sign": sign,
                                    "count": 1, "flush": 1})
                if load:
                    pending.append((cycle + rng.randrange(1, 12), slot, value))
                i += 1
                # A second, immediate token in the same cycle.
                if (i < n and not entries[i][0] and ctx.get(dut.alloc2_ready)
                        and rng.random() < 0.5):
                    ctx.set(dut.alloc2_en, 1)
                    ctx.set(dut.alloc2, {"load": 0, "value": entries[i][1], "offset": 0,
                                         "log2_size": 3, "sign": 0, "count": 1, "flush": 1})
                    i += 1
            else:
                ctx.set(dut.alloc_en, 0)
            await ctx.tick()
            cycle += 1
        ctx.set(dut.alloc_en, 0)
        ctx.set(dut.alloc2_en, 0)
        for k in range(ports):
            ctx.set(dut.resp_valid[k], 0)

    async def consumer(ctx):
        crng = random.Random(seed + 1)
        for _ in range(20000):
            if len(out) >= n:
                break
            r = crng.random() >= backpressure
            ctx.set(dut.data.ready, r)
            if r and ctx.get(dut.data.valid):
                beat = ctx.get(dut.data.payload)
                out.extend(beat.tokens[t] for t in range(beat.count))
            await ctx.tick()

    run_sim(dut, producer, consumer)
    assert out == expected



@pytest.mark.parametrize("depth,line_bytes,ports,tokens,row_writes,drain,backpressure", [
    (32, 64, 8, 16, 8, 2, 0.5), (32, 64, 4, 16, 4, 2, 0.0), (32, 32, 5, 16, 3, 4, 0.3),
    (16, 64, 2, 8, 2, 1, 0.5), (16, 64, 2, 8, 2, 2, 0.5), (16, 16, 2, 2, 2, 2, 0.3)])
def test_wide_drain_with_reserved_rows(depth, line_bytes, ports, tokens, row_writes, drain,
                                       backpressure):
    """Operands of random shapes (immediates, loads of runs of elements with random packing and
    flushes, and reserved rows of several lines whose descriptions are written up to
    ``row_writes`` per cycle, as the row issue block does), lines answered out of order on up
    to ``ports`` response ports after random delays, random stalls of allocation, description
    writes, responses and the output: the packer's tokens are the golden packer's for the
    entries in allocation order, drained ``drain`` entries per cycle."""
    reserve_max = min(8, depth // 2)
    dut = _RobPacker(depth, line_bytes, ports, tokens, reserve_max, row_writes, drain)
    seed = fresh_seed(f"rob wide {depth} {line_bytes} {ports} {drain} {backpressure}")
    rng = random.Random(seed)
    expected = []
    golden = _Packer(expected)

    def entry(load, log2, offset, count, pack, flush):
        line = rng.getrandbits(8 * line_bytes) if load else rng.getrandbits(64)
        sign = rng.randrange(2)
        return dict(load=load, line=line, offset=offset, log2_size=log2, sign=sign,
                    count=count, pack=pack, flush=flush)

    groups = []                 # ("one", entry) or ("row", [entries of consecutive lines])
    for _ in range(100):
        kind = rng.randrange(3)
        if kind == 0:
            groups.append(("one", entry(0, 3, 0, 1, rng.randrange(4), rng.random() < 0.3)))
        elif kind == 1:
            log2 = rng.randrange(4)
            offset = rng.randrange(0, line_bytes, 1 << log2)
            count = rng.randrange(1, (line_bytes - offset) // (1 << log2) + 1)
            groups.append(("one", entry(1, log2, offset, count, rng.randrange(4),
                                        rng.random() < 0.3)))
        else:
            log2 = rng.choice([2, 3])
            pack = 3 - log2 if rng.random() < 0.8 else rng.randrange(4)
            lines = rng.randrange(1, reserve_max + 1)
            per = line_bytes >> log2
            groups.append(("row", [entry(1, log2, 0, per, pack, k == lines - 1 and
                                         rng.random() < 0.5) for k in range(lines)]))
    for _, body in groups:
        for e in (body if isinstance(body, list) else [body]):
            for i in range(e["count"]):
                v = (line_element(e["line"], e["offset"] + (i << e["log2_size"]), e["log2_size"],
                                  e["sign"]) if e["load"] else e["line"])
                golden.put(v, 8 >> e["pack"])
            if e["flush"]:
                golden.flush()
    golden.flush()
    groups.append(("one", dict(load=0, line=0, offset=0, log2_size=3, sign=0, count=0, pack=0,
                               flush=1)))
    out = []

    def described(e):
        return {k: e[k] for k in ("load", "offset", "log2_size", "sign", "count", "pack",
                                  "flush")} | {"value": 0 if e["load"] else e["line"]}

    async def producer(ctx):
        pending = []            # (due cycle, slot, line): described loads awaiting a response
        undescribed = []        # (slot, entry): reserved lines whose description is not written
        g = cycle = 0
        for _ in range(100000):
            if g >= len(groups) and not pending and not undescribed:
                break
            respond(ctx, dut, pending, cycle, ports, rng, 0.7)
            # Descriptions of reserved lines, in order, up to row_writes per cycle, all of one
            # row (consecutive slots, as the row issue block writes them).
            n = min(len(undescribed), row_writes) if rng.random() < 0.7 else 0
            n = next((k for k in range(1, n) if undescribed[k][2] != undescribed[0][2]), n)
            for k in range(row_writes):
                ctx.set(dut.entry_en[k], k < n)
            for k in range(n):
                slot, e, _ = undescribed.pop(0)
                ctx.set(dut.entry_slot[k], slot)
                ctx.set(dut.entry[k], described(e))
                pending.append((cycle + rng.randrange(1, 12), slot, e["line"]))
            ctx.set(dut.alloc_en, 0)
            ctx.set(dut.alloc2_en, 0)
            ctx.set(dut.alloc_reserve, 0)
            ctx.set(dut.alloc_count, 1)
            if g < len(groups) and rng.random() < 0.8:
                kind, body = groups[g]
                slot = ctx.get(dut.alloc_slot)
                if kind == "one" and ctx.get(dut.alloc_ready):
                    ctx.set(dut.alloc_en, 1)
                    ctx.set(dut.alloc, described(body))
                    if body["load"]:
                        pending.append((cycle + rng.randrange(1, 12), slot, body["line"]))
                    g += 1
                elif kind == "row" and ctx.get(dut.free) >= len(body):
                    ctx.set(dut.alloc_en, 1)
                    ctx.set(dut.alloc_reserve, 1)
                    ctx.set(dut.alloc_count, len(body))
                    undescribed += [((slot + k) % depth, e, g) for k, e in enumerate(body)]
                    g += 1
            await ctx.tick()
            cycle += 1
        ctx.set(dut.alloc_en, 0)
        for k in range(row_writes):
            ctx.set(dut.entry_en[k], 0)
        for k in range(ports):
            ctx.set(dut.resp_valid[k], 0)

    async def consumer(ctx):
        crng = random.Random(seed + 1)
        for _ in range(100000):
            if len(out) >= len(expected):
                break
            r = crng.random() >= backpressure
            ctx.set(dut.data.ready, r)
            if r and ctx.get(dut.data.valid):
                beat = ctx.get(dut.data.payload)
                assert 1 <= beat.count <= tokens
                out.extend(beat.tokens[t] for t in range(beat.count))
            await ctx.tick()

    run_sim(dut, producer, consumer)
    assert out == expected


def _immediate(value):
    return {"load": 0, "value": value, "offset": 0, "log2_size": 3, "sign": 0, "count": 1,
            "flush": 1}


@pytest.mark.parametrize("drain", [1, 2, 4])
def test_drain_window_rate(drain):
    """A backlog of immediate operands (allocated while the output stalls) drains at ``drain``
    entries per cycle once the output is ready: a beat of ``drain`` tokens every cycle (the
    drain window, ``2 * drain`` registers, refills as fast as the packer takes from it)."""
    depth, n = 32, 24
    dut = _RobPacker(depth, 8, 1, drain, drain=drain)
    seed = fresh_seed(f"rob window rate {drain}")
    rng = random.Random(seed)
    values = [rng.getrandbits(64) for _ in range(n)]
    beats = []                  # (cycle, tokens)

    async def producer(ctx):
        for value in values:
            ctx.set(dut.alloc_en, 1)
            ctx.set(dut.alloc, _immediate(value))
            await ctx.tick()
        ctx.set(dut.alloc_en, 0)

    async def consumer(ctx):
        ctx.set(dut.data.ready, 0)
        await ctx.tick().repeat(n + 4)
        ctx.set(dut.data.ready, 1)
        for cycle in range(4 * n):
            if sum(len(b[1]) for b in beats) >= n:
                break
            if ctx.get(dut.data.valid):
                beat = ctx.get(dut.data.payload)
                beats.append((cycle, [beat.tokens[t] for t in range(beat.count)]))
            await ctx.tick()

    run_sim(dut, producer, consumer)
    assert [t for _, tokens in beats for t in tokens] == values
    cycles = [c for c, _ in beats]
    assert cycles == list(range(cycles[0], cycles[0] + len(cycles))), cycles
    assert all(len(tokens) == drain for _, tokens in beats), [len(t) for _, t in beats]


@pytest.mark.parametrize("drain", [1, 2])
def test_drain_window_latency(drain):
    """One immediate operand into an empty buffer leaves the packer four cycles after its
    allocation: ready at the end of the allocation cycle, into the drain window at the end of
    the next (``ReorderBuffer``'s docstring, "The drain window"; one cycle more than without
    the window), taken by the packer's stage 1 in the one after, appended to its buffer by
    stage 2 in the next, and a beat from the buffer (no entry waiting behind it) in the fifth
    cycle (``Packer``'s docstring: two cycles more than the one-stage packer of issue 10)."""
    dut = _RobPacker(8, 8, 1, 1, drain=drain)
    seen = []

    async def producer(ctx):
        ctx.set(dut.alloc_en, 1)
        ctx.set(dut.alloc, _immediate(0x1234))
        await ctx.tick()
        ctx.set(dut.alloc_en, 0)

    async def consumer(ctx):
        ctx.set(dut.data.ready, 1)
        for cycle in range(10):
            if ctx.get(dut.data.valid):
                seen.append((cycle, ctx.get(dut.data.payload).tokens[0]))
            await ctx.tick()

    run_sim(dut, producer, consumer)
    assert seen == [(4, 0x1234)]


@pytest.mark.parametrize("depth,line_bytes,ports,tokens,drain", [(16, 16, 2, 2, 2),
                                                                 (16, 64, 2, 8, 2),
                                                                 (8, 8, 1, 1, 1)])
def test_clear_mid_run_and_the_done_condition(depth, line_bytes, ports, tokens, drain):
    """Runs of immediates and single-element loads with random packing and flushes, answered
    out of order, the output stalled at random; runs cut by ``clear`` (the reorder buffer's and
    the packer's, as ``hw/tmu/tmu.py`` wires them) while something is held, the unanswered loads
    of the cut run dropped (the unit's epoch bit does that), each followed by a run from
    scratch: before a clear the tokens are a prefix of the cut run's reference packing
    (``tb.tmu.test_packer.reference_string``), after it exactly the new run's. Every cycle, the
    unit's done condition (``count == 0`` and not ``holds_token``, ``hw/tmu/tmu.py``'s
    ``rob_empty``) implies every whole token of the entries allocated before is delivered: the
    packer's stage 1 included."""
    dut = _RobPacker(depth, line_bytes, ports, tokens, drain=drain)
    seed = fresh_seed(f"rob clear {depth} {line_bytes} {ports} {tokens} {drain}")
    rng = random.Random(seed)

    def run_entries(n, final_flush):
        chunks = []
        for k in range(n):
            pack, flush = rng.randrange(4), rng.random() < 0.3 or (final_flush and k == n - 1)
            if rng.randrange(2):
                chunks.append(dict(load=0, line=rng.getrandbits(64), offset=0, log2_size=3,
                                   sign=0, count=1, pack=pack, flush=flush))
            else:
                log2 = rng.randrange(4)
                chunks.append(dict(load=1, line=rng.getrandbits(8 * line_bytes),
                                   offset=rng.randrange(0, line_bytes, 1 << log2),
                                   log2_size=log2, sign=rng.randrange(2), count=1, pack=pack,
                                   flush=flush))
        return chunks

    runs = [(run_entries(rng.randrange(2, 30), r % 2 == 1), r % 2 == 0) for r in range(16)]
    delivered = [[] for _ in runs]
    errors, cut_holding = [], []

    def described(e):
        return {k: e[k] for k in ("load", "offset", "log2_size", "sign", "count", "pack",
                                  "flush")} | {"value": 0 if e["load"] else e["line"]}

    async def bench(ctx):
        crng = random.Random(seed + 1)
        for r, (chunks, cut) in enumerate(runs):
            string, whole_after = reference_string(chunks)
            expected = [int.from_bytes(string[8 * t:8 * t + 8], "little")
                        for t in range(len(string) // 8)]
            pending = []        # (due cycle, slot, line)
            i = 0               # entries allocated in earlier cycles
            for cycle in range(5000):
                respond(ctx, dut, pending, cycle, ports, crng, 0.7)
                ctx.set(dut.alloc2_en, 0)
                ctx.set(dut.alloc_en, 0)
                allocating = (i < len(chunks) and ctx.get(dut.alloc_ready)
                              and crng.random() < 0.7)
                if allocating:
                    slot = ctx.get(dut.alloc_slot)
                    ctx.set(dut.alloc_en, 1)
                    ctx.set(dut.alloc, described(chunks[i]))
                    if chunks[i]["load"]:
                        pending.append((cycle + crng.randrange(1, 10), slot, chunks[i]["line"]))
                ready = crng.random() < 0.6
                ctx.set(dut.data.ready, ready)
                await ctx.delay(1e-8)
                empty = ctx.get(dut.count) == 0 and not ctx.get(dut.packer.holds_token)
                if empty and len(delivered[r]) != whole_after[i]:
                    errors.append(("done with tokens held", r, cycle))
                # bytes allocated and not delivered (a partial token counts)
                holding = len(reference_string(chunks[:i])[0]) > 8 * len(delivered[r])
                finished = i >= len(chunks) and not pending and \
                    len(delivered[r]) >= len(expected)
                clearing = cut and cycle >= 3 and (holding or finished) and \
                    crng.random() < 0.3
                ctx.set(dut.clear, clearing)
                if clearing:
                    ctx.set(dut.alloc_en, 0)
                    cut_holding.append(holding)
                await ctx.delay(1e-8)
                if ctx.get(dut.data.valid) and ready:
                    beat = ctx.get(dut.data.payload)
                    delivered[r].extend(beat.tokens[t] for t in range(beat.count))
                await ctx.tick()
                i += allocating and not clearing
                if clearing:
                    ctx.set(dut.clear, 0)
                    break
                if not cut and finished and empty:
                    break
            else:
                errors.append(("run did not finish", r))
            for k in range(ports):
                ctx.set(dut.resp_valid[k], 0)
            ctx.set(dut.alloc_en, 0)

    run_sim(dut, bench)
    assert not errors, errors[:5]
    for r, (chunks, cut) in enumerate(runs):
        string, _ = reference_string(chunks)
        expected = [int.from_bytes(string[8 * t:8 * t + 8], "little")
                    for t in range(len(string) // 8)]
        if cut:
            assert delivered[r] == expected[:len(delivered[r])], r
        else:
            assert delivered[r] == expected, r
    assert sum(cut_holding) >= 5, cut_holding
