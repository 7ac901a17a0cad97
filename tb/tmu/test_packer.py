"""The operand packer (``hw/tmu/packer.py``) against the golden model's packer
(``sw.runtime.golden._Packer``, docs/isa.md §7.5) and an independent byte-string reference
(:func:`reference_string`) in the Amaranth simulator: the concatenation of the beats' tokens
must be the golden token sequence, for every line and beat width, under random gaps of the
inputs and stalls of the output, and across ``clear``; ``holds_token`` covers every whole token
not yet delivered; the rates of lines and of extended elements."""

import random

import pytest

from hw.tmu.packer import Packer
from sw.runtime.golden import _Packer
from tb.seeds import fresh_seed
from tb.sim_helpers import run_sim

MASK64 = (1 << 64) - 1


def line_element(line, pos, log2, sign):
    """The element of ``1 << log2`` bytes at byte ``pos`` of ``line``, zero- or sign-extended to
    an unsigned 64-bit value (the reference the RTL's ``extract`` is checked against)."""
    bits = 8 << log2
    v = (line >> (8 * pos)) & ((1 << bits) - 1)
    if sign and v >> (bits - 1):
        v -= 1 << bits
    return v & MASK64


def _random_chunks(rng, line_bytes, n):
    """Random entries (immediates, single loaded elements, runs of elements of a line, masked
    zero lanes, empty flush-only entries) with random packing and flushes, and the golden
    model's tokens for them."""
    chunks, expected = [], []
    golden = _Packer(expected)
    for _ in range(n):
        pack = rng.randrange(4)
        kind = rng.randrange(4)
        if kind == 0:                                   # an immediate operand
            log2, offset, count, line = 3, 0, 1, rng.getrandbits(64)
        elif kind == 1:                                 # zeros of masked lanes
            log2 = rng.randrange(4)
            offset, count, line = 0, rng.randrange(1, 9), 0
        else:                                           # elements of a loaded line
            log2 = rng.randrange(4)
            size = 1 << log2
            offset = rng.randrange(0, line_bytes, size)
            room = (line_bytes - offset) // size
            count = rng.choice([0, 1, room, rng.randrange(1, room + 1)])
            line = rng.getrandbits(8 * line_bytes)
        sign, flush = rng.randrange(2), rng.random() < 0.4
        chunks.append(dict(line=line, offset=offset, log2_size=log2, sign=sign, count=count,
                           pack=pack, flush=flush))
        for e in range(count):
            golden.put(line_element(line, offset + e * (1 << log2), log2, sign), 8 >> pack)
        if flush:
            golden.flush()
    golden.flush()
    chunks.append(dict(line=0, offset=0, log2_size=3, sign=0, count=0, pack=0, flush=1))
    return chunks, expected


def ready_consumer(dut, cycles, out):
    """A testbench coroutine always ready for the packer's beats for ``cycles`` cycles, each
    beat's tokens appended to ``out``."""
    async def consumer(ctx):
        ctx.set(dut.o.ready, 1)
        for _ in range(cycles):
            if ctx.get(dut.o.valid):
                beat = ctx.get(dut.o.payload)
                out.extend(beat.tokens[i] for i in range(beat.count))
            await ctx.tick()
    return consumer


def beat_consumer(dut, rng, backpressure, expected_tokens, out, counts):
    """A testbench coroutine taking the packer's beats at random (not ready with probability
    ``backpressure``): each beat's tokens appended to ``out`` and its count to ``counts``; it
    stops once ``expected_tokens`` arrived and nothing more is offered (or after 40,000 cycles)."""
    async def consumer(ctx):
        for _ in range(40000):
            r = rng.random() >= backpressure
            ctx.set(dut.o.ready, r)
            if r and ctx.get(dut.o.valid):
                beat = ctx.get(dut.o.payload)
                counts.append(beat.count)
                out.extend(beat.tokens[i] for i in range(beat.count))
            if len(out) >= expected_tokens and not ctx.get(dut.o.valid):
                break
            await ctx.tick()
    return consumer


