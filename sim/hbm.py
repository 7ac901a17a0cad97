"""Request traces through the RTL memory model alone (Verilator), with the reference's semantics.

>>> from hw.hbm_model.reference import Request, run_requests
>>> rtl = run_requests_on_rtl("HBM2", [Request(0x40), Request(0x80, write=True)])
>>> ref = run_requests(get_preset("HBM2"), [Request(0x40), Request(0x80, write=True)])
>>> [(c.accept_cycle, c.complete_cycle) for c in rtl.completions] == \\
...     [(c.accept_cycle, c.complete_cycle) for c in ref.completions]
True

:func:`run_requests_on_rtl` is the RTL counterpart of ``hw.hbm_model.reference.run_requests``
(any number of ports, word or line ports): same trace-issue semantics (trace order, ``issue_cycle``, ``max_outstanding``),
same ``resp.ready`` draws (``reference.ReadyStream``), same result type (``TraceResult``). No
Python runs per cycle: the trace, the ``resp.ready`` pattern and the storage image are files that
the Verilog driver ``sim/hbm_top.v`` reads with ``$readmemh``; it writes acceptance and
completion cycles, read data, the §5 statistics and the cycle count back with ``$writememh``.

The model (``hw.hbm_model.memory_model(preset, storage="verilog", ports=, line_bytes=)`` in a flat
wrapper ``ember_hbm_top``: each port's signals as one vector) and the driver are built with
``verilator --binary`` once per (preset, storage size, tag width, ports, line width) into
``build/rtl/hbm/<hash>/`` and reused.
"""

from __future__ import annotations

import os
import subprocess
import tempfile
from pathlib import Path
from typing import Sequence

import numpy as np

from sim.verilator import BUILD_ROOT, REPO, VERILATOR_ARGS, _preset, cached_build

__all__ = ["run_requests_on_rtl", "build_hbm_model", "TRACE_TAG_BITS", "MAX_REQUESTS", "MAX_RESTARTS"]


TB_VERILOG = Path(__file__).resolve().parent / "hbm_top.v"
TOP = "ember_hbm_top"
TRACE_TAG_BITS = 12           # 4096 tags: more than any preset can hold in flight (HBM3: 1536)
MAX_REQUESTS = 1 << 20        # per run (the driver's arrays)
READY_WORDS = 1 << 20         # resp.ready pattern: 64 Mi cycles at most
MAX_RESTARTS = 1 << 12        # refresh restarts per run (the driver's array)


def _flat_top(mem):
    """The model with each port group as one vector (``req_valid``, ``req_payload``, ...; port
    ``k``'s payload at bits ``[k*W, (k+1)*W)``), ``refresh_restart`` from the driver, the back
    door and ``stats_clear`` tied off."""
    from amaranth.hdl import Cat, Module
    from amaranth.lib import data, wiring
    from amaranth.lib.wiring import In, Out

    reqs, resps = mem.request_ports, mem.response_ports
    P = len(reqs)
    req_w = len(reqs[0].payload.as_value())
    resp_w = len(resps[0].payload.as_value())

    class FlatTop(wiring.Component):
        def __init__(self):
            super().__init__({
                "req_valid": In(P), "req_ready": Out(P), "req_payload": In(P * req_w),
                "resp_valid": Out(P), "resp_ready": In(P), "resp_payload": Out(P * resp_w),
                "image_load": In(1), "refresh_restart": In(1),
                "stats": Out(data.ArrayLayout(64, len(mem.stat_names))),
            })

        def elaborate(self, platform):
            m = Module()
            m.submodules.mem = mem
            for k, (rq, rs) in enumerate(zip(reqs, resps)):
                m.d.comb += [
                    rq.valid.eq(self.req_valid[k]), self.req_ready[k].eq(rq.ready),
                    rq.payload.eq(self.req_payload[k * req_w:(k + 1) * req_w]),
                    self.resp_valid[k].eq(rs.valid), rs.ready.eq(self.resp_ready[k]),
                ]
            m.d.comb += [self.resp_payload.eq(Cat(rs.payload.as_value() for rs in resps)),
                         mem.image_load.eq(self.image_load), self.stats.eq(mem.stats),
                         mem.refresh_restart.eq(self.refresh_restart)]
            return m

    return FlatTop()


