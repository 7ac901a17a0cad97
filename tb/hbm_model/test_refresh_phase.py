"""Refresh restart (``docs/hbm_model.md`` §2 "Refresh restart"): the same request stream, run
back to back in one simulation, takes the same cycles and sees the same refreshes as in a fresh
simulation when ``refresh_restart`` is pulsed at the start of each run, and not without it.

JEDEC refresh (JESD235: one REF per tREFI, the channel blocked for tRFC) is periodic; where a run
starts within that period is arbitrary, and on HBM2 (tREFI 3,900, tRFC 260 unit cycles) a run of
a few thousand cycles sees one refresh more or less depending on it (±5 % measured on table 4).
The benchmarks compare two programs; ``refresh_restart`` puts both at the same phase.

* reference model (fast): a random read stream four times back to back, with and without
  restarts (fresh seed, printed);
* the system (Verilator, HBM2, slow): one program four times in one simulation
  (``sim.system.run_many_on_rtl``; ``hw.system.System`` pulses ``refresh_restart`` with START).
"""

from __future__ import annotations

import dataclasses
import random

import pytest

from hw.hbm_model import traces
from hw.hbm_model.presets import get_preset
from hw.hbm_model.reference import HbmReference


def back_to_back(preset, reqs, *, copies, gap, restart, max_outstanding=16):
    """Run ``reqs`` (one port, in order, at most ``max_outstanding`` in flight) ``copies`` times
    in one :class:`HbmReference`, each copy starting ``gap`` idle cycles after the previous one
    finished, with ``refresh_restart`` high in each copy's first cycle if ``restart``. Returns
    ``[(cycles, refreshes), ...]`` per copy: cycles from its first cycle to its last response
    (inclusive), refreshes issued in that span (all channels)."""
    ref = HbmReference(preset)
    out = []
    for _ in range(copies):
        start = ref.cycle
        before = ref.stats["refreshes"]
        nxt = done = 0
        outstanding = 0
        first = True
        while done < len(reqs):
            offer = [reqs[nxt]] if nxt < len(reqs) and outstanding < max_outstanding else []
            n, resp = ref.step(offer, True, refresh_restart=restart and first)
            first = False
            nxt += n
            outstanding += n - (resp is not None)
            done += resp is not None
        out.append((ref.cycle - start, ref.stats["refreshes"] - before))
        for _ in range(gap):
            ref.step()
    return out


def _stream(preset, seed, n):
    reqs = traces.uniform_random(n, min(preset.capacity_bytes, 1 << 34), seed=seed)
    return [dataclasses.replace(r, issue_cycle=0) for r in reqs]


def test_back_to_back_same_phase_reference():
    """HBM2 (real timing): a read stream of ~1.5 tREFI, four times back to back with gaps that
    put each copy at another refresh phase. With restarts every copy takes exactly the cycles and
    refreshes of the first (a fresh memory); without them the copies differ."""
    p = get_preset("HBM2")
    seed = random.randrange(1 << 30)
    print(f"seed {seed}")
    reqs = _stream(p, seed, 1800)
    refi = p.unit_timing().tREFI
    gap = refi // 3 + 17
    with_restart = back_to_back(p, reqs, copies=4, gap=gap, restart=True)
    print("with restart", with_restart)
    cycles, refreshes = with_restart[0]
    # the restart's refresh and at least one periodic one (the run is longer than tREFI)
    assert cycles > refi and refreshes >= 2 * p.channels, with_restart
    assert with_restart == [with_restart[0]] * 4

    without = back_to_back(p, reqs, copies=4, gap=gap, restart=False)
    print("without restart", without)
    assert len(set(without)) > 1, without


def test_run_requests_restarts_skip_idle():
    """``run_requests(refresh_restarts=...)`` skipping idle cycles equals stepping every cycle
    (restarts inside idle stretches must not be skipped), and the restarts change the run."""
    from hw.hbm_model.reference import run_requests
    p = get_preset("HBM2").replace(channels=2, rows=64)
    p = p.replace(timing=p.timing.replace(tREFI=400, tRFC=60))
    seed = random.randrange(1 << 30)
    print(f"seed {seed}")
    rng = random.Random(seed)
    reqs, t = [], 0
    for r in traces.uniform_random(500, 1 << 24, seed=seed, write_fraction=0.3):
        t += rng.choice((0, 0, 1, 3, 40))          # idle stretches between bursts
        reqs.append(dataclasses.replace(r, issue_cycle=t))
    restarts = sorted(rng.sample(range(t), 25))
    fast = run_requests(p, reqs, refresh_restarts=restarts, max_outstanding=8)
    slow = run_requests(p, reqs, refresh_restarts=restarts, max_outstanding=8, skip_idle=False)
    plain = run_requests(p, reqs, max_outstanding=8)
    key = lambda r: [(c.accept_cycle, c.complete_cycle) for c in r.completions]  # noqa: E731
    assert key(fast) == key(slow) and fast.stats == slow.stats
    assert fast.stats["precharges"] != plain.stats["precharges"] or key(fast) != key(plain)
    with pytest.raises(ValueError, match="refresh_restarts"):
        run_requests(p, reqs[:3], refresh_restarts=[5, 5])


@pytest.mark.slow
@pytest.mark.rtl
def test_back_to_back_same_phase_system():
    """The system on HBM2 (Verilator, C++ harness; one build, ~3-6 min, the one of table 4): the
    hand-written EmbeddingBag sum (full inputs, ~6,000 cycles, longer than tREFI) four times in one
    simulation. ``System`` pulses ``refresh_restart`` with START, so every run — the first one
    on a fresh memory and the three after it — takes the same cycles and the same refreshes
    (before the restart: 5,864 / 6,212 / 5,966 / 6,152 cycles, 8 / 16 / 8 / 16 refreshes)."""
    from sim.system import RtlJob, run_many_on_rtl
    from sw.runtime.handwritten.suite import handwritten_kernel
    from sw.runtime.image import bind_arguments, build_image
    from sw.workloads import WORKLOADS

    kernel = handwritten_kernel("eb_sum")
    args = WORKLOADS["eb_sum"].make("full", 0)
    image = build_image(kernel, args)
    job = RtlJob(kernel.program.encode(), image.data, bind_arguments(kernel, args, image))
    results = run_many_on_rtl([job] * 4, memory="HBM2", engine="cpp")
    runs = [(r.cycles, r.memory_stats["refreshes"], r.memory_stats["precharges"]) for r in results]
    print(runs)
    assert all(r.fault_code == 0 for r in results)
    channels = get_preset("HBM2").channels
    assert runs[0][0] > get_preset("HBM2").unit_timing().tREFI and runs[0][1] >= 2 * channels, runs
    assert runs == [runs[0]] * 4, runs
    assert len({tuple(r.data_tokens) for r in results}) == 1