@pytest.mark.parametrize("line_bytes,tokens", [(8, 1), (16, 2), (64, 8), (64, 2)])
@pytest.mark.parametrize("backpressure", [0.0, 0.5])
def test_random_chunks_match_the_golden_packer(line_bytes, tokens, backpressure):
    """The beats' tokens, in order, are the golden packer's; no beat is empty or over-full, and
    a full line of same-size elements leaves as whole beats."""
    seed = fresh_seed(f"packer {line_bytes} {tokens} {backpressure}")
    rng = random.Random(seed)
    chunks, expected = _random_chunks(rng, line_bytes, 300)
    # Random gaps between entries: the packer delivers whole tokens while nothing waits.
    gaps = [rng.choice([0, 0, 0, 3]) for _ in chunks]
    dut = Packer(line_bytes, tokens)
    out, counts = [], []

    async def producer(ctx):
        for ch, gap in zip(chunks, gaps):
            ctx.set(dut.i.valid, 0)
            for _ in range(gap):
                await ctx.tick()
            ctx.set(dut.i.valid, 1)
            ctx.set(dut.i.payload, ch)
            await ctx.tick().until(dut.i.ready)
        ctx.set(dut.i.valid, 0)

    consumer = beat_consumer(dut, random.Random(seed + 1), backpressure, len(expected), out, counts)

    run_sim(dut, producer, consumer)
    assert all(1 <= c <= tokens for c in counts), counts
    assert out == expected


def test_a_row_of_lines_is_whole_beats():
    """Four 64-byte lines of f32 elements packed 4 bytes wide: four beats of 8 tokens, one per
    cycle (the rate the data queue is built for)."""
    rng = random.Random(fresh_seed("packer row"))
    lines = [rng.getrandbits(512) for _ in range(4)]
    dut = Packer(64, 8)
    beats, cycles = [], []

    async def producer(ctx):
        for k, line in enumerate(lines):
            ctx.set(dut.i.valid, 1)
            ctx.set(dut.i.payload, dict(line=line, offset=0, log2_size=2, sign=0, count=16,
                                        pack=1, flush=k == 3))
            await ctx.tick().until(dut.i.ready)
        ctx.set(dut.i.valid, 0)

    async def consumer(ctx):
        ctx.set(dut.o.ready, 1)
        for cycle in range(20):
            if ctx.get(dut.o.valid):
                beat = ctx.get(dut.o.payload)
                beats.append([beat.tokens[i] for i in range(beat.count)])
                cycles.append(cycle)
            await ctx.tick()

    run_sim(dut, producer, consumer)
    assert beats == [[(line >> (64 * t)) & MASK64 for t in range(8)] for line in lines]
    assert cycles == list(range(cycles[0], cycles[0] + 4))


def test_lines_after_an_immediate_still_move_one_per_cycle():
    """An 8-byte operand, then four 64-byte lines of f32 packed 4 bytes wide: every line is
    placed in the cycle it arrives although it straddles two beats (the buffer holds two)."""
    rng = random.Random(fresh_seed("packer straddle"))
    lines = [rng.getrandbits(512) for _ in range(4)]
    first = rng.getrandbits(64)
    dut = Packer(64, 8)
    tokens, taken = [], []

    async def producer(ctx):
        entries = [dict(line=first, offset=0, log2_size=3, sign=0, count=1, pack=0, flush=1)]
        entries += [dict(line=line, offset=0, log2_size=2, sign=0, count=16, pack=1,
                         flush=k == 3) for k, line in enumerate(lines)]
        cycle = 0
        for entry in entries:
            ctx.set(dut.i.valid, 1)
            ctx.set(dut.i.payload, entry)
            while True:
                ready = ctx.get(dut.i.ready)
                await ctx.tick()
                cycle += 1
                if ready:
                    break
            taken.append(cycle)
        ctx.set(dut.i.valid, 0)

    run_sim(dut, producer, ready_consumer(dut, 20, tokens))
    assert tokens == [first] + [(line >> (64 * t)) & MASK64 for line in lines for t in range(8)]
    assert taken == [1, 2, 3, 4, 5]


