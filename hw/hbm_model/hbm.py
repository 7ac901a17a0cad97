"""The HBM memory model in RTL (simulation model; synthesisability not required).

Implements the cycle semantics of ``docs/hbm_model.md`` §2 exactly (the Python reference model
``hw/hbm_model/reference.py`` implements the same contract; ``tb/hbm_model/test_hbm_differential.py``
checks the two against each other request by request). Structure (one concept per submodule):

* :class:`AddressDecoder` — byte address → channel, bank group, bank, row (the preset's
  DRAMSim3-style ``address_mapping``, via ``HbmPreset.field_bits()``);
* :class:`Channel` — one channel: its request queue (age-ordered, collapsing) and FR-FCFS
  scheduler, its banks (:class:`BankTimer`), its channel-wide timing (:class:`ChannelTimer`),
  refresh state and its response FIFO (issued column commands, each with its completion time);
* :class:`RefreshTimer` — the all-channel ``tREFI`` tick (restarted by ``refresh_restart``);
* :class:`ResponseArbiter` — one response per cycle, round-robin over the channels;
* ``blocks.Storage`` / ``blocks.Statistics`` — data (read/written at acceptance, §4) and §5.

Verilator builds (``storage="verilog"``) instantiate ``channel.v`` instead of :class:`Channel` and
``stats.v`` instead of ``blocks.Statistics``: behavioural Verilog with the same ports and cycle
behaviour that simulates ~10x faster (``docs/hbm_model.md``, ``docs/performance.md``).

Timing is kept as saturating **down-counters**: a constraint "``t >= X + d``" set by an event at
cycle ``X`` loads ``d - 1`` at the end of ``X`` (keeping the larger of that and the running
count), and the constraint holds in cycle ``t`` iff the counter is 0. This is exact for every
constraint of §2 (each is a maximum over past events of ``X + d`` with a constant ``d``); the
read-after-write turnaround only looks at the *last* write: ``tWTR_L`` if it was to the same bank
group, else ``tWTR_S`` (§2; the reference model reads it the same way).
"""

from pathlib import Path

from amaranth.hdl import (Array, Cat, ClockSignal, Const, Instance, Module, Mux, ResetSignal,
                          Signal)
from amaranth.lib import data, fifo, memory, wiring
from amaranth.lib.wiring import In, Out

from ..core_if.signatures import BackdoorSignature
from .ports import RequestSignature, ResponseSignature
from .blocks import STATS_VERILOG, Statistics, Storage, TIME_BITS, stat_names


__all__ = ["HbmMemory", "AddressDecoder", "Channel", "BankTimer", "ChannelTimer", "RefreshTimer",
           "ResponseArbiter", "DerivedTiming"]


def _bits(n):
    """Bits of an unsigned value up to ``n``."""
    return max(1, int(n).bit_length())


class DerivedTiming:
    """The unit-cycle constants the RTL needs, from ``preset.unit_timing()`` (``docs/hbm_model.md``
    §1: ``tCCD_S' = max(tCCD_S, tBURST)``, ``RL = tCL + tBURST``, ``WL' = tWL + tBURST``).

    Every attribute is a delay ``d`` in unit cycles of a constraint ``t >= X + d``.
    """

    def __init__(self, preset):
        t = preset.unit_timing()
        g = lambda name: int(getattr(t, name))
        self.burst = g("tBURST")
        self.rl = g("tCL") + self.burst                      # RD issue -> response valid
        self.wl = g("tWL") + self.burst                      # WR issue -> response valid
        self.rcd = g("tRCD")                                 # ACT -> RD/WR, same bank
        self.rc = g("tRC")                                   # ACT -> ACT, same bank
        self.rp = g("tRP")                                   # PRE -> ACT, same bank
        self.ras = g("tRAS")                                 # ACT -> PRE
        self.rtp = g("tRTP")                                 # RD -> PRE
        self.wtp = g("tWL") + self.burst + g("tWR")          # WR -> PRE
        self.rrd_s = g("tRRD_S")                             # ACT -> ACT, any bank
        self.rrd_l = g("tRRD_L")                             # ACT -> ACT, same bank group
        self.faw = g("tFAW")                                 # fourth-last ACT -> ACT
        self.rfc = g("tRFC")                                 # REF -> ACT
        self.refi = g("tREFI")                               # refresh period
        self.ccd_s = max(g("tCCD_S"), self.burst)            # column -> column, any bank group
        self.ccd_l = max(g("tCCD_L"), self.burst)            # column -> column, same bank group
        self.wtr_s = g("tWL") + self.burst + g("tWTR_S")     # WR -> RD
        self.wtr_l = g("tWL") + self.burst + g("tWTR_L")     # WR -> RD, same bank group
        self.rtw = g("tCL") + self.burst + g("tRTRS") - g("tWL")   # RD -> WR
        for name, value in vars(self).items():
            if value < 0 and name != "rtw":
                raise ValueError(f"preset {preset.name!r}: derived delay {name} = {value} < 0")
        if self.rl < 1 or self.wl < 1:
            raise ValueError(f"preset {preset.name!r}: read/write latency must be >= 1 cycle")
        # Completions leave a channel in issue order only if a RD after a WR (and a WR after a
        # RD) cannot complete first; the single response FIFO per channel relies on it.
        if not (min(self.wtr_s, self.wtr_l) + self.rl >= self.wl and self.rtw + self.wl >= self.rl):
            raise ValueError(f"preset {preset.name!r}: tWTR_S/tRTRS too small for in-order "
                             f"completion within a channel")


