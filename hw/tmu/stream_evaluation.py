"""Stream evaluation in the traversal: what one ``STREAM`` uop (or ``ENTER``'s bounds) computes in
its cycle (``docs/isa.md`` §1 "Streams", "Sources", "Address overflow", §7.4 BLOCK streams, §7.8;
``docs/rtl.md`` §2.2, §9.2, §9.3).

* The stream (:class:`StreamEvaluation`): the ALU result (``hw/tmu/datapath.py``), a ``FWD``,
  or a MEM stream's address ``a + b * stride`` (a chained uop's ``a + S * K`` and its ``D = S *
  X``, ``hw/tmu/chain.py``) with its checks in the golden model's order: address overflow
  (``ADDR_OVERFLOW``, fault address the stream id), alignment (``MISALIGNED``), region and
  memory limit (``ADDR_RANGE``). A BLOCK stream checks its whole row (length ``BLOCK_LENGTH``,
  first element, first element outside), a contiguous vector load in vector mode all its active
  lanes at once (both in ``hw/tmu/address_checks.py``, with the fault address). Each stream's
  ``wrapped`` bit records that its value wrapped past 64 bits.
* The run-ahead engines' start parameters (``PREFETCH e``: the stream's base, stride, size and
  region with its layer's bounds and step) and the engine serving the evaluated stream
  (``hw/tmu/prefetch.py``, ``docs/rtl.md`` §2.3).

Not a component: these helpers add combinational logic to the traversal's ``Module`` (as
:class:`~hw.tmu.engine_pop.EnginePops` does); what the traversal does with the result (keep
it, issue a blocking load, fault, wait for an engine) is its FSM's (``hw/tmu/traversal.py``).
"""

from amaranth.hdl import Array, Const, Mux, Signal, signed

from .address_checks import AddressChecks, FaultChecks, aligned_down
from .chain import chain_value
from .registered_products import RegisteredProducts, shifted_product
from .datapath import alu, outside_int64, sum_below, sum_outside_int64
from .isa import AluOp, MemMode, Source, SourceKind, StreamKind
from .layouts import LayerCfg, RegionCfg, UopKind
from .signatures import index_bits
from .source_fields import pick


__all__ = ["StreamEvaluation"]


