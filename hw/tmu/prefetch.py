"""Run-ahead engine for a blocking memory stream whose address is affine in its layer's index."""

from amaranth.hdl import Array, Cat, Const, Module, Mux, Signal, signed
from amaranth.lib import data, wiring
from amaranth.lib.wiring import In, Out

from .datapath import extract_aligned
from .engine_head import EngineHead
from .engine_queue import EngineOutputQueue
from .multiport_memory import MultiPortMemory


__all__ = ["Prefetcher", "running_dry"]


def running_dry(count, depth):
    """An engine's ``req_urgent`` (``docs/rtl.md`` §2.4): fewer than ``max(1, depth // 2)`` of
    its ``depth`` entries are issued and not popped by the traversal (``count``, registers: the
    entries not yet moved into the output queue plus the values in it)."""
    return count < max(1, depth // 2)


class Prefetcher(wiring.Component):
    """Issues the loads of one stream for the coming iterations of its layer.

    The decoder attaches an engine to a *blocking* MEM stream of layer ``L`` whose element index
    is ``i + c`` (``b`` is ``INDEX L``, or a stream of layer ``L`` that is ``ADD(INDEX L, IMM c)``
    or ``FWD INDEX L``) and whose base ``a`` does not change during a traversal of ``L``. When the
    traversal enters ``L`` (microcode ``PREFETCH``) the engine latches the base, bounds and step,
    then issues ``a + (i + c) * stride`` for ``i = lb, lb + step, ...`` while ``i < ub``, at most
    ``depth`` ahead of the traversal, with the unit's alignment, region and memory-limit checks:
    the first address that fails stops the engine (the traversal then faults on it in program
    order). So does the first element whose exact address ``a + (i + c) * stride``, or whose
    index ``i + c`` (a stream ``ADD(INDEX L, IMM c)`` that would wrap), lies outside the signed
    64-bit range (the traversal faults ``ADDR_OVERFLOW`` there, ``docs/isa.md`` §1 "Address
    overflow"; the 64-bit address register alone would wrap back into a region). The traversal
    takes the values from the head, in order, one per iteration.

    *Armed starts* (``docs/rtl.md`` §9.5 B): ``arm`` latches the parameters that are constant for
    the run (base, ``c``, stride, element size and sign, region) once, without starting; a
    ``start`` with ``p_armed`` then takes them from the engine and only ``p_lb``, ``p_ub`` and
    ``p_step`` from its inputs, so that the traversal's ``ENTER`` starts all engines of a layer
    in one cycle (each with its own stream's parameters).

    *Continuation*: a range that starts where the previous one ended (CSR offsets) with the same
    base, stride, step and region continues the same sequence: a ``start`` whose ``p_lb`` is the
    index of the head keeps the engine's entries. Once an engine has continued, it also issues
    past ``ub`` (speculatively: loads have no side effects, and an address that fails a check is
    not issued), so the next range's first values are already on their way.

    Each load is a request for the memory line holding the element. When the elements are
    contiguous (``step = 1`` and ``stride`` = the element size: ``indices[j]``, ``col[j]``,
    ``val[j]``, ``offsets[b]``) one request serves all the following elements in the same line
    that are in range (or, once continued, all of them up to the line's end) and pass the checks:
    an *entry* is one line request and up to ``line_bytes / size`` elements, so ``depth`` entries
    run up to ``depth * line_bytes / size`` elements ahead. The responses' lines are kept
    (``depth`` lines, LUT RAM: one copy per response port, ``MultiPortMemory``) and the head's
    element extracted from its entry's line.

    *Strided elements* (not contiguous, but ``0 < step * stride < line_bytes``: TransE's
    ``triples[3t + k]``, 8-byte elements 24 bytes apart) share a request too: the engine walks
    one element per cycle, collecting those of one line (each passing the same checks) into
    the request it offers, which leaves once the next element lies in another line or cannot
    be collected (the range's end before a continuation, a failed check, no free entry). The
    request carries its first element's address and ``req_bytes`` all its elements' bytes; an
    entry's ``k``-th element is ``k * step * stride`` bytes after its first.

    *Issue timing*: the request offered is two registers, its index ``cur_i`` (elements) and its
    exact address ``addr`` (bytes, 65 bits; strided, the collected request's address and
    count, offered when the element at ``cur_i`` cannot join it); each of its checks and its
    element count is one adder or comparator on registers (the signed 64-bit range of ``i + c``
    is a pair of index bounds set at the start, the address's a test of its top bits), and so
    is the next request's index and address (the next line's first element, the range's end
    inside the line, or ``+ step`` elements and ``+ step * stride`` bytes): a grant only loads
    them.

    Parameters
    ----------
    depth : int
        Entries, a power of two.
    line_bytes : int
        Width of a memory line, bytes (``TmuConfig.line_bytes``).
    ports : int
        Response ports (``TmuConfig.memory_ports``): up to one response per port per cycle.
    output_queue : bool
        The head reaches ``head_*`` through the output queue (below; the traversal's engines).
        ``False`` for a root popped by its own pipeline (``hw/tmu/chain_engine.py``), whose
        ``pop`` is not the traversal's late one: ``head_*`` are then the engine's head
        registers, a line arriving in ``t`` is popped from ``t + 1``, and ``pop`` moves the
        entries on itself.

    Members
    -------
    clear : In(1)
        Forget everything (start of a run).
    start : In(1)
        Pulse with the ``p_*`` parameters valid. Only while ``idle``.
    p_armed : In(1)
        With ``start`` (and for ``idle``): the start's base, ``c``, stride, size, sign and
        region are the ones ``arm`` latched, not ``p_*``.
    p_base_wrapped : In(1)
        With ``start`` without ``p_armed``: ``p_base`` is a stream value that wrapped past 64
        bits (``docs/isa.md`` §1). Every address of the stream faults ``ADDR_OVERFLOW``, so the
        engine starts a new sequence and stops before its first element; the traversal's
        fallback then evaluates the stream and faults in program order.
    arm : In(1)
        Pulse (not with ``start``): latch ``p_base``, ``p_c``, ``p_stride``, ``p_log2``,
        ``p_sign`` and the region for the armed starts, stop issuing and forget the sequence
        (the next start is a new one, which waits for the outstanding responses).
    idle : Out(1)
        A ``start`` with the current ``p_*`` (and ``p_armed``) is possible: it continues the
        sequence, or no response is outstanding and no request is offered (a load granted in
        the start's cycle would be the old sequence's, its line landing in an entry of the
        new one). A function of registers and ``p_*``.
    continues : Out(1)
        A ``start`` with the current ``p_*`` (and ``p_armed``) would continue the sequence
        (its entries are kept; ``hw/tmu/chain_engine.py`` keeps its own with them).
    req_valid, req_addr, req_slot : Out
        A load to issue; ``req_valid`` never depends on ``req_grant``.
    req_grant : In(1)
        The request is accepted by the memory this cycle.
    resp_valid, resp_slot, resp_data : In(ArrayLayout(..., ports))
        Per response port: a line for one of this engine's slots.
    head_valid, head_data : Out
        The oldest value has arrived (extracted element, zero/sign-extended). Registers: the
        engine's head (a line that arrives in cycle ``t`` for the head's entry, or the next
        entry as the head's last element moves on, gives it in ``t + 1``) moves into a queue of
        two registers (:class:`~hw.tmu.engine_queue.EngineOutputQueue`) whenever it has room,
        and ``head_*`` are the queue's oldest value: a line arriving in ``t`` is popped from
        ``t + 2`` on, at one value per cycle.
    busy : Out(1)
        The next value will come from this engine (issued, about to be issued, or queued).
    pop : In(1)
        The traversal takes the head (only while ``head_valid``). It reaches only the queue's
        registers and the traversal's index (``continues``); the entries move on by the
        queue's own ``ready`` (``docs/synthesis.md``, "The engines' pop cut").
    esize : Out(4)
        Element size of the issued loads, bytes.
    req_bytes : Out(8)
        Useful bytes of the request being issued (its elements' bytes).
    req_urgent : Out(1)
        Fewer than ``max(1, depth // 2)`` entries (and queued values) are issued and not popped
        by the traversal: the engine is close to running dry, and its loads go to the ports
        before the rows' (``RequestArbiter``'s ``urgent``, ``docs/rtl.md`` §2.4). From
        registers and a constant.
    """

    def __init__(self, depth, line_bytes=8, ports=1, output_queue=True):
        if not isinstance(depth, int) or depth < 2 or depth & (depth - 1):
            raise ValueError(f"depth must be a power of two >= 2, not {depth!r}")
        if line_bytes not in (8, 16, 32, 64):
            raise ValueError(f"line_bytes must be 8, 16, 32 or 64, not {line_bytes!r}")
        if not isinstance(ports, int) or not 1 <= ports <= 8:
            raise ValueError(f"ports must be an integer in 1..8, not {ports!r}")
        self._depth = depth
        self._line_bytes = line_bytes
        self._ports = ports
        self._output_queue = bool(output_queue)
        self._bits = (depth - 1).bit_length()
        super().__init__({
            "clear":      In(1),
            "start":      In(1),
            "p_armed":    In(1),
            "arm":        In(1),
            "p_base":     In(signed(64)),   # bytes: value of the stream's a
            "p_base_wrapped": In(1),        # ... a stream value that wrapped (not armed)
            "p_lb":       In(signed(64)),   # elements
            "p_ub":       In(signed(64)),
            "p_step":     In(signed(28)),
            "p_c":        In(signed(28)),   # element index = i + c
            "p_stride":   In(signed(32)),   # bytes per element index
            "p_log2":     In(2),            # log2 of the element size, bytes
            "p_sign":     In(1),
            "p_region_base":    In(signed(64)),   # region, bytes
            "p_region_size":    In(signed(64)),
            "mem_limit":  In(64),
            "req_valid":  Out(1),
            "req_addr":   Out(64),
            "req_slot":   Out(self._bits),
            "req_grant":  In(1),
            "resp_valid": In(ports),
            "resp_slot":  In(data.ArrayLayout(self._bits, ports)),
            "resp_data":  In(data.ArrayLayout(8 * line_bytes, ports)),
            "head_valid": Out(1),
            "head_data":  Out(64),
            "busy":       Out(1),
            "pop":        In(1),
            "idle":       Out(1),
            "continues":  Out(1),
            "esize":      Out(4),
            "req_bytes":  Out(8),
            "req_urgent": Out(1),
        })

    def elaborate(self, platform):
        m = Module()
        depth = self._depth

        active  = Signal()
        params  = Signal()                      # the p_* registers hold a sequence
        seq     = Signal()                      # a range continued: issue past ub
        head_i  = Signal(signed(66))            # index of the head entry
        base    = Signal(signed(64))
        stride  = Signal(signed(32))
        cc      = Signal(signed(28))
        cur_i   = Signal(signed(66))            # elements: index of the next request
        # Its exact address, bytes (65 bits: one step past the signed 64-bit range).
        addr    = Signal(signed(65))
        # The start's address lay outside the signed 64-bit range, or its base wrapped: the
        # sequence issues nothing.
        wraps   = Signal()
        # ``i + c`` lies in the signed 64-bit range for ``i_min <= i < i_end`` (elements).
        i_min   = Signal(signed(66))
        i_end   = Signal(signed(66))
        delta   = Signal(signed(64))
        ub      = Signal(signed(64))
        step    = Signal(signed(28))
        log2    = Signal(2)
        sign    = Signal()
        region_base   = Signal(signed(64))
        region_size   = Signal(signed(64))
        head    = Signal(self._bits)
        tail    = Signal(self._bits)
        count   = Signal(range(depth + 1))      # issued and not popped
        pending = Signal(range(depth + 1))      # issued and not answered
        arrived = Signal(depth)
        line_bits = max(1, (self._line_bytes - 1).bit_length())
        offset  = Array(Signal(line_bits, name=f"offset_{i}") for i in range(depth))
        max_elems = self._line_bytes          # elements of one byte in a line
        elems   = Array(Signal(range(max_elems + 1), name=f"elements_{i}") for i in range(depth))
        sub     = Signal(range(max_elems))    # element of the head entry the head is at
        # The head element's byte offset from its entry's first one: ``sub * delta`` (a
        # register stepped by ``delta`` on each pop inside an entry, so no multiply reaches
        # the head's extraction).
        sub_off = Signal(line_bits)
        contiguous = Signal()                 # step 1, stride = element size: coalesce
        # Not contiguous, but ``0 < step * stride < line_bytes``: collect the elements of a line
        # one per cycle into the request offered (``gather_*``), which leaves when the next
        # element lies in another line or cannot be collected (``strided``).
        strided = Signal()
        gather_valid = Signal()               # the request being collected holds elements
        gather_addr = Signal(64)              # ... its first element's address, bytes
        gather_n = Signal(range(max_elems + 1))  # ... its elements
        # The element at ``cur_i``, ``addr`` lies in the same line as the collected ones.
        gather_same_line = Signal()

        # The responses' lines: LUT RAM, one copy per response port and a live-value table
        # (a memory written by several ports would be flip-flops on an FPGA).
        m.submodules.words = words = MultiPortMemory(shape=8 * self._line_bytes, depth=depth,
                                                     write_ports=self._ports, read_ports=2,
                                                     read_domain="comb")
        for k in range(self._ports):
            word_w = words.write[k]
            m.d.comb += [
                word_w.addr.eq(self.resp_slot[k]),
                word_w.data.eq(self.resp_data[k]),
                word_w.en.eq(self.resp_valid[k]),
            ]
        # The head in two registers, a cycle ahead for either outcome of the traversal's
        # ``pop`` (``hw/tmu/engine_head.py``): the element after the head in its entry's line
        # (or the head itself while it waits for its line), or the next entry's first element.
        head_regs = EngineHead(m, words=words, head=head, arrived=arrived,
                               responses=[(self.resp_valid[k], self.resp_slot[k],
                                           self.resp_data[k]) for k in range(self._ports)])
        head_valid = head_regs.valid
        # The head moves into the output queue whenever the queue has room (``take``, from
        # registers); the traversal pops the queue. Without the queue (the chain engine's
        # root, popped by its own pipeline) the pop takes the head itself.
        take = Signal()
        queued = Signal(range(3))             # values in the output queue
        out_valid = Signal()
        out_data = Signal(64)
        flush = Signal()
        if self._output_queue:
            m.submodules.queue = queue = EngineOutputQueue()
            m.d.comb += [queue.i.valid.eq(head_valid), queue.i.payload.eq(head_regs.data),
                         take.eq(queue.i.valid & queue.i.ready), queue.o.ready.eq(self.pop),
                         queue.flush.eq(flush), queued.eq(queue.level),
                         out_valid.eq(queue.o.valid), out_data.eq(queue.o.payload)]
        else:
            m.d.comb += [take.eq(head_valid & self.pop),
                         out_valid.eq(head_valid), out_data.eq(head_regs.data)]
        # The element after the head in the same line (a waiting head is its entry's first
        # element: ``sub_off`` is 0 until the head is valid).
        same_offset = Signal(line_bits)
        m.d.comb += same_offset.eq(offset[head] + sub_off
                                   + Mux(head_valid, delta[0:line_bits], 0))
        # (A signal, not the ``Array`` proxy inside the extraction: Amaranth writes the
        # expression of a proxy once per element and use, and Verilator then shifted the next
        # entry's 512-bit line seven times per engine every cycle.)
        next_offset = Signal(line_bits, name="next_entry_offset")
        m.d.comb += next_offset.eq(offset[head_regs.next_entry])
        same_value = Signal(64)
        next_value = Signal(64)
        m.d.comb += [same_value.eq(extract_aligned(head_regs.head_word, same_offset, log2, sign)),
                     next_value.eq(extract_aligned(head_regs.next_word, next_offset, log2, sign))]
        # The run-constant parameters of a start: ``p_*``, or the armed ones (``p_armed``).
        armed = self.p_armed
        start_base = Mux(armed, base, self.p_base)
        start_c = Mux(armed, cc, self.p_c)
        start_stride = Mux(armed, stride, self.p_stride)
        start_log2 = Mux(armed, log2, self.p_log2)
        start_sign = Mux(armed, sign, self.p_sign)
        start_region_base = Mux(armed, region_base, self.p_region_base)
        start_region_size = Mux(armed, region_size, self.p_region_size)
        match = Signal()
        base_wrapped = self.p_base_wrapped & ~armed
        m.d.comb += match.eq(params & ~base_wrapped & (self.p_lb == head_i)
                             & (self.p_step == step)
                             & (armed | ((self.p_base == base) & (self.p_stride == stride)
                                         & (self.p_c == cc) & (self.p_log2 == log2)
                                         & (self.p_sign == sign)
                                         & (self.p_region_base == region_base)
                                         & (self.p_region_size == region_size))))
        m.d.comb += [
            self.head_valid.eq(out_valid),
            self.head_data.eq(out_data),
            self.idle.eq(match | ((pending == 0) & ~self.req_valid)),
            self.continues.eq(match),
            self.esize.eq(Const(1, 4) << log2),
        ]

        # Issue. The request offered is the registers ``cur_i`` and ``addr``; each of its checks
        # and its element count is one adder or comparator on registers, and so is the next
        # request's index and address (an issue only loads them, below).
        # The end of the region or of the memory, whichever comes first (``limit``, bytes), is a
        # register: set from ``p_*`` at a start, recomputed from the registers (and
        # ``mem_limit``) in the other cycles.
        limit = Signal(signed(66))
        region_end = Signal(signed(66))
        m.d.comb += region_end.eq(region_base + region_size)
        m.d.sync += limit.eq(Mux(region_end < self.mem_limit, region_end, self.mem_limit))
        esize = Signal(4)
        m.d.comb += esize.eq(Const(1, 4) << log2)
        # ``x < y`` for a wide signed ``x`` and ``y`` <= max_elems, without a wide comparator:
        # negative, or no bit above the low ones and the low bits below ``y``.
        low = max_elems.bit_length()

        def below(x, y):
            return x[-1] | ((x[low:] == 0) & (x[:low] < y))

        # Elements from the request on: to the range's end, to the limit (each element ends at
        # or before it), to the first index whose ``i + c`` leaves the signed 64-bit range.
        left = Signal(signed(67))
        fit = Signal(signed(67))
        idx_left = Signal(signed(67))
        m.d.comb += [left.eq(ub - cur_i), fit.eq((limit - addr) >> log2),
                     idx_left.eq(i_end - cur_i)]
        in_range = ~below(left, 1)
        misaligned = (addr[0:3] & (esize - 1)[:3]) != 0
        outside = addr[63] != addr[64]          # the exact address is not a signed 64-bit one
        ok = (~misaligned & (addr >= region_base) & ~below(fit, 1) & ~outside & ~wraps
              & (cur_i >= i_min) & ~below(idx_left, 1))
        want = active & (in_range | seq) & (count != depth)
        # Elements of this request: contiguous ones up to the line's end, the range's end (until
        # continued), the limit and the last index in range (each element passes the checks).
        n = Signal(range(max_elems + 1))
        in_line = Signal(range(max_elems + 1))
        m.d.comb += in_line.eq((self._line_bytes - addr[0:line_bits]) >> log2)
        cut = Signal()                          # the range ends inside this line
        m.d.comb += cut.eq(~seq & below(left, in_line))
        # (Low bits only: a count that cuts ``n`` lies in ``0 .. max_elems``, or the request
        # fails its checks. A wide multiplexer here would make each ``below`` a wide comparator.)
        n_range = Mux(cut, left[:low], in_line)
        n_fit = Mux(below(fit, n_range), fit[:low], n_range)
        m.d.comb += n.eq(Mux(~contiguous, 1,
                             Mux(below(idx_left, n_fit), idx_left[:low], n_fit)))
        # Strided: the element offered is collected into the request when it lies in the same
        # line; the request leaves when the next element does not (or cannot be collected).
        element_ok = Signal()
        collect = Signal()
        m.d.comb += [element_ok.eq(want & ok),
                     collect.eq(element_ok & (~gather_valid | gather_same_line))]
        strided_offer = gather_valid & ~(element_ok & gather_same_line) & (count != depth)
        m.d.comb += [
            self.req_valid.eq(Mux(strided, strided_offer, element_ok)),
            self.req_addr.eq(Mux(strided, gather_addr, addr[:64])),
            self.req_slot.eq(tail),
            self.req_bytes.eq(Mux(strided, gather_n, n) << log2),
            self.busy.eq((count != 0) | gather_valid | (active & in_range & ok)
                         | (queued != 0)),
            self.req_urgent.eq(running_dry(count + queued, depth)),
        ]
        # The next request. Contiguous: the next line's first element, or, when the range ends
        # inside this line, the range's end (``ub``, in this line; ``cut`` does not wait for
        # ``n``). When the limit or the index cut ``n`` shorter, the next one fails its checks
        # either way (the addresses and indices only grow), so the engine stops there.
        next_line = Cat(Const(0, line_bits), addr[line_bits:] + 1)
        at_ub = Cat((addr[:line_bits] + (left[:low] << log2))[:line_bits], addr[line_bits:])
        next_i = Mux(contiguous, Mux(cut, ub, cur_i + in_line), cur_i + step)
        next_addr = Mux(contiguous, Mux(cut, at_ub, next_line), addr + delta)
        issue = self.req_valid & self.req_grant
        with m.If(want & ~ok):
            m.d.sync += active.eq(0)          # an address that would fault: stop
        # An entry per request; the element walk advances with each request (not strided)
        # or each element collected (strided: ``next_i``, ``next_addr`` are then ``+ step``
        # and ``+ delta``).
        walk = Signal()
        m.d.comb += walk.eq(Mux(strided, element_ok & (collect | issue), issue))
        with m.If(issue):
            m.d.sync += [
                offset[tail].eq(Mux(strided, gather_addr[0:line_bits], addr[0:line_bits])),
                elems[tail].eq(Mux(strided, gather_n, n)),
                tail.eq(tail + 1),
                gather_valid.eq(0),
            ]
        with m.If(walk):
            m.d.sync += [cur_i.eq(next_i), addr.eq(next_addr)]
        # Strided: the element offered joins the collected request (or starts the next one as
        # the collected one leaves); the next element lies in the same line when the low bits
        # do not carry past it (``delta < line_bytes``).
        with m.If(strided & walk):
            same_line_next = (addr[0:line_bits] + delta[0:line_bits])[line_bits] == 0
            m.d.sync += [
                gather_valid.eq(1),
                gather_n.eq(Mux(gather_valid & ~issue, gather_n + 1, 1)),
                gather_same_line.eq(same_line_next),
            ]
            with m.If(~gather_valid | issue):
                m.d.sync += gather_addr.eq(addr[:64])

        # Arrivals and pops.
        set_mask = 0
        for k in range(self._ports):
            set_mask = set_mask | Mux(self.resp_valid[k], Const(1, depth) << self.resp_slot[k], 0)
        # A take (into the output queue) moves the head one element on; the entry's last one
        # frees the entry.
        entry_done = Signal()
        m.d.comb += entry_done.eq(take & (sub + 1 == elems[head]))
        clr_mask = Mux(entry_done, Const(1, depth) << head, 0)
        m.d.sync += [
            arrived.eq((arrived & ~clr_mask[:depth]) | set_mask[:depth]),
            count.eq(count + issue - entry_done),
            pending.eq(pending + issue - sum(self.resp_valid[k] for k in range(self._ports))),
            head.eq(head + entry_done),
        ]
        # ``head_i`` is the traversal's: the index of the value it pops next (the queue's
        # oldest), which ``continues`` compares with the next start's lower bound.
        with m.If(self.pop):
            m.d.sync += head_i.eq(head_i + step)
        with m.If(take):
            m.d.sync += [sub.eq(Mux(entry_done, 0, sub + 1)),
                         sub_off.eq(Mux(entry_done, 0, sub_off + delta[0:line_bits]))]
        # The head registers after this cycle (a take only while ``head_valid``).
        head_regs.update(m, count=count, entry_done=entry_done, refill=take | ~head_valid,
                         head_element=same_value, next_element=next_value)
        # A start that does not continue begins a new sequence: the queued values are the old
        # one's (a continued one's values past ``ub`` stay: they are the next range's first).
        m.d.comb += flush.eq(self.clear | (self.start & ~match))

        with m.If(self.start & match):
            m.d.sync += [ub.eq(self.p_ub), seq.eq(1)]
        with m.Elif(self.start):
            # The first address, bytes. Its offset ``span = (lb + c) * stride`` takes 97 bits;
            # one of 2**65 or more in magnitude puts the address outside the signed 64-bit
            # range whatever the base, so the sum is 67 bits wide, not 98 (a shorter chain).
            span = (self.p_lb + start_c) * start_stride
            huge = span[65:].any() & ~span[65:].all()
            first_addr = start_base + span[:66].as_signed()
            start_region_end = start_region_base + start_region_size
            start_delta = Signal(signed(64))
            m.d.comb += start_delta.eq(self.p_step * start_stride)
            start_contiguous = (self.p_step == 1) & (start_stride == (Const(1, 4) << start_log2))
            m.d.sync += [
                active.eq(1),
                params.eq(1),
                seq.eq(0),
                head_i.eq(self.p_lb),
                base.eq(start_base),
                stride.eq(start_stride),
                cc.eq(start_c),
                cur_i.eq(self.p_lb),
                addr.eq(first_addr),
                # (Bit tests, not ``outside_int64``'s comparators: no carry chain after the
                # adder's.)
                wraps.eq(huge | (first_addr[63:].any() & ~first_addr[63:].all())
                         | base_wrapped),
                i_min.eq(-(1 << 63) - start_c),
                i_end.eq((1 << 63) - start_c),
                delta.eq(start_delta),
                ub.eq(self.p_ub),
                step.eq(self.p_step),
                log2.eq(start_log2),
                sign.eq(start_sign),
                region_base.eq(start_region_base),
                region_size.eq(start_region_size),
                limit.eq(Mux(start_region_end < self.mem_limit, start_region_end,
                             self.mem_limit)),
                contiguous.eq(start_contiguous),
                strided.eq(~start_contiguous & (start_delta > 0)
                           & (start_delta < self._line_bytes)),
                gather_valid.eq(0),
                head.eq(0), tail.eq(0), count.eq(0), arrived.eq(0), sub.eq(0), sub_off.eq(0),
                head_valid.eq(0),
            ]
        with m.Elif(self.arm):
            m.d.sync += [
                active.eq(0), params.eq(0), seq.eq(0), gather_valid.eq(0),
                base.eq(self.p_base), stride.eq(self.p_stride), cc.eq(self.p_c),
                log2.eq(self.p_log2), sign.eq(self.p_sign),
                region_base.eq(self.p_region_base), region_size.eq(self.p_region_size),
            ]
        with m.If(self.clear):
            m.d.sync += [active.eq(0), params.eq(0), seq.eq(0), head.eq(0), tail.eq(0),
                         count.eq(0), pending.eq(0), arrived.eq(0), sub.eq(0), sub_off.eq(0),
                         gather_valid.eq(0), head_valid.eq(0)]
        return m