def _countdown(m, counter, loads, *, keep_max=True):
    """Next value of a constraint counter: decrement to 0; an event ``(cond, d)`` loads ``d - 1``
    (the larger of it and the decremented count if ``keep_max``)."""
    nxt = Mux(counter == 0, 0, counter - 1)
    for cond, d in loads:
        if d - 1 <= 0:
            continue
        if keep_max:
            nxt = Mux(cond & (nxt < d - 1), d - 1, nxt)
        else:
            nxt = Mux(cond, d - 1, nxt)
    m.d.sync += counter.eq(nxt)


class AddressDecoder(wiring.Component):
    """Byte address → (channel, bank group, bank within the channel, row) by the preset's field
    bits (``HbmPreset.field_bits()``: name → (lsb, width) in the byte address).

    Members
    -------
    addr : In(64)
    channel : Out(range(channels)); bank_group : Out(range(bank_groups));
    bank : Out(range(banks)) (``bank_group * banks_per_group + bank-in-group``); row : Out(row_bits)
    """

    def __init__(self, preset):
        fields = preset.field_bits()
        self._f = {key: fields.get(key, (0, 0))
                   for key in ("channel", "bank_group", "bank", "row")}
        self.row_bits = max(1, self._f["row"][1])
        self._bpg = preset.banks_per_group
        super().__init__({
            "addr":       In(64),
            "channel":    Out(range(max(2, preset.channels))),
            "bank_group": Out(range(max(2, preset.bank_groups))),
            "bank":       Out(range(max(2, preset.bank_groups * preset.banks_per_group))),
            "row":        Out(self.row_bits),
        })

    def _field(self, key):
        lsb, width = self._f[key]
        return self.addr[lsb:lsb + width] if width else Const(0, 1)

    def elaborate(self, platform):
        m = Module()
        bg, ba = self._field("bank_group"), self._field("bank")
        m.d.comb += [
            self.channel.eq(self._field("channel")),
            self.bank_group.eq(bg),
            self.bank.eq(bg * self._bpg + ba),
            self.row.eq(self._field("row")),
        ]
        return m


class BankTimer(wiring.Component):
    """One bank: open/closed, the open row, and its per-bank constraints (§2 "Legality").

    Members
    -------
    act, pre, rd, wr : In(1)
        Command to this bank in this cycle (``pre`` also for PREA); ``act_row`` the row to open.
    is_open : Out(1); open_row : Out(row_bits)
    act_ready : Out(1)
        ``t >= PRE + tRP`` and ``t >= ACT + tRC`` (the bank-local part of ``act_ok``; also the
        per-bank condition of REF).
    pre_ready : Out(1)
        ``t >= ACT + tRAS``, ``t >= RD + tRTP``, ``t >= WR + tWL + tBURST + tWR``.
    col_ready : Out(1)
        ``t >= ACT + tRCD``.
    """

    def __init__(self, timing, row_bits):
        self._t = timing
        super().__init__({
            "act": In(1), "act_row": In(row_bits), "pre": In(1), "rd": In(1), "wr": In(1),
            "is_open": Out(1), "open_row": Out(row_bits),
            "act_ready": Out(1), "pre_ready": Out(1), "col_ready": Out(1),
        })

    def elaborate(self, platform):
        m = Module()
        t = self._t
        act_wait = Signal(_bits(max(t.rc, t.rp)))
        pre_wait = Signal(_bits(max(t.ras, t.rtp, t.wtp)))
        col_wait = Signal(_bits(t.rcd))
        _countdown(m, act_wait, [(self.act, t.rc), (self.pre, t.rp)])
        _countdown(m, pre_wait, [(self.act, t.ras), (self.rd, t.rtp), (self.wr, t.wtp)])
        _countdown(m, col_wait, [(self.act, t.rcd)])
        with m.If(self.act):
            m.d.sync += [self.is_open.eq(1), self.open_row.eq(self.act_row)]
        with m.If(self.pre):
            m.d.sync += self.is_open.eq(0)
        m.d.comb += [
            self.act_ready.eq(act_wait == 0),
            self.pre_ready.eq(pre_wait == 0),
            self.col_ready.eq(col_wait == 0),
        ]
        return m


