"""Chain engine: a run-ahead engine for a blocking memory stream whose index is a loaded value
of its own layer put through at most two ALU operations (``docs/rtl.md`` §2.3, "Chain
engines")."""

from amaranth.hdl import Array, Const, Module, Mux, Signal, signed
from amaranth.lib import data, wiring
from amaranth.lib.wiring import In, Out

from .datapath import alu, extract_aligned, outside_int64
from .engine_head import EngineHead
from .engine_queue import EngineOutputQueue
from .isa import AluOp
from .multiport_memory import MultiPortMemory
from .prefetch import Prefetcher, running_dry


__all__ = ["CHAIN_OPS", "chain_layout", "ChainEngine"]

#: Most ALU operations between the root stream and the chained load.
CHAIN_OPS = 2

#: Operations whose result wraps when an operand wrapped (``docs/isa.md`` §1, "Address
#: overflow"); the others give a value that has not wrapped.
_WRAPPING = (AluOp.ADD, AluOp.SUB, AluOp.MUL, AluOp.SHL)


def chain_layout():
    """The chained load's configuration, fixed for a run (the decoder resolves it,
    ``hw/tmu/chain_detect.py``): ``M = base + b * stride`` with ``b`` the root stream's value
    ``V`` put through ``ops`` ALU operations, operation ``k`` being ``op[k](x, constant[k])``
    (``op[k](constant[k], x)`` with ``constant_first[k]``)."""
    return data.StructLayout({
        "valid":          1,                          # the program has a chain (decoder)
        "root":           8,                          # V's stream id (the traversal's arm)
        "ops":            range(CHAIN_OPS + 1),
        "op":             data.ArrayLayout(4, CHAIN_OPS),
        "constant":       data.ArrayLayout(signed(64), CHAIN_OPS),
        "constant_first": data.ArrayLayout(1, CHAIN_OPS),
        "base":           signed(64),                 # bytes: M's ``a``
        "stride":         signed(32),                 # bytes per unit of ``b``
        "log2":           2,                          # log2 of M's element size, bytes
        "sign":           1,
        "region_base":    signed(64),                 # M's region, bytes
        "region_size":    signed(64),
    })