class StreamEvaluation(AddressChecks):
    """The stream of the current uop, evaluated and checked (combinational), in four parts: the
    sources, ALU and address with the scalar checks (``_evaluate``), a BLOCK row's checks
    (``_check_block_row``), a contiguous vector load's checks (``_check_vector_load``; both from
    :class:`~hw.tmu.address_checks.AddressChecks`), then the fault of the stream's kind and its
    ``wrapped`` bit (``_wrapped_bit``).

    Parameters
    ----------
    m : Module
    traversal : Traversal
        Its stream configuration port (``scfg_*``), ``blocking``, ``mem_limit`` and ISA v1
        classes are read, ``scfg_addr`` driven.
    uop : Signal(Uop)
        The microcode entry to execute (``EnginePops.uop``).
    sources : OperandSources
        Reads the sources ``a``, ``b`` (and a BLOCK stream's count), ``hw/tmu/operand_sources.py``.
    lanes : LockstepLanes
    layers, regions : Array
        The layer and region descriptors.
    evaluated : (Signal(Uop), Signal(StreamCfg)) or None
        Two stages: the words of the uop evaluated (the executed one's, or the ahead uop's:
        ``hw/tmu/evaluate_stage.py``); ``None``: ``uop`` and ``scfg_data``.
    forward : StreamForward or None
        Two stages: the stream values the execution keeps in the same cycle and the vector
        iteration it starts, read by the evaluation instead of the registers (here the
        ``wrapped`` bits and the LOCKSTEP layer's ``count`` and ``span``).
    split : tuple or None
        Two stages: the sources ``a`` and ``b`` read twice, each from registers, and selected
        after the read (``docs/synthesis.md``, "The operands read before the evaluated uop is
        chosen"): ``(evaluate_ahead, (ahead_uop, ahead_sc, ahead_lay, ahead_sources),
        (own_lay, own_sources))``: the ahead uop's words, the descriptor of the layer it
        enters (a register) and the sources as its evaluation sees them; the descriptor of
        the layer the executed uop enters (a register) and the sources as its own evaluation
        sees them. ``evaluate_ahead`` chooses, as it chooses ``evaluated``.

    Attributes
    ----------
    sc : StreamCfg
        The evaluated stream's descriptor (``traversal.scfg_data``).
    enters, enter_layer : Value
        The uop performs an ``ENTER`` (its own, or fused into a ``STREAM``: ``Uop.fuse_enter``,
        ``docs/rtl.md`` §9.5 E), and the layer it enters.
    lay : Signal(LayerCfg)
        The descriptor of layer ``enter_layer``.
    a_v, b_v : Signal(signed(64))
        The sources ``a`` and ``b`` (``ENTER``: lower and upper bound).
    enter_lb, enter_ub : Value
        The bounds the ``ENTER`` evaluates: ``a_v``, ``b_v``, swapped with ``Uop.enter_swap``.
    addr : Signal(signed(64))
        A MEM stream's address (bytes; a BLOCK stream's row start is ``s_result``).
    log2, esize : Value
        The element size, as ``log2`` and in bytes; ``s_mode``: the ``MemMode`` view of the mode.
    s_result : Signal(signed(64))
        The stream's value.
    s_fault : Signal
        The stream faults (``docs/isa.md`` §5).
    s_checks : Signal(FaultChecks)
        The checks' outcomes (held with two stages); :meth:`fault_report` encodes from them
        ``s_code``, the ``FaultCode``, and ``s_faddr``, the fault address (64 bits), for the
        execution.
    s_wraps : Signal
        The value wrapped past 64 bits (its ``wrapped`` bit, ``docs/isa.md`` §1).
    s_blocking, s_lockstep : Value
        A blocking MEM stream; the stream belongs to the LOCKSTEP layer.
    wrapped : Signal(streams)
        Register (written by :meth:`keep_value`): per stream, its value wrapped.
    nvals : Array of Signal
        Registers: per stream, a BLOCK row's element count (``count_<s>``).
    blk_n : Signal(signed(64))
        The evaluated BLOCK stream's count.
    """

    def __init__(self, m, traversal, uop, sources, lanes, layers, regions, evaluated=None,
                 forward=None, split=None):
        self._t = traversal
        self._forward = forward
        if (evaluated is None) != (split is None):
            raise ValueError("evaluated and split are given together (two stages) or not at all")
        self._split = split
        self._c = traversal._cfg
        self._uop = uop
        # The words evaluated: the executed uop's, or (two stages) the uop evaluated during
        # another's execution (``evaluated``: its microcode word and stream configuration).
        self._eval_uop, self._eval_sc = evaluated or (uop, traversal.scfg_data)
        self.evaluated_sc = self._eval_sc
        self._shared = evaluated is None
        self._sbits = index_bits(self._c.streams)
        # The checks' outcomes (the fault's code and address are encoded from them in the
        # execution: ``AddressChecks.fault_report``).
        self._checks = checks = Signal(FaultChecks, name="s_checks")
        self.s_checks = checks
        # The parts, in this order (the Verilog's names and order follow it).
        self._evaluate(m, sources, lanes, layers, regions)
        self._check_block_row(m, sources)
        self._check_vector_load(m, lanes)
        s_block, s_vector_load = self.s_block, self._s_vector_load
        m.d.comb += [
            self.s_fault.eq(Mux(s_block, self._blk_fault,
                                Mux(s_vector_load, self._vector_fault, self._s_fault_v0))),
            checks.block.eq(s_block),
            checks.vector.eq(s_vector_load),
            checks.overflow.eq(self._addr_overflow),
            checks.misaligned.eq(self._misaligned),
            checks.below_region.eq(self._below_region),
        ]
        self._wrapped_bit(m, lanes)

    def _evaluate(self, m, sources, lanes, layers, regions):
        """The sources, the ALU, a MEM stream's address and its scalar checks (ISA v0)."""
        t, c, u, sbits = self._t, self._c, self._uop, self._sbits
        eu, esc, shared = self._eval_uop, self._eval_sc, self._shared
        lbits = index_bits(c.layers)
        rbits = index_bits(c.regions)
        engines = c.engines
        ebits = index_bits(engines)
        source = sources.read
        is_enter = u.kind == UopKind.ENTER
        # The layer an ENTER enters: its ``id``, or a STREAM uop's fused ENTER's ``next_layer``
        # (docs/rtl.md §9.5 E).
        self.enters = is_enter | u.fuse_enter
        self.enter_layer = enter_layer = Mux(is_enter, u.id, u.next_layer)[:lbits]
        self.lay = lay = pick(m, layers, enter_layer, LayerCfg, "lay")

        is_pf = u.kind == UopKind.PREFETCH
        self.prefetch_engine = prefetch_engine = u.id[:ebits]
        prefetch_streams = Array(t.prefetch_stream[i] for i in range(engines))
        prefetch_stream_id = pick(m, prefetch_streams, prefetch_engine, 8, "prefetch_stream_id")
        if c.chain_engines:
            # The chain engine takes its root stream's parameters (hw/tmu/chain_engine.py).
            prefetch_stream_id = Mux(prefetch_engine == c.prefetchers, t.chain_root,
                                     prefetch_stream_id)
        m.d.comb += t.scfg_addr.eq(Mux(is_pf, prefetch_stream_id, u.id)[:sbits])
        self.sc = sc = t.scfg_data
        if self._split is None:
            # (one stage: the evaluated uop is the executed one; an ENTER's bounds are the
            # sources of the layer it enters)
            src_a, src_b = self._source_words(m, eu, esc, lay, "")
            self.a_v = a_v = source(src_a)
            self.b_v = b_v = source(src_b)
        else:
            # Two stages: each uop E may evaluate has its sources read from registers (its
            # words, the layer it enters, the value registers, the engines' heads, the
            # forwarded values), and the choice between the two (``evaluate_ahead``, which
            # waits for the executed uop's held results) comes after the reads, not before
            # them.
            evaluate_ahead, (ahead_uop, ahead_sc, ahead_lay, ahead_sources), \
                (own_lay, own_sources) = self._split
            words = [self._source_words(m, ahead_uop, ahead_sc, ahead_lay, "ahead_"),
                     self._source_words(m, u, t.scfg_data, own_lay, "own_")]
            src_a, src_b = Signal(Source, name="src_a"), Signal(Source, name="src_b")
            self.a_v = a_v = Signal(signed(64), name="a_v")
            self.b_v = b_v = Signal(signed(64), name="b_v")
            m.d.comb += [
                src_a.eq(Mux(evaluate_ahead, words[0][0], words[1][0])),
                src_b.eq(Mux(evaluate_ahead, words[0][1], words[1][1])),
                a_v.eq(Mux(evaluate_ahead, ahead_sources.read(words[0][0]),
                           own_sources.read(words[1][0]))),
                b_v.eq(Mux(evaluate_ahead, ahead_sources.read(words[0][1]),
                           own_sources.read(words[1][1]))),
            ]
        self._src_a = src_a
        self.src_a, self.src_b = src_a, src_b      # the sources read (Source views)

        # Address overflow (docs/isa.md §1): ``wrapped`` bit s says stream s's value wrapped past
        # 64 bits (an ALU ADD/SUB/MUL/SHL result outside the signed range in any active lane, or
        # an ADD/SUB/MUL/SHL/FWD of a value that wrapped). A load whose ``a`` or ``b`` wrapped, or
        # whose exact address lies outside the signed range, faults ADDR_OVERFLOW (address:
        # stream id) before its alignment and region checks.
        self.wrapped = Signal(c.streams, name="wrapped")
        # ``a`` wrapped: the wrapped bit of an engine's base (PREFETCH, ENTER)
        self.base_wrapped = Signal(name="base_wrapped")
        m.d.comb += self.base_wrapped.eq(self._wraps(src_a))

        # The two products of ``b`` (the address's ``b * stride``, a chained uop's ``S * K``;
        # a chained uop's ``D = S * X``): a shift for a power-of-two factor, else the
        # registered product of two cycles ago, which the uop waits for
        # (``hw/tmu/registered_products.py``).
        address_factor = Signal(signed(32), name="address_factor")
        m.d.comb += address_factor.eq(Mux(eu.chain, esc.chain_scale, esc.stride))
        # (driven by the traversal: in a run, every popped head the operands read is there)
        self.product_operands = Signal(name="product_operands")
        products = RegisteredProducts(m, b_v, [address_factor, esc.chain_factor, a_v],
                                      "registered", clear=t.start,
                                      enable=self.product_operands)
        # An ALU stream's ``MUL``: always the registered product (the decoder makes a ``MUL``
        # by a constant power of two a ``SHL``: hw/tmu/config_writer.py).
        alu_res, self._alu_wrapped = alu(m, esc.mode, a_v, b_v, product=products.product[2])
        address_shifts, address_shifted = shifted_product(m, b_v, address_factor,
                                                          "address_factor")
        chain_shifts, chain_shifted = shifted_product(m, b_v, esc.chain_factor, "chain_factor")
        product = Signal(signed(96), name="address_product")
        m.d.comb += product.eq(Mux(address_shifts, address_shifted, products.product[0]))
        chain_exact = Signal(signed(96), name="chain_product")
        m.d.comb += chain_exact.eq(Mux(chain_shifts, chain_shifted, products.product[1]))
        self._address_product_ready = address_shifts | products.ready[0]
        self._chain_product_ready = chain_shifts | products.ready[1]
        self._alu_product_ready = products.ready[2]
        # The chained ALU stream D = S * X, in parallel with the address ``a + S * K``.
        self.chain_val, self.chain_wraps, chain_overflow = chain_value(m, chain_exact,
                                                                       self._wraps(src_b))
        self._operand_wrapped = operand_wrapped = Signal(name="operand_wrapped")
        m.d.comb += operand_wrapped.eq(self.base_wrapped | self._wraps(src_b)
                                       | (eu.chain & chain_overflow))
        # The address ``a + offset``, offset = ``b * stride`` (exact). Its checks compare the
        # offset against ``limit - a`` (``sum_below``, ``hw/tmu/datapath.py``): the subtraction
        # beside the multiplier, one carry chain after the product instead of the address's
        # adder and a comparator after it.
        self._addr_offset = offset = Signal(product.shape(), name="addr_offset")
        m.d.comb += offset.eq(product)
        self._addr_exact = addr_exact = Signal(signed(98), name="addr_exact")
        m.d.comb += addr_exact.eq(a_v + offset)
        self.addr = addr = Signal(signed(64), name="addr")
        m.d.comb += addr.eq(addr_exact[:64])
        self._addr_overflow = addr_overflow = Signal(name="addr_overflow")
        m.d.comb += addr_overflow.eq(operand_wrapped | sum_outside_int64(a_v, offset))
        # Past the overflow check the address is in the signed range, so the offset is in
        # [-2**64, 2**64): the range checks compare its low 66 bits (they decide nothing for an
        # address that overflowed: ADDR_OVERFLOW comes first).
        self._range_offset = range_offset = Signal(signed(66), name="addr_range_offset")
        m.d.comb += range_offset.eq(offset[:66])
        # The element size and the region: the executed uop's (its request, an engine's start)
        # and the evaluated uop's (the checks).
        self.s_mode = s_mode = MemMode(sc.mode)
        self.log2 = s_mode.log2_size
        self.esize = Signal(4, name="esize")
        m.d.comb += self.esize.eq(Const(1, 4) << self.log2)
        self.region = pick(m, regions, sc.region[:rbits], RegionCfg, "region")
        self._e_mode = e_mode = s_mode if shared else MemMode(esc.mode)
        self._e_log2 = log2 = e_mode.log2_size
        self._e_esize = esize = self.esize if shared else Signal(4, name="evaluated_esize")
        if not shared:
            m.d.comb += esize.eq(Const(1, 4) << log2)
        self._misaligned = misaligned = (addr[0:3] & (esize - 1)[:3]) != 0
        self._e_region = region = (self.region if shared else
                                   pick(m, regions, esc.region[:rbits], RegionCfg,
                                        "evaluated_region"))
        # The region's end (bytes, exclusive), for the scalar, BLOCK and vector checks.
        self._region_end = region_end = Signal(signed(65), name="region_end")
        m.d.comb += region_end.eq(region.base + region.size)
        # The element ends inside the region and the image: ``addr + esize <= limit``. For an
        # aligned ``addr`` (a misaligned one faults MISALIGNED first) that is ``addr <`` the
        # limit rounded down to the element size: a compare, no adder after the address
        # (and the compare is the offset's against ``limit - a``).
        self._below_region = below_region = Signal(name="addr_below_region")
        m.d.comb += below_region.eq(sum_below(a_v, range_offset, region.base))
        in_region = ~below_region & sum_below(a_v, range_offset, aligned_down(region_end, log2))
        in_image = sum_below(a_v, range_offset, aligned_down(t.mem_limit, log2))
        self._s_is_mem = s_is_mem = esc.kind == StreamKind.MEM
        # The evaluated STREAM uop waits for a registered product: its MEM stream's address
        # (not a BLOCK row's own, ``b << log2``, unless chained) or its chained ALU stream's.
        self.product_wait = Signal(name="product_wait")
        m.d.comb += self.product_wait.eq(
            (eu.kind == UopKind.STREAM)
            & ((s_is_mem & (~e_mode.reserved | eu.chain) & ~self._address_product_ready)
               | (eu.chain & ~self._chain_product_ready)
               | ((esc.kind == StreamKind.ALU) & (esc.mode == AluOp.MUL.value)
                  & ~self._alu_product_ready)))
        self.s_fault = Signal(name="s_fault")
        self._s_fault_v0 = s_is_mem & (addr_overflow | misaligned | ~in_region | ~in_image)
        self.s_result = s_result = Signal(signed(64), name="s_result")
        with m.Switch(esc.kind):
            with m.Case(StreamKind.ALU):
                m.d.comb += s_result.eq(alu_res)
            with m.Case(StreamKind.FWD):
                m.d.comb += s_result.eq(a_v)
            with m.Default():
                m.d.comb += s_result.eq(addr)
        # A blocking MEM stream: the executed uop's, and the evaluated one's.
        self.s_blocking = ((sc.kind == StreamKind.MEM)
                           & t.blocking.bit_select(u.id[:sbits], 1))
        self.evaluated_blocking = s_is_mem & t.blocking.bit_select(eu.id[:sbits], 1)

    @staticmethod
    def _source_words(m, eu, esc, e_lay, prefix):
        """The source words ``a`` and ``b`` uop ``eu`` reads with its stream word ``esc``:
        an ``ENTER``'s are the bounds of the layer it enters (``e_lay``), a chained uop's
        ``b`` is D's source S (``hw/tmu/chain.py``, the stride K = X * stride)."""
        src_a = Signal(Source, name=f"{prefix}src_a")
        src_b = Signal(Source, name=f"{prefix}src_b")
        is_enter = eu.kind == UopKind.ENTER
        m.d.comb += [
            src_a.eq(Mux(is_enter, e_lay.lb, esc.a)),
            src_b.eq(Mux(is_enter, e_lay.ub, Mux(eu.chain, esc.chain_src, esc.b))),
        ]
        return src_a, src_b

    @property
    def enter_lb(self):
        """The lower bound an ENTER evaluates: its own ``a_v`` (the layer's lb), or for a fused
        ENTER the stream's source the decoder found equal to it (``Uop.enter_swap``). Built
        from ``a_v``/``b_v`` as they are when read (held ones with two stages)."""
        return Mux(self._uop.enter_swap, self.b_v, self.a_v)

    @property
    def enter_ub(self):
        """The upper bound an ENTER evaluates (see :attr:`enter_lb`)."""
        return Mux(self._uop.enter_swap, self.a_v, self.b_v)

    def _wraps(self, src):
        """Source ``src`` reads a stream whose value wrapped (two stages: as the ahead uop's
        evaluation sees it, ``forward``)."""
        stored = self.wrapped.bit_select(src.value[:self._sbits], 1)
        if self._forward is not None:
            stored = self._forward.wraps(src.value[:8], stored)
        return (src.kind == SourceKind.STREAM) & stored

    def _wrapped_bit(self, m, lanes):
        """The evaluated stream's ``wrapped`` bit: an ADD/SUB/MUL/SHL result outside the signed
        64-bit range or with an operand that wrapped (FWD: its operand's); a load's value and
        the other ops' results are fresh. In vector mode a lane-affine value moves by c·step
        per lane, so its last active lane is checked too (the lanes between lie between lane
        0's and the last one's exact values)."""
        t, u, sbits = self._t, self._eval_uop, self._sbits
        sc, a_v, b_v, s_lockstep = self._eval_sc, self.a_v, self.b_v, self._e_lockstep
        self.s_wraps = s_wraps = Signal(name="s_wraps")
        last_lane_wraps = Signal(name="last_lane_wraps")
        if lanes.enabled:
            sid_ = u.id[:sbits]
            affine_exact = Signal(signed(66), name="affine_exact")
            m.d.comb += affine_exact.eq(Mux(sc.kind == StreamKind.FWD, a_v,
                                            Mux(sc.mode == AluOp.SUB.value, a_v - b_v, a_v + b_v)))
            span = lanes.span           # (count - 1) * step, a register (or forwarded)
            if self._forward is not None:
                span = self._forward.span(span)
            last_exact = Signal(signed(68), name="last_exact")
            m.d.comb += last_exact.eq(affine_exact + Mux(t.lane_pos.bit_select(sid_, 1), span,
                                                         Mux(t.lane_neg.bit_select(sid_, 1),
                                                             -span, 0)))
            m.d.comb += last_lane_wraps.eq(s_lockstep & t.lockstep_vector_mode
                                           & (t.lane_pos.bit_select(sid_, 1)
                                              | t.lane_neg.bit_select(sid_, 1))
                                           & outside_int64(last_exact))
        # Only the address arithmetic ops carry the mark; the others (SHR, SRA, AND, OR, XOR,
        # MIN, MAX, LT, EQ) reduce a value on purpose (a hash: MUL then SHR) and give a fresh one.
        arithmetic = ((sc.mode == AluOp.ADD.value) | (sc.mode == AluOp.SUB.value)
                      | (sc.mode == AluOp.MUL.value) | (sc.mode == AluOp.SHL.value))
        with m.Switch(sc.kind):
            with m.Case(StreamKind.ALU):
                m.d.comb += s_wraps.eq(arithmetic
                                       & (self._operand_wrapped | self._alu_wrapped
                                          | last_lane_wraps))
            with m.Case(StreamKind.FWD):
                m.d.comb += s_wraps.eq(self._wraps(self._src_a) | last_lane_wraps)

    def engine_heads(self, m):
        """The engine serving the evaluated stream (if it has one): ``s_prefetch_head``, its
        value is ready, ``s_prefetch_busy``, it is on its way, ``s_prefetch_value``, that
        value (evaluation results, held with two stages: a blocking stream's value taken from
        its engine in X is the head E saw valid, which nothing pops before X), and
        ``evaluated_prefetched`` / ``evaluated_engine``: an engine serves the stream, and
        which (not held)."""
        t, c = self._t, self._c
        engine = pick(m, Array(t.stream_prefetch_engine[i] for i in range(c.streams)),
                      self._eval_uop.id[:self._sbits], index_bits(c.engines),
                      "evaluated_prefetch_engine")
        self.s_prefetch_head = t.prefetch_head_valid.bit_select(engine, 1)
        self.s_prefetch_busy = t.prefetch_busy.bit_select(engine, 1)
        # (two stages: whether an engine serves the evaluated stream, which one, and its head's
        # value, held with the head's valid bit: the ahead evaluation of a blocking stream;
        # one stage: ``s_prefetch_data``, ``connect_engines``)
        self.evaluated_prefetched = t.stream_prefetched.bit_select(
            self._eval_uop.id[:self._sbits], 1)
        self.evaluated_engine = engine
        if not self._shared:
            self.s_prefetch_value = pick(m, Array(t.prefetch_head_data[i]
                                                  for i in range(c.engines)),
                                         engine, 64, "evaluated_prefetch_data")

    def connect_engines(self, m, indices, upper_bounds, layers):
        """The run-ahead engines' start parameters (``PREFETCH e`` starts engine ``e`` with the
        stream it serves, evaluated by this uop: base ``a``, stride, element size, region, and
        its layer's current index, bound and step) and the engine serving the executed uop's
        stream: ``s_prefetched`` (it has one), ``s_prefetch_engine`` and (one stage; with two
        the held one of :meth:`engine_heads`) ``s_prefetch_value``, its head's value. Called
        after the evaluation's results are held (two stages): the executed uop's words and its
        held ``a``, bounds and base ``wrapped`` bit."""
        t, c, u = self._t, self._c, self._uop
        sbits, lbits = self._sbits, index_bits(c.layers)
        ebits = index_bits(c.engines)
        idx, ubr = indices, upper_bounds
        prefetch_engine, a_v, sc = self.prefetch_engine, self.a_v, self.sc
        log2, s_mode, region = self.log2, self.s_mode, self.region
        engines = range(c.engines)
        prefetch_layer_id = pick(m, Array(t.prefetch_layer[i] for i in engines),
                                  prefetch_engine, 8, "prefetch_layer_id")
        prefetch_layer_index = prefetch_layer_id[:lbits]
        # ``ENTER`` (own or fused) starts the layer's armed engines (docs/rtl.md §9.5 B) with the
        # bounds it evaluates and its layer's step.
        enters = self.enters
        m.d.comb += [
            t.prefetch_base.eq(a_v),
            t.prefetch_base_wrapped.eq(self.base_wrapped),
            t.prefetch_lower_bound.eq(Mux(enters, self.enter_lb,
                                          pick(m, idx, prefetch_layer_index, signed(64),
                                               "prefetch_lower_bound_value"))),
            t.prefetch_upper_bound.eq(Mux(enters, self.enter_ub,
                                          pick(m, ubr, prefetch_layer_index, signed(64),
                                               "prefetch_upper_bound_value"))),
            t.prefetch_step.eq(Mux(enters, self.lay.step,
                                   pick(m, layers, prefetch_layer_index, LayerCfg,
                                        "prefetch_layer_cfg").step)),
            t.prefetch_start_offset.eq(pick(m, Array(t.prefetch_offset[i] for i in engines),
                                                prefetch_engine, signed(28),
                                                "prefetch_offset_value")),
            t.prefetch_stride.eq(sc.stride),
            t.prefetch_size_log2.eq(log2),
            t.prefetch_sign.eq(s_mode.sign),
            t.prefetch_region_base.eq(region.base),
            t.prefetch_region_size.eq(region.size),
        ]
        self.s_prefetched = t.stream_prefetched.bit_select(u.id[:sbits], 1)
        self.s_prefetch_engine = s_prefetch_engine = pick(
            m, Array(t.stream_prefetch_engine[i] for i in range(c.streams)),
            u.id[:sbits], ebits, "s_prefetch_engine")
        if self._shared:
            self.s_prefetch_value = pick(m, Array(t.prefetch_head_data[i] for i in engines),
                                         s_prefetch_engine, 64, "s_prefetch_data")

    def kept_wraps(self, lanes):
        """The ``wrapped`` bit :meth:`keep_value` keeps for the executed uop's stream: its own,
        or lane by lane whether any lane so far wrapped."""
        t, sid = self._t, self._uop.id[:self._sbits]
        return self.s_wraps | (self.s_lockstep & ~t.lockstep_vector_mode & (lanes.lane != 0)
                               & self.wrapped.bit_select(sid, 1))

    def keep_value(self, m, values, lanes):
        """Sync: the evaluated stream's value, a BLOCK row's count and a lane's value are kept,
        and whether the value wrapped (lane by lane: whether any lane so far wrapped); a
        chained uop keeps its ALU stream's value and bit too (``values``: the traversal's
        stream registers, a ``StreamValues``)."""
        u, sbits = self._uop, self._sbits
        wrapped = self.wrapped
        with m.If(u.chain):
            chained_id = self.sc.b.value[:sbits]
            values.write("chained", chained_id, self.chain_val)
            m.d.sync += wrapped.bit_select(chained_id, 1).eq(self.chain_wraps)
        values.write("kept", u.id, self.s_result)
        m.d.sync += wrapped.bit_select(u.id[:sbits], 1).eq(self.kept_wraps(lanes))
        if self.has_block:
            m.d.sync += self.nvals[u.id[:sbits]].eq(self.blk_n)
        if lanes.enabled:
            m.d.comb += lanes.vreg_w.en.eq(self.s_lockstep)
