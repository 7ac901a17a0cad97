"""Trace format (DRAMSim3) and pattern generators."""

import numpy as np
import pytest

from hw.hbm_model.reference import Request
from hw.hbm_model.traces import (embedding_gather, format_trace, hot_set, parse_trace, read_trace,
                                 sequential, strided, uniform_random, write_bursts, write_trace)


def test_round_trip(tmp_path):
    reqs = [Request(0x1F40, issue_cycle=0), Request(0x3FFFFFFC0, write=True, issue_cycle=12)]
    write_trace(reqs, tmp_path / "t.trace")
    assert (tmp_path / "t.trace").read_text() == "0x1f40 READ 0\n0x3ffffffc0 WRITE 12\n"
    assert read_trace(tmp_path / "t.trace") == reqs


def test_parse_skips_blank_and_comment_lines():
    assert parse_trace(["# header", "", "0xABC READ 5  "]) == [Request(0xABC, issue_cycle=5)]


@pytest.mark.parametrize("line", ["0x40 LOAD 3", "40 READ 3", "0x40 READ", "0x4g READ 1",
                                  "0x40 READ -1"])
def test_parse_error_names_line(line):
    with pytest.raises(ValueError) as e:
        parse_trace(["0x0 READ 0", line], name="x.trace")
    assert str(e.value) == f"x.trace:2: expected '0x<hex address> READ|WRITE <cycle>', not {line!r}"


def test_generators():
    assert [r.addr for r in sequential(3, start=70)] == [64, 128, 192]
    assert [r.issue_cycle for r in sequential(3, interval=4)] == [0, 4, 8]
    assert [r.addr for r in strided(3, 4096)] == [0, 4096, 8192]
    with pytest.raises(ValueError) as e:
        strided(3, 100)
    assert str(e.value) == "stride must be a positive multiple of 64 bytes, not 100"
    u = uniform_random(2000, 1 << 20, seed=1, write_fraction=0.25)
    a = np.array([r.addr for r in u])
    assert a.min() >= 0 and a.max() < 1 << 20 and not (a % 64).any()
    assert 0.2 < np.mean([r.write for r in u]) < 0.3
    h = np.array([r.addr for r in hot_set(4000, 1 << 30, 1 << 16, seed=2)])
    lo = np.sort(h)[len(h) // 2]
    assert np.mean(np.abs(h - lo) < (1 << 16)) > 0.85      # most in one 64 KiB region
    w = write_bursts(64, 1 << 20, burst=16)
    assert [r.write for r in w[:32]] == [False] * 16 + [True] * 16
    assert np.diff([r.addr for r in w[16:32]]).tolist() == [64] * 15


def test_embedding_gather_rows():
    idx = np.array([5, 0, 5])
    g = embedding_gather(20, indices=idx)       # 80 B per row -> 2 accesses, row stride 128 B
    assert [r.addr for r in g] == [640, 704, 0, 64, 640, 704]
    from sw.runtime.datasets import load_cora
    cora = embedding_gather(64, indices=load_cora().indices)
    assert len(cora) == 4 * len(load_cora().indices)


def test_ceiling_is_the_memory_alone_on_the_trace():
    """On the fixed-latency memory (one port: 64 B/cycle peak, 32-cycle latency) N line reads
    offered at cycle 0 take N + 32 cycles; HBM2 gets 4 ports (256 B/cycle peak / 64 B)."""
    from hw.hbm_model.presets import get_preset
    from hw.hbm_model.traces import ceiling, embedding_gather
    reqs = embedding_gather(16, indices=np.arange(100) * 7)
    bound, ports, cycles = ceiling(get_preset("simple"), reqs)
    assert (ports, cycles) == (1, 100 + 32) and bound == 100 * 64 / 132
    bound, ports, cycles = ceiling(get_preset("HBM2"), reqs)
    assert ports == 4 and 0 < bound <= 256
    with pytest.raises(ValueError, match="requests must be a non-empty trace"):
        ceiling(get_preset("HBM2"), [])
