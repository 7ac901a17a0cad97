"""Decode side of the chain engine (``hw/tmu/chain_engine.py``): finds a memory stream whose
index is an affine stream of its layer put through at most two ALU operations with constant
operands, and resolves that chain's configuration (``docs/rtl.md`` §2.3, "Chain engines").

A stream ``M`` is a *chain* when, in one layer that is not LOCKSTEP,

* ``M`` is a MEM stream, not BLOCK, whose ``a`` is an IMM or ARG and whose ``b`` is
  ``STREAM x``;
* ``x`` is the *root* ``V`` (0 operations), or ``x = M - 1`` is an ALU stream of ``V`` and an IMM
  or ARG (either order; 1 operation), or ``x = M - 1`` is an ALU stream of ``M - 2`` and a
  constant, and ``M - 2`` one of ``V`` and a constant (2 operations); no ``MUL`` whose wrap
  could reach the address (last, or before an ``ADD``, ``SUB``, ``MUL`` or ``SHL``): the
  engine's ``MUL`` keeps the product's low 64 bits only (``datapath.alu``, ``mul_wrapped``);
* ``V`` is an affine MEM stream of the layer (the run-ahead engines' class: ``a + (INDEX + c) *
  stride``) whose ``a`` is an IMM or ARG (the engine latches it once, ``arm``).

The operations' streams have no uop when nothing but the next stream reads them (the
configuration writer's ``chain_op_candidate``, ``hw/tmu/skipped_streams.py``): the chain engine
computes their values, and its fallback step evaluates them before ``M``. The first chain found
is recorded, and replaced by a later one while nothing has read the recorded one yet (a chain
that is only an operand's lazy load, SpMV's ``x[col[j]]``, gains nothing from an engine; the
microcode builder gives the engine only to a blocking one).
"""

from amaranth.hdl import Array, Mux, Signal

from .chain_engine import CHAIN_OPS, chain_layout
from .isa import AluOp, MemMode, SourceKind, StreamKind
from .signatures import index_bits
from .source_fields import pick, source_kind, source_number


__all__ = ["ChainEngineDetect"]


