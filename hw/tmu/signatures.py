"""Interfaces between the blocks of the access unit, each declared once (``docs/rtl.md`` §2.1).

The decoder's blocks (``program_checker.py`` -> ``config_writer.py`` -> ``microcode_builder.py``)
and the traversal meet through these signatures. Memory ports use Amaranth's own
``memory.ReadPort.Signature`` / ``memory.WritePort.Signature`` (a component that drives a port
holds it ``In(...)``: the signature is the port's view), handshakes are ``amaranth.lib.stream``
interfaces. Every ``*Signature`` here is seen from its initiator (the block that produces it).
"""

from amaranth.hdl import signed
from amaranth.lib import data, memory, stream, wiring
from amaranth.lib.wiring import In, Out

from ..core_if.signatures import MemRequestSignature
from .chain_engine import chain_layout
from .config import TmuConfig
from .isa import FaultCode
from .layouts import ActionCfg, LayerCfg, RegionCfg, StreamCfg, Uop
from .rob import alloc_layout
from .row_issue import row_job_layout


__all__ = [
    "index_bits", "ProgramCounts", "CheckedDescriptor", "CheckResult", "ProgramLine",
    "program_memory_depth", "program_lines", "program_read_port", "stream_table_write_port",
    "action_table_write_port",
    "microcode_write_port", "CheckedProgramSignature", "descriptor_stream",
    "check_result_stream", "ConfigTablesSignature", "TraversalConfigSignature",
    "TraversalSignature",
]


def index_bits(n):
    """Bits of an index into a table of ``n`` entries (at least 1)."""
    return max(1, (n - 1).bit_length())


def _check(config):
    if not isinstance(config, TmuConfig):
        raise TypeError(f"config must be a TmuConfig, not {config!r}")


#: Header counts of a program (``docs/isa.md`` §2, header words 2-3), each 8 bits.
ProgramCounts = data.StructLayout({
    "layers": 8, "regions": 8, "streams": 8, "actions": 8, "args": 8,
})

#: A descriptor that passed both phases of the program checks, in program order.
#: ``section``: 0 layers, 1 regions, 2 streams, 3 actions; ``number``: its id within the section;
#: ``words``: its 4 words as stored in the program (``docs/isa.md`` §3-§6).
CheckedDescriptor = data.StructLayout({
    "section": 2,
    "number":  8,
    "words":   data.ArrayLayout(32, 4),
})

#: The outcome of a decode: ``fault`` set with the fault code and PC of the first failing check
#: (``docs/isa.md`` §2 "Decode order"), or clear (``code``/``pc`` are then 0).
CheckResult = data.StructLayout({
    "fault": 1,
    "code":  FaultCode,
    "pc":    32,
})


#: A line of the program memory: 4 words, one descriptor (``docs/isa.md`` §2: the header and
#: every descriptor are 4 words, so each starts at a multiple of 4 words).
ProgramLine = data.ArrayLayout(32, 4)


def program_memory_depth(config):
    """Words of the program memory: ``config.program_words`` rounded up to a power of two."""
    return 1 << index_bits(config.program_words)


def program_lines(config):
    """Lines of the program memory: ``program_memory_depth`` words in lines of 4 words
    (``config.program_words`` is at least 20: a header and four descriptors)."""
    _check(config)
    return program_memory_depth(config) // 4


def program_read_port(config):
    """The program memory's read port: a line of 4 words (``ProgramLine``) per read, at a line
    address (word address // 4), 1-cycle synchronous read."""
    return memory.ReadPort.Signature(addr_width=index_bits(program_lines(config)),
                                     shape=ProgramLine)


def stream_table_write_port(config):
    """Write port of the stream configuration memory (``StreamCfg`` per stream id)."""
    _check(config)
    return memory.WritePort.Signature(addr_width=index_bits(config.streams), shape=StreamCfg)


def action_table_write_port(config):
    """Write port of the action configuration memory (``ActionCfg`` per action id)."""
    _check(config)
    return memory.WritePort.Signature(addr_width=index_bits(config.actions), shape=ActionCfg)


def microcode_write_port(config):
    """Write port of the microcode memory (``Uop`` per entry)."""
    _check(config)
    return memory.WritePort.Signature(addr_width=index_bits(config.ucode_depth), shape=Uop)


def descriptor_stream():
    """Checked descriptors, phase 2, in program order: ``stream.Signature(CheckedDescriptor)``."""
    return stream.Signature(CheckedDescriptor)


