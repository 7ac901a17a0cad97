"""The traversal's blocking load (``docs/rtl.md`` §2.2): a ``STREAM`` uop of a blocking MEM stream
that no run-ahead engine serves issues its line request with the blocking tag
(``1 << tag_index_bits``, tag kind 1) and the traversal waits (its ``BWAIT`` state) for the
response line, whose element becomes the stream's value.

Not a component: :class:`BlockingLoad` adds its registers and logic to the traversal's
``Module``; the traversal's FSM calls :meth:`BlockingLoad.issue` in its ``RUN`` state and
:meth:`BlockingLoad.complete` in ``BWAIT``.
"""

from amaranth.hdl import Cat, Signal

from .datapath import extract_aligned


__all__ = ["BlockingLoad"]


class BlockingLoad:
    """The blocking load in flight: which stream (and LOCKSTEP lane) it is for and where its
    element lies in the line.

    Parameters
    ----------
    m : Module
        The traversal's module.
    traversal : Traversal
        Its ports: ``req``, ``blocking_resp_data``, ``stat_issue_bytes``, ``stat_blocking``.
    config : TmuConfig
        ``line_offset_bits``, ``tag_index_bits``.
    stream_bits : int
        Bits of a stream number.

    Attributes
    ----------
    arrived : Signal
        Register: the response line came in the cycle before (in ``BWAIT``; one cycle high).
    value : Signal(64)
        Register: the element of the last response line (aligned: its address was checked
        before the request), sign- or zero-extended as the stream's mode says; the loaded
        element when ``arrived`` is high.
    """

    def __init__(self, m, traversal, config, stream_bits):
        self._t, self._c = traversal, config
        self.stream_id = Signal(stream_bits, name="blocking_stream_id")
        self.offset = Signal(config.line_offset_bits, name="blocking_offset")   # in the line
        self.log2_size = Signal(2, name="blocking_log2_size")
        self.sign = Signal(name="blocking_sign")
        self.lockstep = Signal(name="blocking_lockstep")   # ... for a lane of the LOCKSTEP layer
        self.arrived = Signal(name="blocking_arrived")
        self.value = Signal(64, name="blocking_value")
        m.d.sync += [self.arrived.eq(0),
                     self.value.eq(extract_aligned(traversal.blocking_resp_data, self.offset,
                                                   self.log2_size, self.sign))]

    def issue(self, m, uop, stream):
        """Offer the request of ``uop``'s stream (``stream``: its ``StreamEvaluation``) in
        this cycle; when it is taken, remember where its element lies and go to ``BWAIT``."""
        t, c = self._t, self._c
        m.d.comb += [
            t.req.valid.eq(1),
            t.req.payload.addr.eq(stream.addr),
            t.req.payload.tag.eq(1 << c.tag_index_bits),
            t.stat_issue_bytes.eq(stream.esize),
            t.stat_blocking.eq(1),
        ]
        with m.If(t.req.ready):
            m.d.sync += [self.stream_id.eq(uop.id),
                         self.offset.eq(stream.addr[0:c.line_offset_bits]),
                         self.log2_size.eq(stream.log2),
                         self.sign.eq(stream.s_mode.sign),
                         self.lockstep.eq(stream.s_lockstep)]
            m.next = "BWAIT"

    def watch(self, m):
        """Sync, in ``BWAIT``: ``arrived`` next cycle if the response line is here now."""
        with m.If(self._t.blocking_resp_valid):
            m.d.sync += self.arrived.eq(1)

    def complete(self, m, values, lanes):
        """The response came (``arrived``, in the traversal's condition): the element becomes the
        stream's value (``values``: the stream value registers, a ``StreamValues``) and, for a
        lane of the LOCKSTEP layer, that lane's value (``lanes``: ``LockstepLanes``)."""
        values.write("loaded", self.stream_id, self.value)
        if lanes.enabled:
            vreg_w = lanes.vreg_w
            m.d.comb += [vreg_w.addr.eq(Cat(lanes.lane[:lanes.lane_bits], self.stream_id)),
                         vreg_w.data.eq(self.value),
                         vreg_w.en.eq(self.lockstep)]