class ChainEngineDetect:
    """In the configuration writer's ``elaborate``: a window of the two previous stream
    descriptors and the recorded chain.

    Parameters
    ----------
    m : Module
    config : TmuConfig
    resolve : callable
        Source word -> its value (IMM or ARG), 64-bit.
    layer_of : callable
        Stream id -> its layer (8 bits).
    tables : ConfigTablesSignature (the writer's side)
        ``affine``, ``global_base``, ``blocking``, ``regions`` are read; ``chain_engine`` and
        ``chain_stream`` are written.

    ``stream(d, w1, w2, w3, kind, mode, layer, lockstep, region)`` is called in the cycle of a
    stream descriptor; ``clear()`` at a decode start.
    """

    def __init__(self, m, config, resolve, layer_of, tables):
        self._m = m
        self._c = config
        self._resolve = resolve
        self._layer_of = layer_of
        self._t = tables
        # The window: descriptor d - 1 (index 0) and d - 2 (index 1), each as an operation.
        self._ok = [Signal(name=f"chain_window{k}_ok") for k in range(2)]
        self._id = [Signal(8, name=f"chain_window{k}_id") for k in range(2)]
        self._layer = [Signal(8, name=f"chain_window{k}_layer") for k in range(2)]
        self._src = [Signal(8, name=f"chain_window{k}_stream") for k in range(2)]
        self._op = [Signal(4, name=f"chain_window{k}_op") for k in range(2)]
        self._constant = [Signal(64, name=f"chain_window{k}_constant") for k in range(2)]
        self._first = [Signal(name=f"chain_window{k}_constant_first") for k in range(2)]

    def clear(self):
        t = self._t
        self._m.d.sync += [self._ok[0].eq(0), self._ok[1].eq(0), t.chain_engine.valid.eq(0)]

    def stream(self, d, w1, w2, w3, kind, mode, layer, lockstep, region):
        m, t, c = self._m, self._t, self._c
        sb = index_bits(c.streams)
        IMM, ARG, STREAM = SourceKind.IMM.value, SourceKind.ARG.value, SourceKind.STREAM.value
        ka, kb = source_kind(w1), source_kind(w2)
        const_a = (ka == IMM) | (ka == ARG)
        const_b = (kb == IMM) | (kb == ARG)

        # This descriptor as an operation of a chain (for the next two).
        operation = (kind == StreamKind.ALU.value) & (((ka == STREAM) & const_b)
                                                      | (const_a & (kb == STREAM)))
        m.d.sync += [
            self._ok[0].eq(operation), self._ok[1].eq(self._ok[0]),
            self._id[0].eq(d), self._id[1].eq(self._id[0]),
            self._layer[0].eq(layer), self._layer[1].eq(self._layer[0]),
            self._src[0].eq(Mux(const_a, source_number(w2), source_number(w1))),
            self._src[1].eq(self._src[0]),
            self._op[0].eq(mode), self._op[1].eq(self._op[0]),
            self._constant[0].eq(self._resolve(Mux(const_a, w1, w2))),
            self._constant[1].eq(self._constant[0]),
            self._first[0].eq(const_a), self._first[1].eq(self._first[0]),
        ]

        # This descriptor as M.
        def root_ok(v):
            return (t.affine.bit_select(v[:sb], 1) & t.global_base.bit_select(v[:sb], 1)
                    & (self._layer_of(v) == layer))

        x = source_number(w2)
        mem_mode = MemMode(mode)
        candidate = ((kind == StreamKind.MEM.value) & (mem_mode.reserved == 0) & ~lockstep
                     & const_a & (kb == STREAM) & ~t.affine.bit_select(d[:sb], 1))
        one = self._ok[0] & (x == self._id[0]) & (self._layer[0] == layer)
        two = one & self._ok[1] & (self._src[0] == self._id[1]) & (self._layer[1] == layer)
        # The engine's MUL has no wrapped bit (datapath.alu, mul_wrapped): no MUL last, none
        # before an operation that carries a wrap (ADD, SUB, MUL, SHL).
        def mul(op):
            return op == AluOp.MUL.value

        def carries(op):
            return ((op == AluOp.ADD.value) | (op == AluOp.SUB.value) | mul(op)
                    | (op == AluOp.SHL.value))
        case2 = two & root_ok(self._src[1]) & ~mul(self._op[0]) & ~(mul(self._op[1])
                                                                     & carries(self._op[0]))
        case1 = ~case2 & one & root_ok(self._src[0]) & ~mul(self._op[0])
        case0 = ~case2 & ~case1 & root_ok(x)
        found = candidate & (case0 | case1 | case2)
        recorded = t.chain_engine.valid
        replace = ~recorded | ~t.blocking.bit_select(t.chain_stream[:sb], 1)
        cfg = t.chain_engine
        with m.If(found & replace):
            regions = [t.regions[i] for i in range(c.regions)]
            m.d.sync += [
                cfg.valid.eq(1),
                t.chain_stream.eq(d),
                cfg.root.eq(Mux(case2, self._src[1], Mux(case1, self._src[0], x))),
                cfg.ops.eq(Mux(case2, 2, Mux(case1, 1, 0))),
                # Operation 0 is applied first: the window's d - 2 for two, d - 1 for one.
                cfg.op[0].eq(Mux(case2, self._op[1], self._op[0])),
                cfg.constant[0].eq(Mux(case2, self._constant[1], self._constant[0])),
                cfg.constant_first[0].eq(Mux(case2, self._first[1], self._first[0])),
                cfg.op[1].eq(self._op[0]),
                cfg.constant[1].eq(self._constant[0]),
                cfg.constant_first[1].eq(self._first[0]),
                cfg.base.eq(self._resolve(w1)),
                cfg.stride.eq(w3),
                cfg.log2.eq(mem_mode.log2_size),
                cfg.sign.eq(mem_mode.sign),
                cfg.region_base.eq(pick(m, Array(r.base for r in regions), region,
                                        64, "chain_region_base")),
                cfg.region_size.eq(pick(m, Array(r.size for r in regions), region,
                                        64, "chain_region_size")),
            ]
