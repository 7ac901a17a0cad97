"""Row issue: the line requests of BLOCK rows and contiguous vectors, off the traversal's path."""

from amaranth.hdl import Cat, Const, Module, Mux, ResetInserter, Signal
from amaranth.lib import data, fifo, stream, wiring
from amaranth.lib.wiring import In, Out

from .rob import alloc_layout


__all__ = ["row_job_layout", "RowIssue"]


def row_job_layout(config):
    """A run of elements of one operand (a chunk of a BLOCK row, or the active lanes of a
    contiguous vector) whose reorder-buffer entries the traversal has reserved."""
    return data.StructLayout({
        "addr":       64,                      # bytes: the first element
        "count":      config.row_chunk_elements.bit_length(),   # elements, >= 1
        "log2_size":  2,                       # log2 of the element size, bytes
        "sign":       1,
        "pack":       2,                       # packed width 8 >> pack bytes (docs/isa.md §7.5)
        "flush":      1,                       # the packer closes its token after the last one
        "first_slot": config.rob_bits,         # reorder-buffer slot of the first line
    })


class RowIssue(wiring.Component):
    """Issues one line request per cycle for each run of elements the traversal hands over.

    The traversal reserves the reorder-buffer entries of a run (one per memory line it
    touches, consecutive slots from ``first_slot``) and pushes the run into a small job queue
    in the same cycle, then goes on with its next microcode operation. This block takes the
    runs in order and, for each line, issues the request tagged with the line's slot and writes
    the slot's entry description (byte offset of the first element in the line, element count,
    size, sign, packing, and ``flush`` on the run's last line) into the reorder buffer. A row
    thus costs the traversal one cycle whatever its length, and its lines leave at the memory
    port's rate (``docs/rtl.md`` §2.4). The runs were checked when their stream was evaluated,
    so no request faults.

    Parameters
    ----------
    config : TmuConfig

    Members
    -------
    clear : In(1)
        Forget every run (start of a run of the unit).
    job : In(stream.Signature(row_job_layout(config)))
        Runs, in program order.
    req_valid, req_addr, req_slot : Out
        The next line request; ``req_valid`` does not depend on ``req_grant``.
    req_grant : In(1)
        The request is accepted this cycle.
    issue_bytes : Out(8)
        Bytes of the elements served by the request (useful bytes).
    entry_en, entry_slot, entry : Out
        Write the description of the reorder-buffer entry ``entry_slot`` (with the grant).
    idle : Out(1)
        No run is queued or being issued.
    """

    def __init__(self, config):
        self._cfg = config
        super().__init__({
            "clear":       In(1),
            "job":         In(stream.Signature(row_job_layout(config))),
            "req_valid":   Out(1),
            "req_addr":    Out(64),
            "req_slot":    Out(config.rob_bits),
            "req_grant":   In(1),
            "issue_bytes": Out(8),
            "entry_en":    Out(1),
            "entry_slot":  Out(config.rob_bits),
            "entry":       Out(alloc_layout(config.line_bytes)),
            "idle":        Out(1),
        })

    def elaborate(self, platform):
        m = Module()
        c = self._cfg
        line_bits = c.line_offset_bits
        layout = row_job_layout(c)

        jobs = fifo.SyncFIFOBuffered(width=layout.size, depth=2)
        m.submodules.jobs = ResetInserter(self.clear)(jobs)
        m.d.comb += [
            jobs.w_data.eq(self.job.payload), jobs.w_en.eq(self.job.valid),
            self.job.ready.eq(jobs.w_rdy),
        ]
        head = Signal(layout)
        m.d.comb += head.eq(jobs.r_data)

        active = Signal()
        addr = Signal(64)
        left = Signal(c.row_chunk_elements.bit_length())
        slot = Signal(c.rob_bits)
        job = Signal(layout)               # the run being issued (size, sign, pack, flush)

        # Take a run when idle, or as the current one's last line goes.
        cur_addr = Mux(active, addr, head.addr)
        cur_left = Mux(active, left, head.count)
        cur_slot = Mux(active, slot, head.first_slot)
        cur = Signal(layout)
        m.d.comb += cur.eq(Mux(active, job, head))
        in_line = Signal(range(c.line_bytes + 1))
        m.d.comb += in_line.eq((c.line_bytes - cur_addr[0:line_bits]) >> cur.log2_size)
        count = Signal(range(max(c.line_bytes, 8) + 1))
        last = Signal()
        m.d.comb += [
            count.eq(Mux(cur_left < in_line, cur_left, in_line)),
            last.eq(cur_left <= in_line),
        ]
        have = active | jobs.r_rdy
        m.d.comb += [
            self.req_valid.eq(have),
            self.req_addr.eq(cur_addr),
            self.req_slot.eq(cur_slot),
            self.issue_bytes.eq(count << cur.log2_size),
            self.entry_en.eq(have & self.req_grant),
            self.entry_slot.eq(cur_slot),
            self.entry.load.eq(1),
            self.entry.offset.eq(cur_addr[0:line_bits]),
            self.entry.log2_size.eq(cur.log2_size),
            self.entry.sign.eq(cur.sign),
            self.entry.count.eq(count),
            self.entry.pack.eq(cur.pack),
            self.entry.flush.eq(cur.flush & last),
            self.idle.eq(~have),
        ]
        with m.If(have & self.req_grant):
            m.d.comb += jobs.r_en.eq(~active)
            m.d.sync += [
                active.eq(~last),
                addr.eq(Cat(Const(0, line_bits), cur_addr[line_bits:] + 1)),
                left.eq(cur_left - count),
                slot.eq(cur_slot + 1),
            ]
            with m.If(~active):
                m.d.sync += job.eq(head)
        with m.If(self.clear):
            m.d.sync += active.eq(0)
        return m