class ChannelTimer(wiring.Component):
    """The channel-wide constraints of §2: ACT spacing (tRRD_S/L, tFAW, tRFC), column spacing
    (tCCD_S'/L'), read/write turnaround (last WR + tWTR_S/L, last RD → WR).

    Members
    -------
    act, col_rd, col_wr, ref : In(1); act_group, col_group : In(range(bank_groups))
        Commands issued this cycle.
    act_ok, rd_ok, wr_ok : Out(bank_groups)
        Per bank group: the channel-wide part of ``act_ok``/``rd_ok``/``wr_ok`` holds.
    """

    def __init__(self, timing, bank_groups):
        self._t = timing
        self._g = bank_groups
        super().__init__({
            "act": In(1), "act_group": In(range(max(2, bank_groups))),
            "col_rd": In(1), "col_wr": In(1), "col_group": In(range(max(2, bank_groups))),
            "ref": In(1),
            "act_ok": Out(bank_groups), "rd_ok": Out(bank_groups), "wr_ok": Out(bank_groups),
        })

    def elaborate(self, platform):
        m = Module()
        t, G = self._t, self._g
        col = self.col_rd | self.col_wr

        rrd_s = Signal(_bits(t.rrd_s))
        rfc = Signal(_bits(t.rfc))
        _countdown(m, rrd_s, [(self.act, t.rrd_s)])
        _countdown(m, rfc, [(self.ref, t.rfc)])
        # tFAW: counters of the last four ACTs, newest first; slot 3 is the fourth-last.
        faw = [Signal(_bits(t.faw), name=f"faw_{i}") for i in range(4)]
        for i, slot in enumerate(faw):
            dec = Mux(slot == 0, 0, slot - 1)
            src = Mux(faw[i - 1] == 0, 0, faw[i - 1] - 1) if i else max(t.faw - 1, 0)
            m.d.sync += slot.eq(Mux(self.act, src, dec))
        ccd_s = Signal(_bits(t.ccd_s))
        _countdown(m, ccd_s, [(col, t.ccd_s)])
        wtr_s = Signal(_bits(t.wtr_s))
        wtr_l = Signal(_bits(t.wtr_l))
        last_wr_group = Signal(range(max(2, G)))
        _countdown(m, wtr_s, [(self.col_wr, t.wtr_s)], keep_max=False)
        _countdown(m, wtr_l, [(self.col_wr, t.wtr_l)], keep_max=False)
        with m.If(self.col_wr):
            m.d.sync += last_wr_group.eq(self.col_group)
        rtw = Signal(_bits(max(t.rtw, 0)))
        _countdown(m, rtw, [(self.col_rd, t.rtw)])

        act_common = (rrd_s == 0) & (rfc == 0) & (faw[3] == 0)
        for g in range(G):
            rrd_l = Signal(_bits(t.rrd_l), name=f"rrd_l_{g}")
            ccd_l = Signal(_bits(t.ccd_l), name=f"ccd_l_{g}")
            _countdown(m, rrd_l, [(self.act & (self.act_group == g), t.rrd_l)])
            _countdown(m, ccd_l, [(col & (self.col_group == g), t.ccd_l)])
            col_common = (ccd_s == 0) & (ccd_l == 0)
            m.d.comb += [
                self.act_ok[g].eq(act_common & (rrd_l == 0)),
                self.rd_ok[g].eq(col_common & Mux(last_wr_group == g, wtr_l == 0, wtr_s == 0)),
                self.wr_ok[g].eq(col_common & (rtw == 0)),
            ]
        return m


class RefreshTimer(wiring.Component):
    """``tick`` in every cycle ``t = k * tREFI``, ``k >= 1`` (all channels at once, §2 "Refresh"),
    or, after ``restart`` was high in cycle ``S``, in every cycle ``S + 1 + k * tREFI``, ``k >= 0``
    (§2 "Refresh restart": a refresh becomes due in the cycle after the restart, then every tREFI).

    Members
    -------
    restart : In(1)
        Restart the refresh interval (the systems pulse it with ``CTRL.START``).
    tick : Out(1)
    """

    def __init__(self, refi):
        if refi < 1:
            raise ValueError(f"tREFI must be >= 1 unit cycle, not {refi}")
        self._refi = refi
        super().__init__({"restart": In(1), "tick": Out(1)})

    def elaborate(self, platform):
        m = Module()
        phase = Signal(range(self._refi))        # (t - origin) mod tREFI, origin 0 or S + 1
        first = Signal(init=1)                   # t == 0
        m.d.sync += [phase.eq(Mux(self.restart | (phase == self._refi - 1), 0, phase + 1)),
                     first.eq(0)]
        m.d.comb += self.tick.eq((phase == 0) & ~first)
        return m


def _lowest(m, bits, name):
    """One-hot of the lowest set bit of ``bits`` (0 if none)."""
    oh = Signal(len(bits), name=name)
    m.d.comb += oh.eq(bits & -bits)
    return oh


def _select(onehot, values):
    """The value whose bit is set in ``onehot`` (AND-OR; 0 if none)."""
    out = 0
    for i, v in enumerate(values):
        out = out | Mux(onehot[i], v, 0)
    return out


