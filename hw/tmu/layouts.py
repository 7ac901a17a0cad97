"""Configuration registers and microcode of the access unit (filled by the decoder)."""

from amaranth.hdl import signed
from amaranth.lib import data, enum

from .isa import ActionKind, LayerMode, Source, StreamKind


__all__ = ["UopKind", "Uop", "LayerCfg", "RegionCfg", "StreamCfg", "ActionCfg"]


class UopKind(enum.Enum, shape=3):
    """Traversal microcode operations (see ``docs/rtl.md``)."""
    STREAM = 0   # evaluate stream ``id``
    ACT    = 1   # fire action ``id``
    ENTER  = 2   # evaluate layer ``id``'s bounds; empty range: jump to exit_pc[id]
    NEXT   = 3   # index[id] += step; in range: jump to body_pc[id]
    DONE   = 4   # push the DONE control token, then finish
    PREFETCH = 5 # start run-ahead engine ``id`` for the layer just entered (``arm``: only
                 # latch its stream's parameters; the layer's ENTER starts it, ``start_engines``)
    LANE     = 6 # LOCKSTEP layer ``id``: next active lane -> body_pc[id], else its ITER actions


class Uop(data.Struct):
    """One microcode entry."""
    kind:       UopKind
    id:         8   # stream id, action id or layer, per ``kind``
    fuse_act:   1   # STREAM: fire action ``act_id`` in the same cycle (first ITER action)
    act_id:     8
    fuse_act2:  1   # STREAM with fuse_act, or ACT: also fire action ``act2_id`` (an immediate
    act2_id:    8   # token, or a load: ``act2_load``) in the same cycle, allocating the next
                    # reorder-buffer entry
    fuse_next:  1   # STREAM/ACT: perform ``NEXT next_layer`` in the same cycle
    next_layer: 8
    fuse_lane:  1   # STREAM (the last of a LOCKSTEP layer run lane by lane): perform ``LANE``
    pop:        16  # STREAM: first pop these run-ahead engines (bit e: engine e) into their
                    # streams (lower ids of the same layer, evaluated before ``id``)
    chain:      1   # STREAM of a chained MEM stream: also evaluate the ALU stream its ``b``
                    # reads, in the same cycle (``StreamCfg.chain_*``, ``hw/tmu/chain.py``)
    act2_load:  1   # with fuse_act2: the second action is an OPERAND of a non-blocking MEM
                    # stream (a lazy entry and its load); the first is then an immediate operand
                    # (docs/rtl.md §9.5 A)
    start_engines: 16  # ENTER: when the range is not empty, start these run-ahead engines (bit
                       # e: engine e, armed before) in the same cycle (docs/rtl.md §9.5 B)
    arm:        1   # PREFETCH: latch engine ``id``'s stream parameters (base, stride, size,
                    # region, offset) for the run, without starting it
    next_outer: 1   # NEXT, or with fuse_next: when the NEXT leaves its layer's range, also
                    # perform the NEXT of the layer before in the same cycle (the layer has no
                    # END actions: its exit is that NEXT; docs/rtl.md §9.5 D)
    fuse_enter: 1   # STREAM (an ALU/FWD stream, neither chained nor with fuse_next/fuse_lane):
                    # perform ``ENTER next_layer`` after it and its actions, with the bounds
                    # read as the stream's own sources: lb = a, ub = b, or (``enter_swap``)
                    # lb = b, ub = a; ``start_engines`` as ENTER's (docs/rtl.md §9.5 E)
    enter_swap: 1


class LayerCfg(data.Struct):
    """A traversal unit."""
    lb:          Source
    ub:          Source
    step:        signed(28)   # elements, > 0
    check_order: 1
    mode:        LayerMode    # ISA v1 (docs/isa.md §7.2); SINGLE in v0
    lanes_m1:    8            # LOCKSTEP: lanes - 1


class RegionCfg(data.Struct):
    """A granted region, resolved at decode time (arguments do not change during a run)."""
    base: signed(64)   # bytes
    size: signed(64)   # bytes


class StreamCfg(data.Struct):
    """A stream descriptor as the traversal uses it."""
    kind:   StreamKind
    mode:   4            # ALU: AluOp; MEM: MemMode
    region: 8
    layer:  8
    a:      Source
    b:      Source
    stride: signed(32)   # MEM: bytes per unit of b
    # A MEM stream M whose ``b`` is the ALU stream D = M - 1 of its layer, D = S * X (``MUL``, or
    # ``SHL`` by an immediate: X = 2**imm) with X an IMM/ARG resolved at decode
    # (``hw/tmu/chain.py``): ``chain_src`` is S, ``chain_factor`` X, ``chain_scale`` the
    # strength-reduced K = X * stride (BLOCK: X * element size), so that M's address
    # ``a + D * stride`` is ``a + S * K``. Valid when ``chain`` is set.
    chain:        1
    chain_src:    Source
    chain_factor: signed(32)
    chain_scale:  signed(32)


class ActionCfg(data.Struct):
    """An action descriptor as the traversal uses it."""
    kind: ActionKind
    src:  Source         # OPERAND: the source; CONTROL: callback id in bits [15:0]
    pack: 2              # OPERAND, ISA v1: 2**pack elements of 8 >> pack bytes per data token
    # An OPERAND action whose source is a stream: copies of that stream's ``StreamCfg`` fields
    # the action needs (its kind is MEM; its ``mode``, a ``MemMode`` for a MEM stream), written
    # by the decoder (streams are written before actions), so that the traversal reads them
    # from the registered action word instead of a second read of ``scfg``. 0 for any other
    # action.
    operand_mem:  1
    operand_mode: 4
