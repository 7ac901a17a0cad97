"""Reorder buffer: marshaled data operands in program order, line loads completing out of order."""

from amaranth.hdl import Const, Module, Mux, Signal
from amaranth.lib import data, stream, wiring
from amaranth.lib.wiring import In, Out

from .datapath import one_hot
from .multiport_memory import MultiPortMemory
from .packer import chunk_layout


__all__ = ["alloc_layout", "ReorderBuffer"]


def alloc_layout(line_bytes):
    """One marshaled entry (elements of one operand) entering the reorder buffer."""
    return data.StructLayout({
        "load":      1,     # 1: ``value`` is not used, the entry waits for the line tagged with its slot
        "value":     64,    # the operand (an immediate entry)
        "offset":    max(1, (line_bytes - 1).bit_length()),  # byte of the first element in the line
        "log2_size": 2,     # log2 of the element size, bytes; 3 for an immediate operand
        "sign":      1,     # sign-extend the elements
        "count":     max(line_bytes, 8).bit_length(),   # elements (0: a flush only, docs/isa.md §7.4)
        "pack":      2,     # ISA v1 packed element width 8 >> pack bytes (docs/isa.md §7.5)
        "flush":     1,     # the packer closes its partial token after the entry's last element
    })


class ReorderBuffer(wiring.Component):
    """Data operands enter in marshaling order and leave in the same order (to the packer).

    An entry is allocated for every marshaled operand: an immediate (a value the traversal
    already has) is ready at once; a load's entry (one memory line, the elements of the operand
    that lie in it) becomes ready when the response tagged with its slot number arrives, on any
    response port. The lines of a BLOCK row or contiguous vector are *reserved* as a range of
    consecutive entries in one cycle; their descriptions arrive later, one per line as the row
    issue block (``hw/tmu/row_issue.py``) sends the line's request (``entry_*``). Responses
    are always accepted, since a load is issued only with its slot already allocated. Control
    tokens are always immediate and need no reordering: they go to the control queue directly.

    **The drain window.** The oldest entries wait in ``2 * drain`` registers, each with its line
    or immediate already chosen: ``data`` (the head) and ``data_more`` (the entries after it)
    are those registers, and the packer drains up to ``drain`` of them per cycle, in order; a
    stalled output holds them (nothing is dropped). In every cycle the memories are read at the
    up to ``drain`` slots after the window, and those that are ready, in order, join it at the
    end of the cycle as long as it has room. So an entry leaves one cycle after it is ready (a
    response or an immediate allocation in cycle ``t``: into the window at the end of ``t + 1``,
    out to the packer in ``t + 2``; its tokens leave the packer's two stages at the earliest
    two cycles later, ``hw/tmu/packer.py``), at the full rate of ``drain`` entries per cycle
    once the window is filled, and what the packer decides (its ``ready``) reaches no memory
    address and no ready bit: the packer's path starts at registers (``docs/synthesis.md``,
    "The drain window and the engines' heads in registers"). An entry stays allocated
    (``count``, ``free``) until it is drained.

    Storage is block RAM (``amaranth.lib.memory``; where several ports write, a
    :class:`~hw.tmu.multiport_memory.MultiPortMemory`: a copy per write and read port and a
    live-value table): the lines (``depth`` x ``line_bytes`` bytes, one write port per response
    port, a read port per drained entry: ``ports * drain`` copies), the immediates and the
    entries' descriptions (two banks each, even and odd slots, so that two entries can be
    allocated per cycle; the descriptions of ``row_writes`` consecutive reserved entries are
    written per cycle, ``ceil(row_writes / 2)`` write ports a bank), all read one cycle ahead at
    the slots after the window.

    Parameters
    ----------
    depth : int
        Entries, a power of two >= 2 (``TmuConfig.max_inflight``).
    line_bytes : int
        Width of a memory line, bytes (``TmuConfig.line_bytes``).
    ports : int
        Response ports (``TmuConfig.memory_ports``).
    reserve_max : int
        Most entries one reservation takes (``TmuConfig.row_chunk_lines``).
    row_writes : int
        Descriptions of reserved entries written per cycle, 1..8 (``TmuConfig.row_lines``).
    drain : int
        Entries drained per cycle, 1..4 (``TmuConfig.drain_lines``).

    Members
    -------
    clear : In(1)
        Empty the buffer (start of a run).
    alloc_en : In(1)
        Allocate the entry ``alloc_slot`` with ``alloc`` at this clock edge, or, with
        ``alloc_reserve``, reserve ``alloc_count`` entries from ``alloc_slot``. Only while
        ``alloc_ready`` (reservation: ``free >= alloc_count``).
    alloc : In(alloc_layout(line_bytes))
    alloc_reserve : In(1)
    alloc_count : In(range(reserve_max + 1))
        Entries a reservation takes (1..``reserve_max``); 1 without ``alloc_reserve``.
    alloc_ready : Out(1)
        An entry is free.
    alloc2_en : In(1)
        With ``alloc_en``: also allocate the entry after the first allocation's with ``alloc2``
        (an immediate token, or, after a one-entry allocation, a lazy one whose load is tagged
        ``alloc_slot + 1``; ``docs/rtl.md`` §9.5 A). Only while ``alloc2_ready`` (after a
        reservation: ``free > alloc_count``).
    alloc2 : In(alloc_layout(line_bytes))
    alloc2_ready : Out(1)
        Two entries are free.
    alloc_slot : Out(range(depth))
        Slot the next allocation gets; it is the tag of a load issued with it.
    free : Out(range(depth + 1))
        Entries not allocated.
    entry_en, entry_slot, entry : In(ArrayLayout(..., row_writes))
        Write the description of the reserved entry ``entry_slot[k]`` (the slots of one cycle
        are consecutive, hence in different banks).
    resp_valid, resp_slot, resp_data : In(ArrayLayout(..., ports))
        Per response port: a line for ``resp_slot``. The slots of one cycle are distinct.
    data : Out(stream.Signature(chunk_layout(line_bytes)))
        Entries, in order, for the packer (``hw/tmu/packer.py``): the head (a register of the
        drain window; ``valid`` and ``payload`` do not depend on ``ready``).
    data_more : Out(stream.Signature(chunk_layout(line_bytes))).array(drain - 1)
        Only with ``drain`` > 1: the ``k + 1``-th entry after the head, valid only when the
        entries before it are (``data.valid`` and ``data_more[:k]``); the consumer takes it
        (``ready``) only in a cycle in which it takes all the entries before it.
    count : Out(range(depth + 1))
        Allocated entries.
    head_stall : Out(1)
        The head is ready but its output stream is not.
    """

    def __init__(self, depth, line_bytes=8, ports=1, reserve_max=1, row_writes=1, drain=1):
        if not isinstance(depth, int) or depth < 2 or depth & (depth - 1):
            raise ValueError(f"depth must be a power of two >= 2, not {depth!r}")
        if line_bytes not in (8, 16, 32, 64):
            raise ValueError(f"line_bytes must be 8, 16, 32 or 64, not {line_bytes!r}")
        if not isinstance(ports, int) or not 1 <= ports <= 8:
            raise ValueError(f"ports must be an integer in 1..8, not {ports!r}")
        self._depth = depth
        self._bits = (depth - 1).bit_length()
        self._line_bytes = line_bytes
        self._ports = ports
        if not isinstance(reserve_max, int) or not 1 <= reserve_max <= depth // 2:
            raise ValueError(f"reserve_max must be an integer in 1..depth/2, not {reserve_max!r}")
        self._reserve_max = reserve_max
        if not isinstance(row_writes, int) or not 1 <= row_writes <= 8:
            raise ValueError(f"row_writes must be an integer in 1..8, not {row_writes!r}")
        self._row_writes = row_writes
        if not isinstance(drain, int) or not 1 <= drain <= min(4, depth):
            raise ValueError(f"drain must be an integer in 1..min(4, depth), not {drain!r}")
        self._drain = drain
        layout = alloc_layout(line_bytes)
        members = {
            "clear":       In(1),
            "alloc_en":    In(1),
            "alloc":       In(layout),
            "alloc_ready": Out(1),
            "alloc_slot":  Out(self._bits),
            "alloc_reserve": In(1),
            "alloc_count": In(range(reserve_max + 1)),
            "free":        Out(range(depth + 1)),
            "entry_en":    In(row_writes),
            "entry_slot":  In(data.ArrayLayout(self._bits, row_writes)),
            "entry":       In(data.ArrayLayout(layout, row_writes)),
            "alloc2_en":    In(1),
            "alloc2":       In(layout),
            "alloc2_ready": Out(1),
            "resp_valid":  In(ports),
            "resp_slot":   In(data.ArrayLayout(self._bits, ports)),
            "resp_data":   In(data.ArrayLayout(8 * line_bytes, ports)),
            "data":        Out(stream.Signature(chunk_layout(line_bytes))),
            "count":       Out(range(depth + 1)),
            "head_stall":  Out(1),
        }
        if drain > 1:
            members["data_more"] = Out(stream.Signature(chunk_layout(line_bytes))).array(drain - 1)
        super().__init__(members)

    def elaborate(self, platform):
        m = Module()
        depth, half = self._depth, self._depth // 2
        layout = alloc_layout(self._line_bytes)

        tail  = Signal(self._bits)
        count = Signal(range(depth + 1))
        ready = Signal(depth)

        # Immediates and descriptions: even and odd banks. Lines: one memory, a write port per
        # response port. Read ports: the ``k``-th slot after the drain window (``window_end +
        # k``, below) is read from bank ``(window_end + k) % 2``, that bank's read port ``k // 2``.
        # A memory written by several ports is a MultiPortMemory (a copy per write and read
        # port and a live-value table), so that the FPGA flow maps it to block RAM, not to
        # flip-flops (docs/synthesis.md).
        D = self._drain
        row_ports = (self._row_writes + 1) // 2
        banks_w, banks_r = [], []
        for b in range(2):
            for kind, shape in (("value", 64), ("entry", layout)):
                mem = MultiPortMemory(shape=shape, depth=half,
                                      write_ports=1 + (row_ports if kind == "entry" else 0),
                                      read_ports=(D + 1) // 2)
                m.submodules[f"{kind}s{b}"] = mem
                banks_w.append((b, kind, mem.write[0]))
                if kind == "entry":      # the row issue block's descriptions
                    for j in range(row_ports):
                        row_w = mem.write[1 + j]
                        for k in reversed(range(2 * j, min(2 * j + 2, self._row_writes))):
                            with m.If(self.entry_en[k] & (self.entry_slot[k][0] == b)):
                                m.d.comb += [row_w.addr.eq(self.entry_slot[k][1:]),
                                             row_w.data.eq(self.entry[k]), row_w.en.eq(1)]
                for j in range((D + 1) // 2):
                    banks_r.append((b, kind, j, mem.read[j]))
        m.submodules.lines = lines = MultiPortMemory(shape=8 * self._line_bytes, depth=depth,
                                                     write_ports=self._ports, read_ports=D)
        lines_w = [lines.write[k] for k in range(self._ports)]
        lines_r = [lines.read[k] for k in range(D)]

        # Allocation: an entry (or a reserved range) at ``tail``, an immediate after it.
        first_count = Signal(range(self._reserve_max + 1))
        m.d.comb += first_count.eq(Mux(self.alloc_reserve, self.alloc_count, 1))
        tail_second = Signal(self._bits)
        m.d.comb += [
            tail_second.eq(tail + first_count),
            self.alloc_ready.eq(count != depth),
            self.alloc2_ready.eq(count < depth - 1),
            self.alloc_slot.eq(tail),
            self.free.eq(depth - count),
        ]
        for b, kind, port in banks_w:
            with m.If(self.alloc_en & ~self.alloc_reserve & (tail[0] == b)):
                m.d.comb += [port.addr.eq(tail[1:]), port.en.eq(1),
                             port.data.eq(self.alloc.value if kind == "value" else self.alloc)]
            with m.Elif(self.alloc2_en & (tail_second[0] == b)):
                m.d.comb += [port.addr.eq(tail_second[1:]), port.en.eq(1),
                             port.data.eq(self.alloc2.value if kind == "value" else self.alloc2)]
        for k, port in enumerate(lines_w):
            m.d.comb += [port.addr.eq(self.resp_slot[k]), port.data.eq(self.resp_data[k]),
                         port.en.eq(self.resp_valid[k])]

        # The drain window: the packer reads registers, not the memories (docs/synthesis.md,
        # "The drain window and the engines' heads in registers"). The window holds the
        # ``filled`` oldest allocated entries (``window_end``: the slot after them), each with
        # its line or immediate already chosen. The memories are read at the slots after the
        # window (the read ports are addressed with the next ``window_end``, so their data is
        # the slots at ``window_end``); the ready ones among them, in order, join the window at
        # the end of the cycle, and the packer takes up to ``drain`` entries from its front.
        # Nothing the packer decides reaches a memory's address or a ready bit.
        W = 2 * D
        chunk = chunk_layout(self._line_bytes)
        window = [Signal(chunk, name=f"window_{i}") for i in range(W)]
        filled = Signal(range(W + 1))
        window_end = Signal(self._bits)
        beyond = Signal(range(depth + 1))       # allocated entries after the window
        m.d.comb += beyond.eq(count - filled)
        read = {(b, kind, j): port for b, kind, j, port in banks_r}
        arrived, joins = [], []
        valid_prev = Const(1)
        for k in range(D):
            j = k // 2
            odd = window_end[0] ^ (k & 1)       # slot window_end + k is in the odd bank
            entry = Signal(layout, name=f"read_entry_{k}")
            value = Signal(64, name=f"read_value_{k}")
            slot = Signal(self._bits, name=f"read_slot_{k}")
            joins_k = Signal(name=f"joins_{k}")
            payload = Signal(chunk, name=f"arrived_{k}")
            m.d.comb += [
                slot.eq(window_end + k),
                entry.eq(Mux(odd, read[1, "entry", j].data, read[0, "entry", j].data)),
                value.eq(Mux(odd, read[1, "value", j].data, read[0, "value", j].data)),
                joins_k.eq(valid_prev & (beyond > k) & (filled <= W - 1 - k)
                           & ready.bit_select(slot, 1)),
                payload.line.eq(Mux(entry.load, lines_r[k].data, value)),
                payload.offset.eq(entry.offset),
                payload.log2_size.eq(entry.log2_size),
                payload.sign.eq(entry.sign),
                payload.count.eq(entry.count),
                payload.pack.eq(entry.pack),
                payload.flush.eq(entry.flush),
            ]
            arrived.append(payload)
            joins.append(joins_k)
            valid_prev = joins_k
        joined = Signal(range(D + 1))           # entries joining the window this cycle
        m.d.comb += joined.eq(sum(joins))

        outputs = [self.data] + ([self.data_more[k] for k in range(D - 1)] if D > 1 else [])
        pops = []
        for k, out in enumerate(outputs):
            m.d.comb += [out.valid.eq(filled > k), out.payload.eq(window[k])]
            pop = Signal(name=f"pop_{k}")
            m.d.comb += pop.eq(out.valid & out.ready & (pops[-1] if pops else 1))
            pops.append(pop)
        popped = Signal(range(D + 1))           # entries drained this cycle
        m.d.comb += popped.eq(sum(pops))
        m.d.comb += self.head_stall.eq(self.data.valid & ~pops[0])

        # The window after the cycle: the arrivals appended after its ``filled`` entries
        # (from registers and the memories only), then shifted by the entries popped.
        appended = [Signal(chunk, name=f"appended_{i}") for i in range(W)]
        for i in range(W):
            with m.Switch(filled):
                for f in range(W + 1):
                    with m.Case(f):
                        if i < f:
                            m.d.comb += appended[i].eq(window[i])
                        elif i - f < D:
                            m.d.comb += appended[i].eq(arrived[i - f])
        for i in range(W):
            with m.Switch(popped):
                for p in range(D + 1):
                    if i + p < W:
                        with m.Case(p):
                            m.d.sync += window[i].eq(appended[i + p])
        window_end_next = Signal(self._bits)
        m.d.comb += window_end_next.eq(Mux(self.clear, 0, window_end + joined))
        for k in range(D):
            slot_next = Signal(self._bits, name=f"slot_next_{k}")
            m.d.comb += [slot_next.eq(window_end_next + k), lines_r[k].addr.eq(slot_next)]
        for (b, kind, j), port in read.items():
            # bank b's j-th read port: the j-th slot of parity b at or after the next window end
            slot = Signal(self._bits, name=f"read_{kind}{b}_{j}")
            m.d.comb += [slot.eq(window_end_next + (window_end_next[0] ^ b) + 2 * j),
                         port.addr.eq(slot[1:])]

        # Ready bits: set by an immediate allocation or a response, cleared by a load
        # allocation and when the entry joins the window. The slots involved are always
        # distinct within a cycle.
        set_mask = Signal(depth)
        clr_mask = Signal(depth)
        # (``one_hot``: word by word, not a shift of the whole bitmap, for the C++ model.)
        responses = [Mux(self.resp_valid[k], one_hot(self.resp_slot[k], depth), 0)
                     for k in range(self._ports)]
        tail_bit = Signal(depth, name="tail_one_hot")
        second_bit = Signal(depth, name="tail_second_one_hot")
        m.d.comb += [tail_bit.eq(one_hot(tail, depth)), second_bit.eq(one_hot(tail_second, depth))]
        m.d.comb += [
            set_mask.eq(Mux(self.alloc_en & ~self.alloc_reserve & ~self.alloc.load, tail_bit, 0)
                        | Mux(self.alloc2_en & ~self.alloc2.load, second_bit, 0)
                        | _or_all(responses)),
            clr_mask.eq(Mux(self.alloc_en & ~self.alloc_reserve & self.alloc.load, tail_bit, 0)
                        | Mux(self.alloc2_en & self.alloc2.load, second_bit, 0)
                        | _or_all([Mux(joins[k], one_hot((window_end + k)[:self._bits], depth), 0)
                                   for k in range(D)])),
        ]
        m.d.sync += [
            ready.eq((ready & ~clr_mask) | set_mask),
            window_end.eq(window_end_next),
            filled.eq(filled + joined - popped),
            tail.eq(tail + Mux(self.alloc_en, first_count, 0) + self.alloc2_en),
            count.eq(count + Mux(self.alloc_en, first_count, 0) + self.alloc2_en - popped),
        ]
        with m.If(self.clear):
            m.d.sync += [ready.eq(0), filled.eq(0), tail.eq(0), count.eq(0)]
        m.d.comb += self.count.eq(count)
        return m


def _or_all(values):
    """The bitwise OR of ``values``."""
    result = values[0]
    for v in values[1:]:
        result = result | v
    return result
