"""Reorder buffer: marshaled data tokens in program order, loads completing out of order."""

from amaranth.hdl import Array, Module, Mux, Signal, unsigned
from amaranth.lib import data, memory, stream, wiring
from amaranth.lib.wiring import In, Out

from .packer import ChunkLayout


__all__ = ["AllocLayout", "ReorderBuffer"]


class AllocLayout(data.Struct):
    """One marshaled entry (elements of one operand) entering the reorder buffer."""
    load:      1       # 1: ``value`` is not used, the entry waits for the load tagged with its slot
    value:     64      # the operand
    offset:    3       # byte offset of the first element in its 64-bit word (bytes)
    log2_size: 2       # log2 of the element size (bytes); 3 for an immediate operand
    sign:      1       # sign-extend the elements
    count:     4       # elements in the entry (0: a flush only; ISA v1 BLOCK rows, docs/isa.md §7.4)
    pack:      2       # ISA v1 packed element width 8 >> pack bytes (docs/isa.md §7.5)
    flush:     1       # the packer flushes after the entry's last element


class ReorderBuffer(wiring.Component):
    """Data operands enter in marshaling order and leave in the same order (to the packer).

    An entry is allocated for every marshaled operand. Immediate operands (values the traversal
    already has) are ready at once; a load's entry becomes ready when the response tagged with
    its slot number arrives. The head drains one ready entry per cycle into ``data``; a stalled
    output holds the head (nothing is dropped). Responses are always accepted, since a load is
    issued only with its slot already allocated. (Control tokens are always immediate and do not
    need reordering: they go to the control queue directly.)

    Parameters
    ----------
    depth : int
        Entries, a power of two >= 2.

    Members
    -------
    clear : In(1)
        Empty the buffer (start of a run).
    alloc_en : In(1)
        Allocate the entry ``alloc_slot`` with ``alloc`` at this clock edge. Only while ``alloc_ready``.
    alloc : In(AllocLayout)
    alloc_ready : Out(1)
        An entry is free.
    alloc2_en : In(1)
        With ``alloc_en``: also allocate the entry after it with ``alloc2`` (an immediate token;
        ``alloc2.load`` must be 0). Only while ``alloc2_ready``.
    alloc2 : In(AllocLayout)
    alloc2_ready : Out(1)
        Two entries are free.
    alloc_slot : Out(range(depth))
        Slot the next allocation gets; it is the tag of a load issued with it.
    resp_valid, resp_slot, resp_data : In
        A load response for ``resp_slot``: the aligned 64-bit word.
    data : Out(stream.Signature(ChunkLayout))
        Entries, in order, for the packer (``hw/tmu/packer.py``): the operand or the loaded
        word with its elements' position, size, count and packing.
    count : Out(range(depth + 1))
        Allocated entries.
    head_stall : Out(1)
        The head is ready but its output stream is not.
    """

    def __init__(self, depth):
        if not isinstance(depth, int) or depth < 2 or depth & (depth - 1):
            raise ValueError(f"depth must be a power of two >= 2, not {depth!r}")
        self._depth = depth
        self._bits = (depth - 1).bit_length()
        super().__init__({
            "clear":       In(1),
            "alloc_en":    In(1),
            "alloc":       In(AllocLayout),
            "alloc_ready": Out(1),
            "alloc_slot":  Out(self._bits),
            "alloc2_en":    In(1),
            "alloc2":       In(AllocLayout),
            "alloc2_ready": Out(1),
            "resp_valid":  In(1),
            "resp_slot":   In(self._bits),
            "resp_data":   In(64),
            "data":        Out(stream.Signature(ChunkLayout)),
            "count":       Out(range(depth + 1)),
            "head_stall":  Out(1),
        })

    def elaborate(self, platform):
        m = Module()
        depth = self._depth

        head  = Signal(self._bits)
        tail  = Signal(self._bits)
        count = Signal(range(depth + 1))
        meta  = Array(Signal(AllocLayout, name=f"meta_{i}") for i in range(depth))
        ready = Signal(depth)

        # Values known at marshaling time: two banks (even and odd slots), so that two entries
        # can be allocated in a cycle with one write port per bank. Load responses: one memory.
        half = depth // 2
        m.submodules.values0 = values0 = memory.Memory(shape=64, depth=half, init=[])
        m.submodules.values1 = values1 = memory.Memory(shape=64, depth=half, init=[])
        m.submodules.loads  = loads  = memory.Memory(shape=64, depth=depth, init=[])
        banks_w = [values0.write_port(), values1.write_port()]
        banks_r = [values0.read_port(transparent_for=(banks_w[0],)),
                   values1.read_port(transparent_for=(banks_w[1],))]
        loads_w  = loads.write_port()
        loads_r  = loads.read_port(transparent_for=(loads_w,))

        # Allocation.
        tail_second = Signal(self._bits)
        m.d.comb += [
            tail_second.eq(tail + 1),
            self.alloc_ready.eq(count != depth),
            self.alloc2_ready.eq(count < depth - 1),
            self.alloc_slot.eq(tail),
        ]
        for b, port in enumerate(banks_w):
            with m.If(self.alloc_en & (tail[0] == b)):
                m.d.comb += [port.addr.eq(tail[1:]), port.data.eq(self.alloc.value),
                             port.en.eq(1)]
            with m.Elif(self.alloc2_en & (tail_second[0] == b)):
                m.d.comb += [port.addr.eq(tail_second[1:]), port.data.eq(self.alloc2.value),
                             port.en.eq(1)]
        # Load responses.
        m.d.comb += [
            loads_w.addr.eq(self.resp_slot),
            loads_w.data.eq(self.resp_data),
            loads_w.en.eq(self.resp_valid),
        ]

        # Head. The read ports are addressed with the next head, so their data is the head's.
        head_meta = Signal(AllocLayout)
        m.d.comb += head_meta.eq(meta[head])
        head_ok = Signal()
        word = Signal(64)
        m.d.comb += [
            head_ok.eq((count != 0) & ready.bit_select(head, 1)),
            word.eq(Mux(head_meta.load, loads_r.data,
                        Mux(head[0], banks_r[1].data, banks_r[0].data))),
            self.data.valid.eq(head_ok),
            self.data.payload.word.eq(word),
            self.data.payload.offset.eq(head_meta.offset),
            self.data.payload.log2_size.eq(head_meta.log2_size),
            self.data.payload.sign.eq(head_meta.sign),
            self.data.payload.count.eq(head_meta.count),
            self.data.payload.pack.eq(head_meta.pack),
            self.data.payload.flush.eq(head_meta.flush),
        ]
        pop = Signal()
        m.d.comb += [
            pop.eq(self.data.valid & self.data.ready),
            self.head_stall.eq(head_ok & ~pop),
        ]
        head_next = Signal(self._bits)
        m.d.comb += head_next.eq(Mux(self.clear, 0, head + pop))
        m.d.comb += [banks_r[0].addr.eq(head_next[1:]), banks_r[1].addr.eq(head_next[1:]),
                     loads_r.addr.eq(head_next)]

        # Ready bits: set by an immediate allocation or a response, cleared by a load allocation
        # and by the pop. The slots involved are always distinct within a cycle.
        ready_next = Signal(depth)
        set_mask = Signal(depth)
        clr_mask = Signal(depth)
        m.d.comb += [
            set_mask.eq(Mux(self.alloc_en & ~self.alloc.load, 1 << tail, 0)
                        | Mux(self.alloc2_en, 1 << tail_second, 0)
                        | Mux(self.resp_valid, 1 << self.resp_slot, 0)),
            clr_mask.eq(Mux(self.alloc_en & self.alloc.load, 1 << tail, 0)
                        | Mux(pop, 1 << head, 0)),
            ready_next.eq((ready & ~clr_mask) | set_mask),
        ]
        with m.If(self.alloc_en):
            m.d.sync += meta[tail].eq(self.alloc)
        with m.If(self.alloc2_en):
            m.d.sync += meta[tail_second].eq(self.alloc2)
        m.d.sync += [
            ready.eq(ready_next),
            head.eq(head_next),
            tail.eq(tail + self.alloc_en + self.alloc2_en),
            count.eq(count + self.alloc_en + self.alloc2_en - pop),
        ]
        with m.If(self.clear):
            m.d.sync += [ready.eq(0), tail.eq(0), count.eq(0)]
        m.d.comb += self.count.eq(count)
        return m
