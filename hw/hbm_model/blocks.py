"""Parts shared by the memory models: the storage array and the statistics counters.

Both follow ``docs/hbm_model.md``: §4 (storage: read or written when a request is accepted) and
§5 (statistics: names and definitions shared with the reference model ``reference.py``).
"""

from amaranth.hdl import ClockSignal, Instance, Module, Mux, Signal
from amaranth.lib import data, memory, wiring
from amaranth.lib.wiring import In, Out

from ..core_if.signatures import BackdoorSignature


__all__ = ["Storage", "Statistics", "stat_names", "HIST_BINS", "HIST_WIDTH", "STAT_BITS",
           "TIME_BITS"]


HIST_BINS = 64    # read-latency histogram: bins [i*W, (i+1)*W), the last one open
HIST_WIDTH = 4    # W, unit cycles
STAT_BITS = 64    # every statistic is a 64-bit counter
TIME_BITS = 48    # cycle counter / timestamps (2.8e14 cycles: never wraps in a simulation)


def stat_names(channels):
    """Names of the statistics in the order of :class:`Statistics`' ``stats`` array (and of the
    ``MEM_STATS`` registers, ``docs/rtl.md`` §3), ``docs/hbm_model.md`` §5."""
    names = ["cycles", "reads", "writes", "bytes_read", "bytes_written",
             "row_hits", "row_misses", "row_conflicts", "activates", "precharges", "refreshes",
             "read_latency_sum", "read_latency_min", "read_latency_max"]
    names += [f"read_latency_hist[{i}]" for i in range(HIST_BINS)]
    for field in ("busy", "queue_occupancy_sum", "queue_occupancy_max"):
        names += [f"{field}[{c}]" for c in range(channels)]
    return names


class Storage(wiring.Component):
    """The data array: 64-bit words, one synchronous read port, one byte-enabled write port that
    the back door shares (back door first).

    Parameters
    ----------
    words : int
        Size in 64-bit words, >= 0; 0: no storage (reads return 0, writes are dropped; a timing-only
        model for traces up to 16 GiB). Word addresses >= ``words`` read 0 and drop writes.
    storage : str
        ``"memory"`` (``amaranth.lib.memory.Memory``, Amaranth simulation) or ``"verilog"``
        (``storage.v``, Verilator builds, with ``image_clear``/``image_load``).
    init : sequence of int, optional
        ``storage="memory"`` only: initial contents (64-bit words from word 0).

    Members
    -------
    rd_en, rd_addr : In ; rd_data : Out(64)
        ``rd_data`` is the word at ``rd_addr`` (0 beyond the storage) the cycle after ``rd_en``.
    wr_en, wr_addr, wr_data, wr_strb : In
        Write the enabled bytes at the clock edge.
    backdoor : In(BackdoorSignature(addr_bits)); image_clear, image_load : In(1)
    """

    def __init__(self, *, words, storage="memory", init=None):
        if not isinstance(words, int) or words < 0:
            raise ValueError(f"words must be a non-negative integer, not {words!r}")
        if storage not in ("memory", "verilog"):
            raise ValueError(f"storage must be 'memory' or 'verilog', not {storage!r}")
        if init is not None and (storage != "memory" or len(init) > words):
            raise ValueError(f"init must be at most {words} words and needs storage='memory', "
                             f"not {len(init)} words with storage={storage!r}")
        self._init = list(init or [])
        self._words = words
        self._storage = storage
        self.addr_bits = max(1, (max(words, 1) - 1).bit_length())
        super().__init__({
            "rd_en":       In(1),
            "rd_addr":     In(61),
            "rd_data":     Out(64),
            "wr_en":       In(1),
            "wr_addr":     In(61),
            "wr_data":     In(64),
            "wr_strb":     In(8),
            "backdoor":    In(BackdoorSignature(self.addr_bits)),
            "image_clear": In(1),
            "image_load":  In(1),
        })

    def elaborate(self, platform):
        m = Module()
        if self._words == 0:
            return m
        ab = self.addr_bits
        rd_in = Signal()
        with m.If(self.rd_en):
            m.d.sync += rd_in.eq(self.rd_addr < self._words)
        wr_en = Signal()
        wr_addr = Signal(ab)
        wr_data = Signal(64)
        wr_strb = Signal(8)
        with m.If(self.backdoor.en):
            m.d.comb += [wr_en.eq(1), wr_addr.eq(self.backdoor.addr), wr_data.eq(self.backdoor.data),
                         wr_strb.eq(0xFF)]
        with m.Else():
            m.d.comb += [wr_en.eq(self.wr_en & (self.wr_addr < self._words)),
                         wr_addr.eq(self.wr_addr[:ab]), wr_data.eq(self.wr_data),
                         wr_strb.eq(self.wr_strb)]
        raw = Signal(64)
        if self._storage == "memory":
            m.submodules.array = array = memory.Memory(shape=64, depth=self._words, init=self._init)
            wr = array.write_port(granularity=8)
            rd = array.read_port()
            m.d.comb += [
                wr.addr.eq(wr_addr), wr.data.eq(wr_data), wr.en.eq(Mux(wr_en, wr_strb, 0)),
                rd.addr.eq(self.rd_addr[:ab]), rd.en.eq(self.rd_en), raw.eq(rd.data),
            ]
        else:
            m.submodules.array = Instance("ember_hbm_storage",
                p_WORDS=self._words, p_ABITS=ab,
                i_clk=ClockSignal(),
                i_rd_en=self.rd_en, i_rd_addr=self.rd_addr[:ab], o_rd_data=raw,
                i_wr_en=wr_en, i_wr_addr=wr_addr, i_wr_data=wr_data, i_wr_strb=wr_strb,
                i_image_clear=self.image_clear, i_image_load=self.image_load)
        m.d.comb += self.rd_data.eq(Mux(rd_in, raw, 0))
        return m


