"""The RTL memory model against the Python reference model, request by request.

The contract is ``docs/hbm_model.md`` §2-§5; both models implement it independently
(``hw/hbm_model/hbm.py`` in Amaranth, ``hw/hbm_model/reference.py`` in Python). Every test
requires, for every request, the same acceptance cycle, the same completion cycle (the cycle its
response is transferred) and the same read data, and the same §5 statistics.

Two drivers here (the cocotb version on the Verilator model is tb/hbm_model/test_hbm_cocotb.py):

* **lockstep** (Amaranth simulator, no Verilator): each cycle a random request is offered or not
  (``req.valid`` random while requests remain, the payload the next request) and ``resp.ready``
  is random; the reference's ``HbmReference.step`` runs the same cycle with the same inputs and
  the acceptance and the transferred response are compared in that cycle. Small preset variants
  (2 channels, 16 rows, short queues) keep it fast; this is the fast-suite check.
* **trace** (Verilator, ``sim.hbm.run_requests_on_rtl``): the structured traces of
  ``hw.hbm_model.traces`` with random issue gaps, ``max_outstanding`` and random ``resp.ready``,
  against ``reference.run_requests`` with the same arguments; real presets and variants
  (closed page, refresh-heavy), marked ``slow``.
"""

from __future__ import annotations

import dataclasses
import random

import numpy as np
import pytest
from amaranth.sim import Simulator

from hw.hbm_model import memory_model
from hw.hbm_model.presets import get_preset
from hw.hbm_model.reference import HbmReference, Request, run_requests
from hw.hbm_model import traces

STORAGE_WORDS = 1 << 12          # 32 KiB of data; addresses above read 0 (timing only)


def small(name, **changes):
    """A reduced variant of a preset for fast simulation: 2 channels, 16 rows, short queues."""
    p = get_preset(name)
    return p.replace(**{"channels": 2, "rows": 16, "queue_depth": 6, "response_depth": 3,
                        **changes})


def refresh_heavy(p, refi=300, rfc=40):
    return p.replace(timing=p.timing.replace(tREFI=refi, tRFC=rfc), refresh=True)


def _with_data(reqs, rng, sub_word=True):
    """Random write data/byte enables, and a random 64-bit word inside each 64-byte access."""
    out = []
    for r in reqs:
        addr = r.addr + (8 * rng.randrange(8) if sub_word else 0)
        out.append(dataclasses.replace(r, addr=addr, data=rng.getrandbits(64),
                                       wstrb=rng.getrandbits(8) if r.write else 0xFF))
    return out


def _jitter(reqs, rng, gaps=(0, 0, 0, 1, 2, 7)):
    """Issue cycles with random gaps (the trace driver's random request timing)."""
    t, out = 0, []
    for r in reqs:
        t += rng.choice(gaps)
        out.append(dataclasses.replace(r, issue_cycle=t))
    return out


def pattern(name, n, preset, seed):
    """Request list of a named pattern (``hw.hbm_model.traces``), with data, for ``preset``."""
    rng = random.Random(seed)
    small_fp = 8 * STORAGE_WORDS
    cap = preset.capacity_bytes
    if name == "sequential":
        reqs = traces.sequential(n)
    elif name == "strided":
        reqs = traces.strided(n, 64 * 33 + 4096)
    elif name == "random":
        reqs = traces.uniform_random(n, min(cap, 1 << 34), seed=seed)
    elif name == "hot_set":
        reqs = traces.hot_set(n, min(cap, 1 << 34), 4096, seed=seed)
    elif name == "write_bursts":
        reqs = traces.write_bursts(n, small_fp, burst=12, seed=seed)
    elif name == "mixed":          # reads and writes, half inside the storage, half anywhere
        reqs = traces.uniform_random(n, small_fp, seed=seed, write_fraction=0.4)
        wide = traces.uniform_random(n, min(cap, 1 << 34), seed=seed + 1)
        reqs = [dataclasses.replace(r, addr=w.addr) if i % 2 else r
                for i, (r, w) in enumerate(zip(reqs, wide))]
    else:
        raise ValueError(f"unknown pattern {name!r}")
    return _with_data(reqs, rng)


def _image(seed):
    return np.random.default_rng(seed).integers(0, 1 << 63, STORAGE_WORDS, dtype=np.uint64) * 2 + 1


def _stats_equal(rtl, ref):
    diff = {k: (rtl.get(k), v) for k, v in ref.items() if rtl.get(k) != v}
    assert not diff, f"statistics differ (rtl, reference): {diff}"


# -- lockstep in the Amaranth simulator (fast) ------------------------------------------------------

