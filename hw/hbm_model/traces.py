"""Request traces: DRAMSim3's trace format and the standard access patterns.

Trace format (DRAMSim3's trace-based CPU, ``src/cpu.cc``): one request per line,
``0x<hex byte address> READ|WRITE <issue cycle>``; each request is one 64-byte access. Blank
lines and lines starting with ``#`` are skipped here (DRAMSim3 has neither).

Generators return ``list[Request]`` of 64-byte-aligned accesses. ``interval`` (cycles, default 0)
spaces the issue cycles (request ``i`` issues at ``i * interval``); with 0 every request may issue
at once and the model's acceptance paces them (``run_requests`` offers in trace order).
"""

from __future__ import annotations

import math
import re
from pathlib import Path
from typing import Iterable

import numpy as np

from .reference import Request, run_requests

__all__ = ["read_trace", "write_trace", "parse_trace", "format_trace", "sequential", "strided",
           "uniform_random", "hot_set", "write_bursts", "embedding_gather", "ceiling", "PATTERNS"]

ACCESS = 64
_LINE = re.compile(r"^\s*0[xX]([0-9a-fA-F]+)\s+(READ|WRITE)\s+(\d+)\s*$")


def parse_trace(lines: Iterable[str], name: str = "<trace>") -> list[Request]:
    """Parse DRAMSim3 trace lines into requests.

    Raises
    ------
    ValueError
        ``"<name>:<line number>: expected '0x<hex address> READ|WRITE <cycle>', not '<line>'"``.
    """
    out = []
    for no, line in enumerate(lines, 1):
        s = line.strip()
        if not s or s.startswith("#"):
            continue
        m = _LINE.match(s)
        if m is None:
            raise ValueError(f"{name}:{no}: expected '0x<hex address> READ|WRITE <cycle>', "
                             f"not {s!r}")
        out.append(Request(int(m.group(1), 16), write=m.group(2) == "WRITE",
                           issue_cycle=int(m.group(3))))
    return out


def read_trace(path: str | Path) -> list[Request]:
    """Read a DRAMSim3 trace file (see :func:`parse_trace`); ``FileNotFoundError`` if missing."""
    p = Path(path)
    with p.open() as f:
        return parse_trace(f, name=str(path))


def format_trace(requests: Iterable[Request]) -> str:
    """The DRAMSim3 text of ``requests`` (one line each, newline-terminated)."""
    return "".join(f"0x{r.addr:x} {'WRITE' if r.write else 'READ'} {r.issue_cycle}\n"
                   for r in requests)


def write_trace(requests: Iterable[Request], path: str | Path) -> None:
    """Write ``requests`` as a DRAMSim3 trace file."""
    Path(path).write_text(format_trace(requests))


def _check(name, v, least=1):
    if not isinstance(v, (int, np.integer)) or isinstance(v, bool) or v < least:
        rule = "a positive integer" if least == 1 else f"an integer >= {least}"
        raise ValueError(f"{name} must be {rule}, not {v!r}")


def _requests(addrs, writes=None, interval=0):
    _check("interval", interval, 0)
    if writes is None:
        return [Request(int(a), issue_cycle=i * interval) for i, a in enumerate(addrs)]
    return [Request(int(a), write=bool(w), issue_cycle=i * interval)
            for i, (a, w) in enumerate(zip(addrs, writes))]


def sequential(n: int, *, start: int = 0, interval: int = 0) -> list[Request]:
    """``n`` reads of consecutive 64-byte accesses from byte ``start`` (rounded down to 64)."""
    _check("n", n)
    base = start // ACCESS * ACCESS
    return _requests(base + ACCESS * np.arange(n), interval=interval)


