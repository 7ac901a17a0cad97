"""The chain engine (``hw/tmu/chain_engine.py``) in the Amaranth simulator: alone, and in the
unit (``TmuConfig.chain_engines``) on the programs of ``tb/tmu/chain_programs.py``.

The reference is written here from ``docs/isa.md`` §1 with the golden model's ALU
(``sw.runtime.golden._alu``): the root stream's elements in order, each put through the
chain's operations with the *wrapped* rule, each chained address checked (overflow, alignment,
region, memory limit) and loaded; the engine must deliver exactly the values up to the first
element whose root load or chained load would fault, then stop (``busy`` falls, no head).
Responses come after random latencies, out of order; grants and pops are random.
"""

import dataclasses
import random

import pytest

from hw.tmu import TmuConfig
from hw.tmu.chain_engine import CHAIN_OPS, ChainEngine
from hw.tmu.isa import AluOp
from sw.runtime.golden import _alu
from sw.runtime.isa import AluOp as GoldenAluOp
from tb.golden_compare import assert_matches
from tb.seeds import fresh_seed
from tb.sim_helpers import run_sim
from tb.tmu.amaranth_bench import run_on_amaranth
from tb.tmu.chain_programs import VARIANTS, chain_case
from tb.tmu.engine_ranges import pop_ranges

MASK64 = (1 << 64) - 1
_WRAPPING = {GoldenAluOp.ADD, GoldenAluOp.SUB, GoldenAluOp.MUL, GoldenAluOp.SHL}


def _signed(x, bits=64):
    x &= (1 << bits) - 1
    return x - (1 << bits) if x >> (bits - 1) else x


def _load(memory, addr, log2, sign):
    size = 1 << log2
    raw = int.from_bytes(bytes(memory.get(addr + k, 0) for k in range(size)), "little")
    return _signed(raw, 8 * size) & MASK64 if sign else raw


def _ok(addr, log2, region_base, region_size, mem_limit):
    size = 1 << log2
    return (-(1 << 63) <= addr < 1 << 63 and addr % size == 0 and addr >= region_base
            and addr + size <= min(region_base + region_size, mem_limit))


def reference(root, chain, memory, mem_limit):
    """The values the engine must deliver, in order, before it stops."""
    out = []
    for i in range(root["lb"], root["ub"], root["step"]):
        addr = root["base"] + (i + root["c"]) * root["stride"]
        if not _ok(addr, root["log2"], root["region_base"], root["region_size"], mem_limit):
            break
        x, wrapped = _signed(_load(memory, addr, root["log2"], root["sign"])), False
        for k in range(chain["ops"]):
            op, const = GoldenAluOp(chain["op"][k]), chain["constant"][k]
            a, b = (const, x) if chain["constant_first"][k] else (x, const)
            x, out_of_range = _alu(op, a, b)
            wrapped = op in _WRAPPING and (out_of_range or wrapped)
        maddr = chain["base"] + x * chain["stride"]
        if wrapped or not _ok(maddr, chain["log2"], chain["region_base"], chain["region_size"],
                              mem_limit):
            break
        out.append(_load(memory, maddr, chain["log2"], chain["sign"]))
    return out


class _Memory:
    """Both stages' loads answered from ``memory`` (bytes) after random latencies, out of
    order, at most ``ports`` per stage per cycle; grants at random."""

    def __init__(self, dut, memory, rng, *, line_bytes, ports, latency=(1, 12)):
        self._dut, self._memory, self._rng = dut, memory, rng
        self._line_bytes, self._ports, self._latency = line_bytes, ports, latency
        self._pending = {"index": [], "chain": []}
        self._resp = {"index": (dut.index_resp_valid, dut.index_resp_slot, dut.index_resp_data),
                      "chain": (dut.resp_valid, dut.resp_slot, dut.resp_data)}
        self._req = {"index": (dut.index_req_valid, dut.index_req_addr, dut.index_req_slot,
                               dut.index_req_grant),
                     "chain": (dut.req_valid, dut.req_addr, dut.req_slot, dut.req_grant)}

    def _line(self, addr):
        base = addr & -self._line_bytes
        return sum(self._memory.get(base + k, 0) << (8 * k) for k in range(self._line_bytes))

    def cycle(self, ctx, cycle):
        """Drive this cycle's responses and grants; take the granted requests."""
        rng = self._rng
        for stage, (valid, slot, data) in self._resp.items():
            due = [p for p in self._pending[stage] if p[0] <= cycle]
            rng.shuffle(due)
            mask = 0
            for k, p in enumerate(due[:self._ports]):
                self._pending[stage].remove(p)
                mask |= 1 << k
                ctx.set(slot[k], p[1])
                ctx.set(data[k], self._line(p[2]))
            ctx.set(valid, mask)
        for stage, (valid, addr, slot, grant) in self._req.items():
            g = rng.random() < 0.7
            ctx.set(grant, g)
            if ctx.get(valid) and g:
                self._pending[stage].append((cycle + rng.randint(*self._latency), ctx.get(slot),
                                             ctx.get(addr)))