class Channel(wiring.Component):
    """One channel: request queue, FR-FCFS scheduler, banks, refresh, response FIFO (§2).

    The queue is age-ordered and collapsing: entry 0 is the oldest; a column command removes its
    entry and the younger ones move down; an accepted request is appended at the tail. Each entry
    keeps its bank and bank group one-hot and two status bits, *bank open* and *row hit*, updated
    by the ACT/PRE commands to its bank (and computed at enqueue from the bank state after this
    cycle's commands), so the scheduler needs no per-entry bank multiplexers. Every decision
    uses the state at the start of the cycle (registers only).

    Members
    -------
    enq : In(lanes); enq_bank, enq_row, enq_tag : In(ArrayLayout(..., lanes)); enq_write : In(lanes)
        Lane ``k`` (request port ``k``) brings a request to this channel that is accepted in this
        cycle (a candidate from the next cycle); lanes enter the queue in lane order (age =
        acceptance order, §2). The ingress never enqueues more than the free entries.
    full : Out(1); occupancy : Out(range(queue_depth + 1))
        Queue state at the start of the cycle.
    enq_kind : Out(ArrayLayout(2, lanes))
        Classification of lane ``k``'s request against the bank state at the start of the next
        cycle, its first as a candidate: 0 hit, 1 miss (closed), 2 conflict (other row).
    refresh_tick : In(1); refresh_restart : In(1); now : In(TIME_BITS)
        ``refresh_tick``: a refresh becomes due (:class:`RefreshTimer`); ``refresh_restart``: the
        memory's ``refresh_restart`` (unused here; ``channel.v`` counts the refresh interval
        itself and restarts it with this input).
    resp_valid : Out(1); resp_tag : Out(tag_bits); resp_write : Out(1); resp_take : In(1)
        Head of the response FIFO once its completion time is reached; ``resp_take`` pops it.
    act, pre, ref, col : Out(1)
        Commands issued in this cycle (``pre`` also for PREA), for the statistics.
    """

    def __init__(self, preset, timing, *, tag_bits, row_bits, lanes=1):
        self._lanes = lanes
        self._p = preset
        self._t = timing
        self._tag_bits = tag_bits
        self._row_bits = row_bits
        self._banks = preset.bank_groups * preset.banks_per_group
        super().__init__(self.members(preset, tag_bits=tag_bits, row_bits=row_bits, lanes=lanes))

    @staticmethod
    def members(preset, *, tag_bits, row_bits, lanes=1):
        """The members of a :class:`Channel` (also the ports of ``channel.v``)."""
        q = preset.queue_depth
        banks = preset.bank_groups * preset.banks_per_group
        return {
            "enq": In(lanes),
            "enq_bank": In(data.ArrayLayout(range(max(2, banks)), lanes)),
            "enq_row": In(data.ArrayLayout(row_bits, lanes)),
            "enq_tag": In(data.ArrayLayout(tag_bits, lanes)), "enq_write": In(lanes),
            "full": Out(1), "occupancy": Out(range(q + 1)),
            "enq_kind": Out(data.ArrayLayout(2, lanes)),
            "refresh_tick": In(1), "refresh_restart": In(1), "now": In(TIME_BITS),
            "resp_valid": Out(1), "resp_tag": Out(tag_bits), "resp_write": Out(1),
            "resp_take": In(1),
            "act": Out(1), "pre": Out(1), "ref": Out(1), "col": Out(1),
        }

    def elaborate(self, platform):
        m = Module()
        p, t = self._p, self._t
        Q, B, G = p.queue_depth, self._banks, p.bank_groups
        bpg = p.banks_per_group
        closed_page = p.page_policy == "closed"
        all_banks = (1 << B) - 1

        # -- banks and channel timing -------------------------------------------------------
        banks = []
        for b in range(B):
            bank = BankTimer(t, self._row_bits)
            m.submodules[f"bank_{b}"] = bank
            banks.append(bank)
        m.submodules.timer = timer = ChannelTimer(t, G)
        is_open = Cat(bk.is_open for bk in banks)
        act_ready = Cat(bk.act_ready for bk in banks)
        pre_ready = Cat(bk.pre_ready for bk in banks)
        col_ready = Cat(bk.col_ready for bk in banks)

        # -- request queue (registers; entry 0 oldest) ---------------------------------------
        count = Signal(range(Q + 1))
        e_bank = [Signal(B, name=f"q{i}_bank") for i in range(Q)]      # one-hot
        e_group = [Signal(G, name=f"q{i}_group") for i in range(Q)]    # one-hot
        e_row = [Signal(self._row_bits, name=f"q{i}_row") for i in range(Q)]
        e_tag = [Signal(self._tag_bits, name=f"q{i}_tag") for i in range(Q)]
        e_write = [Signal(name=f"q{i}_write") for i in range(Q)]
        e_open = [Signal(name=f"q{i}_open") for i in range(Q)]         # its bank is open
        e_hit = [Signal(name=f"q{i}_hit") for i in range(Q)]           # ... on its row
        valid = Signal(Q)
        for i in range(Q):
            m.d.comb += valid[i].eq(i < count)
        m.d.comb += [self.full.eq(count == Q), self.occupancy.eq(count)]

        # -- refresh state -----------------------------------------------------------------------
        pending_reg = Signal()
        pending = Signal()
        m.d.comb += pending.eq(pending_reg | self.refresh_tick) if p.refresh else pending.eq(0)
        # After a restart (its tick is the cycle after refresh_restart) the refresh is preceded
        # by a PREA of every bank, open or not, so that the run starts from the same bank state.
        restart_tick = Signal()
        prea_all_reg = Signal()
        prea_all = Signal()
        m.d.sync += restart_tick.eq(self.refresh_restart)
        m.d.comb += prea_all.eq(prea_all_reg | restart_tick) if p.refresh else prea_all.eq(0)

        # -- response FIFO: issued column commands, completion order = issue order ----------------
        m.submodules.resp_fifo = rf = fifo.SyncFIFO(width=self._tag_bits + 1 + TIME_BITS,
                                                    depth=p.response_depth)
        head_due = rf.r_data[self._tag_bits + 1:]
        m.d.comb += [
            self.resp_valid.eq(rf.r_rdy & (head_due <= self.now)),
            self.resp_tag.eq(rf.r_data[:self._tag_bits]),
            self.resp_write.eq(rf.r_data[self._tag_bits]),
            rf.r_en.eq(self.resp_take),
        ]

        # -- per-entry conditions (state at the start of the cycle) -----------------------------
        hit = Signal(Q)
        col_req = Signal(Q)
        row_req = Signal(Q)
        bank_hit = Signal(B)       # some queued request hits the bank's open row
        m.d.comb += bank_hit.eq(_select(hit, e_bank))
        for i in range(Q):
            m.d.comb += hit[i].eq(valid[i] & e_hit[i])
            rd_ok = (timer.rd_ok & e_group[i]).any()
            wr_ok = (timer.wr_ok & e_group[i]).any()
            m.d.comb += col_req[i].eq(hit[i] & (col_ready & e_bank[i]).any()
                                      & Mux(e_write[i], wr_ok, rd_ok))
            can_act = (~e_open[i] & (act_ready & e_bank[i]).any()
                       & (timer.act_ok & e_group[i]).any())
            can_pre = e_open[i] & ((pre_ready & ~bank_hit) & e_bank[i]).any()
            m.d.comb += row_req[i].eq(valid[i] & ~e_hit[i] & (can_act | can_pre))

        # -- command selection: the oldest candidate ----------------------------------------------
        col_oh = _lowest(m, col_req, "col_oh")
        row_oh = _lowest(m, row_req, "row_oh")
        col_go = Signal()
        m.d.comb += col_go.eq(col_req.any() & ~pending & rf.w_rdy)
        sel_bank = Signal(B)
        sel_group = Signal(G)
        sel_row = Signal(self._row_bits)
        sel_open = Signal()
        m.d.comb += [sel_bank.eq(_select(row_oh, e_bank)), sel_group.eq(_select(row_oh, e_group)),
                     sel_row.eq(_select(row_oh, e_row)), sel_open.eq(_select(row_oh, e_open))]
        col_bank = Signal(B)
        col_group = Signal(G)
        col_write = Signal()
        col_tag = Signal(self._tag_bits)
        m.d.comb += [col_bank.eq(_select(col_oh, e_bank)), col_group.eq(_select(col_oh, e_group)),
                     col_write.eq(_select(col_oh, e_write)), col_tag.eq(_select(col_oh, e_tag))]

        act_vec = Signal(B)        # one-hot ACT
        pre_vec = Signal(B)        # one-hot PRE, or every open bank (PREA)
        do_ref = Signal()
        prea_go = Signal()
        with m.If(pending):
            with m.If(is_open.any() | prea_all):
                with m.If((~is_open | pre_ready) == all_banks):
                    m.d.comb += [pre_vec.eq(Mux(prea_all, all_banks, is_open)), prea_go.eq(1)]
            with m.Elif(act_ready == all_banks):
                m.d.comb += do_ref.eq(1)
        with m.Elif(row_req.any()):
            with m.If(sel_open):
                m.d.comb += pre_vec.eq(sel_bank)
            with m.Else():
                m.d.comb += act_vec.eq(sel_bank)
        if closed_page:
            idle = Signal(B)       # open, not hit by any request, PRE legal
            m.d.comb += idle.eq(is_open & ~bank_hit & pre_ready)
            with m.If(~pending & ~row_req.any() & idle.any()):
                m.d.comb += pre_vec.eq(idle & -idle)     # the lowest-numbered one
        with m.If(do_ref):
            m.d.sync += pending_reg.eq(0)
        with m.Elif(pending):
            m.d.sync += pending_reg.eq(1)
        m.d.sync += prea_all_reg.eq(prea_all & ~prea_go)

        rd_vec = Mux(col_go & ~col_write, col_bank, 0)
        wr_vec = Mux(col_go & col_write, col_bank, 0)
        for b, bank in enumerate(banks):
            m.d.comb += [bank.act.eq(act_vec[b]), bank.act_row.eq(sel_row), bank.pre.eq(pre_vec[b]),
                         bank.rd.eq(rd_vec[b]), bank.wr.eq(wr_vec[b])]
        do_act = act_vec.any()

        def index(onehot):
            return _select(onehot, list(range(len(onehot))))
        m.d.comb += [
            timer.act.eq(do_act), timer.act_group.eq(index(sel_group)),
            timer.col_rd.eq(col_go & ~col_write), timer.col_wr.eq(col_go & col_write),
            timer.col_group.eq(index(col_group)), timer.ref.eq(do_ref),
            self.act.eq(do_act), self.pre.eq(pre_vec.any()), self.ref.eq(do_ref),
            self.col.eq(col_go),
        ]
        due = self.now + Mux(col_write, t.wl, t.rl)
        m.d.comb += [rf.w_en.eq(col_go), rf.w_data.eq(Cat(col_tag, col_write, due[:TIME_BITS]))]

        # -- entry status after this cycle's ACT/PRE ---------------------------------------------
        def status_after(bank_oh, row, was_open, was_hit):
            """(open, hit) of a request to (bank_oh, row) at the start of the next cycle."""
            acted = (act_vec & bank_oh).any()
            closed = (pre_vec & bank_oh).any()
            now_open = Mux(acted, 1, Mux(closed, 0, was_open))
            now_hit = Mux(acted, sel_row == row, Mux(closed, 0, was_hit))
            return now_open, now_hit

        open_rows = Array(bk.open_row for bk in banks)
        lanes = []          # per lane: (bank one-hot, group one-hot, open, hit, queue position)
        pos = remain = Signal(range(Q + 1))
        for k in range(self._lanes):
            bank = self.enq_bank[k]
            enq_oh = Signal(B, name=f"enq_oh_{k}")
            m.d.comb += enq_oh.eq(1 << bank)
            enq_group = bank // bpg if bpg > 1 else bank
            enq_open, enq_hit = status_after(
                enq_oh, self.enq_row[k], is_open.bit_select(bank, 1),
                is_open.bit_select(bank, 1) & (open_rows[bank] == self.enq_row[k]))
            m.d.comb += self.enq_kind[k].eq(Mux(enq_hit, 0, Mux(enq_open, 2, 1)))
            lanes.append((enq_oh, 1 << enq_group, enq_open, enq_hit, pos))
            pos = pos + self.enq[k]

        # -- queue update: remove the issued entry, append the accepted request --------------------
        m.d.comb += remain.eq(count - col_go)
        below = Signal(Q)          # entries older than the issued one (they stay in place)
        m.d.comb += below.eq(col_oh - 1)
        fields = (e_bank, e_group, e_row, e_tag, e_write)
        for i in range(Q):
            src = i + 1 if i + 1 < Q else i
            shift = col_go & ~below[i]
            for f in fields:
                m.d.sync += f[i].eq(Mux(shift, f[src], f[i]))
            nxt_open, nxt_hit = status_after(Mux(shift, e_bank[src], e_bank[i]),
                                             Mux(shift, e_row[src], e_row[i]),
                                             Mux(shift, e_open[src], e_open[i]),
                                             Mux(shift, e_hit[src], e_hit[i]))
            m.d.sync += [e_open[i].eq(nxt_open), e_hit[i].eq(nxt_hit)]
            for k, (enq_oh, enq_group, enq_open, enq_hit, at) in enumerate(lanes):
                with m.If(self.enq[k] & (at == i)):
                    m.d.sync += [e_bank[i].eq(enq_oh), e_group[i].eq(enq_group),
                                 e_row[i].eq(self.enq_row[k]), e_tag[i].eq(self.enq_tag[k]),
                                 e_write[i].eq(self.enq_write[k]), e_open[i].eq(enq_open),
                                 e_hit[i].eq(enq_hit)]
        m.d.sync += count.eq(pos)
        return m


