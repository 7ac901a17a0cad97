"""The checks of a ``STREAM`` uop's memory accesses beyond its scalar address (``docs/isa.md``
§5 faults, §7.4 BLOCK streams, §7.8 vector mode; ``docs/rtl.md`` §2.2), each with its
``FaultCode`` in the golden model's order, and the fault address.

* A BLOCK row (:meth:`AddressChecks._check_block_row`): its length (``BLOCK_LENGTH``), then its
  first element (``ADDR_OVERFLOW``, ``MISALIGNED``, ``ADDR_RANGE``), then the first element at
  or past the region's end or the memory's limit.
* A contiguous vector load of the LOCKSTEP layer in vector mode
  (:meth:`AddressChecks._check_vector_load`): all its active lanes at once, as the golden
  model checks them lane by lane.
* The fault's code and address (:class:`FaultChecks`, :meth:`AddressChecks.fault_report`): the
  evaluation keeps the checks' outcomes (held with two stages), the execution encodes the code
  in the golden model's order and builds the address from the executed uop's words.

Every check of an address ``a + offset`` (``offset = b * stride``, a BLOCK row's ``b`` elements)
compares the offset against the limit less ``a`` (``hw/tmu/datapath.py``'s ``sum_below``):
the subtraction runs beside the multiplier, so one carry chain follows the product, not the
address's adder and a comparator after it (``docs/synthesis.md``, "The address checks beside
the multiplier").

A part of :class:`~hw.tmu.stream_evaluation.StreamEvaluation` (a base class of it: the checks
read its sources, address and descriptors), kept in its own module so that each file holds one
concept. Not a component: combinational logic added to the traversal's ``Module``.
"""

from amaranth.hdl import Array, Cat, Const, Mux, Signal, signed
from amaranth.lib import data, enum

from .datapath import sum_above, sum_below, sum_outside_int64
from .isa import FaultCode, Source


__all__ = ["aligned_down", "FaultAddress", "FaultChecks", "AddressChecks"]


def aligned_down(value, log2):
    """``value`` rounded down to a multiple of ``1 << log2`` bytes (``log2`` 0..3; signed or
    unsigned as ``value``): its low bits cleared, as ``(value >> log2) << log2`` is, without a
    shifter."""
    out = Cat(value[:3] & ~((Const(1, 4) << log2) - 1)[:3], value[3:])
    return out.as_signed() if value.shape().signed else out


class FaultAddress(enum.Enum, shape=2):
    """Which value a stream's fault address is (``docs/isa.md`` §5). The execution, which
    reads it only when a fault stops the run or is recorded for a lane, chooses it from the
    checks' outcomes (:class:`FaultChecks`) and builds the address from the executed uop's
    words (:meth:`AddressChecks.fault_report`): no 64-bit multiplexer behind the checks
    (``docs/synthesis.md``, "The address checks beside the multiplier")."""
    #: the stream id (``ADDR_OVERFLOW``, ``BLOCK_LENGTH``)
    STREAM_ID = 0
    #: the stream's value: the element's address, a BLOCK row's first element's
    RESULT = 1
    #: the first element at or past the region's end: its end rounded down to the element
    REGION_END = 2
    #: the same at the memory's limit
    MEMORY_END = 3