def _configure(ctx, dut, root, chain, mem_limit):
    """The root's ``p_*`` (those given), the chain and the memory limit."""
    for name, value in root.items():
        ctx.set(getattr(dut, f"p_{name}"), value)
    for name in ("ops", "base", "stride", "log2", "sign", "region_base", "region_size"):
        ctx.set(getattr(dut.chain, name), chain[name])
    for k in range(CHAIN_OPS):
        ctx.set(dut.chain.op[k], chain["op"][k])
        ctx.set(dut.chain.constant[k], chain["constant"][k])
        ctx.set(dut.chain.constant_first[k], chain.get("constant_first", [0] * CHAIN_OPS)[k])
    ctx.set(dut.mem_limit, mem_limit)


def _run(root, chain, memory, *, seed, line_bytes=16, depth=4, ports=2, mem_limit=MASK64,
         cycles=600, latency=(1, 12)):
    """Start the engine, answer both stages' loads out of order from ``memory`` (bytes), pop
    at random; returns (values popped, cycles after the last pop with ``busy`` low and no
    head)."""
    dut = ChainEngine(depth, line_bytes, ports)
    popped = []
    idle_tail = [0]

    async def testbench(ctx):
        rng = random.Random(seed)
        mem = _Memory(dut, memory, rng, line_bytes=line_bytes, ports=ports, latency=latency)
        _configure(ctx, dut, root, chain, mem_limit)
        ctx.set(dut.clear, 1)
        await ctx.tick()
        ctx.set(dut.clear, 0)
        assert ctx.get(dut.idle)
        ctx.set(dut.start, 1)
        await ctx.tick()
        ctx.set(dut.start, 0)
        for cycle in range(cycles):
            mem.cycle(ctx, cycle)
            head = ctx.get(dut.head_valid)
            pop = head and rng.random() < 0.6
            if pop:
                popped.append(ctx.get(dut.head_data))
            ctx.set(dut.pop, pop)
            if not head and not ctx.get(dut.busy):
                idle_tail[0] += 1
            else:
                idle_tail[0] = 0
            await ctx.tick()
        ctx.set(dut.pop, 0)

    run_sim(dut, testbench)
    return popped, idle_tail[0]


def _memory(rng, size=4096):
    return {a: rng.randrange(256) for a in range(size)}


HASH = dict(ops=2, op=[AluOp.MUL.value, AluOp.SHR.value], constant=[_signed(0x9E3779B97F4A7C15), 58],
            constant_first=[0, 0])


def test_hashed_gather_chain_delivers_in_order():
    """ids[i] -> (id * K) >> 58 (the MUL wraps, the SHR clears it) -> remap[h] (8-byte
    elements): every value, in order, then the engine goes quiet."""
    seed = fresh_seed("chain engine, hashed gather")
    rng = random.Random(seed)
    memory = _memory(rng)
    root = dict(base=0x100, lb=0, ub=40, step=1, c=0, stride=8, log2=3, sign=0,
                region_base=0x100, region_size=8 * 64)
    chain = dict(HASH, base=0x800, stride=8, log2=3, sign=0, region_base=0x800,
                 region_size=8 * 64)
    expected = reference(root, chain, memory, MASK64)
    assert len(expected) == 40
    popped, quiet = _run(root, chain, memory, seed=seed)
    assert popped == expected
    assert quiet > 50