def _model_verilog(preset, words, tag_bits, ports, line_bytes):
    from amaranth.back import verilog
    from hw.hbm_model import memory_model
    mem = memory_model(preset, words=words, tag_bits=tag_bits, storage="verilog", ports=ports,
                       line_bytes=line_bytes)
    text = verilog.convert(_flat_top(mem), name=TOP, emit_src=False)
    return text + "".join(mem.verilog_modules.values()), len(mem.stat_names)


def max_requests(line_bytes: int = 8) -> int:
    """Requests per run at most (the driver's arrays: 2**20 with word ports, fewer with lines)."""
    return MAX_REQUESTS if line_bytes == 8 else MAX_REQUESTS >> 2


def build_hbm_model(preset, *, words: int = 0, tag_bits: int = TRACE_TAG_BITS, ports: int = 1,
                    line_bytes: int = 8) -> tuple[Path, int]:
    """Build (once) the Verilator binary of the memory model of ``preset`` (name or
    ``HbmPreset``) with ``ports`` word (``line_bytes`` 8) or line ports and its trace driver;
    returns (build directory, number of statistics). Cached by ``sim.verilator.cached_build``
    under ``build/rtl/hbm/``."""
    preset = _preset(preset)
    key = repr((preset, words, tag_bits, ports, line_bytes, VERILATOR_ARGS))
    inputs = [p for p in (REPO / "hw" / "hbm_model").glob("*") if p.suffix in (".py", ".v")] + [
        REPO / "hw" / "core_if" / "signatures.py", TB_VERILOG]

    def generate():
        from hw.hbm_model import STORAGE_VERILOG
        text, nstats = _model_verilog(preset, words, tag_bits, ports, line_bytes)
        files = {f"{TOP}.v": text, "hbm_tb.v": TB_VERILOG.read_text(), "nstats": f"{nstats}\n"}
        if words:
            files["ember_hbm_storage.v"] = STORAGE_VERILOG.read_text()
        return files

    def build(build_dir, paths):
        nstats = int((build_dir / "nstats").read_text())
        cmd = (["verilator", "--binary", "--top-module", "ember_hbm_tb", "-o", "Vhbm",
                f"-GTAG_BITS={tag_bits}", f"-GNSTATS={nstats}", f"-GPORTS={ports}",
                f"-GLINE_BITS={8 * line_bytes}", f"-GMAXN={max_requests(line_bytes)}",
                "-Mdir", str(build_dir / "obj_dir"), "-j", str(os.cpu_count() or 1)]
               + VERILATOR_ARGS + [str(p) for p in paths if p.suffix == ".v"])
        with open(build_dir / "build.log", "w") as log:
            subprocess.run(cmd, stdout=log, stderr=subprocess.STDOUT, cwd=build_dir, check=True)

    build_dir = cached_build(key, inputs, generate, build, root=BUILD_ROOT / "hbm")
    return build_dir, int((build_dir / "nstats").read_text())


def _hex_lines(values, bits: int = 64) -> str:
    digits = bits // 4
    return "".join(f"{int(v) & ((1 << bits) - 1):0{digits}x}\n" for v in values)


def _read_hex(path: Path) -> list[int]:
    return [int(x, 16) for x in path.read_text().split() if not x.startswith("//")]