class ResponseArbiter(wiring.Component):
    """The response ports (§2 "Response ports"): port ``k`` presents the ``k``-th valid channel
    at or after the round-robin pointer; the pointer moves past the channel of the
    highest-numbered port whose response is taken (with one port: the first valid channel at or
    after the pointer, the pointer moves past it when taken).

    Members
    -------
    valid : In(channels); take : Out(channels)
        Channel heads presented / the ones transferred this cycle.
    grant : Out(ArrayLayout(range(channels), ports)); present : Out(ports)
        The channel port ``k`` presents; port ``k`` presents one.
    ready : In(ports)
        ``resp[k].ready``.
    """

    def __init__(self, channels, ports=1):
        self._n = channels
        self._ports = ports
        super().__init__({
            "valid": In(channels), "take": Out(channels),
            "grant": Out(data.ArrayLayout(range(max(2, channels)), ports)),
            "present": Out(ports), "ready": In(ports),
        })

    def elaborate(self, platform):
        m = Module()
        n = self._n
        ptr = Signal(range(max(2, n)))
        # Position i < n: channel i if i >= ptr; position n + i: channel i if i < ptr. The
        # set bits of ``order`` from the lowest up are the valid channels in round-robin order.
        below = Signal(n)
        m.d.comb += below.eq(((Const(1, n + 1) << ptr) - 1)[:n])
        order = Signal(2 * n)
        m.d.comb += order.eq(Cat(self.valid & ~below, self.valid & below))
        rest = order
        take = 0
        for k in range(self._ports):
            oh = _lowest(m, rest, f"pick_{k}")
            m.d.comb += [self.present[k].eq(rest.any()),
                         self.grant[k].eq(_select(oh, [i % n for i in range(2 * n)]))]
            fire = self.present[k] & self.ready[k]
            take = take | Mux(fire, Const(1, n) << self.grant[k], 0)
            with m.If(fire):           # the last (highest) port taken wins
                m.d.sync += ptr.eq(Mux(self.grant[k] == n - 1, 0, self.grant[k] + 1))
            rest = rest & ~oh
        m.d.comb += self.take.eq(take)
        return m


