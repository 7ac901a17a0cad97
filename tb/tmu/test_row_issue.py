"""The row issue block (``hw/tmu/row_issue.py``) in the Amaranth simulator: random runs handed
over with random gaps, grants withheld at random; every line of every run is requested once, in
order, with its slot and the description of its elements, against a Python model."""

import random

import pytest

from hw.tmu import TmuConfig
from hw.tmu.row_issue import RowIssue
from tb.seeds import fresh_seed
from tb.sim_helpers import run_sim


def _expected_lines(job, line_bytes):
    """(address, slot, offset, count, flush, useful bytes) per line of a run."""
    out = []
    addr, left, slot = job["addr"], job["count"], job["first_slot"]
    size = 1 << job["log2_size"]
    while left:
        offset = addr % line_bytes
        count = min(left, (line_bytes - offset) // size)
        left -= count
        out.append((addr, slot, offset, count, job["flush"] and left == 0, count * size))
        addr = addr - offset + line_bytes
        slot = (slot + 1) % 2 ** 32
    return out


@pytest.mark.parametrize("lines", [1, 2, 4, 8])
@pytest.mark.parametrize("config", [TmuConfig(), TmuConfig.small()], ids=["default", "small"])
def test_runs_become_line_requests_in_order(config, lines):
    seed = fresh_seed(f"row issue {config.line_bytes}")
    rng = random.Random(seed)
    lb, slot_mask = config.line_bytes, config.max_inflight - 1
    jobs, expected, slot = [], [], 0
    for _ in range(60):
        log2 = rng.randrange(4)
        size = 1 << log2
        addr = rng.randrange(0, 1 << 20, size)
        room = config.row_chunk_lines * lb - addr % lb
        job = dict(addr=addr, count=rng.randrange(1, room // size + 1), log2_size=log2,
                   sign=rng.randrange(2), pack=rng.randrange(4), flush=rng.randrange(2),
                   first_slot=slot)
        run = _expected_lines(job, lb)
        expected += [(a, s & slot_mask, o, c, f, b, job["log2_size"], job["sign"], job["pack"])
                     for a, s, o, c, f, b in run]
        slot = (slot + len(run)) & slot_mask
        jobs.append(job)
    dut = RowIssue(config, lines)
    got = []

    async def producer(ctx):
        for job in jobs:
            ctx.set(dut.job.valid, 0)
            for _ in range(rng.choice([0, 0, 2])):
                await ctx.tick()
            ctx.set(dut.job.valid, 1)
            ctx.set(dut.job.payload, job)
            await ctx.tick().until(dut.job.ready)
        ctx.set(dut.job.valid, 0)

    async def memory(ctx):
        grng = random.Random(seed + 1)
        for _ in range(5000):
            # Each request's grant on its own (the request buffers' readies), in any
            # combination: the block takes a prefix of the run's lines, none twice.
            grants = [grng.random() < 0.7 for _ in range(lines)]
            for k in range(lines):
                ctx.set(dut.req_grant[k], grants[k])
            for k in range(lines):
                if grants[k] and ctx.get(dut.req_valid[k]):
                    assert ctx.get(dut.entry_en[k])
                    assert ctx.get(dut.entry_slot[k]) == ctx.get(dut.req_slot[k])
                    e = ctx.get(dut.entry[k])
                    got.append((ctx.get(dut.req_addr[k]), ctx.get(dut.req_slot[k]), e.offset,
                                e.count, bool(e.flush), ctx.get(dut.issue_bytes[k]),
                                e.log2_size, e.sign, e.pack))
                    assert e.load == 1
                else:
                    assert not ctx.get(dut.entry_en[k])
            if len(got) >= len(expected):
                break
            await ctx.tick()

    run_sim(dut, producer, memory, deadline=6000e-6)    # (a stuck producer ends too)
    # The request carries the byte address of the first element; the memory serves its line.
    assert got == expected