def strided(n: int, stride: int, *, start: int = 0, interval: int = 0) -> list[Request]:
    """``n`` reads at ``start + i * stride`` (bytes; ``stride`` a positive multiple of 64)."""
    _check("n", n)
    if not isinstance(stride, int) or stride <= 0 or stride % ACCESS:
        raise ValueError(f"stride must be a positive multiple of {ACCESS} bytes, not {stride!r}")
    return _requests(start // ACCESS * ACCESS + stride * np.arange(n), interval=interval)


def uniform_random(n: int, footprint: int, *, seed: int = 0, write_fraction: float = 0.0,
                   interval: int = 0) -> list[Request]:
    """``n`` accesses uniformly over ``footprint`` bytes (``numpy.random.default_rng(seed)``);
    each is a write with probability ``write_fraction``."""
    _check("n", n)
    _check("footprint", footprint, ACCESS)
    if not 0.0 <= write_fraction <= 1.0:
        raise ValueError(f"write_fraction must be in [0, 1], not {write_fraction!r}")
    rng = np.random.default_rng(seed)
    addrs = rng.integers(0, footprint // ACCESS, n) * ACCESS
    writes = rng.random(n) < write_fraction if write_fraction else None
    return _requests(addrs, writes, interval)


def hot_set(n: int, footprint: int, hot_bytes: int, *, hot_fraction: float = 0.9, seed: int = 0,
            interval: int = 0) -> list[Request]:
    """``n`` reads: with probability ``hot_fraction`` uniformly in the first ``hot_bytes`` of a
    randomly placed hot region, otherwise uniformly over ``footprint`` bytes."""
    _check("n", n)
    _check("footprint", footprint, ACCESS)
    _check("hot_bytes", hot_bytes, ACCESS)
    if hot_bytes > footprint:
        raise ValueError(f"hot_bytes must not exceed footprint ({footprint}), not {hot_bytes!r}")
    if not 0.0 <= hot_fraction <= 1.0:
        raise ValueError(f"hot_fraction must be in [0, 1], not {hot_fraction!r}")
    rng = np.random.default_rng(seed)
    hot_lines, lines = hot_bytes // ACCESS, footprint // ACCESS
    hot_base = int(rng.integers(0, lines - hot_lines + 1))
    hot = rng.random(n) < hot_fraction
    addrs = np.where(hot, hot_base + rng.integers(0, hot_lines, n), rng.integers(0, lines, n))
    return _requests(addrs * ACCESS, interval=interval)


def write_bursts(n: int, footprint: int, *, burst: int = 16, seed: int = 0,
                 interval: int = 0) -> list[Request]:
    """``n`` accesses alternating a burst of ``burst`` random reads and a burst of ``burst``
    writes to consecutive 64-byte accesses at a random place (an execute side storing a result
    block), over ``footprint`` bytes."""
    _check("n", n)
    _check("burst", burst)
    _check("footprint", footprint, ACCESS * burst)
    rng = np.random.default_rng(seed)
    lines = footprint // ACCESS
    addrs, writes = [], []
    while len(addrs) < n:
        addrs.extend(rng.integers(0, lines, burst))
        writes.extend([False] * burst)
        base = int(rng.integers(0, lines - burst + 1))
        addrs.extend(range(base, base + burst))
        writes.extend([True] * burst)
    return _requests(np.array(addrs[:n]) * ACCESS, writes[:n], interval)


def embedding_gather(dim: int, *, indices: np.ndarray, base: int = 0,
                     elem_bytes: int = 4, interval: int = 0) -> list[Request]:
    """The reads of an embedding-bag gather: for each index ``i`` in order, the row ``i`` of a
    table of ``dim`` elements of ``elem_bytes`` bytes (f32: 4).

    Rows are padded to whole 64-byte accesses (row stride ``ceil(dim * elem_bytes / 64) * 64``
    bytes from ``base``), so each row is that many consecutive 64-byte reads. ``indices``: the
    rows looked up, e.g. the CSR column indices of the symmetrised Cora graph
    (``sw.runtime.datasets.load_cora().indices``, 10,556 lookups).
    """
    _check("dim", dim)
    _check("elem_bytes", elem_bytes)
    idx = np.asarray(indices, dtype=np.int64).ravel()
    if idx.size == 0 or idx.min() < 0:
        raise ValueError(f"indices must be a non-empty array of non-negative integers, "
                         f"not {indices!r}")
    per_row = math.ceil(dim * elem_bytes / ACCESS)
    addrs = (base // ACCESS * ACCESS
             + (idx[:, None] * per_row + np.arange(per_row)[None, :]).ravel() * ACCESS)
    return _requests(addrs, interval=interval)


def ceiling(preset, requests: list[Request]) -> tuple[float, int, int]:
    """The memory's own ceiling for a trace: ``(bytes per cycle, ports, cycles)`` of the reference
    model when every request is offered from cycle 0 (issue cycles ignored), through as many
    request/response ports as the preset's peak needs (``ceil(peak_bytes_per_cycle /
    access_bytes)``: 4 on HBM2) and with no cap on requests in flight. Bytes are
    ``access_bytes`` per request. A requester of the same trace cannot do better on this memory
    (issue 10: the unit's useful bytes/cycle is reported against it)."""
    if not requests:
        raise ValueError("requests must be a non-empty trace, not []")
    ports = max(1, math.ceil(preset.peak_bytes_per_cycle / preset.access_bytes))
    result = run_requests(preset, [Request(r.addr, r.write, 0) for r in requests], ports=ports)
    return len(requests) * preset.access_bytes / result.cycles, ports, result.cycles


#: Synthetic patterns of the benchmark: name -> (description, generator(n, footprint, seed)).
#: ``scripts/bench_hbm.py`` adds the Cora gather (:func:`embedding_gather` over a data set).
PATTERNS = {
    "sequential": ("consecutive 64-B reads",
                   lambda n, fp, seed: sequential(n)),
    "strided": ("reads 4 KiB apart (one access per row, rotating banks)",
                lambda n, fp, seed: strided(n, 4096)),
    "random": ("uniformly random 64-B reads",
               lambda n, fp, seed: uniform_random(n, fp, seed=seed)),
    "hot-set": ("90 % of reads in a 256 KiB hot region, 10 % uniform",
                lambda n, fp, seed: hot_set(n, fp, 256 << 10, seed=seed)),
    "write-bursts": ("16 random reads, then 16 consecutive writes, repeated",
                     lambda n, fp, seed: write_bursts(n, fp, seed=seed)),
}