@pytest.mark.parametrize("line_bytes,tokens,lanes", [(64, 16, 2), (32, 16, 4), (16, 4, 2),
                                                     (64, 16, 1), (64, 32, 4),
                                                     (64, 8, 2), (16, 2, 2)])
@pytest.mark.parametrize("backpressure", [0.0, 0.5])
def test_several_entries_per_cycle_match_the_golden_packer(line_bytes, tokens, lanes,
                                                           backpressure):
    """``lanes`` entries offered per cycle (``i``, ``i_more``; a random number of them valid
    each cycle: the reorder buffer's heads stall at random) into a beat of up to 16 tokens,
    with random stalls of the output: the beats' tokens, in order, are the golden packer's;
    no beat is empty or over-full; an entry is taken only with the ones before it."""
    seed = fresh_seed(f"packer lanes {line_bytes} {tokens} {lanes} {backpressure}")
    rng = random.Random(seed)
    chunks, expected = _random_chunks(rng, line_bytes, 300)
    dut = Packer(line_bytes, tokens, lanes)
    lane_ports = [dut.i] + ([dut.i_more[k] for k in range(lanes - 1)] if lanes > 1 else [])
    out, counts, violations = [], [], []

    async def producer(ctx):
        prng = random.Random(seed + 2)
        head = 0
        for _ in range(40000):          # bounded: a packer that stops taking entries fails
            if head >= len(chunks):
                break
            offered = min(len(chunks) - head, prng.choice([0, lanes, lanes, prng.randrange(1, lanes + 1)]))
            for k, port in enumerate(lane_ports):
                ctx.set(port.valid, k < offered)
                if k < offered:
                    ctx.set(port.payload, chunks[head + k])
            await ctx.delay(1e-8)       # let the packer's ready settle on the payloads
            taken = [ctx.get(p.ready) and k < offered for k, p in enumerate(lane_ports)]
            if any(taken[k] and not all(taken[:k]) for k in range(lanes)):
                violations.append(head)
            await ctx.tick()
            head += sum(taken)
        for port in lane_ports:
            ctx.set(port.valid, 0)

    consumer = beat_consumer(dut, random.Random(seed + 1), backpressure, len(expected), out, counts)

    run_sim(dut, producer, consumer)
    assert not violations
    assert all(1 <= c <= tokens for c in counts), counts
    assert out == expected


def test_two_lines_per_cycle_fill_a_1024_bit_beat():
    """Eight 64-byte lines of f32 packed 4 bytes wide, two offered per cycle: four beats of 16
    tokens on consecutive cycles (128 bytes per cycle, the rate of a 1024-bit output)."""
    rng = random.Random(fresh_seed("packer wide row"))
    lines = [rng.getrandbits(512) for _ in range(8)]
    dut = Packer(64, 16, 2)
    beats, cycles = [], []

    async def producer(ctx):
        for k in range(0, 8, 2):
            for lane, port in enumerate([dut.i, dut.i_more[0]]):
                ctx.set(port.valid, 1)
                ctx.set(port.payload, dict(line=lines[k + lane], offset=0, log2_size=2, sign=0,
                                           count=16, pack=1, flush=k + lane == 7))
            await ctx.tick().until(dut.i_more[0].ready)
        ctx.set(dut.i.valid, 0)
        ctx.set(dut.i_more[0].valid, 0)

    async def consumer(ctx):
        ctx.set(dut.o.ready, 1)
        for cycle in range(20):
            if ctx.get(dut.o.valid):
                beat = ctx.get(dut.o.payload)
                beats.append([beat.tokens[i] for i in range(beat.count)])
                cycles.append(cycle)
            await ctx.tick()

    run_sim(dut, producer, consumer)
    assert beats == [[(line >> (64 * t)) & MASK64 for line in lines[k:k + 2] for t in range(8)]
                     for k in range(0, 8, 2)]
    assert cycles == list(range(cycles[0], cycles[0] + 4))