class ChainEngine(wiring.Component):
    """Loads ``M = base + f(V) * stride`` for the coming iterations of a layer, ``V`` an affine
    stream of that layer and ``f`` at most :data:`CHAIN_OPS` ALU operations with constant
    operands (``examples/hashed_gather.mlir``: ``V = ids[i]``, ``f(V) = (V * K) >> s``,
    ``M = remap[f(V)]``), so that an index read through another index costs one memory
    latency per layer entry, not one per iteration.

    Two stages of loads:

    * **the root**: a :class:`~hw.tmu.prefetch.Prefetcher` of ``V`` (its own copy of the
      stream: ``V``'s loads are made twice when ``V`` also has an engine of its own, a few bytes
      per iteration beside a row), without an output queue (the chain's pipeline pops it, not
      the traversal). Its ``p_*``, ``arm``, ``start``, ``idle`` and its requests
      (``index_*``) are those of any engine;
    * **the chain**: each root value, as soon as it arrives, goes through a pipeline of three
      registers — operation 0, operation 1 (``datapath.alu`` with ``mul_wrapped=False``: the
      traversal's results and *wrapped* rule, but no ``MUL`` wrap), the exact address
      ``base + b * stride`` — and, its checks passed, is issued as a load of ``M``'s line into
      one of ``depth`` entries (the element, extracted as the line arrives), whose values leave
      at the head in order. The first element whose ``b`` wrapped, or whose address lies
      outside the signed 64-bit range, is misaligned, outside ``M``'s region or past
      ``mem_limit``, is never issued and stops the chain (``busy`` falls once the entries before
      it are popped): the traversal then evaluates ``M`` itself and faults in program order, as
      after an affine engine stops (``hw/tmu/engine_pop.py``).

    A ``start`` that continues the root's sequence (``Prefetcher.continues``) keeps the chain's
    entries, which follow the root's element for element; any other start (only while
    ``idle``: no load of either stage outstanding) begins a new chain. ``arm`` stops the chain;
    ``clear`` forgets everything.

    Parameters
    ----------
    depth : int
        Entries of each stage, a power of two (``ValueError`` otherwise, and for the two below).
    line_bytes : int
        Width of a memory line, bytes.
    ports : int
        Response ports: up to one response per port per cycle, for each stage.

    Members
    -------
    clear, start, arm, p_* , mem_limit : In
        As :class:`~hw.tmu.prefetch.Prefetcher`'s (the root stream's parameters).
    chain : In(chain_layout())
        The chained load (constant during a run).
    idle : Out(1)
        A ``start`` is possible (the root's ``idle``, and no chained load outstanding or
        offered unless the start continues).
    index_req_valid, index_req_addr, index_req_slot, index_req_bytes : Out; index_req_grant : In
    index_resp_valid, index_resp_slot, index_resp_data : In
        The root's loads (``Prefetcher``'s ``req_*``/``resp_*``).
    req_valid, req_addr, req_slot, req_bytes, req_urgent : Out; req_grant : In
    resp_valid, resp_slot, resp_data : In(ArrayLayout(..., ports))
        The chained loads: one request per element, for its line; ``req_valid`` never depends
        on ``req_grant``. ``req_urgent`` (and ``index_req_urgent``, the same): fewer than
        ``max(1, depth // 2)`` chained loads are issued and not popped (as the
        ``Prefetcher``'s).
    head_valid, head_data : Out
        The oldest chained value has arrived (its element, zero/sign-extended to 64 bits).
        Registers, as the ``Prefetcher``'s: the engine's head (a value arriving in cycle ``t``
        is the head in ``t + 1``) moves into a queue of two registers
        (:class:`~hw.tmu.engine_queue.EngineOutputQueue`), whose oldest value this is.
    busy : Out(1)
        The next value will come from this engine (or is queued).
    pop : In(1)
        The traversal takes the head (only while ``head_valid``); it reaches only the queue.
    """

    def __init__(self, depth, line_bytes=8, ports=1):
        # The root checks the parameters (ValueError naming the bad one).
        self._root = Prefetcher(depth, line_bytes, ports, output_queue=False)
        self._depth = depth
        self._line_bytes = line_bytes
        self._ports = ports
        self._bits = (depth - 1).bit_length()
        root_members = self._root.signature.members
        members = {name: root_members[name] for name in (
            "clear", "start", "p_armed", "arm", "p_base", "p_base_wrapped", "p_lb", "p_ub",
            "p_step", "p_c", "p_stride", "p_log2", "p_sign", "p_region_base", "p_region_size",
            "mem_limit", "idle")}
        for name in ("req_valid", "req_addr", "req_slot", "req_grant", "req_bytes",
                     "req_urgent", "resp_valid", "resp_slot", "resp_data"):
            members[f"index_{name}"] = root_members[name]
        # The chained loads' ports have the root's shapes (same depth, line and ports).
        for name in ("req_valid", "req_addr", "req_slot", "req_grant", "req_bytes",
                     "req_urgent", "resp_valid", "resp_slot", "resp_data", "head_valid",
                     "head_data", "busy", "pop"):
            members[name] = root_members[name]
        super().__init__({**members, "chain": In(chain_layout())})

    def elaborate(self, platform):
        m = Module()
        depth, ports = self._depth, self._ports
        m.submodules.root = root = self._root
        for name in ("clear", "start", "p_armed", "arm", "p_base", "p_base_wrapped", "p_lb",
                     "p_ub", "p_step", "p_c", "p_stride", "p_log2", "p_sign", "p_region_base",
                     "p_region_size", "mem_limit"):
            m.d.comb += getattr(root, name).eq(getattr(self, name))
        for name in ("req_grant", "resp_valid", "resp_slot", "resp_data"):
            m.d.comb += getattr(root, name).eq(getattr(self, f"index_{name}"))
        for name in ("req_valid", "req_addr", "req_slot", "req_bytes"):
            m.d.comb += getattr(self, f"index_{name}").eq(getattr(root, name))
        cfg = self.chain

        # The traversal pops the head through a queue of two registers (below).
        m.submodules.queue = queue = EngineOutputQueue()

        # The pipeline: operation 0, operation 1, the address (checked and issued from its
        # register). Every register moves on together (``go``) when the last one is empty or
        # issues.
        stopped = Signal()              # an element failed its checks: nothing more is issued
        valid = [Signal(name=f"stage{k}_valid") for k in range(3)]
        value = [Signal(signed(64), name=f"stage{k}_value") for k in range(2)]
        wrapped = [Signal(name=f"stage{k}_wrapped") for k in range(2)]
        addr = Signal(signed(64))       # stage 2: the address's low 64 bits
        overflow = Signal()             # ... b wrapped or the exact address is not a 64-bit one

        def operation(k, x, x_wrapped):
            a = Mux(cfg.constant_first[k], cfg.constant[k], x)
            b = Mux(cfg.constant_first[k], x, cfg.constant[k])
            res, exact_out = alu(m, cfg.op[k], a, b, mul_wrapped=False)
            wraps = Const(0)
            for op in _WRAPPING:
                wraps = wraps | (cfg.op[k] == op.value)
            applied = cfg.ops > k
            return (Mux(applied, res, x),
                    Mux(applied, wraps & (exact_out | x_wrapped), x_wrapped))

        # Checks of stage 2 (registers in, one comparator each).
        esize = Signal(4)
        m.d.comb += esize.eq(Const(1, 4) << cfg.log2)
        region_end = Signal(signed(66))
        limit = Signal(signed(66))
        m.d.comb += [region_end.eq(cfg.region_base + cfg.region_size),
                     limit.eq(Mux(region_end < self.mem_limit, region_end, self.mem_limit))]
        misaligned = (addr[0:3] & (esize - 1)[:3]) != 0
        ok = (~overflow & ~misaligned & (addr >= cfg.region_base) & (addr + esize <= limit))

        head = Signal(self._bits)
        tail = Signal(self._bits)
        count = Signal(range(depth + 1))     # issued and not popped
        pending = Signal(range(depth + 1))   # issued and not answered
        arrived = Signal(depth)
        line_bits = max(1, (self._line_bytes - 1).bit_length())
        offset = Array(Signal(line_bits, name=f"offset_{i}") for i in range(depth))

        m.d.comb += [
            self.req_valid.eq(valid[2] & ok & ~stopped & (count != depth)),
            self.req_addr.eq(addr.as_unsigned()),
            self.req_slot.eq(tail),
            self.req_bytes.eq(esize),
        ]
        issue = self.req_valid & self.req_grant
        go = ~stopped & (~valid[2] | issue)
        take = go & root.head_valid
        m.d.comb += root.pop.eq(take)
        stage0, stage0_wrapped = operation(0, root.head_data.as_signed(), Const(0))
        stage1, stage1_wrapped = operation(1, value[0], wrapped[0])
        exact = Signal(signed(97))
        m.d.comb += exact.eq(cfg.base + value[1] * cfg.stride)
        with m.If(go):
            m.d.sync += [
                valid[0].eq(take), value[0].eq(stage0), wrapped[0].eq(stage0_wrapped),
                valid[1].eq(valid[0]), value[1].eq(stage1), wrapped[1].eq(stage1_wrapped),
                valid[2].eq(valid[1]), addr.eq(exact[:64]),
                overflow.eq(wrapped[1] | outside_int64(exact)),
            ]
        with m.If(valid[2] & ~ok):
            m.d.sync += stopped.eq(1)
        m.d.comb += self.busy.eq((count != 0) | queue.o.valid
                                 | (~stopped & (valid[0] | valid[1] | valid[2] | root.busy)))

        # The chained loads' elements, extracted from each response's line as it arrives (one
        # 64-bit word per entry, not a line), and the head.
        m.submodules.words = words = MultiPortMemory(shape=64, depth=depth, write_ports=ports,
                                                     read_ports=2, read_domain="comb")
        for k in range(ports):
            # (signals: an Array proxy in an expression is replicated per entry)
            resp_offset = Signal(line_bits, name=f"resp_offset_{k}")
            m.d.comb += [
                resp_offset.eq(offset[self.resp_slot[k]]),
                words.write[k].addr.eq(self.resp_slot[k]),
                words.write[k].data.eq(extract_aligned(self.resp_data[k], resp_offset, cfg.log2,
                                                       cfg.sign)),
                words.write[k].en.eq(self.resp_valid[k]),
            ]
        # The head in two registers, a cycle ahead for either outcome of ``pop`` (the entry
        # after the head through its own read port), as the ``Prefetcher``'s
        # (``hw/tmu/engine_head.py``).
        head_regs = EngineHead(m, words=words, head=head, arrived=arrived,
                               responses=[(self.resp_valid[k], self.resp_slot[k],
                                           words.write[k].data) for k in range(ports)])
        # The head moves into the output queue whenever the queue has room (``popped``, from
        # registers); the traversal pops the queue.
        m.d.comb += [queue.i.valid.eq(head_regs.valid), queue.i.payload.eq(head_regs.data),
                     queue.o.ready.eq(self.pop),
                     self.head_valid.eq(queue.o.valid), self.head_data.eq(queue.o.payload),
                     queue.flush.eq(self.clear | (self.start & ~root.continues))]
        with m.If(issue):
            m.d.sync += [offset[tail].eq(addr[0:line_bits]), tail.eq(tail + 1)]
        set_mask = 0
        for k in range(ports):
            set_mask = set_mask | Mux(self.resp_valid[k], Const(1, depth) << self.resp_slot[k], 0)
        popped = queue.i.valid & queue.i.ready
        clr_mask = Mux(popped, Const(1, depth) << head, 0)
        head_regs.update(m, count=count, entry_done=popped, refill=~head_regs.valid,
                         head_element=head_regs.head_word, next_element=head_regs.next_word)
        m.d.sync += [
            arrived.eq((arrived & ~clr_mask[:depth]) | set_mask[:depth]),
            count.eq(count + issue - popped),
            pending.eq(pending + issue - sum(self.resp_valid[k] for k in range(ports))),
            head.eq(head + popped),
        ]
        # The root runs ahead of the chain: the chain's own entries say how close it is to
        # running dry, for both stages' loads.
        m.d.comb += [self.req_urgent.eq(running_dry(count + queue.level, depth)),
                     self.index_req_urgent.eq(self.req_urgent)]
        m.d.comb += self.idle.eq(root.idle & (root.continues
                                              | ((pending == 0) & ~self.req_valid)))

        # A new chain: at a start that does not continue the root's sequence (no chained load
        # is outstanding then: ``idle``). ``arm`` only stops issuing.
        with m.If(self.start & ~root.continues):
            m.d.sync += [stopped.eq(0), head.eq(0), tail.eq(0), count.eq(0), arrived.eq(0),
                         head_regs.valid.eq(0), *(v.eq(0) for v in valid)]
        with m.Elif(self.arm):
            m.d.sync += [stopped.eq(1), *(v.eq(0) for v in valid)]
        with m.If(self.clear):
            m.d.sync += [stopped.eq(1), head.eq(0), tail.eq(0), count.eq(0), pending.eq(0),
                         arrived.eq(0), head_regs.valid.eq(0), *(v.eq(0) for v in valid)]
        return m
