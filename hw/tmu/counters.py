"""The access unit's per-run event counters, counting each cycle's events one cycle late."""

from amaranth.hdl import Module, Signal
from amaranth.lib import data, wiring
from amaranth.lib.wiring import In, Out


__all__ = ["COUNTERS", "CountersLayout", "events_layout", "Counters"]


#: Per-run counters, in CSR order (``docs/rtl.md``). All 64-bit, cleared at start.
COUNTERS = (
    "cycles",            # cycles from start to done
    "loads",             # line requests issued (operand + blocking)
    "bytes_loaded",      # useful bytes: sum of the sizes of the elements those lines were loaded for
    "blocking_loads",    # of which blocking (the traversal waited for them)
    "data_tokens",       # tokens pushed into the data queue (a beat carries up to output_tokens)
    "control_tokens",    # tokens pushed into the control queue (DONE included)
    "out_stall_cycles",  # cycles the head token waited for a full output queue
    "rob_full_cycles",   # cycles an action waited for a free reorder-buffer entry
    "block_wait_cycles", # cycles the traversal waited for a blocking load
    "peak_inflight",     # most line requests in flight at once
    "inflight_sum",      # sum over cycles of line requests in flight (mean = inflight_sum / cycles)
    "decode_cycles",     # cycles spent decoding (and building the microcode)
    "vector_iterations", # vector iterations of the ISA v1 LOCKSTEP layer
    "lane_eval_uops",    # STREAM/LANE uops of the LOCKSTEP layer completed (1 cycle each + waits)
    "vec_marshal_cycles",  # cycles on vector OPERAND actions (lanes, words of a row, padding)
    "uops",              # microcode entries completed (pc moved, DONE included): at most 1/cycle
    "fetch_bubble_cycles",  # cycles the traversal waited for its fetch stage (a mispredicted or
                            # first uop, a configuration word read again)
    "issue_wait_cycles",    # cycles a load request or a row job the traversal offered was not
                            # taken (its request buffer, or the row issue block, was full)
    "evaluate_cycles",      # two stages: cycles the traversal evaluated a uop without executing
                            # one (an evaluate cycle not overlapped with an execution)
)

CountersLayout = data.StructLayout({name: 64 for name in COUNTERS})


def events_layout(config):
    """One cycle's events of a run of the unit (``config``: a ``TmuConfig``): line requests
    issued (``issued``, of which ``issued_blocking``; ``issued_bytes``, their useful bytes),
    line responses of the run received (``responses``), data tokens pushed (``data_tokens``),
    and one bit per cycle-counting event."""
    ports = config.memory_ports
    return data.StructLayout({
        "issued":           range(ports + 1),
        "issued_bytes":     range(64 * ports + 1),
        "issued_blocking":  range(ports + 1),
        "responses":        range(ports + 1),
        "data_tokens":      range(config.output_tokens + 1),
        "control_tokens":   1,
        "out_stall":        1,
        "rob_full":         1,
        "block_wait":       1,
        "decoding":         1,
        "vector_iteration": 1,
        "lane_eval_uop":    1,
        "vec_marshal":      1,
        "uop":              1,
        "fetch_bubble":     1,
        "issue_wait":       1,
        "evaluate":         1,
    })


class Counters(wiring.Component):
    """The counters of ``COUNTERS`` (64-bit, ``docs/rtl.md`` §2.7), one cycle late.

    A counter adds an event in the cycle after it happened: the events of a cycle in which
    ``count`` is set are registered, then added. So no 64-bit adder sits at the end of the
    unit's decision logic (the events are the traversal's and the arbiter's late signals):
    a counter's path is a register, its adder, itself. The counts of a run are therefore
    complete one cycle after its last counted cycle; the unit raises ``done`` a cycle after
    its run ends (``hw/tmu/tmu.py``), when they are.

    Parameters
    ----------
    config : TmuConfig

    Members
    -------
    clear : In(1)
        Start of a run: every counter, the requests in flight and a pending sample to 0.
    count : In(1)
        This cycle belongs to the run: it is counted (``cycles``) and ``events`` are sampled.
    events : In(events_layout(config))
        This cycle's events; read only when ``count`` is set.
    counters : Out(CountersLayout)
        The counts, up to the cycle before the previous one (all of them one cycle after the
        last cycle with ``count``). ``peak_inflight`` and ``inflight_sum`` count the line
        requests in flight at the start of each counted cycle (issued minus received before
        it) and after it.
    """

    def __init__(self, config):
        self._cfg = config
        super().__init__({
            "clear":    In(1),
            "count":    In(1),
            "events":   In(events_layout(config)),
            "counters": Out(CountersLayout),
        })

    def elaborate(self, platform):
        m = Module()
        c = self._cfg
        sampled = Signal()                             # last cycle was counted
        ev = Signal(events_layout(c))                  # its events
        inflight = Signal(range(c.max_inflight + 2))   # in flight at the start of last cycle
        inflight_after = Signal.like(inflight)         # at its end
        m.d.comb += inflight_after.eq(inflight + ev.issued - ev.responses)
        cnt = Signal(CountersLayout)
        m.d.comb += self.counters.eq(cnt)

        with m.If(self.clear):
            m.d.sync += [cnt.eq(0), inflight.eq(0), sampled.eq(0), ev.eq(0)]
        with m.Else():
            m.d.sync += [sampled.eq(self.count), ev.eq(self.events)]
            with m.If(sampled):
                m.d.sync += [
                    inflight.eq(inflight_after),
                    cnt.cycles.eq(cnt.cycles + 1),
                    cnt.loads.eq(cnt.loads + ev.issued),
                    cnt.bytes_loaded.eq(cnt.bytes_loaded + ev.issued_bytes),
                    cnt.blocking_loads.eq(cnt.blocking_loads + ev.issued_blocking),
                    cnt.data_tokens.eq(cnt.data_tokens + ev.data_tokens),
                    cnt.control_tokens.eq(cnt.control_tokens + ev.control_tokens),
                    cnt.out_stall_cycles.eq(cnt.out_stall_cycles + ev.out_stall),
                    cnt.rob_full_cycles.eq(cnt.rob_full_cycles + ev.rob_full),
                    cnt.block_wait_cycles.eq(cnt.block_wait_cycles + ev.block_wait),
                    cnt.inflight_sum.eq(cnt.inflight_sum + inflight),
                    cnt.decode_cycles.eq(cnt.decode_cycles + ev.decoding),
                    cnt.vector_iterations.eq(cnt.vector_iterations + ev.vector_iteration),
                    cnt.lane_eval_uops.eq(cnt.lane_eval_uops + ev.lane_eval_uop),
                    cnt.vec_marshal_cycles.eq(cnt.vec_marshal_cycles + ev.vec_marshal),
                    cnt.uops.eq(cnt.uops + ev.uop),
                    cnt.fetch_bubble_cycles.eq(cnt.fetch_bubble_cycles + ev.fetch_bubble),
                    cnt.issue_wait_cycles.eq(cnt.issue_wait_cycles + ev.issue_wait),
                    cnt.evaluate_cycles.eq(cnt.evaluate_cycles + ev.evaluate),
                ]
                with m.If(inflight_after > cnt.peak_inflight):
                    m.d.sync += cnt.peak_inflight.eq(inflight_after)
            with m.Else():
                m.d.sync += inflight.eq(0)
        return m
