"""Microcode builder: assigns the run-ahead engines and writes the traversal's microcode
(``docs/rtl.md`` §2.1 steps 4-5, §2.2)."""

from amaranth.hdl import Array, Cat, Const, Module, Signal, signed
from amaranth.lib import data, wiring
from amaranth.lib.wiring import In, Out

from .config import TmuConfig
from .isa import Event
from .layouts import UopKind
from .microcode_emission import MicrocodeEmission
from .signatures import (CheckedProgramSignature, check_result_stream, ConfigTablesSignature,
                         index_bits, microcode_write_port)
from .skipped_streams import SkippedStreams
from .source_fields import pick


__all__ = ["MicrocodeBuilder"]


class MicrocodeBuilder(wiring.Component):
    """After a program passed its checks (``check`` without fault), builds what the traversal
    runs:

    1. **Vector mode**: the LOCKSTEP layer runs once per vector iteration when every stream of it
       has a lane coefficient or is a contiguous vector load no stream reads (§9.3).
    2. **Engine assignment**: blocking affine streams get the run-ahead engines, deepest layer
       first, then by stream id; a second pass gives the engines left to lazy affine loads that
       an OPERAND action reads and whose base is constant for the run (SpMM's ``val[j]``),
       which become blocking (not in a LOCKSTEP layer).
    3. **Skipped streams**: the ALU streams whose only readers are engines' streams popped by a
       later uop, and a chain engine's operation streams, get no ``STREAM`` uop
       (``hw/tmu/skipped_streams.py``, ``docs/rtl.md`` §9.5 C); each engine whose stream reads
       one is told which (``prefetch_skipped_*``).
    4. **Microcode**: first one ``PREFETCH`` with ``arm`` per engine whose stream's base is an
       IMM or ARG (constant for the run: the engine latches its parameters once); then per
       layer ``BEGIN`` actions, ``ENTER`` (``start_engines``: the layer's armed engines, started
       in its cycle, ``docs/rtl.md`` §9.5 B; or fused into the uop before it, §9.5 E),
       invariant streams, ``PREFETCH`` of its other
       engines (their base may be one of those streams), then the body (streams, ``LANE``,
       ``ITER`` actions, the inner layers), then ``NEXT`` and ``END`` actions from the
       innermost layer out, ``DONE``. The ``NEXT`` of a layer other than 0 without ``END``
       actions (and its fused copy) has ``next_outer``: leaving the range, it performs the
       outer layer's ``NEXT`` too (``docs/rtl.md`` §9.5 D). Each uop is held one cycle
       before it is written, to fuse the next one into it (``fuse_act``, ``fuse_act2``,
       ``fuse_next``, ``fuse_lane``, ``pop``, ``chain``, ``fuse_enter``; ``docs/rtl.md`` §2.2).

    Timing: 1 cycle per stream per layer and pass for the assignment, 1 per stream for the
    skipped streams, about
    ``n_layers * (n_streams + 3 * n_actions) + engines`` for the microcode, 1 for ``result``.
    A faulty ``check`` goes straight through to ``result`` (same cycle).

    Parameters
    ----------
    config : TmuConfig

    Members
    -------
    start : In(1)
        Pulse: a decode starts; clears the engine assignment and the microcode write address.
    checked : In(CheckedProgramSignature(config))
        From the program checker: counts, stream layers, BLOCK streams.
    tables : In(ConfigTablesSignature(config))
        From the configuration writer: the classes of the streams and actions.
    check : In(stream.Signature(CheckResult))
        The checker's result: a fault is passed to ``result``; no fault starts the build.
    result : Out(stream.Signature(CheckResult))
        The decode's outcome: the checker's fault, or no fault once the microcode is written.
    microcode : In(memory.WritePort.Signature(ucode bits, Uop))
        Writes into the microcode memory, from address 0.
    blocking : Out(config.streams)
        ``tables.blocking`` plus the streams given a spare engine.
    prefetch_valid : Out(engines)
    prefetch_stream, prefetch_layer, prefetch_offset : Out(ArrayLayout(..., engines))
    stream_prefetched, stream_prefetch_engine : Out
        The engine assignment (see ``TraversalConfigSignature``).
    prefetch_skipped_valid, prefetch_skipped_stream, prefetch_skipped_two : Out
        Per engine, the skipped stream its stream reads, and whether the one after it is
        skipped too (see ``TraversalConfigSignature``).
    body_pc, exit_pc : Out(ArrayLayout(ucode bits, config.layers))
        Microcode addresses of each layer's body and exit.
    lockstep_vector_mode : Out(1)
    busy : Out(1)
        From a ``check`` without fault until ``result`` is accepted.
    """

    def __init__(self, config):
        if not isinstance(config, TmuConfig):
            raise TypeError(f"config must be a TmuConfig, not {config!r}")
        self._cfg = config
        c = config
        self._ubits = index_bits(c.ucode_depth)
        self._sbits = index_bits(c.streams)
        self._abits = index_bits(c.actions)
        self._engines = c.engines
        self._ebits = index_bits(self._engines)
        super().__init__({
            "start":     In(1),
            "checked":   In(CheckedProgramSignature(c)),
            "tables":    In(ConfigTablesSignature(c)),
            "check":     In(check_result_stream()),
            "result":    Out(check_result_stream()),
            "microcode": In(microcode_write_port(c)),
            "blocking":  Out(c.streams),
            "prefetch_valid":         Out(self._engines),
            "prefetch_stream":        Out(data.ArrayLayout(8, self._engines)),
            "prefetch_layer":         Out(data.ArrayLayout(8, self._engines)),
            "prefetch_offset":        Out(data.ArrayLayout(signed(28), self._engines)),
            "stream_prefetched":      Out(c.streams),
            "stream_prefetch_engine": Out(data.ArrayLayout(self._ebits, c.streams)),
            "prefetch_skipped_valid":  Out(self._engines),
            "prefetch_skipped_stream": Out(data.ArrayLayout(8, self._engines)),
            "prefetch_skipped_two":    Out(self._engines),
            "body_pc":   Out(data.ArrayLayout(self._ubits, c.layers)),
            "exit_pc":   Out(data.ArrayLayout(self._ubits, c.layers)),
            "lockstep_vector_mode": Out(1),
            "busy":      Out(1),
        })

    def elaborate(self, platform):
        m = Module()
        c = self._cfg
        sb, ab, eb = self._sbits, self._abits, self._ebits
        lbits = index_bits(c.layers)
        t = self.tables
        nl, ns, na = self.checked.counts.layers, self.checked.counts.streams, \
            self.checked.counts.actions
        stream_layer = Array(self.checked.stream_layer[i] for i in range(c.streams))
        stream_blk = self.checked.stream_block
        act_layer = Array(t.act_layer[i] for i in range(c.actions))
        act_event = Array(t.act_event[i] for i in range(c.actions))
        act_sid = Array(t.act_stream[i] for i in range(c.actions))
        cand_c = Array(t.affine_offset[i] for i in range(c.streams))
        inv, cand = t.invariant, t.affine
        act_reads, act_ctl, stream_mem = t.act_reads, t.act_control, t.memory_stream
        lockstep_valid, lockstep_layer = t.lockstep_valid, t.lockstep_layer

        promoted = Signal(c.streams)        # lazy affine loads given a spare engine
        armed = Signal(self._engines)       # engines whose stream's base is an IMM or ARG
        m.d.comb += self.blocking.eq(t.blocking | promoted)
        assign_pass = Signal()
        e_next = Signal(range(self._engines + 1))

        def layer_of(v):
            return pick(m, stream_layer, v, 8, "layer_of")

        skips = SkippedStreams(m, c, t, stream_layer, self.stream_prefetched)

        # Microcode emission with a one-entry delay, to amend fusion flags
        # (hw/tmu/microcode_emission.py).
        emission = MicrocodeEmission(m, self, c, t, (act_sid, act_layer, act_event, stream_blk, na),
                                     layer_of, (self._ubits, sb, ab, eb))
        ucode_write_pc, pend, pend_valid = emission.write_pc, emission.pend, emission.pend_valid
        emit, pend_write = emission.emit, emission.write_pending
        k          = Signal(8)      # build: current layer
        j          = Signal(8)      # build: scan position

        with m.If(self.start):
            m.d.sync += [ucode_write_pc.eq(0), pend_valid.eq(0), self.prefetch_valid.eq(0),
                         armed.eq(0),
                         self.stream_prefetched.eq(0), e_next.eq(0), assign_pass.eq(0),
                         promoted.eq(0), self.lockstep_vector_mode.eq(0),
                         self.prefetch_skipped_valid.eq(0), self.prefetch_skipped_two.eq(0),
                         *skips.clear()]

        m.d.comb += self.busy.eq(1)
        m.d.comb += self.result.payload.eq(self.check.payload)

        with m.FSM():
            with m.State("IDLE"):
                m.d.comb += self.busy.eq(0)
                with m.If(self.check.payload.fault):
                    m.d.comb += [self.result.valid.eq(self.check.valid),
                                 self.check.ready.eq(self.result.ready)]
                with m.Else():
                    m.d.comb += self.check.ready.eq(1)
                    with m.If(self.check.valid):
                        m.d.sync += [k.eq(nl - 1), j.eq(0)]
                        # Vector mode: every stream of the LOCKSTEP layer has a lane coefficient
                        # or is a contiguous vector load that no stream reads (docs/rtl.md §9.3).
                        lane_bad = Const(0)
                        for s_ in range(c.streams):
                            lane_bad = lane_bad | ((s_ < ns) & (stream_layer[s_] == lockstep_layer)
                                                   & ~t.lane_affine[s_]
                                                   & ~(t.contiguous_vector[s_] & ~t.blocking[s_]))
                        m.d.sync += self.lockstep_vector_mode.eq(lockstep_valid & ~lane_bad)
                        m.next = "B_ASSIGN"

            # ---------------------------------------------------------------- run-ahead engines
            # Blocking affine streams get engines, deepest layer first, then by stream id. A
            # second pass gives the engines left to lazy affine loads that an OPERAND action
            # reads, whose base is constant for the run (SpMM's ``val[j]``): the engine
            # fetches them ahead (its sequence continues across CSR rows), the stream becomes
            # blocking (its value is the element) and its operand an immediate token, which a
            # STREAM uop may pop with the next stream (``Uop.pop``) and an action may carry as
            # a second action (``fuse_act2``). Not in a LOCKSTEP layer (lane values, vector mode).
            jb = j[:sb]
            in_lockstep = lockstep_valid & (layer_of(j) == lockstep_layer)
            spare = (assign_pass & ~self.blocking.bit_select(jb, 1) & ~stream_blk.bit_select(jb, 1)
                     & t.operand_read.bit_select(jb, 1) & t.global_base.bit_select(jb, 1)
                     & ~in_lockstep)
            with m.State("B_ASSIGN"):
                with m.If(j < ns):
                    with m.If(cand.bit_select(jb, 1)
                              & (self.blocking.bit_select(jb, 1) & ~assign_pass | spare)
                              & (layer_of(j) == k) & (e_next < c.prefetchers)):
                        e = e_next[:eb]
                        m.d.sync += [
                            promoted.bit_select(jb, 1).eq(1),
                            self.prefetch_valid.bit_select(e, 1).eq(1),
                            armed.bit_select(e, 1).eq(t.global_base.bit_select(jb, 1)),
                            self.prefetch_stream[e].eq(j),
                            self.prefetch_layer[e].eq(k),
                            self.prefetch_offset[e].eq(pick(m, cand_c, j, signed(28), "cand_c_j")),
                            self.stream_prefetched.bit_select(jb, 1).eq(1),
                            self.stream_prefetch_engine[jb].eq(e),
                            e_next.eq(e_next + 1),
                        ]
                    m.d.sync += j.eq(j + 1)
                with m.Else():
                    m.d.sync += j.eq(0)
                    with m.If((k == 0) & assign_pass):
                        m.d.sync += j.eq(ns - 1)
                        m.next = "B_CHAIN" if c.chain_engines else "B_SKIP"
                    with m.Elif(k == 0):
                        m.d.sync += [assign_pass.eq(1), k.eq(nl - 1)]
                    with m.Else():
                        m.d.sync += k.eq(k - 1)

            # The chain engine (engine ``prefetchers``, hw/tmu/chain_engine.py) serves the
            # recorded chain stream if something reads it (a blocking stream) and no affine
            # engine serves it. It takes its root's parameters at its PREFETCH (armed: the
            # root's base is an IMM or ARG) and starts at its layer's ENTER.
            if c.chain_engines:
                with m.State("B_CHAIN"):
                    chain, sid = t.chain_engine, t.chain_stream
                    e = c.prefetchers
                    with m.If(chain.valid & self.blocking.bit_select(sid[:sb], 1)
                              & ~self.stream_prefetched.bit_select(sid[:sb], 1)):
                        m.d.sync += [
                            self.prefetch_valid.bit_select(e, 1).eq(1),
                            armed.bit_select(e, 1).eq(1),
                            self.prefetch_stream[e].eq(sid),
                            self.prefetch_layer[e].eq(layer_of(sid)),
                            self.prefetch_offset[e].eq(pick(m, cand_c, chain.root[:sb],
                                                            signed(28), "chain_root_c")),
                            self.stream_prefetched.bit_select(sid[:sb], 1).eq(1),
                            self.stream_prefetch_engine[sid[:sb]].eq(e),
                        ]
                    m.next = "B_SKIP"

            # ---------------------------------------------------------------- microcode
            def scan_actions(event, then):
                with m.If(j < na):
                    with m.If((act_layer[j] == k) & (act_event[j] == event.value)):
                        emit(UopKind.ACT, j)
                    m.d.sync += j.eq(j + 1)
                with m.Else():
                    m.d.sync += j.eq(0)
                    then()

            # Engines whose base is constant for the run latch their parameters once, before
            # everything (``PREFETCH`` with ``arm``); their layer's ``ENTER`` starts them.
            def engine_of_layer(e, layer):
                return self.prefetch_valid.bit_select(e, 1) & (self.prefetch_layer[e] == layer)

            # Skipped streams (hw/tmu/skipped_streams.py): one pass, highest stream id first.
            with m.State("B_SKIP"):
                with m.If(j < ns):
                    skips.scan(j)
                    m.d.sync += j.eq(j - 1)
                with m.Else():
                    m.d.sync += j.eq(0)
                    m.next = "B_ARM"

            with m.State("B_ARM"):
                with m.If(j < self._engines):
                    e = j[:eb]
                    skip_valid, skip_stream, skip_two = skips.engine(
                        pick(m, Array(self.prefetch_stream[i] for i in range(self._engines)),
                             e, 8, "arm_stream"))
                    m.d.sync += [
                        self.prefetch_skipped_valid.bit_select(e, 1).eq(
                            self.prefetch_valid.bit_select(e, 1) & skip_valid),
                        self.prefetch_skipped_stream[e].eq(skip_stream),
                        self.prefetch_skipped_two.bit_select(e, 1).eq(
                            self.prefetch_valid.bit_select(e, 1) & skip_two),
                    ]
                    with m.If(self.prefetch_valid.bit_select(e, 1) & armed.bit_select(e, 1)):
                        emit(UopKind.PREFETCH, j, hoisted=True)
                        m.d.sync += pend.arm.eq(1)
                    m.d.sync += j.eq(j + 1)
                with m.Else():
                    m.d.sync += j.eq(0)
                    m.next = "B_BEGIN"

            with m.State("B_BEGIN"):
                def to_enter():
                    m.next = "B_ENTER"
                scan_actions(Event.BEGIN, to_enter)

            with m.State("B_ENTER"):
                start_engines = Cat(engine_of_layer(e, k) & armed[e] for e in range(self._engines))
                # Fusion E (docs/rtl.md §9.5 E): the ENTER rides in the uop before it, the last
                # body uop of layer k - 1, when that uop evaluates an ALU/FWD stream whose
                # sources are layer k's bounds (``enter_bounds``). Nothing is fused into that
                # uop afterwards (``pend_hoist``): it ends its layer's iteration.
                psid = pend.id[:sb]
                fuse_enter = (pend_valid & ~emission.pend_hoist & (pend.kind == UopKind.STREAM)
                              & ~pend.fuse_next & ~pend.fuse_lane & ~pend.chain
                              & t.enter_bounds.bit_select(psid, 1)
                              & (layer_of(pend.id) + 1 == k)
                              & ~(lockstep_valid & (k == lockstep_layer)))
                with m.If(fuse_enter):
                    m.d.sync += [pend.fuse_enter.eq(1), pend.next_layer.eq(k),
                                 pend.enter_swap.eq(t.enter_swap.bit_select(psid, 1)),
                                 pend.start_engines.eq(start_engines),
                                 emission.pend_hoist.eq(1)]
                with m.Else():
                    emit(UopKind.ENTER, k, hoisted=True)
                    m.d.sync += pend.start_engines.eq(start_engines)
                m.next = "B_HOIST"

            # Invariant ALU/FWD streams: once per layer entry, before the engines start (an
            # engine's base may be one of them).
            with m.State("B_HOIST"):
                with m.If(j < ns):
                    with m.If((stream_layer[j] == k) & inv.bit_select(jb, 1)):
                        emit(UopKind.STREAM, j, hoisted=True)
                    m.d.sync += j.eq(j + 1)
                with m.Else():
                    m.d.sync += j.eq(0)
                    m.next = "B_PF"

            with m.State("B_PF"):
                with m.If(j < self._engines):
                    e = j[:eb]
                    with m.If(engine_of_layer(e, k) & ~armed.bit_select(e, 1)):
                        emit(UopKind.PREFETCH, j, hoisted=True)
                    m.d.sync += j.eq(j + 1)
                with m.Else():
                    m.d.sync += [j.eq(0), self.body_pc[k[:lbits]].eq(ucode_write_pc + pend_valid)]
                    m.next = "B_STREAMS"

            with m.State("B_STREAMS"):
                with m.If(j < ns):
                    with m.If((stream_layer[j] == k) & ~inv.bit_select(jb, 1)
                              & ~skips.skipped.bit_select(jb, 1)):
                        emit(UopKind.STREAM, j)
                    m.d.sync += j.eq(j + 1)
                with m.Else():
                    m.d.sync += j.eq(0)
                    with m.If(lockstep_valid & (k == lockstep_layer)
                              & ~self.lockstep_vector_mode):
                        m.next = "B_LANE"
                    with m.Else():
                        m.next = "B_ITER"

            with m.State("B_LANE"):
                emit(UopKind.LANE, k)
                m.next = "B_ITER"

            with m.State("B_ITER"):
                def after_iter():
                    with m.If(k + 1 < nl):
                        m.d.sync += k.eq(k + 1)
                        m.next = "B_BEGIN"
                    with m.Else():
                        m.next = "B_NEXT"
                scan_actions(Event.ITER, after_iter)

            with m.State("B_NEXT"):
                addr = emit(UopKind.NEXT, k)
                m.d.sync += self.exit_pc[k[:lbits]].eq(addr + 1)
                m.next = "B_END"

            with m.State("B_END"):
                def after_end():
                    with m.If(k != 0):
                        m.d.sync += k.eq(k - 1)
                        m.next = "B_NEXT"
                    with m.Else():
                        m.next = "B_DONE"
                scan_actions(Event.END, after_end)

            with m.State("B_DONE"):
                emit(UopKind.DONE, 0)
                m.next = "B_FLUSH"

            with m.State("B_FLUSH"):
                pend_write(pend)
                m.d.sync += pend_valid.eq(0)
                m.next = "FINISH"

            with m.State("FINISH"):
                m.d.comb += [self.result.valid.eq(1), self.result.payload.eq(0)]
                with m.If(self.result.ready):
                    m.next = "IDLE"

        return m