def run_requests_on_rtl(preset, requests: Sequence, *, max_outstanding: int | None = None,
                        resp_backpressure: float = 0.0, seed: int = 0, storage_words: int = 0,
                        storage: np.ndarray | None = None, ports: int = 1, line_bytes: int = 8,
                        refresh_restarts: Sequence[int] = ()):
    """Run a request trace through the RTL memory model (Verilator) with the issue semantics of
    ``hw.hbm_model.reference.run_requests``.

    Parameters
    ----------
    preset : str or HbmPreset
        ``"HBM2"``, ``"HBM3"``, ``"simple"`` or a preset (``hw/hbm_model/presets.py``).
    requests : sequence of reference.Request
        Byte address, write, issue cycle (unit cycles), write data and byte enables.
    max_outstanding : int or None
        At most this many requests accepted and not yet answered (>= 1); ``None``: no limit.
    resp_backpressure : float
        Probability in [0, 1) that ``resp.ready`` is low in a cycle (``reference.ReadyStream``
        draws: the same pattern as the reference for the same ``seed``).
    seed : int
        Seed of the ``resp.ready`` draws.
    storage_words : int
        Storage of the model in 64-bit words (0: timing only; reads return 0). One build per size.
    storage : numpy.ndarray of uint64, optional
        Initial storage image from word 0 (``storage_words`` defaults to its size, rounded up
        to a whole line).
    ports : int
        Request and response ports of the model (>= 1; 1 with the ``simple`` preset).
    line_bytes : int
        Data width of a port (8: 64-bit words; up to the preset's ``access_bytes``): reads
        return, and ``Request.data``/``wstrb`` carry, the aligned line.
    refresh_restarts : sequence of int
        Cycles in which the model's ``refresh_restart`` input is high (strictly increasing,
        >= 0; at most ``MAX_RESTARTS``), as ``reference.run_requests``' argument of that name.

    Returns
    -------
    reference.TraceResult
        One ``Completion`` per request (trace order), the §5 statistics of the RTL, and
        ``cycles`` = last completion cycle + 1.

    Raises
    ------
    ValueError
        A bad argument (named), or more than ``max_requests(line_bytes)`` requests.
    RuntimeError
        The build or the simulation failed, or a tag was still in flight when its request came
        up (``TRACE_TAG_BITS`` too small for this trace: the run would differ from the reference).
    """
    from hw.hbm_model.reference import (Completion, ReadyStream, Request, TraceResult,
                                        check_line_bytes, check_refresh_restarts)
    from sim.system import memory_stats_dict
    preset = _preset(preset)
    if not isinstance(ports, int) or isinstance(ports, bool) or ports < 1 \
            or (ports > 1 and preset.fixed_latency is not None):
        raise ValueError(f"ports must be a positive integer (1 with the fixed-latency preset "
                         f"{preset.name!r}), not {ports!r}" if preset.fixed_latency is not None
                         else f"ports must be a positive integer, not {ports!r}")
    check_line_bytes(preset, line_bytes)
    restarts = check_refresh_restarts(refresh_restarts)
    if len(restarts) > MAX_RESTARTS or (restarts and restarts[-1] >= 1 << 62):
        raise ValueError(f"refresh_restarts must hold at most {MAX_RESTARTS} cycles below 2**62, "
                         f"not {len(restarts)} up to {restarts[-1]}")
    if max_outstanding is not None and (not isinstance(max_outstanding, int)
                                        or isinstance(max_outstanding, bool) or max_outstanding < 1):
        raise ValueError(f"max_outstanding must be None or a positive integer, not {max_outstanding!r}")
    if not isinstance(resp_backpressure, (int, float)) or not 0.0 <= resp_backpressure < 1.0:
        raise ValueError(f"resp_backpressure must be a probability in [0, 1), not {resp_backpressure!r}")
    if len(requests) > max_requests(line_bytes):
        raise ValueError(f"requests must hold at most {max_requests(line_bytes)} requests "
                         f"(line_bytes {line_bytes}), not {len(requests)}")
    for i, r in enumerate(requests):
        if not isinstance(r, Request):
            raise ValueError(f"requests[{i}] must be a Request, not {r!r}")
        if not isinstance(r.addr, int) or not 0 <= r.addr < 1 << 64:
            raise ValueError(f"requests[{i}].addr must be a non-negative 64-bit integer, not {r.addr!r}")
        if not isinstance(r.issue_cycle, int) or not 0 <= r.issue_cycle < 1 << 40:
            raise ValueError(f"requests[{i}].issue_cycle must be a non-negative integer below "
                             f"2**40, not {r.issue_cycle!r}")
    if storage is not None:
        storage = np.asarray(storage, dtype=np.uint64).ravel()
        storage_words = max(storage_words, storage.size)
    if not isinstance(storage_words, int) or storage_words < 0:
        raise ValueError(f"storage_words must be a non-negative integer, not {storage_words!r}")
    line_words = line_bytes // 8
    storage_words = -(-storage_words // line_words) * line_words
    channels = 1 if preset.fixed_latency is not None else preset.channels
    if not requests:
        from hw.hbm_model.reference import run_requests
        return run_requests(preset, [], storage_words=storage_words, ports=ports,
                            line_bytes=line_bytes)
    build_dir, nstats = build_hbm_model(preset, words=storage_words, ports=ports,
                                        line_bytes=line_bytes)

    n = len(requests)
    ready_len = 0
    if resp_backpressure > 0:
        # Enough cycles for the run in practice; doubled and rerun if the driver runs out.
        ready_len = min(64 * READY_WORDS, 1 << max(16, (64 * n + max(r.issue_cycle for r in requests)).bit_length()))
    while True:
        with tempfile.TemporaryDirectory(prefix="ember_hbm_") as tmp:
            tmp = Path(tmp)
            (tmp / "addr.hex").write_text(_hex_lines(r.addr for r in requests))
            (tmp / "meta.hex").write_text(_hex_lines(
                r.issue_cycle | int(bool(r.write)) << 40 for r in requests))
            (tmp / "wdata.hex").write_text(_hex_lines((r.data for r in requests), 8 * line_bytes))
            (tmp / "wstrb.hex").write_text(_hex_lines((r.wstrb if r.write else 0 for r in requests),
                                                      line_bytes))
            plus = [f"+N={n}", f"+ADDR={tmp / 'addr.hex'}", f"+META={tmp / 'meta.hex'}",
                    f"+WDATA={tmp / 'wdata.hex'}", f"+WSTRB={tmp / 'wstrb.hex'}",
                    f"+OUT_ACCEPT={tmp / 'acc.hex'}",
                    f"+OUT_COMPLETE={tmp / 'cmp.hex'}", f"+OUT_DATA={tmp / 'data.hex'}",
                    f"+OUT_STATS={tmp / 'stats.hex'}", f"+OUT_INFO={tmp / 'info.hex'}"]
            if max_outstanding is not None:
                plus.append(f"+LIMIT={max_outstanding}")
            if restarts:
                (tmp / "restart.hex").write_text(_hex_lines(restarts))
                plus += [f"+RESTART={tmp / 'restart.hex'}", f"+NRESTART={len(restarts)}"]
            if ready_len:
                nwords = ready_len // 64
                rng = np.random.default_rng(seed)
                chunk = ReadyStream._CHUNK
                draws = rng.random(-(-ready_len // chunk) * chunk)[:ready_len] >= float(resp_backpressure)
                words = np.packbits(draws.reshape(nwords, 64)[:, ::-1], axis=1).view(">u8").ravel()
                (tmp / "ready.hex").write_text(_hex_lines(words))
                plus += [f"+READY={tmp / 'ready.hex'}", f"+READY_LEN={ready_len}"]
            if storage_words and storage is not None:
                (tmp / "image.hex").write_text(_hex_lines(storage))
                plus.append(f"+HBM_IMAGE={tmp / 'image.hex'}")
                plus.append("+IMAGE=1")
            log = tmp / "sim.log"
            with open(log, "w") as f:
                proc = subprocess.run([str(build_dir / "obj_dir" / "Vhbm")] + plus, stdout=f,
                                      stderr=subprocess.STDOUT, cwd=tmp)
            if proc.returncode or not (tmp / "info.hex").is_file():
                raise RuntimeError(f"the memory-model simulation failed:\n"
                                   f"{log.read_text(errors='replace')[-3000:]}")
            cycles, tag_stalls, overflow = _read_hex(tmp / "info.hex")
            if overflow:
                if ready_len >= 64 * READY_WORDS:
                    raise RuntimeError(f"the trace did not finish within {ready_len} cycles")
                ready_len *= 2
                continue
            if tag_stalls:
                raise RuntimeError(f"a request's tag (index mod 2**{TRACE_TAG_BITS}) was still in "
                                   f"flight when it came up ({tag_stalls} cycles): this trace "
                                   f"starves a request for {1 << TRACE_TAG_BITS} others")
            acc = _read_hex(tmp / "acc.hex")
            cmp_ = _read_hex(tmp / "cmp.hex")
            data = _read_hex(tmp / "data.hex")
            stats_values = _read_hex(tmp / "stats.hex")
            break
    completions = [Completion(i, acc[i], cmp_[i], data[i], bool(r.write))
                   for i, r in enumerate(requests)]
    stats = memory_stats_dict(stats_values, channels)
    return TraceResult(completions=completions, stats=stats, cycles=cycles, preset=preset)
