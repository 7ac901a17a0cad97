"""The checks of a ``STREAM`` uop's memory accesses beyond its scalar address (``docs/isa.md``
§5 faults, §7.4 BLOCK streams, §7.8 vector mode; ``docs/rtl.md`` §2.2), each with its
``FaultCode`` in the golden model's order, and the fault address.

* A BLOCK row (:meth:`AddressChecks._check_block_row`): its length (``BLOCK_LENGTH``), then its
  first element (``ADDR_OVERFLOW``, ``MISALIGNED``, ``ADDR_RANGE``), then the first element at
  or past the region's end or the memory's limit.
* A contiguous vector load of the LOCKSTEP layer in vector mode
  (:meth:`AddressChecks._check_vector_load`): all its active lanes at once, as the golden
  model checks them lane by lane.
* The fault address (:class:`FaultAddress`, :meth:`AddressChecks.fault_address`): the checks
  choose which value it is, the execution builds it from the executed uop's words.

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
from amaranth.lib import enum

from .datapath import sum_above, sum_below, sum_outside_int64
from .isa import FaultCode, Source


__all__ = ["aligned_down", "FaultAddress", "AddressChecks"]


def aligned_down(value, log2):
    """``value`` rounded down to a multiple of ``1 << log2`` bytes (``log2`` 0..3; signed or
    unsigned as ``value``): its low bits cleared, as ``(value >> log2) << log2`` is, without a
    shifter."""
    out = Cat(value[:3] & ~((Const(1, 4) << log2) - 1)[:3], value[3:])
    return out.as_signed() if value.shape().signed else out


class FaultAddress(enum.Enum, shape=2):
    """Which value a stream's fault address is (``docs/isa.md`` §5). The evaluation's checks
    choose it (``StreamEvaluation.s_faddr_select``, held with two stages); the execution,
    which reads it only when a fault stops the run or is recorded for a lane, builds the
    address from the executed uop's words (:meth:`StreamEvaluation.fault_address`): no 64-bit
    multiplexer behind the checks (``docs/synthesis.md``, "The address checks beside the
    multiplier")."""
    #: the stream id (``ADDR_OVERFLOW``, ``BLOCK_LENGTH``)
    STREAM_ID = 0
    #: the stream's value: the element's address, a BLOCK row's first element's
    RESULT = 1
    #: the first element at or past the region's end: its end rounded down to the element
    REGION_END = 2
    #: the same at the memory's limit
    MEMORY_END = 3


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
        self._blk_code = blk_code = Signal(FaultCode, name="blk_code")
        self._blk_fault_address = blk_fault_address = Signal(FaultAddress, name="blk_fault_address")
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

        def first_outside(limit, rounded_limit):
            """Address of the first element at or past ``limit`` (bytes): ``blk_start + ((limit
            - blk_start) // esize) * esize``, or ``blk_start`` below it. Checked after the
            alignment, so ``blk_start`` is a multiple of the element size and this is ``limit``
            rounded down to one (``rounded_limit``: :meth:`fault_address` builds it), no
            subtraction, no addition (``docs/synthesis.md`` "The two-stage uop, first
            step")."""
            return Mux(sum_above(a_v, range_offset, limit), FaultAddress.RESULT, rounded_limit)

        with m.If((blk_n < 0) | (blk_n > c.max_block)):
            m.d.comb += [blk_fault.eq(1), blk_code.eq(FaultCode.BLOCK_LENGTH),
                         blk_fault_address.eq(FaultAddress.STREAM_ID)]
        with m.Elif(blk_n == 0):
            pass
        with m.Elif(self._operand_wrapped | sum_outside_int64(a_v, blk_offset)):
            m.d.comb += [blk_fault.eq(1), blk_code.eq(FaultCode.ADDR_OVERFLOW),
                         blk_fault_address.eq(FaultAddress.STREAM_ID)]
        with m.Elif((blk_start[0:3] & (esize - 1)[:3]) != 0):
            m.d.comb += [blk_fault.eq(1), blk_code.eq(FaultCode.MISALIGNED),
                         blk_fault_address.eq(FaultAddress.RESULT)]
        with m.Elif(sum_below(a_v, range_offset, region.base)):
            m.d.comb += [blk_fault.eq(1), blk_code.eq(FaultCode.ADDR_RANGE),
                         blk_fault_address.eq(FaultAddress.RESULT)]
        with m.Elif(sum_above(end_base, range_offset, r_end)):
            m.d.comb += [blk_fault.eq(1), blk_code.eq(FaultCode.ADDR_RANGE),
                         blk_fault_address.eq(first_outside(r_end, FaultAddress.REGION_END))]
        with m.Elif(sum_above(end_base, range_offset, t.mem_limit)):
            m.d.comb += [blk_fault.eq(1), blk_code.eq(FaultCode.ADDR_RANGE),
                         blk_fault_address.eq(first_outside(t.mem_limit,
                                                 FaultAddress.MEMORY_END))]
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
        self._vector_code = vector_code = Signal(FaultCode, name="vector_code")
        self._vector_fault_address = vector_fault_address = Signal(
            FaultAddress, name="vector_fault_address")
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
        with m.If(self._addr_overflow | sum_outside_int64(last_lane_base, offset)):
            m.d.comb += [vector_fault.eq(1), vector_code.eq(FaultCode.ADDR_OVERFLOW),
                         vector_fault_address.eq(FaultAddress.STREAM_ID)]
        with m.Elif(self._misaligned):
            m.d.comb += [vector_fault.eq(1), vector_code.eq(FaultCode.MISALIGNED),
                         vector_fault_address.eq(FaultAddress.RESULT)]
        with m.Elif(self._below_region):
            m.d.comb += [vector_fault.eq(1), vector_code.eq(FaultCode.ADDR_RANGE),
                         vector_fault_address.eq(FaultAddress.RESULT)]
        with m.Elif(sum_above(end_base, range_offset, region_limit)):
            # The first lane whose element ends past the limit: lane 0's address is aligned
            # (checked before), so the lane's address is the limit rounded down to the element
            # size (lane 0's if the limit is below it).
            m.d.comb += [vector_fault.eq(1), vector_code.eq(FaultCode.ADDR_RANGE),
                         vector_fault_address.eq(
                             Mux(sum_above(self.a_v, range_offset, region_limit),
                                 FaultAddress.RESULT,
                                 Mux(region_ends_first, FaultAddress.REGION_END,
                                     FaultAddress.MEMORY_END)))]

    def fault_address(self, m):
        """``s_faddr`` (64 bits, ``docs/isa.md`` §5): the executed uop's fault address, as
        ``s_faddr_select`` chooses it: its stream id, its value (``s_result``: the element's
        address, a BLOCK row's first element's), or its region's end or the memory's limit
        rounded down to its element size. Called after the evaluation's results are held (two
        stages): from the executed uop's words (its stream id, region and element size are
        the evaluated uop's whenever the execution reads the address) and the held
        results."""
        t = self._t
        region_end = Signal(signed(65), name="executed_region_end")
        m.d.comb += region_end.eq(self.region.base + self.region.size)
        self.s_faddr = s_faddr = Signal(64, name="s_faddr")
        with m.Switch(self.s_faddr_select):
            with m.Case(FaultAddress.STREAM_ID):
                m.d.comb += s_faddr.eq(self._uop.id)
            with m.Case(FaultAddress.RESULT):
                m.d.comb += s_faddr.eq(self.s_result.as_unsigned())
            with m.Case(FaultAddress.REGION_END):
                m.d.comb += s_faddr.eq(aligned_down(region_end, self.log2))
            with m.Case(FaultAddress.MEMORY_END):
                m.d.comb += s_faddr.eq(aligned_down(t.mem_limit, self.log2))
