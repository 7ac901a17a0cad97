"""Version-0 memory model: one channel, fixed latency, in-order responses.

Not modelled: channels, banks, row buffers, refresh, bandwidth limits beyond one request and
one response per cycle, writes from the access unit (it only loads). A later model replaces the
timing (HBM pseudo-channels and banks, out-of-order responses) behind the same tagged interface.
"""

from pathlib import Path

from amaranth.hdl import ClockSignal, Const, Instance, Module, Mux, Signal
from amaranth.lib import memory, wiring
from amaranth.lib.wiring import In, Out

from ..core_if.signatures import BackdoorSignature, MemRequestSignature, MemResponseSignature


__all__ = ["FixedLatencyMemory", "STORAGE_VERILOG"]


#: Verilog source of the ``ember_hbm_storage`` module used when ``storage="verilog"``.
STORAGE_VERILOG = Path(__file__).with_name("storage.v")


class FixedLatencyMemory(wiring.Component):
    """A memory of 64-bit words answering tagged loads after a fixed latency.

    Parameters
    ----------
    words : int
        Storage size in 64-bit words, >= 1. Bytes at addresses >= ``8 * words`` read as 0.
    tag_bits : int
        Width of the request/response tag, >= 1.
    latency : int
        Cycles from a request accepted (``req.valid & req.ready`` at a clock edge) to its
        response valid; >= 1. Default 32.
    storage : str
        ``"memory"``: an ``amaranth.lib.memory.Memory`` (simulates in Amaranth; practical for
        small sizes). ``"verilog"``: the ``ember_hbm_storage`` module of ``storage.v`` (Verilator
        builds of any size; also offers ``image_clear``/``image_load``).

    Members
    -------
    req : In(MemRequestSignature(tag_bits))
        Load requests (byte address, tag); ready unless the response pipeline is stalled.
    resp : Out(MemResponseSignature(tag_bits))
        Responses (tag, the aligned 64-bit word containing the address), in request order,
        ``latency`` cycles after the request. If ``resp.ready`` is low the whole pipeline holds.
    backdoor : In(BackdoorSignature(addr_bits))
        Writes one 64-bit word per cycle into the storage (to load an image before a run).
    image_clear, image_load : In(1)
        ``storage="verilog"`` only: zero the storage / ``$readmemh`` the ``+HBM_IMAGE=`` file
        at this clock edge. Ignored with ``storage="memory"``.
    """

    def __init__(self, *, words, tag_bits, latency=32, storage="memory"):
        if not isinstance(words, int) or words < 1:
            raise ValueError(f"words must be a positive integer, not {words!r}")
        if not isinstance(tag_bits, int) or tag_bits < 1:
            raise ValueError(f"tag_bits must be a positive integer, not {tag_bits!r}")
        if not isinstance(latency, int) or latency < 1:
            raise ValueError(f"latency must be a positive integer, not {latency!r}")
        if storage not in ("memory", "verilog"):
            raise ValueError(f"storage must be 'memory' or 'verilog', not {storage!r}")
        self._words = words
        self._latency = latency
        self._storage = storage
        self._addr_bits = max(1, (words - 1).bit_length())
        super().__init__({
            "req":         In(MemRequestSignature(tag_bits)),
            "resp":        Out(MemResponseSignature(tag_bits)),
            "backdoor":    In(BackdoorSignature(self._addr_bits)),
            "image_clear": In(1),
            "image_load":  In(1),
        })

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

        rd_en   = Signal()
        rd_addr = Signal(self._addr_bits)
        rd_data = Signal(64)
        if self._storage == "memory":
            m.submodules.storage = storage = memory.Memory(shape=64, depth=self._words, init=[])
            wr = storage.write_port()
            rd = storage.read_port()
            m.d.comb += [
                wr.addr.eq(self.backdoor.addr), wr.data.eq(self.backdoor.data),
                wr.en.eq(self.backdoor.en),
                rd.addr.eq(rd_addr), rd.en.eq(rd_en), rd_data.eq(rd.data),
            ]
        else:
            m.submodules.storage = Instance("ember_hbm_storage",
                p_WORDS=self._words, p_ABITS=self._addr_bits,
                i_clk=ClockSignal(),
                i_rd_en=rd_en, i_rd_addr=rd_addr, o_rd_data=rd_data,
                i_wr_en=self.backdoor.en, i_wr_addr=self.backdoor.addr,
                i_wr_data=self.backdoor.data,
                i_image_clear=self.image_clear, i_image_load=self.image_load)

        # The pipeline moves when its last stage is empty or being accepted.
        advance = Signal()
        m.d.comb += advance.eq(~self.resp.valid | self.resp.ready)
        m.d.comb += self.req.ready.eq(advance)

        word = self.req.payload.addr[3:]
        m.d.comb += [rd_en.eq(advance), rd_addr.eq(word)]

        # Stage 1: the storage's read register plus valid/tag/in-range flags.
        valid = [Signal(name="valid_1")]
        tag   = [Signal.like(self.req.payload.tag, name="tag_1")]
        inr   = Signal(name="in_range_1")
        with m.If(advance):
            m.d.sync += [
                valid[0].eq(self.req.valid),
                tag[0].eq(self.req.payload.tag),
                inr.eq(word < self._words),
            ]
        dat = [Mux(inr, rd_data, 0)]
        # Stages 2..latency: a shift register.
        for stage in range(2, self._latency + 1):
            v = Signal(name=f"valid_{stage}")
            t = Signal.like(tag[0], name=f"tag_{stage}")
            d = Signal(64, name=f"data_{stage}")
            with m.If(advance):
                m.d.sync += [v.eq(valid[-1]), t.eq(tag[-1]), d.eq(dat[-1])]
            valid.append(v)
            tag.append(t)
            dat.append(d)

        m.d.comb += [
            self.resp.valid.eq(valid[-1]),
            self.resp.payload.tag.eq(tag[-1]),
            self.resp.payload.data.eq(dat[-1]),
        ]
        return m
