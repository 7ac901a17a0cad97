"""Marshaling actions in the traversal: what an ``ACT`` uop (or a ``STREAM`` uop's fused
actions) pushes into the output queues (``docs/isa.md`` §1 "Execution order", §2 "Action
descriptor", §4 output queues, §7.5 operand packing, §7.8; ``docs/rtl.md`` §2.2, §2.4, §9.2,
§9.3).

* An ``OPERAND`` action allocates a reorder-buffer entry (``hw/tmu/rob.py``, port 1): an
  *immediate* entry holds its 64-bit value; a *lazy* one (a non-blocking MEM stream's value)
  holds the element's place in its line, and its load is issued here, tagged with the slot.
* A ``CONTROL`` action writes a control token into the control FIFO (its callback id).
* A second action of the same uop (``fuse_act2``) uses the reorder buffer's port 2: an
  immediate entry, or (``act2_load``, after an immediate first operand) a lazy one whose load is
  the uop's only request, tagged with the slot after the first (``docs/rtl.md`` §9.5 A).
* An ``OPERAND`` of a BLOCK stream, or of a contiguous vector load in vector mode, pushes a
  *row*: each cycle a chunk of up to ``row_chunk_lines`` lines reserves one entry per line and
  goes to the row issue block (``hw/tmu/row_issue.py``) as a row job; the masked lanes of a
  vector follow as zero elements (``pad_*``). The uop stays until the last chunk.
* A vector operand that is not a contiguous load (LOCKSTEP, ``hw/tmu/lockstep_lanes.py``) is
  pushed lane by lane, one entry per lane, a masked lane an immediate 0.

:meth:`Actions.try_action` fires the action(s) when the reorder buffer has the entries, the
control FIFO has room, the load request is accepted and the row issue block takes the row
chunk. Not a component: :class:`Actions` adds this logic to the traversal's ``Module`` (as
:class:`~hw.tmu.engine_pop.EnginePops` does).
"""

from amaranth.hdl import Const, Mux, Signal

from .isa import ActionKind, ControlWord1, MemMode, SourceKind
from .layouts import UopKind
from .signatures import index_bits
from .source_fields import pick


__all__ = ["Actions"]


def _immediate(m, port, value, pack, flush):
    """A reorder-buffer entry of one 64-bit element (``port``: an ``alloc_layout`` view)."""
    m.d.comb += [port.load.eq(0), port.value.eq(value), port.log2_size.eq(3),
                 port.count.eq(1), port.pack.eq(pack), port.flush.eq(flush)]