def check_result_stream():
    """One ``CheckResult`` per decode: ``stream.Signature(CheckResult)``."""
    return stream.Signature(CheckResult)


class CheckedProgramSignature(wiring.Signature):
    """What the program checker learned from the header and phase 1 (initiator: the checker).
    Valid from the first phase-2 descriptor of a decode until the next ``start``.

    Members
    -------
    counts : Out(ProgramCounts)
        Header counts.
    version1 : Out(1)
        The program is ISA version 1 (``docs/isa.md`` §7).
    layer_mode : Out(ArrayLayout(2, config.layers))
        ``LayerMode`` of each layer (``SINGLE`` in a version-0 program).
    stream_layer : Out(ArrayLayout(8, config.streams))
        Layer of each stream.
    stream_block : Out(config.streams)
        BLOCK memory streams (ISA v1, ``docs/isa.md`` §7.4).
    """
    def __init__(self, config):
        _check(config)
        super().__init__({
            "counts":       Out(ProgramCounts),
            "version1":     Out(1),
            "layer_mode":   Out(data.ArrayLayout(2, config.layers)),
            "stream_layer": Out(data.ArrayLayout(8, config.streams)),
            "stream_block": Out(config.streams),
        })


class ConfigTablesSignature(wiring.Signature):
    """The configuration filled from the phase-2 descriptors and the classes of the streams and
    actions (initiator: the configuration writer; read by the microcode builder and, through
    the decoder, the traversal). Valid once the checker's result is out.

    Members
    -------
    layers : Out(ArrayLayout(LayerCfg, config.layers))
    regions : Out(ArrayLayout(RegionCfg, config.regions))
        Region bases and sizes resolved from the argument registers (bytes).
    blocking : Out(config.streams)
        Streams a layer bound or another stream reads (before engine assignment).
    invariant : Out(config.streams)
        ALU/FWD streams constant during their layer's traversal (evaluated once per entry).
    affine : Out(config.streams)
        MEM streams at ``a + (INDEX own + c) * stride``, ``a`` invariant in the layer.
    affine_offset : Out(ArrayLayout(signed(28), config.streams))
        Their ``c``.
    lane_affine, lane_pos, lane_neg : Out(config.streams)
        LOCKSTEP ALU/FWD streams with a lane coefficient ``c`` (lane ``l``'s value is lane
        0's ``+ c * l * step``), and which have ``c = +1`` / ``c = -1``.
    contiguous_vector : Out(config.streams)
        LOCKSTEP MEM streams where lane ``l`` loads the element after lane ``l - 1``'s.
    memory_stream : Out(config.streams)
        MEM streams.
    global_base : Out(config.streams)
        Streams whose ``a`` is an IMM or ARG source (constant for the whole run).
    operand_read : Out(config.streams)
        Streams an OPERAND action reads.
    chain : Out(config.streams)
        MEM streams whose ``StreamCfg.chain`` is set: the ALU stream before them may be fused
        into their uop (``hw/tmu/chain.py``).
    affine_via, affine_via_stream : Out(config.streams), Out(ArrayLayout(8, config.streams))
        Affine MEM streams whose ``b`` is a stream (``INDEX own + c``) of their layer, and which.
    skip_candidate : Out(config.streams)
        ALU/FWD streams, not invariant, that no layer bound, no OPERAND action and no stream
        reads, except as the ``b`` of an affine MEM stream (``affine_via``): their ``STREAM``
        uop may be dropped (``hw/tmu/skipped_streams.py``, ``docs/rtl.md`` §9.5 C).
    enter_bounds, enter_swap : Out(config.streams), Out(config.streams)
        ALU/FWD streams whose sources ``a`` and ``b`` are the bounds of the layer after their
        own (``lb``, ``ub``; with ``enter_swap``: ``ub``, ``lb``), neither of them the stream
        itself: that layer's ``ENTER`` may be fused into the stream's uop
        (``Uop.fuse_enter``, ``docs/rtl.md`` §9.5 E).
    act_layer : Out(ArrayLayout(8, config.actions))
    act_event : Out(ArrayLayout(2, config.actions))
    act_reads : Out(config.actions)
        OPERAND actions whose source is a STREAM.
    act_stream : Out(ArrayLayout(8, config.actions))
        The source's number (its stream id when ``act_reads``).
    act_control : Out(config.actions)
        CONTROL actions.
    act_vec : Out(config.actions)
        ITER OPERAND actions of the LOCKSTEP layer that push a vector.
    act_flush : Out(config.actions)
        ISA v1: the packer flushes after the action's last element (an OPERAND action without
        JOIN, or the last OPERAND action of its layer and event).
    lockstep_valid, lockstep_layer : Out(1), Out(8)
        The program has a LOCKSTEP layer (at most one, the last), and which.
    chain_engine, chain_stream : Out(chain_layout()), Out(8)
        With ``config.chain_engines``: a stream the chain engine can serve
        (``hw/tmu/chain_detect.py``; ``valid``), its configuration, and the stream's id.
    chain_op_candidate : Out(config.streams)
        With ``config.chain_engines``: ALU/FWD streams, not invariant, that no layer bound, no
        OPERAND action, no ``BLOCK`` count and no stream but the next one (id + 1) reads: a
        chain's operation streams among them may have no ``STREAM`` uop
        (``hw/tmu/skipped_streams.py``, ``docs/rtl.md`` §9.5 C).
    """
    def __init__(self, config):
        _check(config)
        S, A = config.streams, config.actions
        super().__init__({
            "layers":            Out(data.ArrayLayout(LayerCfg, config.layers)),
            "regions":           Out(data.ArrayLayout(RegionCfg, config.regions)),
            "blocking":          Out(S),
            "invariant":         Out(S),
            "affine":            Out(S),
            "affine_offset":     Out(data.ArrayLayout(signed(28), S)),
            "lane_affine":       Out(S),
            "lane_pos":          Out(S),
            "lane_neg":          Out(S),
            "contiguous_vector": Out(S),
            "memory_stream":     Out(S),
            "global_base":       Out(S),
            "operand_read":      Out(S),
            "chain":             Out(S),
            "affine_via":        Out(S),
            "affine_via_stream": Out(data.ArrayLayout(8, S)),
            "skip_candidate":    Out(S),
            "enter_bounds":      Out(S),
            "enter_swap":        Out(S),
            "act_layer":         Out(data.ArrayLayout(8, A)),
            "act_event":         Out(data.ArrayLayout(2, A)),
            "act_reads":         Out(A),
            "act_stream":        Out(data.ArrayLayout(8, A)),
            "act_control":       Out(A),
            "act_vec":           Out(A),
            "act_flush":         Out(A),
            "lockstep_valid":    Out(1),
            "lockstep_layer":    Out(8),
            **({"chain_engine": Out(chain_layout()), "chain_stream": Out(8),
                "chain_op_candidate": Out(S)}
               if config.chain_engines else {}),
        })