class FaultChecks(data.Struct):
    """The outcomes of a stream's checks its fault's code and address are encoded from
    (``docs/isa.md`` §5, the golden model's order). The evaluation computes each bit beside the
    others, with no priority after them; held with two stages, so that the priority encoder
    (:meth:`AddressChecks.fault_report`) runs in the execution, which reads the code and the
    address only when a fault stops the run or is recorded for a lane (``docs/synthesis.md``,
    "The fault's code encoded in the execution"). Which bits decide depends on the stream's
    kind (``block``, ``vector``, else the scalar checks); a bit the kind does not read is
    don't-care."""
    #: a BLOCK row's checks decide (``StreamEvaluation.s_block``)
    block: 1
    #: a contiguous vector load's checks decide (``_s_vector_load``)
    vector: 1
    #: scalar: the address overflows or an operand wrapped (``ADDR_OVERFLOW``)
    overflow: 1
    #: scalar and vector lane 0: the address is not a multiple of the element size
    misaligned: 1
    #: vector lane 0: the address is below the region
    below_region: 1
    #: vector: lane 0's or the last active lane's address overflows
    vector_overflow: 1
    #: vector: lane 0's address itself lies past the limit the lanes run past (then it is the
    #: fault address, not the limit rounded down)
    vector_first_outside: 1
    #: vector: the region ends before the memory's limit (the end the lanes run past)
    region_ends_first: 1
    #: BLOCK: the row's length is negative or above ``max_block`` (``BLOCK_LENGTH``)
    block_length: 1
    #: BLOCK: the row's first or last element's address overflows, or an operand wrapped
    block_overflow: 1
    #: BLOCK: the row's start is not a multiple of the element size
    block_misaligned: 1
    #: BLOCK: the row starts below the region
    block_below_region: 1
    #: BLOCK: the row ends past the region's end (else, if it faults, past the memory's)
    block_past_region: 1
    #: BLOCK: the row's start itself lies past the region's end (then it is the fault
    #: address, not the end rounded down)
    block_start_past_region: 1
    #: BLOCK: the row's start itself lies past the memory's limit (likewise)
    block_start_past_memory: 1


