"""The reference model against closed forms of docs/hbm_model.md §2 (hand-computed from the preset
parameters), a NumPy memory (§4), and itself stepped cycle by cycle (idle skipping)."""

from fractions import Fraction

import numpy as np
import pytest

from hw.hbm_model.presets import PRESETS
from hw.hbm_model.reference import (HbmReference, ReadyStream, Request, hist_percentile,
                                    run_requests)

HBM2, HBM3, SIMPLE = PRESETS["HBM2"], PRESETS["HBM3"], PRESETS["simple"]


def _lat(preset, reqs, **kw):
    r = run_requests(preset, reqs, **kw)
    return [c.latency for c in r.completions], r


@pytest.mark.parametrize("preset", [HBM2, HBM3], ids=lambda p: p.name)
def test_isolated_hit_miss_conflict(preset):
    t = preset.unit_timing()
    a_miss = preset.encode(3, 1, 2, 5, 0)
    a_hit = preset.encode(3, 1, 2, 5, 7)
    a_conf = preset.encode(3, 1, 2, 6, 0)
    lat, r = _lat(preset, [Request(a_miss), Request(a_hit, issue_cycle=300),
                           Request(a_conf, issue_cycle=600)])
    assert lat == [1 + t.tRCD + t.tCL + t.tBURST,
                   1 + t.tCL + t.tBURST,
                   1 + t.tRP + t.tRCD + t.tCL + t.tBURST]
    s = r.stats
    assert (s["row_misses"], s["row_hits"], s["row_conflicts"]) == (1, 1, 1)
    assert (s["activates"], s["precharges"]) == (2, 1)
    # the histogram percentiles (upper bin edges) bracket the exact ones
    assert s["read_latency_max"] == max(lat) and s["read_latency_min"] == min(lat)
    assert hist_percentile(s["read_latency_hist"], 100) == (max(lat) // 4 + 1) * 4


def test_isolated_latencies_hbm2_numbers():
    lat, _ = _lat(HBM2, [Request(0), Request(64, issue_cycle=300),
                         Request(1 << 18, issue_cycle=600)])
    assert lat == [31, 17, 45]


def test_isolated_write_latency():
    t = HBM2.unit_timing()
    lat, r = _lat(HBM2, [Request(0, write=True), Request(64, write=True, issue_cycle=300)])
    assert lat == [1 + t.tRCD + t.tWL + t.tBURST, 1 + t.tWL + t.tBURST]
    assert r.stats["bytes_written"] == 128 and r.stats["bytes_read"] == 0


def test_closed_page_makes_isolated_same_row_accesses_misses():
    p = HBM2.replace(page_policy="closed")
    t = p.unit_timing()
    lat, r = _lat(p, [Request(0), Request(64, issue_cycle=300)])
    assert lat == [1 + t.tRCD + t.tCL + t.tBURST] * 2
    # the first bank was closed in between (the second PRE falls after the run's last response)
    assert r.stats["row_misses"] == 2 and r.stats["row_hits"] == 0 and r.stats["precharges"] == 1
    # open page: the second is a hit
    lat, _ = _lat(HBM2, [Request(0), Request(64, issue_cycle=300)])
    assert lat[1] == 1 + t.tCL + t.tBURST


def _open_then(preset, tail):
    """Open row 5 in banks (bg 0, ba 0) and (bg 1, ba 0) of channel 0, then run ``tail`` from
    cycle 200 (requests (bank_group, write, issue_cycle)). Returns the tail's completions."""
    reqs = [Request(preset.encode(0, 0, 0, 5, 0)), Request(preset.encode(0, 1, 0, 5, 0))]
    reqs += [Request(preset.encode(0, g, 0, 5, 1 + k), write=w, issue_cycle=c)
             for k, (g, w, c) in enumerate(tail)]
    return run_requests(preset, reqs).completions[2:]


@pytest.mark.parametrize("preset", [HBM2, HBM3], ids=lambda p: p.name)
@pytest.mark.parametrize("same_group", [True, False])
def test_write_to_read_turnaround(preset, same_group):
    t = preset.unit_timing()
    wr, rd = _open_then(preset, [(0, True, 200), (0 if same_group else 1, False, 201)])
    # WR accepted 200, issued 201; RD accepted 201, issued when tWTR after the write data allows
    assert (wr.accept_cycle, wr.complete_cycle) == (200, 201 + t.tWL + t.tBURST)
    rd_issue = 201 + t.tWL + t.tBURST + (t.tWTR_L if same_group else t.tWTR_S)
    assert rd.complete_cycle == rd_issue + t.tCL + t.tBURST
    if preset is HBM2:
        assert rd.complete_cycle == (231 if same_group else 229)


@pytest.mark.parametrize("preset", [HBM2, HBM3], ids=lambda p: p.name)
def test_read_to_write_turnaround(preset):
    t = preset.unit_timing()
    rd, wr = _open_then(preset, [(0, False, 200), (1, True, 201)])
    assert rd.complete_cycle == 201 + t.tCL + t.tBURST
    wr_issue = 201 + t.tCL + t.tBURST + t.tRTRS - t.tWL
    assert wr.complete_cycle == wr_issue + t.tWL + t.tBURST
    if preset is HBM2:
        assert wr.complete_cycle == 221


def test_column_commands_spaced_by_tccd():
    # four row hits in one bank group, back to back: tCCD_L' apart; in two groups: tCCD_S'
    t = HBM3.unit_timing()
    same = _open_then(HBM3, [(0, False, 200)] * 4)
    assert np.diff([c.complete_cycle for c in same]).tolist() == [max(t.tCCD_L, t.tBURST)] * 3
    alt = _open_then(HBM3, [(0, False, 200), (1, False, 200)] * 2)
    assert np.diff([c.complete_cycle for c in alt]).tolist() == [max(t.tCCD_S, t.tBURST)] * 3


@pytest.mark.parametrize("preset", [HBM2, HBM3], ids=lambda p: p.name)
def test_refresh_delays_an_isolated_request(preset):
    t = preset.unit_timing()
    # all banks closed: REF in cycle tREFI, ACT tRFC later
    lat, r = _lat(preset, [Request(0, issue_cycle=t.tREFI - 1)])
    assert lat == [1 + t.tRFC + t.tRCD + t.tCL + t.tBURST]
    assert r.stats["refreshes"] == preset.channels
    # a bank open since long ago: PREA in cycle tREFI, REF tRP later
    lat, r = _lat(preset, [Request(0), Request(0, issue_cycle=t.tREFI - 1)])
    assert lat[1] == 1 + t.tRP + t.tRFC + t.tRCD + t.tCL + t.tBURST
    assert r.stats["precharges"] == 1


def test_refresh_takes_its_share_of_a_stream():
    # tREFI shortened so that a short stream sees several refreshes; every refresh stops the
    # data bus for at least tRP + tRFC + tRCD (PREA, REF, ACT, first column command) and at most
    # tRAS + tRP + tRFC + tRCD (PREA waits for the last ACT's tRAS)
    p = HBM2.replace(timing=HBM2.timing.replace(tREFI=1000))
    t = p.unit_timing()
    reqs = [Request(64 * i) for i in range(12000)]
    on = run_requests(p, reqs, ports=4)
    off = run_requests(p.replace(refresh=False), reqs, ports=4)
    n_ref = on.stats["refreshes"] // p.channels
    assert on.stats["refreshes"] == n_ref * p.channels
    assert n_ref == (on.cycles - 1) // t.tREFI
    lost = (on.cycles - off.cycles) / n_ref
    assert t.tRP + t.tRFC + t.tRCD <= lost <= t.tRAS + t.tRP + t.tRFC + t.tRCD


@pytest.mark.parametrize("preset", [HBM2, HBM3], ids=lambda p: p.name)
def test_sequential_stream_reaches_peak(preset):
    # ports = peak bytes per cycle / access bytes (HBM2: 4, HBM3: 8), so that one request and one
    # response port are not the limit; refresh off (its share is tested above)
    ports = int(-(-preset.peak_bytes_per_cycle // preset.access_bytes))
    p = preset.replace(refresh=False)
    r = run_requests(p, [Request(64 * i) for i in range(16000)], ports=ports)
    assert r.fraction_of_peak() >= 0.90
    assert r.stats["activates"] == 16000 // p.columns
    if preset is HBM2:   # HBM2 keeps >= 90 % with refresh (1 - 260/3900 = 93.3 % at most)
        r = run_requests(preset, [Request(64 * i) for i in range(20000)], ports=ports)
        assert r.stats["refreshes"] > 0
        assert 0.90 <= r.fraction_of_peak() <= 1 - preset.timing.tRFC / preset.timing.tREFI


def _steady_bytes_per_cycle(result, access_bytes):
    """Throughput between the 10 % and the 90 % transferred response (leaves out the ramp-up and
    the drain, where 32 random channels finish unevenly)."""
    done = np.sort([c.complete_cycle for c in result.completions])
    a, b = len(done) // 10, len(done) * 9 // 10
    return (b - a) * access_bytes / (done[b] - done[a])


@pytest.mark.parametrize("preset", [HBM2, HBM3], ids=lambda p: p.name)
def test_random_reads_reach_the_activate_bound(preset):
    # Uniformly random 64-B reads: (almost) every access needs its own ACT, so per channel the
    # access rate is at most min(1/tRRD_S, 4/tFAW, banks/tRC, 1/max(tBURST, tCCD_S)) per cycle:
    # bound = channels * access_bytes * that rate (HBM2: 8*64*4/30 = 68.3 B/cycle, 26.7 % of peak;
    # HBM3: 32*64*4/24 = 341.3 B/cycle, 66.7 %). Refresh off, ports 8, no outstanding limit.
    p = preset.replace(refresh=False)
    t = p.unit_timing()
    rate = min(Fraction(1, t.tRRD_S), Fraction(4, t.tFAW), Fraction(p.banks, t.tRC),
               Fraction(1, max(t.tBURST, t.tCCD_S)))
    bound = float(p.channels * p.access_bytes * rate)
    rng = np.random.default_rng(7)
    n = 6000
    reqs = [Request(int(a) * 64) for a in rng.integers(0, p.capacity_bytes // 64, n)]
    # queues deep enough that the in-order port never waits on a full queue: the bound is reached
    deep = run_requests(p.replace(queue_depth=128), reqs, ports=8)
    assert deep.stats["activates"] >= 0.99 * n
    assert 0.95 * bound <= _steady_bytes_per_cycle(deep, p.access_bytes) <= 1.02 * bound
    assert deep.bytes_per_cycle() <= bound
    # the preset's queues: head-of-line blocking at the single in-order port costs up to ~15 %
    # (HBM3: 32 channels whose random occupancies fluctuate around 16 of 32 entries)
    r = run_requests(p, reqs, ports=8)
    assert 0.85 * bound <= _steady_bytes_per_cycle(r, p.access_bytes) <= 1.02 * bound


def test_reads_return_the_last_write_accepted_before_them():
    rng = np.random.default_rng(3)
    words = 64
    image = rng.integers(0, 2**63, words, dtype=np.uint64)
    mem = image.copy()
    reqs, expected = [], []
    cycle = 0
    for _ in range(400):
        cycle += int(rng.integers(0, 3))
        addr = int(rng.integers(0, words + 16)) * 8 + int(rng.integers(0, 8))  # some beyond storage
        if rng.random() < 0.4:
            data, strb = int(rng.integers(0, 2**63)) * 2 + 1, int(rng.integers(0, 256))
            reqs.append(Request(addr, write=True, issue_cycle=cycle, data=data, wstrb=strb))
            if addr // 8 < words:
                m = sum(0xFF << (8 * i) for i in range(8) if strb >> i & 1)
                mem[addr // 8] = np.uint64((int(mem[addr // 8]) & ~m) | (data & m))
            expected.append(0)
        else:
            reqs.append(Request(addr, issue_cycle=cycle))
            expected.append(int(mem[addr // 8]) if addr // 8 < words else 0)
    r = run_requests(HBM3, reqs, storage=image, resp_backpressure=0.2, seed=1, max_outstanding=12)
    assert [c.data for c in r.completions] == expected
    # the completions are not in trace order (responses across channels), yet data follow it
    assert sorted(c.complete_cycle for c in r.completions) != [c.complete_cycle for c in r.completions]


def _random_trace(preset, n, seed, footprint_rows=3, write_p=0.3):
    rng = np.random.default_rng(seed)
    fb = preset.field_bits()
    reqs, cycle = [], 0
    for _ in range(n):
        cycle += int(rng.choice([0, 0, 1, 2, 7]))
        addr = 0
        for name in ("channel", "bank_group", "bank", "column"):
            lsb, w = fb[name]
            addr |= int(rng.integers(0, 1 << min(w, 2))) << lsb
        addr |= int(rng.integers(0, footprint_rows)) << fb["row"][0]
        reqs.append(Request(addr, write=bool(rng.random() < write_p), issue_cycle=cycle,
                            data=int(rng.integers(0, 2**62))))
    return reqs


_SHORT_REFRESH = HBM2.timing.replace(tREFI=400, tRFC=60)

_EQUIV_CASES = [
    ("HBM2", HBM2.replace(timing=_SHORT_REFRESH), dict(max_outstanding=6, resp_backpressure=0.3)),
    ("HBM2-closed", HBM2.replace(page_policy="closed", timing=_SHORT_REFRESH), dict(resp_backpressure=0.2)),
    ("HBM2-ratio3/2", HBM2.replace(clock_ratio=Fraction(3, 2), queue_depth=3, response_depth=2,
                                   timing=_SHORT_REFRESH), dict(resp_backpressure=0.5, seed=4)),
    ("HBM3-ports3", HBM3.replace(queue_depth=4), dict(ports=3, max_outstanding=20, resp_backpressure=0.3)),
    ("simple", SIMPLE, dict(max_outstanding=40, resp_backpressure=0.4)),
    ("simple-ports2", SIMPLE.replace(fixed_latency=3), dict(ports=2)),
]


@pytest.mark.parametrize("name, preset, kw", _EQUIV_CASES, ids=[c[0] for c in _EQUIV_CASES])
def test_idle_skipping_equals_stepping_every_cycle(name, preset, kw):
    reqs = _random_trace(preset, 250, seed=len(name))
    fast = run_requests(preset, reqs, storage_words=1 << 12, **kw)
    slow = run_requests(preset, reqs, storage_words=1 << 12, skip_idle=False, **kw)
    assert [(c.accept_cycle, c.complete_cycle, c.data) for c in fast.completions] == \
        [(c.accept_cycle, c.complete_cycle, c.data) for c in slow.completions]
    assert fast.stats == slow.stats
    assert fast.cycles == slow.cycles == max(c.complete_cycle for c in fast.completions) + 1
    if preset.fixed_latency is None:
        s = fast.stats
        assert s["row_hits"] and s["row_conflicts"] and s["refreshes"] or preset.channels == 32
    out = max(len([c for c in fast.completions if c.accept_cycle <= t < c.complete_cycle])
              for t in range(0, fast.cycles, 5))
    if "max_outstanding" in kw:
        assert out <= kw["max_outstanding"]


def test_step_api_and_peek():
    m = HbmReference(HBM2, storage_words=16)
    m.load(2, np.array([0xABCD], dtype=np.uint64))
    t = HBM2.unit_timing()
    assert m.step([Request(16)]) == (1, None)
    seen = None
    for cycle in range(1, 60):
        peek = m.peek_response()
        n, resp = m.step([], resp_ready=cycle >= 40)
        assert n == 0
        if resp is not None:
            assert resp == peek and seen is None
            seen = (cycle, resp)
    # valid from cycle 1 + tRCD + tCL + tBURST (31), held until ready in cycle 40
    assert seen[0] == 40 and seen[1].data == 0xABCD and seen[1].index == 0
    assert m.stats["read_latency_sum"] == 40 and m.stats["cycles"] == 60
    assert list(m.dump(2, 1)) == [0xABCD]
    with pytest.raises(ValueError) as e:
        m.dump(10, 8)
    assert str(e.value) == "word_addr, n must be a range inside the storage of 16 words, not 10, 8"


def test_simple_preset_fixed_latency_and_hold():
    m = HbmReference(SIMPLE)
    L = SIMPLE.fixed_latency
    assert m.step([Request(0)]) == (1, None)
    got = []
    for cycle in range(1, L + 4):
        ready = cycle not in (L, L + 1)
        n, resp = m.step([Request(64)], resp_ready=ready)
        got.append((cycle, n, resp is not None))
    # accepted every cycle until the response of request 0 is valid (cycle L) and not taken
    assert [g for g in got if g[0] in (L - 1, L, L + 1, L + 2)] == \
        [(L - 1, 1, False), (L, 0, False), (L + 1, 0, False), (L + 2, 1, True)]


def test_queue_full_blocks_in_order():
    # queue_depth 2: the third request to channel 0 waits for a column command; a request to
    # another channel behind it waits too (one in-order port)
    p = HBM2.replace(queue_depth=2)
    t = p.unit_timing()
    reqs = [Request(p.encode(0, 0, 0, 1, k)) for k in range(3)] + [Request(p.encode(1, 0, 0, 1, 0))]
    r = run_requests(p, reqs)
    acc = [c.accept_cycle for c in r.completions]
    first_col = 1 + t.tRCD
    assert acc == [0, 1, first_col + 1, first_col + 2]


def test_ready_stream_matches_per_cycle_draws():
    rs = ReadyStream(0.3, seed=9)
    rng = np.random.default_rng(9)
    draws = [rng.random() >= 0.3 for _ in range(70000)]
    assert [rs(t) for t in range(70000)] == draws
    first = draws.index(True, 100)
    assert rs.next_ready(100) == first


@pytest.mark.parametrize("kw, message", [
    (dict(max_outstanding=0), "max_outstanding must be None or a positive integer, not 0"),
    (dict(ports=0), "ports must be a positive integer, not 0"),
    (dict(resp_backpressure=1.0), "resp_backpressure must be a probability in [0, 1), not 1.0"),
])
def test_run_requests_argument_errors(kw, message):
    with pytest.raises(ValueError) as e:
        run_requests(HBM2, [Request(0)], **kw)
    assert str(e.value) == message


def test_bad_request_error():
    with pytest.raises(ValueError) as e:
        run_requests(HBM2, [Request(0), Request(-8)])
    assert str(e.value) == "requests[1].addr must be a non-negative integer, not -8"