class Actions:
    """The current uop's action(s): reorder-buffer allocation, load request, control token, row
    chunk (combinational, plus the row and padding registers).

    Parameters
    ----------
    m : Module
    traversal : Traversal
        Its action configuration (``acfg*``, ``act_flush``, ``act_vec``,
        ``blocking``, ``contiguous_vector``), reorder-buffer, control FIFO, request and row job
        ports are driven and read here.
    uop : Signal(Uop)
        The microcode entry to execute.
    sources : OperandSources
        Reads the actions' sources (``hw/tmu/operand_sources.py``).
    stream : StreamEvaluation
        The stream the uop evaluates (a fused action sees its new value and BLOCK count).
    lanes : LockstepLanes
        The LOCKSTEP lanes (vector operands; their lane values are added here, between the
        first action and the second).

    Attributes
    ----------
    ac, op_v : Value
        The first action's descriptor and its source's value.
    row_active, pad_active : Signal
        Registers: a row is being pushed chunk by chunk; the masked lanes' zeros of a vector.
    """

    def __init__(self, m, traversal, uop, sources, stream, lanes):
        self._t = traversal
        self._c = traversal._cfg
        self._uop = uop
        self._lanes = lanes
        # The parts, in this order (the Verilog's names and order follow it).
        self._first_action(m, sources, stream)
        self._rows(m, stream)
        # LOCKSTEP: lane values of the layer's streams (written as each lane is evaluated), and
        # the ITER actions that push a vector: one reorder-buffer entry per lane, lane by lane
        # (``lane`` counts them), masked lanes an immediate 0.
        lanes.add_lane_values(m, uop, self.ac, self.op_v, stream.s_result, self.o_vector_load)
        self._second_action(m, sources, stream)
        self._allocate(m)

    def _first_action(self, m, sources, stream):
        """The first action's descriptor, its source's value and whether it is a lazy load."""
        t, c, u = self._t, self._c, self._uop
        sbits = index_bits(c.streams)
        abits = index_bits(c.actions)
        self._fused = fused = (u.kind == UopKind.STREAM) & u.fuse_act
        m.d.comb += t.acfg_addr.eq(Mux(u.kind == UopKind.ACT, u.id, u.act_id)[:abits])
        self.ac = ac = t.acfg_data
        self.op_v = sources.read(ac.src, bypass_en=fused, bypass_id=u.id,
                                 bypass_val=stream.s_result)
        # A second action that loads (driven in _second_action): the first is immediate (the
        # decoder's rule), so the one operand stream the uop loads from is the second's. Its
        # kind and mode are copies in the (registered) action words, written by the decoder
        # (``ActionCfg.operand_*``): no read of the stream configuration here.
        self._second_load = second_load = Signal(name="second_load")
        self._operand_mem = operand_mem = Signal(name="operand_mem")
        operand_mode = Signal(4, name="operand_mode")
        m.d.comb += [
            operand_mem.eq(Mux(second_load, t.acfg2_data.operand_mem, ac.operand_mem)),
            operand_mode.eq(Mux(second_load, t.acfg2_data.operand_mode, ac.operand_mode)),
        ]
        self.operand_mode = MemMode(operand_mode)
        self._is_ctl = ac.kind == ActionKind.CONTROL
        self._lazy = lazy = Signal(name="lazy")
        m.d.comb += lazy.eq((ac.kind == ActionKind.OPERAND) & (ac.src.kind == SourceKind.STREAM)
                            & operand_mem
                            & ~t.blocking.bit_select(ac.src.value[:sbits], 1) & ~second_load)

    def _rows(self, m, stream):
        """The chunk of a row the first action pushes this cycle (BLOCK, or a contiguous vector
        load and its masked lanes' zeros)."""
        t, c, u, lanes = self._t, self._c, self._uop, self._lanes
        sbits = index_bits(c.streams)
        ac, op_v, operand_mode = self.ac, self.op_v, self.operand_mode
        has_block, nbits = stream.has_block, stream.nbits
        count, lockstep_cfg = lanes.count, lanes.cfg
        # An OPERAND action of a BLOCK stream pushes its row: it reserves one reorder-buffer
        # entry per memory line the row touches and hands the run to the row issue block, which
        # sends the line requests (hw/tmu/row_issue.py), up to ``row_chunk_lines`` lines per
        # cycle (an empty row: one entry that only flushes the packer). The action's uop stays
        # until the last chunk.
        self.row_active = row_active = Signal(name="row_active")
        self.row_addr = row_addr = Signal(64, name="row_addr")      # bytes: next element
        self.row_left = row_left = Signal(nbits, name="row_left")   # elements still to load
        self.o_block = o_block = Signal(name="o_block")
        self.row_cur_addr = row_cur_addr = Signal(64, name="row_cur_addr")
        self.row_cur_left = row_cur_left = Signal(nbits, name="row_cur_left")
        line_bits = c.line_offset_bits
        # elements in this chunk, memory lines they touch
        self.row_cnt = row_cnt = Signal(range(c.row_chunk_elements + 1), name="row_cnt")
        self.row_lines = row_lines = Signal(range(c.row_chunk_lines + 1), name="row_lines")
        self.row_last = row_last = Signal(name="row_last")
        # A vector operand of a contiguous vector MEM stream (vector mode) is a row of the
        # ``count`` active lanes' elements from lane 0's address (one aligned 64-bit load per
        # line, docs/isa.md §7.8), then ``lanes - count`` zero elements for the masked lanes
        # (immediate entries of up to 8 elements, ``pad_*``).
        self.o_vector_load = o_vector_load = Signal(name="o_vector_load")
        self.pad_active = Signal(name="pad_active")
        self.pad_left = pad_left = Signal(8, name="pad_left")
        self.pad_cnt = pad_cnt = Signal(4, name="pad_cnt")
        self.pad_last = pad_last = Signal(name="pad_last")
        self.need_pad = need_pad = Signal(name="need_pad")
        if lanes.enabled:
            m.d.comb += [
                o_vector_load.eq(
                    (ac.kind == ActionKind.OPERAND) & (ac.src.kind == SourceKind.STREAM)
                    & t.act_vec.bit_select(t.acfg_addr, 1) & t.lockstep_vector_mode
                    & t.contiguous_vector.bit_select(ac.src.value[:sbits], 1)),
                pad_cnt.eq(Mux(pad_left > 8, 8, pad_left)),
                pad_last.eq(pad_left <= 8),
                need_pad.eq(count <= lockstep_cfg.lanes_m1),
            ]
        if has_block or lanes.enabled:
            # elements from the address to the end of the chunk's last line
            in_chunk = Signal(range(c.row_chunk_elements + 1), name="in_chunk")
            # A row action fused into its own stream's STREAM uop sees the new count (bypass).
            row_n = (Mux(self._fused & (ac.src.value[:8] == u.id), stream.blk_n[:nbits],
                         pick(m, stream.nvals, ac.src.value[:sbits], nbits, "row_n"))
                     if has_block else 0)
            if has_block:
                m.d.comb += o_block.eq(~self._second_load & (ac.kind == ActionKind.OPERAND)
                                       & (ac.src.kind == SourceKind.STREAM)
                                       & self._operand_mem
                                       & operand_mode.reserved)
            m.d.comb += [
                row_cur_addr.eq(Mux(row_active, row_addr, op_v)),
                row_cur_left.eq(Mux(row_active, row_left, Mux(o_vector_load, count, row_n))),
                in_chunk.eq((c.row_chunk_elements - row_cur_addr[0:line_bits])
                            >> operand_mode.log2_size),
                row_cnt.eq(Mux(row_cur_left < in_chunk, row_cur_left, in_chunk)),
                row_last.eq(row_cur_left <= in_chunk),
                row_lines.eq((row_cur_addr[0:line_bits] + (row_cnt << operand_mode.log2_size)
                              + c.line_bytes - 1) >> line_bits),
            ]

    def _second_action(self, m, sources, stream):
        """The second action of the cycle (``fuse_act2``): an immediate token, and never a
        second control token (the decoder does not pair two); fired with the last chunk of a
        row the first action pushes. Or (``act2_load``) an operand load after an immediate
        first operand."""
        t, c, u = self._t, self._c, self._uop
        abits = index_bits(c.actions)
        dual = (u.fuse_act2 & ((u.kind == UopKind.ACT) | self._fused)
                & ~(self.o_block & ~self.row_last))
        m.d.comb += t.acfg2_addr.eq(u.act2_id[:abits])
        self._ac2 = ac2 = t.acfg2_data
        self._op2_v = sources.read(ac2.src, bypass_en=self._fused, bypass_id=u.id,
                                   bypass_val=stream.s_result)
        self._is_ctl2 = dual & (ac2.kind == ActionKind.CONTROL)
        self._is_op2 = dual & (ac2.kind == ActionKind.OPERAND)
        # (not gated by the row: with ``act2_load`` the first action is never a row, and
        # ``o_block`` depends on this signal)
        m.d.comb += self._second_load.eq(u.fuse_act2 & u.act2_load
                                         & ((u.kind == UopKind.ACT) | self._fused))

    def _allocate(self, m):
        """The reorder-buffer entries (the first operand of the cycle through port 1, the
        second through port 2), the control token, the row job, and what firing needs."""
        t, c, lanes = self._t, self._c, self._lanes
        line_bits = c.line_offset_bits
        ac, op_v, operand_mode, lazy = self.ac, self.op_v, self.operand_mode, self._lazy
        ac2, op2_v, is_ctl = self._ac2, self._op2_v, self._is_ctl
        o_lane, v_active, v_last, v_val = lanes.o_lane, lanes.v_active, lanes.v_last, lanes.v_val
        o_block, o_vector_load = self.o_block, self.o_vector_load
        row_cur_addr, row_cur_left, row_cnt = self.row_cur_addr, self.row_cur_left, self.row_cnt
        row_last, row_lines = self.row_last, self.row_lines
        pad_active, pad_cnt, pad_last, need_pad = (self.pad_active, self.pad_cnt, self.pad_last,
                                                   self.need_pad)
        # Operands go into the reorder buffer (the first operand of the cycle through port 1);
        # control tokens, always immediate, straight into the control FIFO.
        flush1 = t.act_flush.bit_select(t.acfg_addr, 1)
        flush2 = t.act_flush.bit_select(t.acfg2_addr, 1)
        is_ctl2, is_op2 = self._is_ctl2, self._is_op2

        with m.If(is_ctl):
            _immediate(m, t.rob_alloc, op2_v, ac2.pack, flush2)
            m.d.comb += t.ctrl_w_data.eq(ControlWord1(ac.src.as_value()).callback)
        with m.Else():
            m.d.comb += [
                t.rob_alloc.load.eq(lazy),
                t.rob_alloc.value.eq(op_v),
                t.rob_alloc.offset.eq(Mux(lazy, op_v[0:line_bits], 0)),
                t.rob_alloc.log2_size.eq(Mux(lazy, operand_mode.log2_size, 3)),
                t.rob_alloc.sign.eq(lazy & operand_mode.sign),
                t.rob_alloc.count.eq(1),
                t.rob_alloc.pack.eq(ac.pack),
                t.rob_alloc.flush.eq(flush1),
                t.ctrl_w_data.eq(ControlWord1(ac2.src.as_value()).callback),
            ]
            with m.If(o_lane):
                m.d.comb += [
                    t.rob_alloc.load.eq(lazy & v_active),
                    t.rob_alloc.value.eq(v_val),
                    t.rob_alloc.offset.eq(Mux(lazy & v_active, v_val[0:line_bits], 0)),
                    t.rob_alloc.log2_size.eq(Mux(lazy & v_active, operand_mode.log2_size, 3)),
                    t.rob_alloc.sign.eq(lazy & v_active & operand_mode.sign),
                    t.rob_alloc.flush.eq(flush1 & v_last),
                ]
            with m.If(o_block | o_vector_load):
                m.d.comb += [
                    t.rob_alloc.load.eq(row_cur_left != 0),
                    t.rob_alloc.offset.eq(row_cur_addr[0:line_bits]),
                    t.rob_alloc.log2_size.eq(operand_mode.log2_size),
                    t.rob_alloc.sign.eq(operand_mode.sign),
                    t.rob_alloc.count.eq(row_cnt),
                    t.rob_alloc.flush.eq(flush1 & row_last & ~(o_vector_load & need_pad)),
                ]
            with m.If(o_vector_load & pad_active):
                # Masked lanes: zero elements of the lane's size.
                m.d.comb += [
                    t.rob_alloc.load.eq(0),
                    t.rob_alloc.value.eq(0),
                    t.rob_alloc.offset.eq(0),
                    t.rob_alloc.sign.eq(0),
                    t.rob_alloc.count.eq(pad_cnt),
                    t.rob_alloc.flush.eq(flush1 & pad_last),
                ]
        second_load = self._second_load
        with m.If(second_load):
            m.d.comb += [
                t.rob_alloc2.load.eq(1),
                t.rob_alloc2.value.eq(op2_v),
                t.rob_alloc2.offset.eq(op2_v[0:line_bits]),
                t.rob_alloc2.log2_size.eq(operand_mode.log2_size),
                t.rob_alloc2.sign.eq(operand_mode.sign),
                t.rob_alloc2.count.eq(1),
                t.rob_alloc2.pack.eq(ac2.pack),
                t.rob_alloc2.flush.eq(flush2),
            ]
        with m.Else():
            _immediate(m, t.rob_alloc2, op2_v, ac2.pack, flush2)
        n_ops = Signal(2)
        m.d.comb += n_ops.eq(~is_ctl + is_op2)
        # A chunk of a row (BLOCK, or the active lanes of a contiguous vector) reserves its
        # lines' entries and goes to the row issue block; the traversal issues no request.
        reserving = Signal()
        m.d.comb += reserving.eq(~is_ctl & (o_block | (o_vector_load & ~pad_active))
                                 & (row_cur_left != 0))
        room = Mux(reserving, t.rob_free >= row_lines + (n_ops == 2),
                   Mux(n_ops == 2, t.rob_alloc2_ready,
                       Mux(n_ops == 1, t.rob_alloc_ready, 1)))
        need_ctrl = is_ctl | is_ctl2
        m.d.comb += [
            t.row_job.payload.addr.eq(row_cur_addr),
            t.row_job.payload.count.eq(row_cnt),
            t.row_job.payload.log2_size.eq(operand_mode.log2_size),
            t.row_job.payload.sign.eq(operand_mode.sign),
            t.row_job.payload.pack.eq(ac.pack),
            t.row_job.payload.flush.eq(flush1 & row_last & ~(o_vector_load & need_pad)),
            t.row_job.payload.first_slot.eq(t.rob_alloc_slot),
            t.rob_alloc_reserve.eq(reserving),
            t.rob_alloc_count.eq(Mux(reserving, row_lines, 1)),
        ]

        ld = Signal()
        m.d.comb += ld.eq(Mux(o_lane, lazy & v_active,
                              Mux(o_vector_load | o_block, 0, lazy)) | second_load)

        # What try_action needs.
        self.room, self.need_ctrl, self.ld = room, need_ctrl, ld
        self.reserving, self.n_ops = reserving, n_ops

    def try_action(self, m, on_fire):
        """Fire the action(s) if entries are free, the control FIFO has room, (for a load)
        the request is accepted and (for a row chunk) the row issue block takes it.
        ``req.valid`` and ``row_job.valid`` never depend on the ``ready``s. A row fires
        ``on_fire`` (a callable adding the uop's completion) with its last chunk; a vector
        operand pushed lane by lane with its last lane."""
        t, lanes = self._t, self._lanes
        count, lockstep_cfg = lanes.count, lanes.cfg
        o_vector, o_lane, v_val, v_last = lanes.o_vector, lanes.o_lane, lanes.v_val, lanes.v_last
        op_v, row_active, pad_active = self.op_v, self.row_active, self.pad_active
        row_addr, row_left, row_last = self.row_addr, self.row_left, self.row_last
        row_cur_addr, row_cur_left, row_cnt = self.row_cur_addr, self.row_cur_left, self.row_cnt
        pad_left, pad_last, need_pad = self.pad_left, self.pad_last, self.need_pad
        o_block, o_vector_load, operand_mode = self.o_block, self.o_vector_load, self.operand_mode
        room, need_ctrl, ld = self.room, self.need_ctrl, self.ld
        reserving, n_ops, second_load = self.reserving, self.n_ops, self._second_load
        with m.If(room & (~need_ctrl | t.ctrl_w_rdy)):
            m.d.comb += [
                t.req.valid.eq(ld),
                t.req.payload.addr.eq(Mux(second_load, self._op2_v, Mux(o_vector, v_val, op_v))),
                # the second entry's slot follows the first's (one entry: no reservation)
                t.req.payload.tag.eq(Mux(second_load, (t.rob_alloc_slot + 1)[:self._c.rob_bits],
                                         t.rob_alloc_slot)),
                t.stat_issue_bytes.eq(Const(1, 8) << operand_mode.log2_size),
                t.row_job.valid.eq(reserving),
            ]
            with m.If((~ld | t.req.ready) & (~reserving | t.row_job.ready)):
                m.d.comb += [t.rob_alloc_en.eq(n_ops != 0), t.rob_alloc2_en.eq(n_ops == 2),
                             t.ctrl_w_en.eq(need_ctrl)]
                with m.If((o_block | (o_vector_load & ~pad_active)) & ~row_last):
                    m.d.sync += [row_active.eq(1),
                                 row_addr.eq(row_cur_addr
                                             + (row_cnt << operand_mode.log2_size)),
                                 row_left.eq(row_cur_left - row_cnt)]
                with m.Elif(o_vector_load & ~pad_active & need_pad):
                    # The last active lane's word: the masked lanes' zeros follow.
                    m.d.sync += [row_active.eq(0), pad_active.eq(1),
                                 pad_left.eq(lockstep_cfg.lanes_m1 + 1 - count)]
                with m.Elif(o_vector_load & pad_active & ~pad_last):
                    m.d.sync += pad_left.eq(pad_left - 8)
                with m.Elif(o_lane & ~v_last):
                    lanes.next_lane(m)
                with m.Else():
                    with m.If(o_lane):
                        lanes.restart_lane(m)
                    m.d.sync += [row_active.eq(0), pad_active.eq(0)]
                    on_fire()
        with m.Else():
            m.d.comb += t.stat_rob_stall.eq(~room)