CHANNEL_VERILOG = Path(__file__).with_name("channel.v")


def _channel_parameters(preset, timing, tag_bits, row_bits, lanes):
    """Parameters of the ``ember_hbm_channel`` module (``channel.v``): the behavioural Verilog
    twin of :class:`Channel` that Verilator builds use, for one preset."""
    t, p = timing, preset
    banks = p.bank_groups * p.banks_per_group
    if banks > 64:
        raise ValueError(f"preset {p.name!r}: at most 64 banks per channel in channel.v, "
                         f"not {banks}")
    params = {
        "QUEUE_DEPTH": p.queue_depth, "BANKS": banks, "BANKS_PER_GROUP": p.banks_per_group,
        "BANK_GROUPS": p.bank_groups, "BANK_BITS": _bits(max(2, banks) - 1),
        "ROW_BITS": row_bits, "TAG_BITS": tag_bits, "LANES": lanes,
        "OCC_BITS": _bits(p.queue_depth), "TIME_BITS": TIME_BITS,
        "RESPONSE_DEPTH": p.response_depth, "CLOSED_PAGE": int(p.page_policy == "closed"),
        "REFRESH": int(bool(p.refresh)), "REFI": t.refi,
    }
    for name in ("rl", "wl", "rcd", "rc", "rp", "ras", "rtp", "wtp", "rrd_s", "rrd_l", "faw",
                 "rfc", "ccd_s", "ccd_l", "wtr_s", "wtr_l", "rtw"):
        params[name.upper()] = getattr(t, name)
    return params