@pytest.mark.parametrize("lanes, cycles_at_most", [(1, 32), (2, 18)])
def test_a_line_and_an_immediate_per_cycle(lanes, cycles_at_most):
    """SpMM's marshaling, a 64-byte row of f32 packed 4 bytes wide (8 tokens) then the
    immediate ``val[j]`` (1 token), sixteen times, into the default 512-bit beat: with two
    entries taken per cycle (``TmuConfig.drain_lines`` = 2, the default) the 144 tokens leave
    in 18 beats, so the last entry is taken within 18 cycles (the output's rate of 8 tokens per
    cycle); one entry per cycle takes the 32 cycles of the 32 entries. The tokens are the
    golden packer's either way."""
    rng = random.Random(fresh_seed(f"packer line and immediate {lanes}"))
    entries = []
    for k in range(16):
        entries.append(dict(line=rng.getrandbits(512), offset=0, log2_size=2, sign=0, count=16,
                            pack=1, flush=0))
        entries.append(dict(line=rng.getrandbits(64), offset=0, log2_size=3, sign=0, count=1,
                            pack=0, flush=k == 15))
    expected = []
    golden = _Packer(expected)
    for e in entries:
        for i in range(e["count"]):
            golden.put(line_element(e["line"], e["offset"] + (i << e["log2_size"]),
                                    e["log2_size"], e["sign"]), 8 >> e["pack"])
        if e["flush"]:
            golden.flush()
    dut = Packer(64, 8, lanes)
    tokens, last_taken = [], []
    run_sim(dut, _back_to_back(_lane_ports(dut, lanes), entries, 100, last_taken),
            ready_consumer(dut, 120, tokens))
    assert tokens == expected
    assert last_taken and last_taken[0] <= cycles_at_most, last_taken