class AddressChecks:
    """The BLOCK row's and the vector load's checks and the fault address of a
    :class:`~hw.tmu.stream_evaluation.StreamEvaluation` (its base class: the methods read the
    evaluation's attributes, ``a_v``, ``b_v``, the address and its offset, the evaluated
    descriptors, and write its ``s_block``, ``blk_n``, ``nvals``, ``s_lockstep`` and the
    faults' parts)."""

    def _check_block_row(self, m, sources):
        """ISA v1 BLOCK stream (docs/isa.md §7.4): a row of n elements from a + b * size; word
        3 is the count source. Checked here (evaluation), loaded by the OPERAND actions."""
        t, c, u = self._t, self._c, self._eval_uop
        sc, a_v, b_v, log2, esize = self._eval_sc, self.a_v, self.b_v, self._e_log2, self._e_esize
        region, addr_exact = self._e_region, self._addr_exact
        self.has_block = has_block = c.has("block")
        self.nbits = nbits = max(1, c.max_block.bit_length(), c.lanes.bit_length())
        self.nvals = Array(Signal(nbits, name=f"count_{i}")
                           for i in range(c.streams if has_block else 1))
        self.s_block = s_block = Signal(name="s_block")
        self.blk_n = blk_n = Signal(signed(64), name="blk_n")
        blk_start = Signal(signed(68), name="blk_start")
        self._blk_fault = blk_fault = Signal(name="blk_fault")
        if not has_block:
            return
        m.d.comb += [
            s_block.eq(self._s_is_mem & self._e_mode.reserved),
            blk_n.eq(sources.read(Source(sc.stride.as_unsigned()))),
            # (the row's start for its value and alignment: a chained uop's is the scalar
            # address, so no adder follows the offset's multiplexer below)
            blk_start.eq(Mux(u.chain, addr_exact, a_v + (b_v << log2))),
        ]
        # The checks compare the row's offset (a chained uop's product, or ``b`` elements)
        # against the limits less ``a``; its end is ``a + n * esize + offset`` (``n`` checked
        # in range first, so its low bits are ``n``); past the overflow check the low 66 bits
        # of the offset decide the range checks, as the scalar checks'.
        blk_offset = Signal(self._addr_offset.shape(), name="blk_offset")
        end_base = Signal(signed(68), name="blk_end_base")
        range_offset = Signal(signed(66), name="blk_range_offset")
        m.d.comb += [blk_offset.eq(Mux(u.chain, self._addr_offset, b_v << log2)),
                     end_base.eq(a_v + (blk_n[:nbits] << log2)),
                     range_offset.eq(blk_offset[:66])]
        r_end = self._region_end

        # The checks in the golden model's order, each computed beside the others: the row
        # faults if its length is out of range, or if it is not empty and one of the others
        # fails. Their priority (the code and the fault address) is the execution's
        # (``FaultChecks``, :meth:`fault_report`).
        checks = self._checks
        m.d.comb += [
            checks.block_length.eq((blk_n < 0) | (blk_n > c.max_block)),
            checks.block_overflow.eq(self._operand_wrapped
                                     | sum_outside_int64(a_v, blk_offset)),
            checks.block_misaligned.eq((blk_start[0:3] & (esize - 1)[:3]) != 0),
            checks.block_below_region.eq(sum_below(a_v, range_offset, region.base)),
            checks.block_past_region.eq(sum_above(end_base, range_offset, r_end)),
            checks.block_start_past_region.eq(sum_above(a_v, range_offset, r_end)),
            checks.block_start_past_memory.eq(sum_above(a_v, range_offset, t.mem_limit)),
            blk_fault.eq(checks.block_length
                         | ((blk_n != 0)
                            & (checks.block_overflow | checks.block_misaligned
                               | checks.block_below_region | checks.block_past_region
                               | sum_above(end_base, range_offset, t.mem_limit)))),
        ]
        with m.If(s_block):
            m.d.comb += self.s_result.eq(blk_start[:64])

    def _check_vector_load(self, m, lanes):
        """ISA v1 contiguous vector MEM stream of a LOCKSTEP layer in vector mode: the STREAM
        uop computes lane 0's address and checks all ``count`` active lanes at once, as the
        golden model checks them lane by lane: lane 0 misaligned (then every lane is, by the
        same offset), lane 0 below the region (lanes ascend), else the first lane whose element
        ends past the region or the memory (``min`` of both limits: that lane faults first)."""
        t, u, sbits = self._t, self._eval_uop, self._sbits
        sc, addr, log2, region = self._eval_sc, self.addr, self._e_log2, self._e_region
        count = lanes.count if self._forward is None else self._forward.count(lanes.count)
        # the stream being evaluated belongs to the LOCKSTEP layer (``s_lockstep``: the
        # executed uop's stream does)
        self._e_lockstep = s_lockstep = Signal(name="evaluated_lockstep")
        self.s_lockstep = Signal(name="s_lockstep")
        self._s_vector_load = s_vector_load = Signal(name="s_vector_load")
        self._vector_fault = vector_fault = Signal(name="vector_fault")
        if not lanes.enabled:
            return
        m.d.comb += [
            self.s_lockstep.eq(lanes.on & (self.sc.layer == t.lockstep_layer)),
            s_lockstep.eq(lanes.on & (sc.layer == t.lockstep_layer)),
            s_vector_load.eq(s_lockstep & t.lockstep_vector_mode & self._s_is_mem
                             & t.contiguous_vector.bit_select(u.id[:sbits], 1)),
        ]
        region_limit = Signal(signed(67), name="region_limit")
        r_end_ = self._region_end
        region_ends_first = r_end_ < t.mem_limit
        m.d.comb += region_limit.eq(Mux(region_ends_first, r_end_, t.mem_limit))
        # The lanes' exact addresses ascend from lane 0's: the first and the last active
        # lane's are in the signed range, or one lane's address overflows. Each check compares
        # lane 0's offset against a limit less ``a`` and the lanes' span (beside the
        # multiplier, as the scalar checks).
        last_lane_base = Signal(signed(68), name="vector_last_lane_base")
        end_base = Signal(signed(68), name="vector_end_base")
        m.d.comb += [last_lane_base.eq(self.a_v + ((count - 1) << log2)),
                     end_base.eq(self.a_v + (count << log2))]
        offset, range_offset = self._addr_offset, self._range_offset
        # The checks in the golden model's order, each beside the others (lane 0's alignment
        # and its place below the region are the scalar checks'); their priority is the
        # execution's (``FaultChecks``, :meth:`fault_report`). The first lane whose element
        # ends past the limit is the fault address: lane 0's address is aligned (checked
        # before), so that lane's address is the limit rounded down to the element size, or
        # lane 0's if the limit is below it (``vector_first_outside``).
        checks = self._checks
        m.d.comb += [
            checks.vector_overflow.eq(self._addr_overflow
                                      | sum_outside_int64(last_lane_base, offset)),
            checks.vector_first_outside.eq(sum_above(self.a_v, range_offset, region_limit)),
            checks.region_ends_first.eq(region_ends_first),
            vector_fault.eq(checks.vector_overflow | self._misaligned | self._below_region
                            | sum_above(end_base, range_offset, region_limit)),
        ]

    def fault_report(self, m):
        """``s_code`` (``FaultCode``) and ``s_faddr`` (64 bits, ``docs/isa.md`` §5): the executed
        uop's fault code and address, encoded from the checks' outcomes (``s_checks``, a
        :class:`FaultChecks`) in the golden model's order. The address is the stream id
        (``ADDR_OVERFLOW``, ``BLOCK_LENGTH``), the stream's value (``s_result``: the element's
        address, a BLOCK row's first element's), or its region's end or the memory's limit
        rounded down to its element size (the first element at or past it). Called after the
        evaluation's results are held (two stages): from the executed uop's words (its stream
        id, region and element size are the evaluated uop's whenever the execution reads the
        code and address: only a ``STREAM`` uop faults) and the held results; read only at a
        fault, so the priority encoder is off the evaluation's path."""
        t, checks = self._t, self.s_checks
        self.s_code = s_code = Signal(FaultCode, name="s_code")
        select = Signal(FaultAddress, name="s_faddr_select")
        with m.If(checks.block):
            with m.If(checks.block_length):
                m.d.comb += [s_code.eq(FaultCode.BLOCK_LENGTH), select.eq(FaultAddress.STREAM_ID)]
            with m.Elif(checks.block_overflow):
                m.d.comb += [s_code.eq(FaultCode.ADDR_OVERFLOW),
                             select.eq(FaultAddress.STREAM_ID)]
            with m.Elif(checks.block_misaligned):
                m.d.comb += [s_code.eq(FaultCode.MISALIGNED), select.eq(FaultAddress.RESULT)]
            with m.Elif(checks.block_below_region):
                m.d.comb += [s_code.eq(FaultCode.ADDR_RANGE), select.eq(FaultAddress.RESULT)]
            with m.Elif(checks.block_past_region):
                m.d.comb += [s_code.eq(FaultCode.ADDR_RANGE),
                             select.eq(Mux(checks.block_start_past_region, FaultAddress.RESULT,
                                           FaultAddress.REGION_END))]
            with m.Else():
                m.d.comb += [s_code.eq(FaultCode.ADDR_RANGE),
                             select.eq(Mux(checks.block_start_past_memory, FaultAddress.RESULT,
                                           FaultAddress.MEMORY_END))]
        with m.Else():
            overflow = Mux(checks.vector, checks.vector_overflow, checks.overflow)
            with m.If(overflow):
                m.d.comb += [s_code.eq(FaultCode.ADDR_OVERFLOW),
                             select.eq(FaultAddress.STREAM_ID)]
            with m.Elif(checks.misaligned):
                m.d.comb += [s_code.eq(FaultCode.MISALIGNED), select.eq(FaultAddress.RESULT)]
            with m.Elif(checks.vector & ~checks.below_region):
                m.d.comb += [s_code.eq(FaultCode.ADDR_RANGE),
                             select.eq(Mux(checks.vector_first_outside, FaultAddress.RESULT,
                                           Mux(checks.region_ends_first,
                                               FaultAddress.REGION_END,
                                               FaultAddress.MEMORY_END)))]
            with m.Else():
                m.d.comb += [s_code.eq(FaultCode.ADDR_RANGE), select.eq(FaultAddress.RESULT)]
        region_end = Signal(signed(65), name="executed_region_end")
        m.d.comb += region_end.eq(self.region.base + self.region.size)
        self.s_faddr = s_faddr = Signal(64, name="s_faddr")
        with m.Switch(select):
            with m.Case(FaultAddress.STREAM_ID):
                m.d.comb += s_faddr.eq(self._uop.id)
            with m.Case(FaultAddress.RESULT):
                m.d.comb += s_faddr.eq(self.s_result.as_unsigned())
            with m.Case(FaultAddress.REGION_END):
                m.d.comb += s_faddr.eq(aligned_down(region_end, self.log2))
            with m.Case(FaultAddress.MEMORY_END):
                m.d.comb += s_faddr.eq(aligned_down(t.mem_limit, self.log2))