class TraversalConfigSignature(wiring.Signature):
    """The configuration registers the decoder fills and the traversal reads (initiator: the
    decoder), valid after a decode without fault (``docs/rtl.md`` §2.1-§2.3, §9.3).

    Members
    -------
    layers, regions : Out
        As in :class:`ConfigTablesSignature`.
    blocking : Out(config.streams)
        Blocking streams, including lazy affine loads given a spare run-ahead engine.
    body_pc, exit_pc : Out(ArrayLayout(ucode address, config.layers))
        Microcode address of each layer's body and of its exit (``docs/rtl.md`` §2.2).
    prefetch_stream, prefetch_layer, prefetch_offset : Out(ArrayLayout(..., engines))
        Run-ahead engine ``e`` serves stream ``prefetch_stream[e]`` of layer
        ``prefetch_layer[e]``, element index ``INDEX + prefetch_offset[e]``.
    stream_prefetched : Out(config.streams)
    stream_prefetch_engine : Out(ArrayLayout(engine bits, config.streams))
        Streams served by an engine, and which.
    prefetch_skipped_valid, prefetch_skipped_stream : Out(E), Out(ArrayLayout(8, E))
        Engine ``e``'s stream reads the *skipped* ALU stream ``prefetch_skipped_stream[e]``
        (no ``STREAM`` uop: a fallback step of ``e`` evaluates it first; ``docs/rtl.md``
        §9.5 C, ``hw/tmu/skipped_streams.py``).
    prefetch_skipped_two : Out(E)
        With ``prefetch_skipped_valid``: the stream after ``prefetch_skipped_stream[e]`` is
        skipped too and read on the way (the chain engine's two operation streams): the
        fallback evaluates both, in id order, before ``e``'s own.
    act_flush, act_vec, lockstep_valid, lockstep_layer, invariant, lane_pos, lane_neg,
    contiguous_vector : Out
        As in :class:`ConfigTablesSignature`.
    lockstep_vector_mode : Out(1)
        The LOCKSTEP layer is evaluated once per vector iteration (``docs/rtl.md`` §9.3).
    chain_root : Out(8)
        With ``config.chain_engines``: the stream whose parameters the chain engine (engine
        ``prefetchers``) takes at its ``PREFETCH``: the root of the stream it serves
        (``prefetch_stream``).
    """
    def __init__(self, config):
        _check(config)
        S, E = config.streams, config.engines
        ucode_bits = index_bits(config.ucode_depth)
        super().__init__({
            "layers":                 Out(data.ArrayLayout(LayerCfg, config.layers)),
            "regions":                Out(data.ArrayLayout(RegionCfg, config.regions)),
            "blocking":               Out(S),
            "body_pc":                Out(data.ArrayLayout(ucode_bits, config.layers)),
            "exit_pc":                Out(data.ArrayLayout(ucode_bits, config.layers)),
            "prefetch_stream":        Out(data.ArrayLayout(8, E)),
            "prefetch_layer":         Out(data.ArrayLayout(8, E)),
            "prefetch_offset":        Out(data.ArrayLayout(signed(28), E)),
            "stream_prefetched":      Out(S),
            "stream_prefetch_engine": Out(data.ArrayLayout(index_bits(E), S)),
            "prefetch_skipped_valid":  Out(E),
            "prefetch_skipped_stream": Out(data.ArrayLayout(8, E)),
            "prefetch_skipped_two":   Out(E),
            "act_flush":              Out(config.actions),
            "lockstep_valid":         Out(1),
            "lockstep_layer":         Out(8),
            "act_vec":                Out(config.actions),
            "invariant":              Out(S),
            "lockstep_vector_mode":   Out(1),
            "lane_pos":               Out(S),
            "lane_neg":               Out(S),
            "contiguous_vector":      Out(S),
            **({"chain_root": Out(8)} if config.chain_engines else {}),
        })