def reference_string(chunks):
    """An independent reference of the packing (``docs/isa.md`` §7.5 read as a byte string,
    the ``Packer`` docstring's formulation, not the golden model's partial token): each element
    appended aligned to its packed width ``w``, its low ``w`` bytes, a flush padding to the next
    multiple of 8. Returns the string and, for each prefix ``chunks[:n]``, its whole tokens
    (``len // 8``)."""
    string = bytearray()
    whole = [0]
    for ch in chunks:
        w = 8 >> ch["pack"]
        for e in range(ch["count"]):
            v = line_element(ch["line"], ch["offset"] + (e << ch["log2_size"]), ch["log2_size"],
                             ch["sign"])
            string += bytes(-len(string) % w)
            string += (v & ((1 << (8 * w)) - 1)).to_bytes(w, "little")
        if ch["flush"]:
            string += bytes(-len(string) % 8)
        whole.append(len(string) // 8)
    return bytes(string), whole


def reference_tokens(chunks):
    """The whole tokens of :func:`reference_string`, as 64-bit integers."""
    string, _ = reference_string(chunks)
    return [int.from_bytes(string[8 * t:8 * t + 8], "little") for t in range(len(string) // 8)]


def _lane_ports(dut, lanes):
    return [dut.i] + ([dut.i_more[k] for k in range(lanes - 1)] if lanes > 1 else [])


def _back_to_back(ports, entries, max_cycles, last_taken):
    """A producer offering ``entries`` on the lanes ``ports`` every cycle, no gaps, for at most
    ``max_cycles``; appends to ``last_taken`` the cycle after the last entry was taken."""
    async def producer(ctx):
        head, cycle = 0, 0
        while head < len(entries) and cycle < max_cycles:
            for k, port in enumerate(ports):
                ctx.set(port.valid, head + k < len(entries))
                if head + k < len(entries):
                    ctx.set(port.payload, entries[head + k])
            await ctx.delay(1e-8)       # let the packer's ready settle on the payloads
            taken = sum(ctx.get(p.ready) and head + k < len(entries)
                        for k, p in enumerate(ports))
            await ctx.tick()
            cycle += 1
            head += taken
        last_taken.append(cycle)
        for port in ports:
            ctx.set(port.valid, 0)
    return producer


async def _check_valid_ignores_ready(ctx, dut):
    """``o.valid`` and ``o.payload`` with ``o.ready`` low and high in the same cycle: equal
    (the DataBeatSignature contract). Returns ``o.valid``."""
    ctx.set(dut.o.ready, 0)
    await ctx.delay(1e-9)
    low = (ctx.get(dut.o.valid), ctx.get(dut.o.payload.count), ctx.get(dut.o.payload.tokens))
    ctx.set(dut.o.ready, 1)
    await ctx.delay(1e-9)
    high = (ctx.get(dut.o.valid), ctx.get(dut.o.payload.count), ctx.get(dut.o.payload.tokens))
    assert low == high, "o.valid/o.payload depend on o.ready"
    return low[0]


class _Bursts:
    """A random on/off signal with bursts: off with probability ``p_off`` per cycle when on,
    and an off burst lasts 1..``longest`` cycles."""

    def __init__(self, rng, p_off, longest):
        self.rng, self.p_off, self.longest, self.off = rng, p_off, longest, 0

    def __call__(self):
        if self.off:
            self.off -= 1
            return False
        if self.rng.random() < self.p_off:
            self.off = self.rng.randrange(self.longest)
            return False
        return True


@pytest.mark.parametrize("line_bytes,tokens,lanes", [(16, 2, 2), (64, 8, 2), (8, 1, 1),
                                                     (64, 2, 2), (32, 16, 4), (64, 16, 2)])
@pytest.mark.parametrize("stalls", [(0.1, 3), (0.5, 12)])
def test_backpressure_and_gaps_bit_for_bit(line_bytes, tokens, lanes, stalls):
    """Random entries offered ``lanes`` at a time with random gaps (bursts of idle inputs,
    random numbers of lanes valid), the output stalled in random bursts (``stalls``: the
    chance of a stall per cycle and its longest length): every cycle ``o.valid`` and
    ``o.payload`` are the same with ``o.ready`` low and high; no beat is empty or over-full;
    ``holds_token`` is high whenever entries taken earlier make a whole token that has not left
    (``TmuConfig.small()``'s and the default's packers among them); the beats' tokens are the
    byte-string reference's, bit for bit, and the golden model's; at the end the packer holds
    nothing."""
    seed = fresh_seed(f"packer stalls {line_bytes} {tokens} {lanes} {stalls}")
    rng = random.Random(seed)
    chunks, golden = _random_chunks(rng, line_bytes, 400)
    expected = reference_tokens(chunks)
    assert expected == golden
    _, whole_after = reference_string(chunks)
    dut = Packer(line_bytes, tokens, lanes)
    ports = _lane_ports(dut, lanes)
    out, errors = [], []

    async def bench(ctx):
        inputs = _Bursts(random.Random(seed + 1), 0.15, 8)
        output = _Bursts(random.Random(seed + 2), *stalls)
        lrng = random.Random(seed + 3)
        head = 0
        for cycle in range(60000):
            if head >= len(chunks) and len(out) >= len(expected):
                break
            offered = min(len(chunks) - head, lrng.randrange(1, lanes + 1)) if inputs() else 0
            for k, port in enumerate(ports):
                ctx.set(port.valid, k < offered)
                if k < offered:
                    ctx.set(port.payload, chunks[head + k])
            await ctx.delay(1e-8)       # let the packer's outputs settle on the inputs
            # Entries taken before this cycle that make a whole token not yet delivered.
            if whole_after[head] > len(out) and not ctx.get(dut.holds_token):
                errors.append(("holds_token low", cycle, whole_after[head], len(out)))
            valid = await _check_valid_ignores_ready(ctx, dut)
            ready = output()
            ctx.set(dut.o.ready, ready)
            await ctx.delay(1e-9)       # (``i.ready`` depends on ``o.ready``)
            if valid and ready:
                beat = ctx.get(dut.o.payload)
                if not 1 <= beat.count <= tokens:
                    errors.append(("count", cycle, beat.count))
                out.extend(beat.tokens[i] for i in range(beat.count))
            taken = [ctx.get(p.ready) and k < offered for k, p in enumerate(ports)]
            if any(taken[k] and not all(taken[:k]) for k in range(lanes)):
                errors.append(("lane order", cycle))
            await ctx.tick()
            head += sum(taken)
        for port in ports:
            ctx.set(port.valid, 0)
        ctx.set(dut.o.ready, 1)
        for _ in range(4):
            await ctx.tick()
        assert not ctx.get(dut.o.valid) and not ctx.get(dut.holds_token)

    run_sim(dut, bench)
    assert not errors, errors[:5]
    assert out == expected


@pytest.mark.parametrize("line_bytes,tokens,lanes", [(16, 2, 2), (64, 8, 2), (8, 1, 1),
                                                     (32, 16, 4)])
def test_clear_drops_both_stages(line_bytes, tokens, lanes):
    """Runs cut short by ``clear`` at random points — a group in stage 1, a partial token or a
    partial beat in the buffer, a beat stalled at the output, entries offered in the clear's
    cycle (taken or not, they are dropped) — each followed by a run from scratch: before a
    clear the beats' tokens are a prefix of the cut run's reference; after it they are the new
    run's reference exactly (nothing of the old run, its byte offset included, leaks in); the
    cycle after a clear the packer holds nothing."""
    seed = fresh_seed(f"packer clear {line_bytes} {tokens} {lanes}")
    rng = random.Random(seed)
    dut = Packer(line_bytes, tokens, lanes)
    ports = _lane_ports(dut, lanes)
    runs = []
    for r in range(40):
        chunks, _ = _random_chunks(rng, line_bytes, rng.randrange(1, 12))
        if r % 2 == 0:
            chunks = chunks[:-1]        # no final flush: a partial token may stay behind
        # Cut after a random number of cycles of this run (even runs), or let it finish.
        cut = rng.randrange(1, 12) if r % 2 == 0 else None
        runs.append((chunks, cut))
    delivered = [[] for _ in runs]
    errors, cut_holding = [], []

    async def bench(ctx):
        brng = random.Random(seed + 1)
        for r, (chunks, cut) in enumerate(runs):
            expected = reference_tokens(chunks)
            head = 0
            for cycle in range(20000):
                done = head >= len(chunks) and len(delivered[r]) >= len(expected)
                # bytes taken and not delivered (a partial token counts)
                holding = len(reference_string(chunks[:head])[0]) > 8 * len(delivered[r])
                # the cut: the first cycle from ``cut`` on in which the packer holds something
                clearing = cut is not None and cycle >= cut and (holding or done)
                if done and cut is None:
                    break
                offered = min(len(chunks) - head, brng.randrange(0, lanes + 1))
                for k, port in enumerate(ports):
                    ctx.set(port.valid, k < offered)
                    if k < offered:
                        ctx.set(port.payload, chunks[head + k])
                ready = brng.random() < 0.6
                ctx.set(dut.o.ready, ready)
                ctx.set(dut.clear, clearing)
                await ctx.delay(1e-8)   # let the packer's outputs settle on the inputs
                if clearing:
                    cut_holding.append(holding)
                if ctx.get(dut.o.valid) and ready:
                    beat = ctx.get(dut.o.payload)
                    delivered[r].extend(beat.tokens[i] for i in range(beat.count))
                taken = [ctx.get(p.ready) and k < offered for k, p in enumerate(ports)]
                await ctx.tick()
                head += sum(taken)
                if clearing:
                    ctx.set(dut.clear, 0)
                    for port in ports:
                        ctx.set(port.valid, 0)
                    ctx.set(dut.o.ready, 0)
                    await ctx.delay(1e-8)
                    if ctx.get(dut.o.valid) or ctx.get(dut.holds_token):
                        errors.append(("holds after clear", r))
                    break
            else:
                errors.append(("run did not finish", r))

    run_sim(dut, bench)
    assert not errors, errors[:5]
    for r, (chunks, cut) in enumerate(runs):
        expected = reference_tokens(chunks)
        if cut is None:
            assert delivered[r] == expected, r
        else:
            assert delivered[r] == expected[:len(delivered[r])], r
    assert sum(cut_holding) >= 10, cut_holding


@pytest.mark.parametrize("lanes", [1, 2])
def test_clear_in_a_partial_token(lanes):
    """A 4-byte element without flush (a ``JOIN``'s partial token), then ``clear`` with the
    token in stage 1 or in the buffer: the next run's first token starts at byte 0 and holds
    none of the dropped bytes."""
    dut = Packer(16, 2, lanes)
    ports = _lane_ports(dut, lanes)
    first = dict(line=0xAAAAAAAA_BBBBBBBB, offset=0, log2_size=2, sign=0, count=1, pack=1,
                 flush=0)
    after = [dict(line=0x1111_2222, offset=0, log2_size=1, sign=0, count=2, pack=2, flush=1)]
    seen = []

    async def bench(ctx):
        ctx.set(dut.o.ready, 1)
        for delay in range(3):          # clear 0, 1, 2 cycles after the entry is taken
            ctx.set(ports[0].valid, 1)
            ctx.set(ports[0].payload, first)
            await ctx.tick().until(ports[0].ready)
            ctx.set(ports[0].valid, 0)
            if delay:
                await ctx.tick().repeat(delay)
            ctx.set(dut.clear, 1)
            await ctx.tick()
            ctx.set(dut.clear, 0)
            ctx.set(ports[0].valid, 1)
            ctx.set(ports[0].payload, after[0])
            await ctx.tick().until(ports[0].ready)
            ctx.set(ports[0].valid, 0)
            for _ in range(6):
                if ctx.get(dut.o.valid):
                    beat = ctx.get(dut.o.payload)
                    seen.append((delay, [beat.tokens[i] for i in range(beat.count)]))
                await ctx.tick()

    run_sim(dut, bench)
    assert seen == [(d, reference_tokens(after)) for d in range(3)], seen


@pytest.mark.parametrize("lanes", [1, 2])
def test_extended_elements_move_one_per_cycle(lanes):
    """Entries of sixteen bytes each sign-extended to 8 bytes (one element per cycle), each
    after an immediate operand: 16 cycles per entry, the immediate in the cycle of the entry
    before's last element with two lanes, a cycle of its own with one — all taken in 64 and 68
    cycles, as by the one-stage packer before issue 10; every element leaves as one token."""
    rng = random.Random(fresh_seed(f"packer extended {lanes}"))
    entries = []
    for _ in range(4):
        entries.append(dict(line=rng.getrandbits(64), offset=0, log2_size=3, sign=0, count=1,
                            pack=0, flush=0))
        entries.append(dict(line=rng.getrandbits(128), offset=0, log2_size=0, sign=1,
                            count=16, pack=0, flush=0))
    dut = Packer(16, 2, lanes)
    tokens, last_taken = [], []
    run_sim(dut, _back_to_back(_lane_ports(dut, lanes), entries, 200, last_taken),
            ready_consumer(dut, 220, tokens))
    assert tokens == reference_tokens(entries)
    assert last_taken[0] <= 16 * 4 + (0 if lanes == 2 else 4), last_taken
