"""cocotb differential test: the RTL memory model against the reference model, cycle by cycle.

The contract is ``docs/hbm_model.md`` §2 (cycle semantics), §4 (storage) and §5 (statistics).
The DUT is ``hw.hbm_model.HbmMemory`` alone (Verilog ``ember_hbm_top``) inside the generated
wrapper ``ember_hbm_cocotb_top`` (``tb/hbm_model/test_hbm_cocotb.py`` builds it; the wrapper
makes the clock and marks the ports VPI-visible). In every unit cycle ``t`` the testbench

1. drives the request port with random request timing that obeys the stream rules of
   ``amaranth.lib.stream``: ``req.valid`` rises after a random gap (probability ``p_valid`` per
   cycle), then stays high with the payload unchanged until the request is accepted; the payload
   is the next request of the trace also while ``req.valid`` is low;
2. drives ``resp.ready`` at random (probability ``p_ready`` per cycle);
3. samples ``req.ready`` and the presented response (``resp.valid``, ``tag``, ``write``, ``data``)
   once the inputs have settled, and runs ``HbmReference.step([request] if valid else [],
   resp_ready)`` for the same cycle;
4. requires: ``req.ready`` = ``HbmReference.queue_free(addr)``; the same acceptance; the same
   ``resp.valid`` as ``HbmReference.peek_response()`` and, when valid, the same tag
   (request index mod ``2**tag_bits``), ``write`` and ``data``; the data of every transferred
   read equal to a shadow memory of the testbench (the initial image, updated by every write at
   its acceptance under its byte enables: a read returns the last write accepted before it, §4;
   0 beyond the storage), and 0 for writes.

The first difference fails the test with the trace, the cycle, the request index and both sides'
values (also written to the result file, see below). After the last response the §5 statistics
of the RTL (its ``stats`` output; the wrapper shows each as a 64-bit wire ``stat_<k>``) must
equal ``HbmReference.stats`` exactly. Traces run one after another in one simulator process; the
DUT is reset and its storage image reloaded before each.

Signals are driven right after the falling clock edge; the outputs are read in the read-only
phase of the same time step (settled, combinational in the new inputs); the rising edge that
follows ends the cycle. Cycle 0 is the first cycle after reset.

Job (pickle file named by ``$EMBER_HBM_COCOTB_JOB``; :func:`write_job` writes it)::

    preset            HbmPreset of the RTL build
    reference_preset  HbmPreset of the reference (the same, except in the test that proves a
                      mismatch is reported)
    tag_bits, storage_words, n, seed, traces (names), image (path of the $readmemh image),
    result (path of the JSON result file), shadow_flip (optional: a word index whose bit 0 the
    shadow memory flips, to prove the data check compares)

Result (JSON): ``{"traces": [per-trace summary], "failure": null | {"trace", "cycle",
"request", "field", "rtl", "reference", "accept_cycle_0", "message"}}``.
"""

from __future__ import annotations

import dataclasses
import json
import os
import pickle
import random
from pathlib import Path

import numpy as np

__all__ = ["JOB_ENV", "TRACE_NAMES", "TraceSpec", "build_traces", "storage_image", "write_job"]

JOB_ENV = "EMBER_HBM_COCOTB_JOB"

#: The request traces of issue 3 (``hw.hbm_model.traces``) plus a read/write mix on the storage.
TRACE_NAMES = ("sequential", "strided", "random", "hot_set", "write_bursts", "mixed")

#: Random request timing per trace: probability that ``req.valid`` rises in a cycle while no
#: request is offered, and that ``resp.ready`` is high in a cycle.
_TIMING = {
    "sequential":   (0.9, 0.8),
    "strided":      (0.7, 0.6),
    "random":       (0.8, 0.9),
    "hot_set":      (1.0, 0.5),
    "write_bursts": (0.6, 0.7),
    "mixed":        (0.85, 0.75),
}

_MASK64 = (1 << 64) - 1


@dataclasses.dataclass(frozen=True)
class TraceSpec:
    """One trace of the differential run.

    Attributes
    ----------
    name : str
        One of :data:`TRACE_NAMES`.
    requests : list of hw.hbm_model.reference.Request
        In offer order (``issue_cycle`` is not used: the timing is the random ``req.valid``).
    p_valid, p_ready : float
        Per-cycle probabilities of raising ``req.valid`` (while no request is offered) and of
        ``resp.ready``.
    """

    name: str
    requests: list
    p_valid: float
    p_ready: float


