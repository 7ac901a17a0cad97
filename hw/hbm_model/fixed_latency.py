"""The ``simple`` memory model (``docs/hbm_model.md`` §3): one channel, fixed latency, in order.

Not modelled: channels, banks, row buffers, refresh, bandwidth limits beyond one request and
one response per cycle. ``hw/hbm_model/hbm.py`` is the HBM model behind the same tagged interface;
:func:`hw.hbm_model.memory_model` picks one by preset.
"""

from pathlib import Path

from amaranth.hdl import Module, Mux, Signal
from amaranth.lib import data, wiring
from amaranth.lib.wiring import In, Out

from ..core_if.signatures import BackdoorSignature
from .ports import RequestSignature, ResponseSignature
from .blocks import STATS_VERILOG, Statistics, Storage, TIME_BITS, stat_names


__all__ = ["FixedLatencyMemory", "STORAGE_VERILOG"]


#: Verilog source of the ``ember_hbm_storage`` module used when ``storage="verilog"``.
STORAGE_VERILOG = Path(__file__).with_name("storage.v")


class FixedLatencyMemory(wiring.Component):
    """A memory of 64-bit words answering tagged requests after a fixed latency (``simple``).

    Parameters
    ----------
    words : int
        Storage size in 64-bit words, >= 0 (0: timing only, as ``HbmMemory``; checked by
        ``blocks.Storage``). Bytes at addresses >= ``8 * words`` read as 0.
    tag_bits : int
        Width of the request/response tag, >= 1.
    latency : int
        Cycles from a request accepted (``req.valid & req.ready`` at a clock edge) to its
        response valid; >= 1. Default 32.
    storage : str
        ``"memory"``: an ``amaranth.lib.memory.Memory`` (simulates in Amaranth; practical for
        small sizes). ``"verilog"``: the ``ember_hbm_storage`` module of ``storage.v`` (Verilator
        builds of any size; also offers ``image_clear``/``image_load``).
    init : sequence of int, optional
        Initial storage contents (``storage="memory"`` only).
    line_bytes : int
        Data width of the port (``ports.py``): 8 (default, a 64-bit word) or a larger power of
        two up to 64 (a line; ``words`` a multiple of it).

    Members
    -------
    req : In(MemRequestSignature(tag_bits))
        Requests (byte address, tag, write, wdata, wstrb); ready unless the response pipeline is
        stalled. The storage is read or written at acceptance (§4).
    resp : Out(MemResponseSignature(tag_bits))
        Responses (tag, write, for a read the aligned 64-bit word containing the address), in
        request order, ``latency`` cycles after the request. If ``resp.ready`` is low the whole
        pipeline holds.
    backdoor : In(BackdoorSignature(addr_bits))
        Writes one 64-bit word per cycle into the storage (to load an image before a run).
    image_clear, image_load : In(1)
        ``storage="verilog"`` only: zero the storage / ``$readmemh`` the ``+HBM_IMAGE=`` file
        at this clock edge. Ignored with ``storage="memory"``.
    stats_clear : In(1); stats : Out(ArrayLayout(64, len(stat_names(1))))
        The statistics of ``docs/hbm_model.md`` §5 (``blocks.Statistics``, one channel; ``busy``
        counts accepted requests, as the reference model does; no row or queue statistics).
    refresh_restart : In(1)
        Unused (no refresh); present so that both memory models have the same members
        (``HbmMemory.refresh_restart``).
    """

    def __init__(self, *, words, tag_bits, latency=32, storage="memory", init=None,
                 line_bytes=8):
        if not isinstance(tag_bits, int) or tag_bits < 1:
            raise ValueError(f"tag_bits must be a positive integer, not {tag_bits!r}")
        if not isinstance(latency, int) or latency < 1:
            raise ValueError(f"latency must be a positive integer, not {latency!r}")
        if storage not in ("memory", "verilog"):
            raise ValueError(f"storage must be 'memory' or 'verilog', not {storage!r}")
        self._words = words
        self._latency = latency
        if line_bytes not in (8, 16, 32, 64):
            raise ValueError(f"line_bytes must be a power of two from 8 to 64, not {line_bytes!r}")
        self.line_bytes = line_bytes
        self.ports = 1
        self._storage = Storage(words=words, storage=storage, init=init, line_bytes=line_bytes)
        self._addr_bits = self._storage.addr_bits
        self.stat_names = stat_names(1)
        #: Extra Verilog modules (name -> text): ``stats.v`` with ``storage="verilog"``.
        self.verilog_modules = {}
        self._stats_verilog = storage == "verilog"
        if self._stats_verilog:
            self.verilog_modules["ember_hbm_stats"] = STATS_VERILOG.read_text()
        super().__init__({
            "req":         In(RequestSignature(tag_bits, line_bytes)),
            "resp":        Out(ResponseSignature(tag_bits, line_bytes)),
            "backdoor":    In(BackdoorSignature(self._addr_bits)),
            "image_clear": In(1),
            "image_load":  In(1),
            "stats_clear": In(1),
            "refresh_restart": In(1),
            "stats":       Out(data.ArrayLayout(64, len(self.stat_names))),
        })

    @property
    def request_ports(self):
        """The request ports as a list (``[req]``; as ``HbmMemory.request_ports``)."""
        return [self.req]

    @property
    def response_ports(self):
        """The response ports as a list (``[resp]``)."""
        return [self.resp]

    @property
    def words(self):
        return self._words

    @property
    def latency(self):
        return self._latency

    @property
    def addr_bits(self):
        return self._addr_bits

    def elaborate(self, platform):
        m = Module()
        m.submodules.storage = st = self._storage
        wiring.connect(m, wiring.flipped(self.backdoor), st.backdoor)
        m.d.comb += [st.image_clear.eq(self.image_clear), st.image_load.eq(self.image_load)]

        now = Signal(TIME_BITS)
        m.d.sync += now.eq(now + 1)

        # The pipeline moves when its last stage is empty or being accepted.
        advance = Signal()
        m.d.comb += advance.eq(~self.resp.valid | self.resp.ready)
        m.d.comb += self.req.ready.eq(advance)
        req = self.req.payload
        accept = self.req.valid & advance
        m.d.comb += [
            st.rd_en.eq(advance), st.rd_addr[0].eq(req.addr[3:]),
            st.wr_en.eq(accept & req.write), st.wr_addr[0].eq(req.addr[3:]),
            st.wr_data[0].eq(req.wdata), st.wr_strb[0].eq(req.wstrb),
        ]

        # Stage 1: the storage's read register plus valid/tag/write/acceptance cycle.
        valid = [Signal(name="valid_1")]
        tag   = [Signal.like(req.tag, name="tag_1")]
        write = [Signal(name="write_1")]
        when  = [Signal(TIME_BITS, name="when_1")]
        with m.If(advance):
            m.d.sync += [valid[0].eq(self.req.valid), tag[0].eq(req.tag), write[0].eq(req.write),
                         when[0].eq(now)]
        dat = [Mux(write[0], 0, st.rd_data[0])]
        # Stages 2..latency: a shift register.
        for stage in range(2, self._latency + 1):
            v = Signal(name=f"valid_{stage}")
            t = Signal.like(tag[0], name=f"tag_{stage}")
            w = Signal(name=f"write_{stage}")
            a = Signal(TIME_BITS, name=f"when_{stage}")
            d = Signal(8 * self.line_bytes, name=f"data_{stage}")
            with m.If(advance):
                m.d.sync += [v.eq(valid[-1]), t.eq(tag[-1]), w.eq(write[-1]), a.eq(when[-1]),
                             d.eq(dat[-1])]
            valid.append(v)
            tag.append(t)
            write.append(w)
            when.append(a)
            dat.append(d)

        m.d.comb += [
            self.resp.valid.eq(valid[-1]),
            self.resp.payload.tag.eq(tag[-1]),
            self.resp.payload.write.eq(write[-1]),
            self.resp.payload.data.eq(dat[-1]),
        ]

        m.submodules.stats = stats = Statistics(channels=1, queue_depth=1, access_bytes=64,
                                                burst=1, max_per_cycle=1,
                                                verilog=self._stats_verilog)
        m.d.comb += [
            stats.clear.eq(self.stats_clear),
            stats.accept.eq(accept), stats.accept_write.eq(req.write),
            stats.deliver.eq(self.resp.valid & self.resp.ready),
            stats.deliver_write.eq(write[-1]), stats.deliver_latency[0].eq(now - when[-1]),
            stats.column.eq(accept),
            self.stats.eq(stats.stats),
        ]
        return m
