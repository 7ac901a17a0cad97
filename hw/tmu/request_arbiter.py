"""The memory ports' arbiter: a request buffer per requester, then the ports in priority order."""

from amaranth.hdl import Cat, Const, Module, Mux, ResetInserter, Signal
from amaranth.lib import data, fifo, stream, wiring
from amaranth.lib.wiring import In, Out

from ..core_if.signatures import ADDR_BITS, MemRequestSignature


__all__ = ["request_layout", "RequestArbiter"]


def request_layout(index_bits):
    """One requester's load: ``addr`` (bytes; the port loads the aligned line holding it),
    ``tag`` (``{kind[1:0], index[index_bits-1:0]}``, ``TmuConfig.tag_bits`` without the epoch),
    ``useful_bytes`` (the bytes of the line the unit uses, for the ``issued_bytes`` counter)
    and ``blocking`` (a blocking load of the traversal, for ``issued_blocking``)."""
    return data.StructLayout({
        "addr":         ADDR_BITS,
        "tag":          index_bits + 2,
        "useful_bytes": 8,
        "blocking":     1,
    })


class RequestArbiter(wiring.Component):
    """Puts the requesters' line loads on the memory ports, one register stage after they leave.

    Each requester (the traversal, each lane of the row issue block, each run-ahead engine)
    writes its loads into a buffer of its own, two entries deep (``amaranth.lib.fifo.SyncFIFO``,
    whose ``w_rdy`` and ``r_rdy`` are registers): its ``ready`` is the buffer's "not full", so a
    requester's next state never waits on the ports' arbitration, and the arbitration starts from
    registered requests. This is the register slice ``docs/synthesis.md`` asks for between the
    traversal's uop and the port arbitration: before it, the uop's evaluation, the arbitration
    and every requester's update were one combinational path. A load costs one cycle more from
    its requester to the memory; with two entries a requester still issues one load per cycle
    while the ports take one from it per cycle.

    Every cycle the buffers' oldest loads go to the ports in priority order, on the
    lowest-numbered ports: first the *urgent* requesters (``urgent``), then the others, each
    class in requester order (requester 0 first); a load takes port ``k`` when ``k`` loads come
    before it in that order (``docs/rtl.md`` §2.4). The port's tag is ``Cat(tag, epoch)``.

    Parameters
    ----------
    requesters : int
        Number of requesters, in priority order.
    ports : int
        Memory request ports (``TmuConfig.memory_ports``), 1..8.
    index_bits : int
        Bits of a tag's index (``TmuConfig.tag_index_bits``).
    line_bytes : int
        Width of a memory line, bytes (``TmuConfig.line_bytes``).

    Members
    -------
    requests : In(stream.Signature(request_layout(index_bits))).array(requesters)
        The requesters' loads; ``ready`` is a register (a buffer with space).
    req : Out(MemRequestSignature(index_bits + 3, line_bytes)).array(ports)
        Line loads, ``valid`` from registers only.
    urgent : In(requesters)
        Per requester: its loads go before those of the requesters that are not urgent (a run-ahead
        engine close to running dry ahead of the rows, ``docs/rtl.md`` §2.4). Should come from
        registers.
    epoch : In(1)
        The run's parity, the tag's top bit (responses of an earlier run are dropped by it).
    clear : In(1)
        Empty every buffer (the start of a run: loads of an earlier run are not issued).
    issued, issued_bytes, issued_blocking : Out
        Loads that left on a port this cycle, their useful bytes, and how many were blocking
        (the ``issued*`` event counters, ``docs/rtl.md`` §6).
    """

    def __init__(self, requesters, ports, index_bits, line_bytes):
        if not isinstance(requesters, int) or requesters < 1:
            raise ValueError(f"requesters must be a positive integer, not {requesters!r}")
        if not isinstance(ports, int) or not 1 <= ports <= 8:
            raise ValueError(f"ports must be an integer in 1..8, not {ports!r}")
        self._requesters = requesters
        self._ports = ports
        self._index_bits = index_bits
        super().__init__({
            "requests": In(stream.Signature(request_layout(index_bits))).array(requesters),
            "req": Out(MemRequestSignature(index_bits + 3, line_bytes)).array(ports),
            "urgent": In(requesters),
            "epoch": In(1),
            "clear": In(1),
            "issued": Out(range(ports + 1)),
            "issued_bytes": Out(range(64 * ports + 1)),
            "issued_blocking": Out(range(ports + 1)),
        })

    def elaborate(self, platform):
        m = Module()
        P = self._ports
        layout = request_layout(self._index_bits)
        port_bytes = [Signal(8, name=f"issued_bytes_{k}") for k in range(P)]
        port_blocking = [Signal(name=f"issued_blocking_{k}") for k in range(P)]
        R = self._requesters
        buffers = []
        for r, request in enumerate(self.requests):
            buffer = ResetInserter(self.clear)(fifo.SyncFIFO(width=layout.size, depth=2))
            m.submodules[f"request_buffer_{r}"] = buffer
            m.d.comb += [
                buffer.w_data.eq(request.payload),
                buffer.w_en.eq(request.valid),
                request.ready.eq(buffer.w_rdy),
            ]
            buffers.append(buffer)
        # A load's place in the order: the buffered loads of the urgent requesters before it
        # (it is urgent), or of all urgent requesters and of the others before it (it is not).
        place = []
        before = Const(0, range(R + 1))
        for r, buffer in enumerate(buffers):
            place.append(before)
            counted = Signal(range(R + 1), name=f"urgent_before_{r + 1}")
            m.d.comb += counted.eq(before + (buffer.r_rdy & self.urgent[r]))
            before = counted
        for r, buffer in enumerate(buffers):
            mine = Signal(range(R + 1), name=f"place_{r}")
            m.d.comb += mine.eq(Mux(self.urgent[r], place[r], before))
            counted = Signal(range(R + 1), name=f"buffered_before_{r + 1}")
            m.d.comb += counted.eq(before + (buffer.r_rdy & ~self.urgent[r]))
            before = counted
            place[r] = mine
        for r, buffer in enumerate(buffers):
            head = data.View(layout, buffer.r_data)
            for k in range(P):
                with m.If(buffer.r_rdy & (place[r] == k)):
                    m.d.comb += [
                        self.req[k].valid.eq(1),
                        self.req[k].payload.addr.eq(head.addr),
                        self.req[k].payload.tag.eq(Cat(head.tag, self.epoch)),
                        port_bytes[k].eq(head.useful_bytes),
                        port_blocking[k].eq(head.blocking),
                        buffer.r_en.eq(self.req[k].ready),
                    ]
        fired = [self.req[k].valid & self.req[k].ready for k in range(P)]
        m.d.comb += [
            self.issued.eq(sum(fired)),
            self.issued_bytes.eq(sum(Mux(fired[k], port_bytes[k], 0) for k in range(P))),
            self.issued_blocking.eq(sum(fired[k] & port_blocking[k] for k in range(P))),
        ]
        return m