def storage_image(words: int, seed: int) -> np.ndarray:
    """The initial storage contents: ``words`` random odd 64-bit words (uint64), so that no word
    equals the 0 that a missing read or a write's response carries."""
    return np.random.default_rng(seed).integers(0, 1 << 63, words, dtype=np.uint64) * 2 + 1


def build_traces(preset, n: int, seed: int, storage_words: int, names=TRACE_NAMES) -> list[TraceSpec]:
    """The traces for ``preset`` (``HbmPreset``), ``n`` requests each, deterministic in ``seed``.

    Every request gets a random 64-bit word inside its 64-byte access, random write data and
    random byte enables (``Request.data``, ``wstrb``). Footprints: ``sequential`` from byte 0;
    ``strided`` 6208 bytes (33 accesses + 4 KiB: crosses rows, channels and banks); ``random``
    and ``hot_set`` (90 % in 4 KiB) over the preset's capacity (at most 16 GiB); ``write_bursts``
    (bursts of 12 random reads, then 12 writes to consecutive accesses) over the storage;
    ``mixed`` 40 % writes, half of the requests in the first 4 KiB (many reads after writes to
    the same word), half over the storage.

    Raises
    ------
    ValueError
        ``n`` not a positive integer, ``storage_words`` below 512 (4 KiB), or an unknown name.
    """
    from hw.hbm_model import traces
    from hw.hbm_model.reference import Request
    if not isinstance(n, int) or isinstance(n, bool) or n < 1:
        raise ValueError(f"n must be a positive integer, not {n!r}")
    if not isinstance(storage_words, int) or storage_words < 512:
        raise ValueError(f"storage_words must be an integer >= 512 (4 KiB), not {storage_words!r}")
    span = min(preset.capacity_bytes, 1 << 34)
    fp = 8 * storage_words
    out = []
    for k, name in enumerate(names):
        s = seed * 1000 + k
        if name == "sequential":
            reqs = traces.sequential(n)
        elif name == "strided":
            reqs = traces.strided(n, 64 * 33 + 4096)
        elif name == "random":
            reqs = traces.uniform_random(n, span, seed=s)
        elif name == "hot_set":
            reqs = traces.hot_set(n, span, 4096, seed=s)
        elif name == "write_bursts":
            reqs = traces.write_bursts(n, fp, burst=12, seed=s)
        elif name == "mixed":
            near = traces.uniform_random(n, 4096, seed=s, write_fraction=0.4)
            wide = traces.uniform_random(n, fp, seed=s + 1)
            reqs = [dataclasses.replace(r, addr=w.addr) if i % 2 else r
                    for i, (r, w) in enumerate(zip(near, wide))]
        else:
            raise ValueError(f"trace name must be one of {TRACE_NAMES}, not {name!r}")
        rng = random.Random(s)
        reqs = [Request(r.addr + 8 * rng.randrange(8), write=r.write, data=rng.getrandbits(64),
                        wstrb=rng.getrandbits(8) if r.write else 0xFF) for r in reqs]
        p_valid, p_ready = _TIMING[name]
        out.append(TraceSpec(name, reqs, p_valid, p_ready))
    return out


def write_job(path: Path, **job) -> None:
    """Write the job (see the module docstring) for the cocotb test."""
    Path(path).write_bytes(pickle.dumps(job))


# -- the cocotb side -------------------------------------------------------------------------------

class Mismatch(AssertionError):
    """The RTL and the reference differ; ``record`` is the failure entry of the result file."""

    def __init__(self, record):
        super().__init__(record["message"])
        self.record = record


class _Packer:
    """Packs/unpacks a ``data.StructLayout`` payload to/from an integer (the Verilog port)."""

    def __init__(self, layout):
        self.fields = {name: (f.offset, f.width) for name, f in layout}

    def pack(self, **values):
        out = 0
        for name, v in values.items():
            off, width = self.fields[name]
            out |= (int(v) & ((1 << width) - 1)) << off
        return out

    def unpack(self, value):
        return {name: (value >> off) & ((1 << width) - 1) for name, (off, width) in self.fields.items()}