def lockstep(preset, reqs, *, seed, p_valid=0.7, p_ready=0.75, tag_bits=6, max_cycles=20_000):
    """Drive the RTL model and ``HbmReference.step`` with the same random valid/ready per cycle;
    fail at the first cycle where acceptance or the transferred response differ. Returns the
    number of cycles and both statistics dicts."""
    image = _image(seed)
    dut = memory_model(preset, words=STORAGE_WORDS, tag_bits=tag_bits, storage="memory",
                       init=image.tolist())
    ref = HbmReference(preset, storage_words=STORAGE_WORDS)
    ref.load(0, image)
    rng = random.Random(seed)
    state = {}

    async def bench(ctx):
        nxt = done = 0
        in_flight = set()
        for cycle in range(max_cycles):
            r = reqs[nxt] if nxt < len(reqs) else None
            tag = nxt % (1 << tag_bits)
            offer = r is not None and tag not in in_flight and rng.random() < p_valid
            ready = rng.random() < p_ready
            ctx.set(dut.req.valid, offer)
            if offer:
                ctx.set(dut.req.payload, {"addr": r.addr, "tag": tag, "write": r.write,
                                          "wdata": r.data, "wstrb": r.wstrb if r.write else 0})
            ctx.set(dut.resp.ready, ready)
            accepted = bool(offer and ctx.get(dut.req.ready))
            got = None
            if ctx.get(dut.resp.valid) and ready:
                got = (ctx.get(dut.resp.payload.tag), bool(ctx.get(dut.resp.payload.write)),
                       ctx.get(dut.resp.payload.data))
            n, resp = ref.step([r] if offer else [], ready)
            want = None if resp is None else (resp.index % (1 << tag_bits), resp.write, resp.data)
            assert (accepted, got) == (bool(n), want), \
                f"cycle {cycle}: RTL accepted {accepted}, response {got}; reference {bool(n)}, {want}"
            if accepted:
                in_flight.add(tag)
                nxt += 1
            if got is not None:
                in_flight.discard(got[0])
                done += 1
            await ctx.tick()
            if done == len(reqs):
                break
        state["cycles"] = cycle + 1
        state["done"] = done
        names = dut.stat_names
        values = [ctx.get(dut.stats[k]) for k in range(len(names))]
        from sim.system import memory_stats_dict
        state["rtl"] = memory_stats_dict(values, 1 if preset.fixed_latency else preset.channels)

    sim = Simulator(dut)
    sim.add_clock(1e-6)
    sim.add_testbench(bench)
    sim.run()
    assert state["done"] == len(reqs), f"only {state['done']} of {len(reqs)} requests completed"
    ref_stats = ref.stats
    return state["cycles"], state["rtl"], ref_stats


LOCKSTEP_CASES = [
    ("HBM2", "mixed", {}),
    ("HBM3", "hot_set", {}),
    ("HBM2", "write_bursts", {"page_policy": "closed"}),
    ("HBM3", "random", {"refresh_heavy": True}),
    ("HBM2", "sequential", {"queue_depth": 1, "response_depth": 1}),
    ("simple", "mixed", {}),
]


def _variant(name, opts):
    opts = dict(opts)
    if name == "simple":
        return get_preset("simple").replace(fixed_latency=5)
    heavy = opts.pop("refresh_heavy", False)
    p = small(name, refresh=heavy, **opts)
    return refresh_heavy(p) if heavy else p


def test_lockstep_fast():
    """The fast-suite check: HBM2 (reduced) with reads and writes, random valid and ready."""
    p = _variant("HBM2", {"refresh_heavy": True})
    reqs = pattern("mixed", 250, p, seed=1)
    cycles, rtl, ref = lockstep(p, reqs, seed=1)
    _stats_equal(rtl, ref)
    assert ref["refreshes"] > 0 and ref["row_conflicts"] > 0 and ref["writes"] > 0


@pytest.mark.slow
@pytest.mark.parametrize("name, pat, opts", LOCKSTEP_CASES,
                         ids=[f"{n}-{p}-{'-'.join(o) or 'default'}" for n, p, o in LOCKSTEP_CASES])
def test_lockstep(name, pat, opts):
    p = _variant(name, opts)
    reqs = pattern(pat, 300, p, seed=7)
    _, rtl, ref = lockstep(p, reqs, seed=7, p_valid=0.8, p_ready=0.6)
    _stats_equal(rtl, ref)


# -- traces through the Verilator model (slow) -------------------------------------------------------

PATTERNS = ["sequential", "strided", "random", "hot_set", "write_bursts", "mixed"]


def _compare_trace(preset, reqs, **kw):
    from sim.hbm import run_requests_on_rtl
    image = _image(3)
    rtl = run_requests_on_rtl(preset, reqs, storage=image, **kw)
    ref = run_requests(preset, reqs, storage=image, **kw)
    for a, b in zip(rtl.completions, ref.completions):
        assert (a.accept_cycle, a.complete_cycle, a.data) == (b.accept_cycle, b.complete_cycle, b.data), \
            f"request {a.index} ({reqs[a.index]}): RTL {a}, reference {b}"
    assert rtl.cycles == ref.cycles
    _stats_equal(rtl.stats, ref.stats)
    return rtl, ref


def _trace_cases(preset, n, seed):
    rng = random.Random(seed)
    for k, pat in enumerate(PATTERNS):
        reqs = _jitter(pattern(pat, n, preset, seed + k), rng)
        yield pat, reqs


@pytest.mark.slow
@pytest.mark.rtl
@pytest.mark.parametrize("variant", ["small-HBM2", "small-HBM3-closed-refresh", "simple"])
def test_traces_reduced(variant):
    if variant == "small-HBM2":
        p = small("HBM2", refresh=False)
    elif variant == "small-HBM3-closed-refresh":
        p = refresh_heavy(small("HBM3", page_policy="closed"))
    else:
        p = get_preset("simple")
    for k, (pat, reqs) in enumerate(_trace_cases(p, 600, seed=11)):
        _compare_trace(p, reqs)
        _compare_trace(p, reqs, max_outstanding=1 + k * 3, resp_backpressure=0.35, seed=k)


@pytest.mark.slow
@pytest.mark.rtl
@pytest.mark.parametrize("name", ["HBM2", "HBM3"])
def test_traces_full_presets(name):
    p = get_preset(name)
    for k, (pat, reqs) in enumerate(_trace_cases(p, 3000, seed=21)):
        _compare_trace(p, reqs)
        _compare_trace(p, reqs, max_outstanding=4 + 8 * k, resp_backpressure=0.25, seed=k)
    # A long sequential stream crosses refreshes (tREFI 3900 / 6240 cycles).
    rtl, ref = _compare_trace(p, traces.sequential(40_000))
    assert ref.stats["refreshes"] > 0