class Statistics(wiring.Component):
    """The counters of ``docs/hbm_model.md`` §5, fed with one cycle's events.

    Parameters
    ----------
    channels : int
    queue_depth : int
        Largest value of ``occupancy[c]``.
    access_bytes : int
        Bytes per request (added to ``bytes_read``/``bytes_written`` per delivered response).
    burst : int
        ``tBURST`` in unit cycles (added to ``busy[c]`` per column command).
    max_per_cycle : int
        Largest number of ACT/PRE/REF commands in one cycle (= ``channels``).

    Members
    -------
    clear : In(1)
        Restart every counter (``cycles`` = 0, minimum = all ones) at this clock edge.
    accept, accept_write : In(1)
        A request is accepted this cycle (``reads``/``writes``).
    classify : In(1); classify_kind : In(2)
        A request is classified (0 hit, 1 miss, 2 conflict).
    activates, precharges, refreshes : In(range(max_per_cycle + 1))
        Commands issued this cycle, all channels together.
    deliver, deliver_write : In(1); deliver_latency : In(TIME_BITS)
        A response is transferred this cycle; a read's latency in unit cycles.
    column : In(channels); occupancy : In(ArrayLayout(range(queue_depth + 1), channels))
        Per channel: a column command is issued; request-queue entries at the start of the cycle.
    stats : Out(ArrayLayout(64, len(stat_names(channels))))
        The counters, in :func:`stat_names` order.
    """

    def __init__(self, *, channels, queue_depth, access_bytes, burst, max_per_cycle):
        self._ch = channels
        self._q = queue_depth
        self._bytes = access_bytes
        self._burst = burst
        self.names = stat_names(channels)
        super().__init__({
            "clear":           In(1),
            "accept":          In(1),
            "accept_write":    In(1),
            "classify":        In(1),
            "classify_kind":   In(2),
            "activates":       In(range(max_per_cycle + 1)),
            "precharges":      In(range(max_per_cycle + 1)),
            "refreshes":       In(range(max_per_cycle + 1)),
            "deliver":         In(1),
            "deliver_write":   In(1),
            "deliver_latency": In(TIME_BITS),
            "column":          In(channels),
            "occupancy":       In(data.ArrayLayout(range(queue_depth + 1), channels)),
            "stats":           Out(data.ArrayLayout(STAT_BITS, len(self.names))),
        })

    def elaborate(self, platform):
        m = Module()
        ones = (1 << STAT_BITS) - 1
        regs = {name: Signal(STAT_BITS, name=name.replace("[", "_").replace("]", ""),
                             init=ones if name == "read_latency_min" else 0)
                for name in self.names}
        for i, name in enumerate(self.names):
            m.d.comb += self.stats[i].eq(regs[name])

        def add(name, cond, amount=1):
            with m.If(cond):
                m.d.sync += regs[name].eq(regs[name] + amount)

        read_done = self.deliver & ~self.deliver_write
        write_done = self.deliver & self.deliver_write
        lat = self.deliver_latency
        add("cycles", 1)
        add("reads", self.accept & ~self.accept_write)
        add("writes", self.accept & self.accept_write)
        add("bytes_read", read_done, self._bytes)
        add("bytes_written", write_done, self._bytes)
        add("row_hits", self.classify & (self.classify_kind == 0))
        add("row_misses", self.classify & (self.classify_kind == 1))
        add("row_conflicts", self.classify & (self.classify_kind == 2))
        add("activates", 1, self.activates)
        add("precharges", 1, self.precharges)
        add("refreshes", 1, self.refreshes)
        add("read_latency_sum", read_done, lat)
        with m.If(read_done & (lat < regs["read_latency_min"])):
            m.d.sync += regs["read_latency_min"].eq(lat)
        with m.If(read_done & (lat > regs["read_latency_max"])):
            m.d.sync += regs["read_latency_max"].eq(lat)
        shift = (HIST_WIDTH - 1).bit_length()
        bin_ = Signal(range(HIST_BINS))
        m.d.comb += bin_.eq(Mux(lat >= HIST_BINS * HIST_WIDTH, HIST_BINS - 1, lat >> shift))
        for i in range(HIST_BINS):
            add(f"read_latency_hist[{i}]", read_done & (bin_ == i))
        for c in range(self._ch):
            occ = self.occupancy[c]
            add(f"busy[{c}]", self.column[c], self._burst)
            add(f"queue_occupancy_sum[{c}]", 1, occ)
            with m.If(occ > regs[f"queue_occupancy_max[{c}]"]):
                m.d.sync += regs[f"queue_occupancy_max[{c}]"].eq(occ)

        with m.If(self.clear):     # last assignment wins
            for name, reg in regs.items():
                m.d.sync += reg.eq(reg.init)
        return m