class HbmMemory(wiring.Component):
    """The HBM model: ``docs/hbm_model.md`` §2 (timing, FR-FCFS, ports), §4 (storage), §5
    (statistics).

    Parameters
    ----------
    preset : HbmPreset
        Organisation, timing and policy (``hw/hbm_model/presets.py``); not the ``simple`` preset
        (that is :class:`~hw.hbm_model.fixed_latency.FixedLatencyMemory`, see ``memory_model``).
    words : int
        Storage in 64-bit words (0: timing only; reads return 0); a multiple of the line.
    tag_bits : int
        Request/response tag width. Tags of outstanding requests must be distinct (read data and
        acceptance cycle are kept per tag).
    storage : str
        ``"memory"`` (Amaranth simulation) or ``"verilog"`` (Verilator, ``storage.v``).
    init : sequence of int, optional
        Initial storage contents (``storage="memory"`` only).
    ports : int
        Request ports and response ports (default 1; §2 "Ingress", "Response ports").
    line_bytes : int
        Data width of a port (``ports.py``): 8 (default: the 64-bit word interface) or a larger
        power of two up to ``preset.access_bytes`` (a line port: a read returns the aligned line).

    Members
    -------
    req : In(RequestSignature(tag_bits, line_bytes)), an array of ``ports`` if ``ports > 1``
        ``req[k].ready`` is combinational in the addresses and ``valid`` of ports ``0..k``: the
        channel of port ``k`` has room after the valid ports below it, none of which is refused.
    resp : Out(ResponseSignature(tag_bits, line_bytes)), an array of ``ports`` if ``ports > 1``
        Responses in any order; ``data`` is 0 for writes.
    backdoor, image_clear, image_load : In
        Storage back door (``blocks.Storage``; 64-bit words).
    stats_clear : In(1)
        Restart the statistics at this clock edge (the system pulses it with ``CTRL.START``).
    refresh_restart : In(1)
        Restart the refresh interval (``docs/hbm_model.md`` §2 "Refresh restart"): high in cycle
        ``S``, a refresh becomes due in cycle ``S + 1`` (merged with one already due and not yet
        issued), preceded by a PREA of every bank, open or not, and the next ones in
        ``S + 1 + k * tREFI``. The systems pulse it with
        ``CTRL.START`` so that every run starts at the same refresh phase. No effect without
        refresh.
    stats : Out(ArrayLayout(64, len(stat_names)))
        ``blocks.stat_names(preset.channels)`` order.

    Raises
    ------
    ValueError
        A fixed-latency preset, or a bad ``tag_bits``, ``ports``, ``line_bytes``, ``words`` or
        ``page_policy``.
    """

    def __init__(self, preset, *, words, tag_bits, storage="memory", init=None, ports=1,
                 line_bytes=8):
        from .reference import check_line_bytes
        if getattr(preset, "fixed_latency", None):
            raise ValueError(f"preset {preset.name!r} is a fixed-latency preset; use "
                             f"memory_model() or FixedLatencyMemory")
        if not isinstance(tag_bits, int) or tag_bits < 1:
            raise ValueError(f"tag_bits must be a positive integer, not {tag_bits!r}")
        if not isinstance(ports, int) or isinstance(ports, bool) or ports < 1:
            raise ValueError(f"ports must be a positive integer, not {ports!r}")
        check_line_bytes(preset, line_bytes)
        if preset.page_policy not in ("open", "closed"):
            raise ValueError(f"page_policy must be 'open' or 'closed', not {preset.page_policy!r}")
        self.preset = preset
        self.ports = ports
        self.line_bytes = line_bytes
        self.timing = DerivedTiming(preset)
        self._tag_bits = tag_bits
        self._storage = Storage(words=words, storage=storage, init=init, ports=ports,
                                line_bytes=line_bytes)
        self._decoders = [AddressDecoder(preset) for _ in range(ports)]
        self.stat_names = stat_names(preset.channels)
        self.words = words
        self._channel_params = None
        #: Verilog modules this model instantiates (name -> text); with ``storage="verilog"`` the
        #: channels are ``channel.v`` (``ember_hbm_channel``, the behavioural twin of
        #: :class:`Channel`, much faster under Verilator). The system's Verilog must include them.
        self.verilog_modules = {}
        row_bits = self._decoders[0].row_bits
        if storage == "verilog":
            self._channel_params = _channel_parameters(preset, self.timing, tag_bits, row_bits,
                                                       ports)
            self._channel_signature = wiring.Signature(Channel.members(
                preset, tag_bits=tag_bits, row_bits=row_bits, lanes=ports))
            self.verilog_modules["ember_hbm_channel"] = CHANNEL_VERILOG.read_text()
            self.verilog_modules["ember_hbm_stats"] = STATS_VERILOG.read_text()
        req = In(RequestSignature(tag_bits, line_bytes))
        resp = Out(ResponseSignature(tag_bits, line_bytes))
        super().__init__({
            "req":         req if ports == 1 else req.array(ports),
            "resp":        resp if ports == 1 else resp.array(ports),
            "backdoor":    In(BackdoorSignature(self._storage.addr_bits)),
            "image_clear": In(1),
            "image_load":  In(1),
            "stats_clear": In(1),
            "refresh_restart": In(1),
            "stats":       Out(data.ArrayLayout(64, len(self.stat_names))),
        })

    @property
    def addr_bits(self):
        return self._storage.addr_bits

    @property
    def request_ports(self):
        """The request ports as a list (``[req]`` or ``list(req)``)."""
        return [self.req] if self.ports == 1 else [self.req[k] for k in range(self.ports)]

    @property
    def response_ports(self):
        """The response ports as a list (``[resp]`` or ``list(resp)``)."""
        return [self.resp] if self.ports == 1 else [self.resp[k] for k in range(self.ports)]

    def elaborate(self, platform):
        m = Module()
        p, t = self.preset, self.timing
        C, P, Q = p.channels, self.ports, p.queue_depth
        lb = 8 * self.line_bytes
        reqs, resps = self.request_ports, self.response_ports
        m.submodules.storage = st = self._storage
        decs = self._decoders
        for k, dec in enumerate(decs):
            m.submodules[f"decoder_{k}"] = dec
        m.submodules.refresh = ref = RefreshTimer(t.refi)
        m.d.comb += ref.restart.eq(self.refresh_restart)
        m.submodules.arbiter = arb = ResponseArbiter(C, P)
        m.submodules.stats = stats = Statistics(
            channels=C, queue_depth=Q, access_bytes=p.access_bytes, burst=t.burst,
            max_per_cycle=C, ports=P, verilog=self._channel_params is not None)
        channels = []
        for c in range(C):
            if self._channel_params is None:
                ch = Channel(p, t, tag_bits=self._tag_bits, row_bits=decs[0].row_bits, lanes=P)
                m.submodules[f"channel_{c}"] = ch
            else:
                # channel.v: its ports are the Channel's members.
                ch = self._channel_signature.create(path=(f"channel_{c}",))
                ports = {}
                for path, member, value in self._channel_signature.flatten(ch):
                    ports[("i_" if member.flow == In else "o_") + "__".join(map(str, path))] = value
                params = {f"p_{name}": value for name, value in self._channel_params.items()}
                m.submodules[f"channel_{c}"] = Instance("ember_hbm_channel", i_clk=ClockSignal(),
                                                        i_rst=ResetSignal(), **params, **ports)
            channels.append(ch)

        now = Signal(TIME_BITS)
        m.d.sync += now.eq(now + 1)

        # -- ingress (§2): ports in order; port k is accepted iff valid, its channel has room
        # after the valid ports below it, and no valid port below it is refused ---------------
        occupancy = Array(ch.occupancy for ch in channels)
        accept = Signal(P)
        blocked = Const(0, 1)
        for k, (req, dec) in enumerate(zip(reqs, decs)):
            m.d.comb += dec.addr.eq(req.payload.addr)
            same = sum((reqs[j].valid & (decs[j].channel == dec.channel)) for j in range(k)) \
                if k else 0
            fits = Signal(name=f"fits_{k}")
            m.d.comb += fits.eq((occupancy[dec.channel] if C > 1 else channels[0].occupancy)
                                + same < Q)
            m.d.comb += [req.ready.eq(fits & ~blocked), accept[k].eq(req.valid & req.ready)]
            blocked = blocked | (req.valid & ~fits)
        for c, ch in enumerate(channels):
            for k, (req, dec) in enumerate(zip(reqs, decs)):
                m.d.comb += [
                    ch.enq[k].eq(accept[k] & (dec.channel == c)),
                    ch.enq_bank[k].eq(dec.bank), ch.enq_row[k].eq(dec.row),
                    ch.enq_tag[k].eq(req.payload.tag), ch.enq_write[k].eq(req.payload.write),
                ]
            m.d.comb += [ch.refresh_tick.eq(ref.tick), ch.refresh_restart.eq(self.refresh_restart),
                         ch.now.eq(now)]

        # Storage at acceptance (§4, port order); a read's data and acceptance cycle by tag.
        wiring.connect(m, wiring.flipped(self.backdoor), st.backdoor)
        m.d.comb += [st.image_clear.eq(self.image_clear), st.image_load.eq(self.image_load)]
        m.submodules.by_tag = by_tag = memory.Memory(shape=lb + TIME_BITS,
                                                     depth=1 << self._tag_bits, init=[])
        tag_rd = []
        for k, req in enumerate(reqs):
            pl = req.payload
            m.d.comb += [
                st.rd_en[k].eq(accept[k] & ~pl.write), st.rd_addr[k].eq(pl.addr[3:]),
                st.wr_en[k].eq(accept[k] & pl.write), st.wr_addr[k].eq(pl.addr[3:]),
                st.wr_data[k].eq(pl.wdata), st.wr_strb[k].eq(pl.wstrb),
            ]
            tag_wr = by_tag.write_port()
            held = Signal(name=f"held_{k}")          # a read was accepted in the previous cycle
            held_tag = Signal(self._tag_bits, name=f"held_tag_{k}")
            held_time = Signal(TIME_BITS, name=f"held_time_{k}")
            m.d.sync += [held.eq(accept[k] & ~pl.write), held_tag.eq(pl.tag), held_time.eq(now)]
            m.d.comb += [tag_wr.en.eq(held), tag_wr.addr.eq(held_tag),
                         tag_wr.data.eq(Cat(st.rd_data[k], held_time))]
        for k in range(P):
            tag_rd.append(by_tag.read_port(domain="comb"))

        # -- response ports ----------------------------------------------------------------------
        m.d.comb += arb.valid.eq(Cat(ch.resp_valid for ch in channels))
        for c, ch in enumerate(channels):
            m.d.comb += ch.resp_take.eq(arb.take[c])
        resp_tags = Array(ch.resp_tag for ch in channels)
        resp_writes = Array(ch.resp_write for ch in channels)
        delivered = Signal(P)
        resp_write = Signal(P)
        latency = []
        for k, resp in enumerate(resps):
            tag, write = resp_tags[arb.grant[k]], resp_writes[arb.grant[k]]
            m.d.comb += [
                arb.ready[k].eq(resp.ready),
                tag_rd[k].addr.eq(tag),
                resp.valid.eq(arb.present[k]),
                resp.payload.tag.eq(tag),
                resp.payload.write.eq(write),
                resp.payload.data.eq(Mux(write, 0, tag_rd[k].data[:lb])),
                delivered[k].eq(resp.valid & resp.ready),
                resp_write[k].eq(write),
            ]
            latency.append(now - tag_rd[k].data[lb:])

        # -- statistics --------------------------------------------------------------------------
        # Classification (§2: bank state at the start of the request's first cycle as a
        # candidate, i.e. after this cycle's commands), counted in the acceptance cycle.
        def popcount(bits):
            return sum(bits[i] for i in range(len(bits)))
        m.d.comb += [
            stats.clear.eq(self.stats_clear),
            stats.accept.eq(accept), stats.accept_write.eq(Cat(r.payload.write for r in reqs)),
            stats.classify.eq(accept),
            stats.activates.eq(popcount(Cat(ch.act for ch in channels))),
            stats.precharges.eq(popcount(Cat(ch.pre for ch in channels))),
            stats.refreshes.eq(popcount(Cat(ch.ref for ch in channels))),
            stats.deliver.eq(delivered), stats.deliver_write.eq(resp_write),
            stats.column.eq(Cat(ch.col for ch in channels)),
        ]
        for k, dec in enumerate(decs):
            kinds = Array(ch.enq_kind[k] for ch in channels)
            m.d.comb += [stats.classify_kind[k].eq(kinds[dec.channel]),
                         stats.deliver_latency[k].eq(latency[k])]
        for c, ch in enumerate(channels):
            m.d.comb += stats.occupancy[c].eq(ch.occupancy)
        m.d.comb += self.stats.eq(stats.stats)
        return m