class TB:
    """Clock edges, reset, image load and the lockstep loop on ``ember_hbm_cocotb_top``."""

    def __init__(self, dut, job):
        from cocotb.triggers import FallingEdge, ReadOnly
        from hw.core_if.signatures import mem_request_layout, mem_response_layout
        self.dut = dut
        self.job = job
        self.fall = FallingEdge(dut.clk)
        self.read_only = ReadOnly()
        self.tag_bits = job["tag_bits"]
        self.req = _Packer(mem_request_layout(self.tag_bits))
        self.resp = _Packer(mem_response_layout(self.tag_bits))
        self.image = storage_image(job["storage_words"], job["seed"])
        # What the shadow memory believes was loaded: the image, except in the test that proves
        # the data check compares (``shadow_flip``: a word whose bit 0 the shadow has flipped).
        self.shadow_image = self.image.copy()
        if job.get("shadow_flip") is not None:
            self.shadow_image[job["shadow_flip"]] ^= np.uint64(1)

    async def reset(self):
        """Reset the model and reload the storage image; returns right after the falling edge
        that starts cycle 0 (reset already low)."""
        dut = self.dut
        await self.fall
        dut.rst.value = 1
        dut.req_valid.value = 0
        dut.resp_ready.value = 0
        dut.image_load.value = 1
        await self.fall
        dut.image_load.value = 0
        await self.fall
        dut.rst.value = 0

    def _stats(self):
        from sim.system import memory_stats_dict
        from hw.hbm_model import stat_names
        channels = self.job["preset"].channels
        n = len(stat_names(channels))
        return memory_stats_dict([int(getattr(self.dut, f"stat_{k}").value) for k in range(n)],
                                 channels)

    async def run_trace(self, spec: TraceSpec) -> dict:
        """Run one trace in lockstep with a fresh ``HbmReference``; returns a summary (the
        reference's statistics, cycles). Raises :class:`Mismatch` at the first difference."""
        from hw.hbm_model.reference import HbmReference
        dut, job = self.dut, self.job
        words = job["storage_words"]
        ref = HbmReference(job["reference_preset"], storage_words=words)
        ref.load(0, self.image)
        shadow = {}                              # word -> value written since the image load
        reqs = spec.requests
        n = len(reqs)
        rng = random.Random(f"{job['seed']}-{spec.name}")
        tag_mask = (1 << self.tag_bits) - 1
        await self.reset()

        nxt = done = 0
        valid = False
        in_flight = {}                           # tag -> request index
        expected = {}                            # request index -> data its response carries
        accept_cycle = {}
        max_cycles = 200 * n + 20_000

        def fail(t, field, request, rtl, reference, message=None):
            where = f"trace {spec.name!r}, cycle {t}"
            if request is not None:
                where += f", request {request} ({reqs[request]})"
            record = {
                "trace": spec.name, "cycle": t, "request": request, "field": field,
                "rtl": rtl, "reference": reference, "accept_cycle_0": accept_cycle.get(0),
                "message": f"{where}: " + (message or f"{field} differs: RTL {rtl!r}, "
                                                      f"reference {reference!r}"),
            }
            raise Mismatch(record)

        def payload(i):
            r = reqs[min(i, n - 1)]
            return r, self.req.pack(addr=r.addr, tag=i & tag_mask, write=r.write, wdata=r.data,
                                    wstrb=(r.wstrb if r.write else 0))

        r, word = payload(0)
        dut.req_payload.value = word
        t = 0
        while done < n:
            if t >= max_cycles:
                fail(t, "progress", None, done, done,
                     message=f"only {done} of {n} requests completed in {max_cycles} cycles "
                             f"(the two models agreed in every cycle)")
            # -- inputs of cycle t (we are right after its falling edge) -----------------------
            if not valid and nxt < n and (nxt & tag_mask) not in in_flight \
                    and rng.random() < spec.p_valid:
                valid = True
            ready = rng.random() < spec.p_ready
            dut.req_valid.value = int(valid)
            dut.resp_ready.value = int(ready)
            await self.read_only
            rtl_req_ready = bool(int(dut.req_ready.value))
            rtl_resp = None
            if int(dut.resp_valid.value):
                f = self.resp.unpack(int(dut.resp_payload.value))
                rtl_resp = (f["tag"], bool(f["write"]), f["data"])
            # -- the reference, same cycle, same inputs ------------------------------------------
            ref_ready = ref.queue_free(r.addr)
            peek = ref.peek_response()
            ref_resp = None if peek is None else (peek.index & tag_mask, peek.write, peek.data)
            n_acc, taken = ref.step([r] if valid else [], ready)
            # -- compare -------------------------------------------------------------------------
            index = nxt if nxt < n else None
            if rtl_req_ready != ref_ready:
                fail(t, "req.ready", index, rtl_req_ready, ref_ready)
            accepted = valid and rtl_req_ready
            if accepted != bool(n_acc):
                fail(t, "acceptance", index, accepted, bool(n_acc))
            if (rtl_resp is None) != (ref_resp is None):
                who = in_flight.get(rtl_resp[0]) if rtl_resp else peek.index
                fail(t, "resp.valid", who, rtl_resp is not None, ref_resp is not None)
            if rtl_resp is not None and rtl_resp != ref_resp:
                fail(t, "response (tag, write, data)", peek.index, rtl_resp, ref_resp)
            if ready and ref_resp is not None and taken != peek:
                fail(t, "reference transfer (step vs peek_response)", peek.index, repr(peek), repr(taken))
            # -- bookkeeping ---------------------------------------------------------------------
            if rtl_resp is not None and ready:
                i = in_flight.pop(rtl_resp[0])
                want = expected.pop(i)
                if rtl_resp[2] != want:
                    fail(t, "read data", i, rtl_resp[2], want,
                         message=f"read data differ from the last write accepted before the "
                                 f"read (§4; the image if none): RTL {rtl_resp[2]:#x}, "
                                 f"expected {want:#x}")
                done += 1
            if accepted:
                w = r.addr >> 3
                if r.write:
                    expected[nxt] = 0
                    if w < words:
                        m = sum(0xFF << (8 * b) for b in range(8) if (r.wstrb >> b) & 1)
                        old = shadow.get(w, int(self.shadow_image[w]))
                        shadow[w] = (old & ~m & _MASK64) | (r.data & m)
                else:
                    expected[nxt] = shadow.get(w, int(self.shadow_image[w])) if w < words else 0
                in_flight[nxt & tag_mask] = nxt
                accept_cycle[nxt] = t
                nxt += 1
                valid = False
                r, word = payload(nxt)
            await self.fall
            if accepted:
                dut.req_payload.value = word
            t += 1
        # We are after the falling edge of cycle t: the statistics cover cycles 0 .. t-1.
        dut.req_valid.value = 0
        dut.resp_ready.value = 0
        await self.read_only
        rtl_stats = self._stats()
        ref_stats = ref.stats
        diff = {k: (rtl_stats.get(k), v) for k, v in ref_stats.items() if rtl_stats.get(k) != v}
        if diff:
            fail(t, "statistics (§5) (RTL, reference)", None, {k: d[0] for k, d in diff.items()},
                 {k: d[1] for k, d in diff.items()})
        return {"trace": spec.name, "requests": n, "cycles": t, "p_valid": spec.p_valid,
                "p_ready": spec.p_ready, "stats": ref_stats}


def _write_result(path, result):
    Path(path).write_text(json.dumps(result, indent=1, default=int))


try:
    import cocotb
except ImportError:      # imported outside a simulator (pytest collects this module's helpers)
    cocotb = None

if cocotb is not None:
    @cocotb.test()
    async def differential(dut):
        """All traces of the job, one after another, RTL and reference in lockstep."""
        job = pickle.loads(Path(os.environ[JOB_ENV]).read_bytes())
        tb = TB(dut, job)
        image_path = Path(job["image"])
        image_path.write_text("".join(f"{int(v):016x}\n" for v in tb.image))
        result = {"traces": [], "failure": None}
        specs = build_traces(job["preset"], job["n"], job["seed"], job["storage_words"],
                             job["traces"])
        try:
            for spec in specs:
                summary = await tb.run_trace(spec)
                result["traces"].append(summary)
                dut._log.info("trace %s: %d requests in %d cycles, identical", spec.name,
                              summary["requests"], summary["cycles"])
        except Mismatch as e:
            result["failure"] = e.record
            raise
        finally:
            _write_result(job["result"], result)
