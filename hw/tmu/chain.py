"""The chained ALU slot: a MEM stream and the ``MUL`` stream its address reads, in one traversal
uop (``Uop.chain``, ``docs/rtl.md`` §2.2).

EmbeddingBag's and SpMM's nonzero loops compute ``D = S * X`` (row times ``dim``, X an
argument) and load ``M = a + D * stride`` (the row). Unfused this is two uops per lookup. When

* M is a MEM stream whose ``b`` is ``STREAM D`` with ``D = M - 1`` in the same layer, and
  neither M's ``a`` nor (BLOCK) its count source reads D,
* D is an ALU ``MUL`` of a non-constant source S and an IMM/ARG X (either order), or ``SHL`` of
  S by an immediate (X = ``2**imm``), and D is not invariant (not hoisted),
* the layer is not LOCKSTEP, and X and K = X * stride (BLOCK: X * element size) fit in a
  signed 32-bit word (K then fits the address multiplier's stride operand),

the configuration writer stores S, X and K in M's ``StreamCfg`` (``chain*`` fields,
strength reduction done once at decode: arguments do not change during a run) and sets
M's ``chain`` class bit. The microcode builder folds D's uop into M's (``Uop.chain``) when
M is not blocking and D's uop carries nothing but engine pops.

The fused uop computes, in parallel: M's address ``a + S * K`` (S reaches it through the
``b`` source, with the engine pop bypass), and D's value ``S * X`` (``chain_value``; D's
``wrapped`` bit: S wrapped or ``S * X`` lies outside the signed 64-bit range); each product a
shift when its factor is a power of two, else a registered product the uop waits for
(``hw/tmu/registered_products.py``). M faults ``ADDR_OVERFLOW`` when D wrapped, exactly as the
unfused pair (``a + D * stride`` equals ``a + S * K`` whenever D did not wrap). D's value and
bit are written with M's, when the uop completes (``docs/isa.md`` §1 "Address overflow").
"""

from amaranth.hdl import Const, Mux, Signal, signed

from .datapath import outside_int64
from .isa import AluOp, MemMode, SourceKind, StreamKind
from .signatures import index_bits
from .source_fields import source_imm, source_kind, source_number


__all__ = ["ChainDetect", "chain_value"]


def _fits32(x):
    return (x >= -(1 << 31)) & (x < (1 << 31))


class ChainDetect:
    """Decode side (in the configuration writer's ``elaborate``): remembers the previous stream
    descriptor and, at a MEM stream that can be chained to it, drives its ``chain*`` fields.

    Parameters
    ----------
    m : Module
    config : TmuConfig
    resolve : callable
        Source word -> its value (IMM or ARG), 64-bit.
    invariant : Value(config.streams)
        The writer's invariant class bits (D's is set the cycle after D's descriptor).
    chain_bits : Signal(config.streams)
        The ``chain`` class (``ConfigTablesSignature.chain``), set here.

    ``stream(d, w1, w2, w3, kind, mode, layer, lockstep, cfg)`` is called in the cycle of a
    stream descriptor (``cfg``: the ``StreamCfg`` being written); ``clear()`` at a decode start.
    """

    def __init__(self, m, config, resolve, invariant, chain_bits):
        self._m = m
        self._c = config
        self._resolve = resolve
        self._inv = invariant
        self._bits = chain_bits
        self.prev_ok = Signal(name="chain_prev_ok")           # the previous stream can be D
        self.prev_id = Signal(8, name="chain_prev_id")
        self.prev_layer = Signal(8, name="chain_prev_layer")
        self.prev_src = Signal(32, name="chain_prev_src")       # S
        self.prev_factor = Signal(signed(32), name="chain_prev_factor")   # X

    def clear(self):
        self._m.d.sync += [self.prev_ok.eq(0), self._bits.eq(0)]

    def stream(self, d, w1, w2, w3, kind, mode, layer, lockstep, cfg):
        m = self._m
        sb = index_bits(self._c.streams)
        IMM, ARG, STREAM = SourceKind.IMM.value, SourceKind.ARG.value, SourceKind.STREAM.value
        ka, kb = source_kind(w1), source_kind(w2)
        const_a = (ka == IMM) | (ka == ARG)
        const_b = (kb == IMM) | (kb == ARG)
        is_alu = kind == StreamKind.ALU.value
        mul = is_alu & (mode == AluOp.MUL.value) & (const_a ^ const_b)
        shl_amount = source_imm(w2)[:6]
        shl = is_alu & (mode == AluOp.SHL.value) & ~const_a & (kb == IMM) & (shl_amount < 31)
        x_value = Signal(signed(64), name="chain_x")
        m.d.comb += x_value.eq(Mux(shl, Const(1, signed(64)) << shl_amount,
                                   self._resolve(Mux(const_a, w1, w2))))
        # This descriptor as the next one's D.
        m.d.sync += [
            self.prev_ok.eq((mul | shl) & _fits32(x_value)),
            self.prev_id.eq(d),
            self.prev_layer.eq(layer),
            self.prev_src.eq(Mux(const_a, w2, w1)),
            self.prev_factor.eq(x_value),
        ]
        # This descriptor as M.
        is_mem = kind == StreamKind.MEM.value
        block = MemMode(mode).reserved != 0
        reads_d = lambda w: (source_kind(w) == STREAM) & (source_number(w) == self.prev_id)
        k_stride = Signal(signed(64), name="chain_k_stride")
        m.d.comb += k_stride.eq(self.prev_factor * w3.as_signed())
        k = Signal(signed(64), name="chain_k")
        m.d.comb += k.eq(Mux(block, self.prev_factor << MemMode(mode).log2_size, k_stride))
        ok = (self.prev_ok & is_mem & ~lockstep & reads_d(w2) & ~reads_d(w1)
              & ~(block & reads_d(w3)) & (d == self.prev_id + 1) & (layer == self.prev_layer)
              & ~self._inv.bit_select(self.prev_id[:sb], 1) & _fits32(k))
        m.d.comb += [cfg.chain.eq(ok), cfg.chain_src.eq(self.prev_src),
                     cfg.chain_factor.eq(self.prev_factor), cfg.chain_scale.eq(k)]
        m.d.sync += self._bits.bit_select(d[:sb], 1).eq(ok)


def chain_value(m, exact, s_wrapped):
    """Traversal side: D's value from the exact product ``exact = S * X`` (``signed(96)``;
    ``hw/tmu/registered_products.py`` takes it) — its low 64 bits — and its ``wrapped`` bit
    (S wrapped, or the exact product lies outside the signed 64-bit range: the ``MUL``/``SHL``
    rule of ``hw/tmu/datapath.py``'s ``alu``). Returns the value, the bit and the product's
    overflow alone (M's address overflow)."""
    overflow = Signal(name="chain_overflow")
    m.d.comb += overflow.eq(outside_int64(exact))
    value = Signal(signed(64), name="chain_value")
    m.d.comb += value.eq(exact[:64])
    return value, s_wrapped | overflow, overflow
