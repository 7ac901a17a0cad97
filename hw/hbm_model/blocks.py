"""Parts shared by the memory models: the storage array and the statistics counters.

Both follow ``docs/hbm_model.md``: §4 (storage: read or written when a request is accepted) and
§5 (statistics: names and definitions shared with the reference model ``reference.py``).
"""

from pathlib import Path

from amaranth.hdl import Cat, ClockSignal, Const, Instance, Module, Mux, ResetSignal, Signal
from amaranth.lib import data, memory, wiring
from amaranth.lib.wiring import In, Out

from ..core_if.signatures import BackdoorSignature


__all__ = ["Storage", "Statistics", "stat_names", "HIST_BINS", "HIST_WIDTH", "STAT_BITS",
           "TIME_BITS", "STATS_VERILOG"]

#: ``stats.v``: :class:`Statistics` for Verilator builds (``Statistics(verilog=True)``).
STATS_VERILOG = Path(__file__).with_name("stats.v")


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
    """The data array: ``ports`` read ports and ``ports`` byte-enabled write ports of one line
    (``line_bytes``) each, accessed in port order within a cycle (a read on port ``k`` sees the
    writes of ports ``j < k`` in the same cycle, not those of later ports: §4, data follow
    acceptance order); the back door shares write port 0 (back door first).

    Parameters
    ----------
    words : int
        Size in 64-bit words, >= 0, a multiple of ``line_bytes / 8``; 0: no storage (reads return
        0, writes are dropped; a timing-only model for traces up to 16 GiB). Word addresses >=
        ``words`` read 0 and drop writes.
    storage : str
        ``"memory"`` (``amaranth.lib.memory.Memory``, Amaranth simulation) or ``"verilog"``
        (``storage.v``, Verilator builds, with ``image_clear``/``image_load``).
    init : sequence of int, optional
        ``storage="memory"`` only: initial contents (64-bit words from word 0).
    ports : int
        Read and write ports (>= 1).
    line_bytes : int
        Bytes per port access: 8 (one 64-bit word) or a larger power of two.

    Members
    -------
    rd_en : In(ports); rd_addr : In(ArrayLayout(61, ports)); rd_data : Out(ArrayLayout(8 * line_bytes, ports))
        ``rd_data[k]`` is the aligned line containing 64-bit word address ``rd_addr[k]`` (0
        beyond the storage) the cycle after ``rd_en[k]``.
    wr_en : In(ports); wr_addr : In(ArrayLayout(61, ports)); wr_data, wr_strb : In(ArrayLayout)
        Write the enabled bytes of the aligned line containing word address ``wr_addr[k]`` at the
        clock edge (when two ports write the same byte, the higher-numbered port wins).
    backdoor : In(BackdoorSignature(addr_bits)); image_clear, image_load : In(1)
    """

    def __init__(self, *, words, storage="memory", init=None, ports=1, line_bytes=8):
        if not isinstance(words, int) or words < 0:
            raise ValueError(f"words must be a non-negative integer, not {words!r}")
        if storage not in ("memory", "verilog"):
            raise ValueError(f"storage must be 'memory' or 'verilog', not {storage!r}")
        if not isinstance(ports, int) or isinstance(ports, bool) or ports < 1:
            raise ValueError(f"ports must be a positive integer, not {ports!r}")
        if not isinstance(line_bytes, int) or line_bytes < 8 or line_bytes & (line_bytes - 1):
            raise ValueError(f"line_bytes must be a power of two >= 8, not {line_bytes!r}")
        line_words = line_bytes // 8
        if words % line_words:
            raise ValueError(f"words must be a multiple of the line ({line_words} words), "
                             f"not {words!r}")
        if init is not None and (storage != "memory" or len(init) > words):
            raise ValueError(f"init must be at most {words} words and needs storage='memory', "
                             f"not {len(init)} words with storage={storage!r}")
        self._init = list(init or [])
        self._words = words
        self._storage = storage
        self._ports = ports
        self._line_words = line_words
        self._line_shift = line_words.bit_length() - 1
        self._lines = words // line_words
        self.addr_bits = max(1, (max(words, 1) - 1).bit_length())
        self.line_addr_bits = max(1, (max(self._lines, 1) - 1).bit_length())
        lb = 8 * line_bytes
        super().__init__({
            "rd_en":       In(ports),
            "rd_addr":     In(data.ArrayLayout(61, ports)),
            "rd_data":     Out(data.ArrayLayout(lb, ports)),
            "wr_en":       In(ports),
            "wr_addr":     In(data.ArrayLayout(61, ports)),
            "wr_data":     In(data.ArrayLayout(lb, ports)),
            "wr_strb":     In(data.ArrayLayout(line_bytes, ports)),
            "backdoor":    In(BackdoorSignature(self.addr_bits)),
            "image_clear": In(1),
            "image_load":  In(1),
        })

    def elaborate(self, platform):
        m = Module()
        if self._words == 0:
            return m
        P, LW, sh = self._ports, self._line_words, self._line_shift
        ab = self.line_addr_bits
        lines = self._lines
        lb = 64 * LW

        def line(word_addr):
            return word_addr[sh:]

        # Port k's write enables and data; the back door replaces port 0's write.
        wr_en = [Signal(name=f"wr_en_{k}") for k in range(P)]
        wr_addr = [Signal(ab, name=f"wr_addr_{k}") for k in range(P)]
        wr_data = [Signal(lb, name=f"wr_data_{k}") for k in range(P)]
        wr_strb = [Signal(8 * LW, name=f"wr_strb_{k}") for k in range(P)]
        for k in range(P):
            m.d.comb += [wr_en[k].eq(self.wr_en[k] & (line(self.wr_addr[k]) < lines)),
                         wr_addr[k].eq(line(self.wr_addr[k])[:ab]),
                         wr_data[k].eq(self.wr_data[k]), wr_strb[k].eq(self.wr_strb[k])]
        bd = self.backdoor
        with m.If(bd.en):
            offset = bd.addr[:sh] if sh else 0
            m.d.comb += [wr_en[0].eq(1), wr_addr[0].eq(bd.addr[sh:] if sh else bd.addr),
                         wr_data[0].eq(bd.data.replicate(LW)),
                         wr_strb[0].eq(Const(0xFF, 8 * LW) << (8 * offset))]
        rd_in = [Signal(name=f"rd_in_{k}") for k in range(P)]
        for k in range(P):
            with m.If(self.rd_en[k]):
                m.d.sync += rd_in[k].eq(line(self.rd_addr[k]) < lines)
        raw = [Signal(lb, name=f"raw_{k}") for k in range(P)]
        if self._storage == "memory":
            init = [0] * lines
            for i, w in enumerate(self._init):
                init[i >> sh] |= int(w) << (64 * (i & (LW - 1)))
            m.submodules.array = array = memory.Memory(shape=lb, depth=lines, init=init)
            wps = []
            for k in range(P):
                # Disjoint bytes: a higher port writing the same line wins its bytes.
                strb = wr_strb[k]
                for j in range(k + 1, P):
                    strb = strb & ~Mux(wr_en[j] & (wr_addr[j] == wr_addr[k]), wr_strb[j], 0)
                wp = array.write_port(granularity=8)
                m.d.comb += [wp.addr.eq(wr_addr[k]), wp.data.eq(wr_data[k]),
                             wp.en.eq(Mux(wr_en[k], strb, 0))]
                wps.append(wp)
            for k in range(P):
                rp = array.read_port(transparent_for=wps[:k])
                m.d.comb += [rp.addr.eq(line(self.rd_addr[k])[:ab]), rp.en.eq(self.rd_en[k]),
                             raw[k].eq(rp.data)]
        else:
            m.submodules.array = Instance("ember_hbm_storage",
                p_WORDS=self._words, p_ABITS=ab, p_PORTS=P, p_LINE_WORDS=LW,
                i_clk=ClockSignal(),
                i_rd_en=self.rd_en, i_rd_addr=Cat(line(self.rd_addr[k])[:ab] for k in range(P)),
                o_rd_data=Cat(raw),
                i_wr_en=Cat(wr_en), i_wr_addr=Cat(wr_addr), i_wr_data=Cat(wr_data),
                i_wr_strb=Cat(wr_strb),
                i_image_clear=self.image_clear, i_image_load=self.image_load)
        for k in range(P):
            m.d.comb += self.rd_data[k].eq(Mux(rd_in[k], raw[k], 0))
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
    ports : int
        Request and response ports (events per cycle of each kind below).
    verilog : bool
        Use ``stats.v`` (``ember_hbm_stats``, the same counters kept in the output vector itself)
        instead of Amaranth logic: for Verilator builds, where assembling ``stats`` from ~100
        separate counters every cycle costs more than the rest of the memory model. Its text is
        :data:`STATS_VERILOG`; the design's Verilog must include it.

    Members
    -------
    clear : In(1)
        Restart every counter (``cycles`` = 0, minimum = all ones) at this clock edge.
    accept, accept_write : In(ports)
        Port ``k``'s request is accepted this cycle (``reads``/``writes``).
    classify : In(ports); classify_kind : In(ArrayLayout(2, ports))
        Port ``k``'s request is classified (0 hit, 1 miss, 2 conflict).
    activates, precharges, refreshes : In(range(max_per_cycle + 1))
        Commands issued this cycle, all channels together.
    deliver, deliver_write : In(ports); deliver_latency : In(ArrayLayout(TIME_BITS, ports))
        Port ``k`` transfers a response this cycle; a read's latency in unit cycles.
    column : In(channels); occupancy : In(ArrayLayout(range(queue_depth + 1), channels))
        Per channel: a column command is issued; request-queue entries at the start of the cycle.
    stats : Out(ArrayLayout(64, len(stat_names(channels))))
        The counters, in :func:`stat_names` order.
    """

    def __init__(self, *, channels, queue_depth, access_bytes, burst, max_per_cycle, ports=1,
                 verilog=False):
        self._verilog = verilog
        self._ports = ports
        self._ch = channels
        self._q = queue_depth
        self._bytes = access_bytes
        self._burst = burst
        self.names = stat_names(channels)
        super().__init__({
            "clear":           In(1),
            "accept":          In(ports),
            "accept_write":    In(ports),
            "classify":        In(ports),
            "classify_kind":   In(data.ArrayLayout(2, ports)),
            "activates":       In(range(max_per_cycle + 1)),
            "precharges":      In(range(max_per_cycle + 1)),
            "refreshes":       In(range(max_per_cycle + 1)),
            "deliver":         In(ports),
            "deliver_write":   In(ports),
            "deliver_latency": In(data.ArrayLayout(TIME_BITS, ports)),
            "column":          In(channels),
            "occupancy":       In(data.ArrayLayout(range(queue_depth + 1), channels)),
            "stats":           Out(data.ArrayLayout(STAT_BITS, len(self.names))),
        })

    def _instance(self):
        """The ``ember_hbm_stats`` instance (``stats.v``) with this component's members."""
        ports = {}
        for path, member, value in self.signature.flatten(self):
            ports[("i_" if member.flow == In else "o_") + "__".join(map(str, path))] = value
        return Instance(
            "ember_hbm_stats", p_CHANNELS=self._ch, p_PORTS=self._ports,
            p_OCC_BITS=len(self.occupancy[0]), p_COUNT_BITS=len(self.activates),
            p_ACCESS_BYTES=self._bytes, p_BURST=self._burst, p_HIST_BINS=HIST_BINS,
            p_HIST_SHIFT=(HIST_WIDTH - 1).bit_length(), p_TIME_BITS=TIME_BITS,
            p_NSTATS=len(self.names), i_clk=ClockSignal(), i_rst=ResetSignal(), **ports)

    def elaborate(self, platform):
        m = Module()
        if self._verilog:
            m.submodules.counters = self._instance()
            return m
        ones = (1 << STAT_BITS) - 1
        regs = {name: Signal(STAT_BITS, name=name.replace("[", "_").replace("]", ""),
                             init=ones if name == "read_latency_min" else 0)
                for name in self.names}
        for i, name in enumerate(self.names):
            m.d.comb += self.stats[i].eq(regs[name])

        def add(name, cond, amount=1):
            with m.If(cond):
                m.d.sync += regs[name].eq(regs[name] + amount)

        P = self._ports

        def count(bits):
            return sum(bits[k] for k in range(len(bits)))

        read_done = self.deliver & ~self.deliver_write
        write_done = self.deliver & self.deliver_write
        add("cycles", 1)
        add("reads", 1, count(self.accept & ~self.accept_write))
        add("writes", 1, count(self.accept & self.accept_write))
        add("bytes_read", 1, count(read_done) * self._bytes)
        add("bytes_written", 1, count(write_done) * self._bytes)
        for value, name in enumerate(("row_hits", "row_misses", "row_conflicts")):
            add(name, 1, sum(self.classify[k] & (self.classify_kind[k] == value) for k in range(P)))
        add("activates", 1, self.activates)
        add("precharges", 1, self.precharges)
        add("refreshes", 1, self.refreshes)
        lat = [self.deliver_latency[k] for k in range(P)]
        add("read_latency_sum", 1, sum(Mux(read_done[k], lat[k], 0) for k in range(P)))
        lo, hi = regs["read_latency_min"], regs["read_latency_max"]
        for k in range(P):     # ports in order: the running minimum / maximum
            lo = Mux(read_done[k] & (lat[k] < lo), lat[k], lo)
            hi = Mux(read_done[k] & (lat[k] > hi), lat[k], hi)
        m.d.sync += [regs["read_latency_min"].eq(lo), regs["read_latency_max"].eq(hi)]
        shift = (HIST_WIDTH - 1).bit_length()
        bins = []
        for k in range(P):
            bin_ = Signal(range(HIST_BINS), name=f"bin_{k}")
            m.d.comb += bin_.eq(Mux(lat[k] >= HIST_BINS * HIST_WIDTH, HIST_BINS - 1,
                                    lat[k] >> shift))
            bins.append(bin_)
        for i in range(HIST_BINS):
            add(f"read_latency_hist[{i}]", 1, sum(read_done[k] & (bins[k] == i) for k in range(P)))
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