@pytest.mark.parametrize("trial", range(8))
def test_random_chains_stop_at_the_first_faulting_element(trial):
    """Random operations (any ALU op, constants either side), element sizes, signs, regions
    and a memory limit: the values up to the first root or chained element that would fault."""
    seed = fresh_seed(f"chain engine, random chain {trial}")
    rng = random.Random(seed)
    memory = _memory(rng)
    log2 = rng.randrange(4)
    root = dict(base=0x40 * rng.randrange(1, 4), lb=rng.randrange(4), ub=rng.randrange(8, 48),
                step=rng.choice([1, 1, 2, 3]), c=rng.randrange(-1, 3), stride=1 << log2,
                log2=log2, sign=rng.randrange(2), region_base=0, region_size=0x400)
    ops = rng.randrange(CHAIN_OPS + 1)
    op = [rng.choice(list(AluOp)).value, AluOp.AND.value]
    constant = [rng.choice([rng.randrange(-8, 64), rng.randrange(-(1 << 63), 1 << 63)]),
                (1 << rng.randrange(3, 8)) - 1]
    if rng.random() < 0.3:          # a second random operation too (often faults at once)
        op[1], constant[1] = rng.choice(list(AluOp)).value, rng.randrange(-8, 64)
    # The decoder gives the engine no chain where a MUL's wrap could reach the address (the
    # engine's MUL keeps the low 64 bits only, hw/tmu/chain_detect.py): no MUL last, none
    # before a wrapping op.
    wrapping = {AluOp.ADD.value, AluOp.SUB.value, AluOp.MUL.value, AluOp.SHL.value}
    if ops and op[ops - 1] == AluOp.MUL.value:
        op[ops - 1] = AluOp.XOR.value
    if ops == 2 and op[0] == AluOp.MUL.value and op[1] in wrapping:
        op[0] = AluOp.XOR.value
    mlog2 = rng.randrange(4)
    size = 1 << mlog2
    chain = dict(ops=ops, op=op, constant=constant,
                 constant_first=[rng.randrange(2), 0],
                 base=0x400 + size * rng.randrange(0, 64),
                 stride=size * rng.choice([1, 2, 3, -1]),
                 log2=mlog2, sign=rng.randrange(2), region_base=0x400,
                 region_size=rng.choice([0x800, 0x100 + size * rng.randrange(0, 64)]))
    mem_limit = rng.choice([MASK64, 0xB00 + rng.randrange(0x100)])
    expected = reference(root, chain, memory, mem_limit)
    popped, quiet = _run(root, chain, memory, seed=seed, mem_limit=mem_limit,
                         line_bytes=rng.choice([8, 16, 64]), depth=rng.choice([2, 4, 8]),
                         ports=rng.randrange(1, 4))
    assert popped == expected, (root, chain, mem_limit)
    assert quiet > 50


def test_a_wrapped_index_stops_the_chain():
    """b = id << 62 wraps for the second id (1 << 62 is in range for id 1; 2 << 62 is not):
    one value, then nothing, although the address's low 64 bits would be in the region."""
    memory = {0x100 + k: 0 for k in range(64)}
    memory[0x100] = 0          # id 0 -> b = 0
    memory[0x108] = 2          # id 2 -> 2 << 62 = 2**63: wraps
    memory[0x110] = 0
    root = dict(base=0x100, lb=0, ub=3, step=1, c=0, stride=8, log2=3, sign=0,
                region_base=0x100, region_size=64)
    chain = dict(ops=1, op=[AluOp.SHL.value, 0], constant=[62, 0], constant_first=[0, 0],
                 base=0x200, stride=1, log2=0, sign=0, region_base=0, region_size=1 << 62)
    memory[0x200] = 77
    expected = reference(root, chain, memory, MASK64)
    assert expected == [77]
    popped, quiet = _run(root, chain, memory, seed=1)
    assert popped == [77] and quiet > 50


def test_parameters_are_checked():
    with pytest.raises(ValueError, match="depth"):
        ChainEngine(3)
    with pytest.raises(ValueError, match="line_bytes"):
        ChainEngine(4, line_bytes=12)
    with pytest.raises(ValueError, match="ports"):
        ChainEngine(4, ports=0)


def test_contiguous_ranges_continue_and_others_restart():
    """CSR-like ranges [0, 5), [5, 12), [12, 13) continue the root's sequence (the chain keeps
    its entries, which run past each range's end once continued); [3, 9) restarts both. Each
    range's values come in order, counted from the reference of that range alone."""
    seed = fresh_seed("chain engine, ranges")
    rng = random.Random(seed)
    memory = _memory(rng)
    root = dict(base=0x100, step=1, c=0, stride=4, log2=2, sign=0, region_base=0x100,
                region_size=4 * 64)
    chain = dict(ops=1, op=[AluOp.AND.value, 0], constant=[31, 0], constant_first=[0, 0],
                 base=0x800, stride=8, log2=3, sign=1, region_base=0x800, region_size=8 * 32)
    ranges = [(0, 5), (5, 12), (12, 13), (3, 9)]
    dut = ChainEngine(4, 16, 2)
    got = []

    async def testbench(ctx):
        _configure(ctx, dut, root, chain, MASK64)
        mem = _Memory(dut, memory, rng, line_bytes=16, ports=2, latency=(1, 10))
        cycle = 0

        async def step():
            nonlocal cycle
            mem.cycle(ctx, cycle)
            await ctx.tick()
            cycle += 1

        ctx.set(dut.clear, 1)
        await step()
        ctx.set(dut.clear, 0)
        got.extend(await pop_ranges(ctx, dut, ranges, step, rng))

    run_sim(dut, testbench)
    for (lb, ub), values in zip(ranges, got, strict=True):
        assert values == reference(dict(root, lb=lb, ub=ub), chain, memory, MASK64), (lb, ub)