class TraversalSignature(wiring.Signature):
    """The traversal's ports (``hw/tmu/traversal.py``), seen from the traversal: the
    decoder's configuration registers (:class:`TraversalConfigSignature`, flipped), run
    control, the fetch stage's microcode and configuration reads (``hw/tmu/fetch.py``; with
    two stages also the ahead uop's, ``hw/tmu/ahead_fetch.py``), the memory request port and
    the blocking load's response line, the reorder buffer's allocation ports, the row issue
    block's jobs, the control FIFO's write side, the run-ahead engines' start parameters,
    heads and pops (``hw/tmu/prefetch.py``) and the per-cycle statistics the counters add
    up (``hw/tmu/counters.py``). Each port's meaning is given beside it. (Unlike the
    signatures above, seen from the block that holds the ports, not from an initiator.)
    """
    def __init__(self, config):
        _check(config)
        c = config
        ubits, sbits, abits = (index_bits(c.ucode_depth), index_bits(c.streams),
                               index_bits(c.actions))
        E = c.engines
        super().__init__({
            # The decoder's configuration registers (layers, regions, blocking streams,
            # microcode addresses, run-ahead engine assignment, ISA v1 classes): declared once,
            # hw/tmu/signatures.py's TraversalConfigSignature, here from the receiving side.
            **TraversalConfigSignature(c).flip().members,
            "start":      In(1),
            "abort":      In(1),
            "busy":       Out(1),
            "done":       Out(1),
            "fault":      Out(1),
            "fault_code": Out(FaultCode),
            "fault_addr": Out(64),
            # The stream whose evaluation faulted (MISALIGNED, ADDR_RANGE, ADDR_OVERFLOW,
            # BLOCK_LENGTH), with ``fault_has_stream``; other faults have none.
            "fault_stream": Out(8),
            "fault_has_stream": Out(1),
            "args":       In(data.ArrayLayout(64, c.args)),
            "mem_limit":  In(64),
            # Microcode: asynchronous reads at ``pc`` and at the predicted next ``pc``; stream and
            # action configuration: synchronous reads (the address of this cycle gives the word
            # of the next), the fetch stage (hw/tmu/fetch.py). The operand stream's kind and
            # mode come with the action words (``ActionCfg.operand_*``).
            "ucode_addr": Out(ubits),
            "ucode_data": In(Uop),
            "ucode_predict_addr": Out(ubits),
            "ucode_predict_data": In(Uop),
            "scfg_fetch_addr":  Out(sbits),
            "scfg_data":  In(StreamCfg),
            "acfg_fetch_addr":  Out(abits),
            "acfg_data":  In(ActionCfg),
            "acfg2_fetch_addr": Out(abits),
            "acfg2_data": In(ActionCfg),
            # Two stages: the words of the uop evaluated during another's execution
            # (hw/tmu/ahead_fetch.py), an asynchronous microcode read and a synchronous
            # stream configuration read.
            **({"ucode_ahead_addr": Out(ubits), "ucode_ahead_data": In(Uop),
                "scfg_ahead_addr": Out(sbits), "scfg_ahead_data": In(StreamCfg)}
               if c.uop_stages == 2 else {}),
            "req":        Out(MemRequestSignature(c.tag_bits, c.line_bytes)),
            "blocking_resp_valid": In(1),
            "blocking_resp_data":  In(8 * c.line_bytes),   # the line
            "rob_alloc_en":    Out(1),
            "rob_alloc":       Out(alloc_layout(c.line_bytes)),
            "rob_alloc_ready": In(1),
            "rob_alloc2_en":    Out(1),
            "rob_alloc2":       Out(alloc_layout(c.line_bytes)),
            "rob_alloc2_ready": In(1),
            "rob_alloc_slot":  In(c.rob_bits),
            "rob_alloc_reserve": Out(1),      # the first allocation reserves a row's lines
            "rob_alloc_count":   Out(range(c.row_chunk_lines + 1)),
            "rob_free":          In(range(c.max_inflight + 1)),
            "row_job":           Out(stream.Signature(row_job_layout(c))),
            "rob_empty":       In(1),
            "ctrl_w_en":   Out(1),    # write a control token (the control FIFO's write side)
            "ctrl_w_data": Out(16),
            "ctrl_w_rdy":  In(1),     # the control FIFO has room (does not depend on ctrl_w_en)
            "ctrl_empty":  In(1),     # the control FIFO is empty
            "stat_rob_stall":   Out(1),   # an action waits for a free reorder-buffer entry
            "stat_block_wait":  Out(1),   # waiting for a blocking load
            "stat_issue":       Out(1),   # a load request is accepted this cycle
            "stat_issue_bytes": Out(8),   # the bytes of its elements (useful bytes)
            "stat_blocking":    Out(1),   # that load is a blocking one
            # Run-ahead engines (hw/tmu/prefetch.py): their assignment is in the configuration.
            "prefetch_start":         Out(E),
            "prefetch_arm":           Out(E),   # PREFETCH with ``arm``: latch the parameters
            "prefetch_armed":         Out(1),   # the start (ENTER) uses the latched ones
            "prefetch_base":          Out(signed(64)),
            "prefetch_base_wrapped":  Out(1),   # the base is a stream value that wrapped
            "prefetch_lower_bound":   Out(signed(64)),
            "prefetch_upper_bound":   Out(signed(64)),
            "prefetch_step":          Out(signed(28)),
            "prefetch_start_offset":  Out(signed(28)),
            "prefetch_stride":        Out(signed(32)),
            "prefetch_size_log2":     Out(2),
            "prefetch_sign":          Out(1),
            "prefetch_region_base":   Out(signed(64)),
            "prefetch_region_size":   Out(signed(64)),
            "prefetch_head_valid":    In(E),
            "prefetch_head_data":     In(data.ArrayLayout(64, E)),
            "prefetch_busy":          In(E),
            "prefetch_idle":          In(E),
            # Two stages: a start would continue the engine's sequence (``Prefetcher.continues``,
            # 0 for the chain engine; hw/tmu/evaluate_stage.py).
            **({"prefetch_continues": In(E)} if c.uop_stages == 2 else {}),
            "prefetch_pop":           Out(E),
            # ISA v1 LOCKSTEP statistics (the layer's classes are in the configuration).
            "stat_lane_eval":       Out(1),   # a STREAM/LANE uop of the LOCKSTEP layer completes
            "stat_vec_marshal":     Out(1),   # a vector OPERAND action this cycle
            "stat_vec_iter":        Out(1),   # a vector iteration of the LOCKSTEP layer starts
            # A microcode entry completes: ``pc`` moves (a loop back, a lane step included), or
            # ``DONE`` pushes its token. Fetch bubbles, waits, the extra cycles of a row or a
            # vector and engine-pop fallback steps do not count.
            "stat_uop":             Out(1),
            # The fetch stage holds no valid uop this cycle (a bubble, hw/tmu/fetch.py).
            "stat_fetch_bubble":    Out(1),
            # A load request or a row job is offered and not taken this cycle.
            "stat_issue_wait":      Out(1),
            # Two stages: an evaluate cycle in which no uop executes (hw/tmu/evaluate_stage.py).
            "stat_evaluate":        Out(1),
        })