# --- The unit with a chain engine, in the Amaranth simulator, against the golden model -------

CHAINED = dataclasses.replace(TmuConfig.small(), chain_engines=1)


@pytest.mark.parametrize("variant", sorted(VARIANTS))
def test_chain_programs_match_the_golden_model(variant):
    """Every variant (faults included) on one layer, with back-pressure: tokens, fault code
    and address equal the golden model's."""
    seed = fresh_seed(f"chain program {variant}")
    case = chain_case(variant, variant, seed=seed)
    r = run_on_amaranth(case.program, case.memory, case.args, config=CHAINED, backpressure=0.3,
                        seed=seed)
    assert_matches(case, r, CHAINED)
    assert r.stats["uops"] > 0                # decoded, ran


@pytest.mark.parametrize("variant", ["hash", "region"])
def test_chain_across_layer_entries(variant):
    """Two layers: the chained layer entered once per group (empty groups included), its
    ranges contiguous, so the engine continues across them; the root also pushed."""
    seed = fresh_seed(f"chain program {variant}, groups")
    case = chain_case(variant, variant, groups=(3, 0, 4, 1, 5), push_root=True, seed=seed)
    r = run_on_amaranth(case.program, case.memory, case.args, config=CHAINED, seed=seed)
    assert_matches(case, r, CHAINED)
    assert r.stats["uops"] > 0


def _block_waits(case):
    waits = {}
    for engines in (0, 1):
        config = dataclasses.replace(TmuConfig.small(), chain_engines=engines)
        r = run_on_amaranth(case.program, case.memory, case.args, config=config)
        assert_matches(case, r, config)
        waits[engines] = r.stats["block_wait_cycles"]
    return waits


def test_the_chain_engine_serves_the_chained_load():
    """The same program without the engine waits a memory latency per iteration for the
    chained load; with it the waits are the pipeline's fill only (fewer than a third)."""
    waits = _block_waits(chain_case("hash", "hash", n=24))
    assert waits[1] * 3 < waits[0], waits


def test_no_engine_for_a_chain_whose_multiply_could_wrap():
    """``remap[id * 3]``: the MUL is the last operation, its wrap would be the address's
    ``ADDR_OVERFLOW``, which the engine's ALU does not compute: the decoder gives no engine,
    and the unit waits for every load as without one (same tokens as the golden model)."""
    waits = _block_waits(chain_case("mul_last", "mul_last", n=24))
    assert waits[1] == waits[0] > 0, waits


def test_chain_engine_with_a_tiny_reorder_buffer():
    """Two reorder-buffer entries and one affine engine of 2: the run-ahead slots outnumber the
    reorder buffer's, so the tags' index is wider than a slot number (``tag_index_bits``)."""
    config = dataclasses.replace(TmuConfig.small(), max_inflight=2, prefetchers=1,
                                 prefetch_depth=2, chain_engines=1)
    assert config.tag_index_bits > config.rob_bits
    seed = fresh_seed("chain program, tiny reorder buffer")
    for variant in ("hash", "root_cut"):
        case = chain_case(variant, variant, groups=(2, 3, 0, 2), seed=seed)
        r = run_on_amaranth(case.program, case.memory, case.args, config=config,
                            backpressure=0.3, seed=seed)
        assert_matches(case, r, config)
        assert r.stats["uops"] > 0


@pytest.mark.parametrize("n", range(4))
def test_random_programs_on_a_unit_with_a_chain_engine(n):
    """tb.programs' random ISA v0 and v1 programs (rarely a chain) on the small unit with a
    chain engine: its engine index, tags and decode logic change nothing else."""
    from tb.programs import random_case, random_v1_case
    seed = fresh_seed("random programs, chain engine") + n
    for case in (random_case(seed, layers=CHAINED.layers, streams=CHAINED.streams,
                             actions=CHAINED.actions, regions=2, args=CHAINED.args),
                 random_v1_case(seed + 1000, CHAINED, block_prob=0.2, lockstep_prob=0.2)):
        r = run_on_amaranth(case.program, case.memory, case.args, config=CHAINED,
                            backpressure=0.3, seed=seed)
        assert_matches(case, r, CHAINED)
