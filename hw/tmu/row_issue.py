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
    """Issues the line requests of the runs of elements the traversal hands over, up to
    ``lines`` per cycle.

    The traversal reserves the reorder-buffer entries of a run (one per memory line it
    touches, consecutive slots from ``first_slot``) and pushes the run into a small job queue
    in the same cycle, then goes on with its next microcode operation. This block takes the
    runs in order and, for each line, issues the request tagged with the line's slot and writes
    the slot's entry description (byte offset of the first element in the line, element count,
    size, sign, packing, and ``flush`` on the run's last line) into the reorder buffer. A row
    thus costs the traversal one cycle whatever its length, and its lines leave at the memory
    port's rate (``docs/rtl.md`` §2.4). The runs were checked when their stream was evaluated,
    so no request faults.

    With ``lines`` > 1 the next ``lines`` lines of a run are offered at once (request ``k`` is
    the line after request ``k - 1``, in the same run), so a row leaves at up to ``lines`` lines
    per cycle (one per memory port, ``TmuConfig.row_lines``). The grants are each lane's own
    (the request buffers' registered readies, ``RequestArbiter``) and need not come in order:
    request ``k`` is offered only while requests ``0 .. k - 1`` are granted, so the requests
    taken in a cycle are always the run's next lines, none twice.

    Parameters
    ----------
    config : TmuConfig
    lines : int
        Requests offered per cycle, 1..8.

    Members
    -------
    clear : In(1)
        Forget every run (start of a run of the unit).
    job : In(stream.Signature(row_job_layout(config)))
        Runs, in program order.
    req_valid, req_addr, req_slot : Out(ArrayLayout(..., lines))
        Request ``k``: the run's next line ``k``; ``req_valid[k]`` does not depend on
        ``req_grant[k]`` (it does on ``req_grant[0 .. k - 1]``, which must not depend on it).
    req_grant : In(lines)
        Request ``k`` would be accepted this cycle (in any combination).
    issue_bytes : Out(ArrayLayout(8, lines))
        Bytes of the elements served by request ``k`` (useful bytes).
    entry_en, entry_slot, entry : Out(ArrayLayout(..., lines))
        Write the description of the reorder-buffer entry ``entry_slot[k]`` (with grant ``k``).
    idle : Out(1)
        No run is queued or being issued.
    """

    def __init__(self, config, lines=1):
        if not isinstance(lines, int) or not 1 <= lines <= 8:
            raise ValueError(f"lines must be an integer in 1..8, not {lines!r}")
        self._cfg = config
        self._lines = lines
        super().__init__({
            "clear":       In(1),
            "job":         In(stream.Signature(row_job_layout(config))),
            "req_valid":   Out(lines),
            "req_addr":    Out(data.ArrayLayout(64, lines)),
            "req_slot":    Out(data.ArrayLayout(config.rob_bits, lines)),
            "req_grant":   In(lines),
            "issue_bytes": Out(data.ArrayLayout(8, lines)),
            "entry_en":    Out(lines),
            "entry_slot":  Out(data.ArrayLayout(config.rob_bits, lines)),
            "entry":       Out(data.ArrayLayout(alloc_layout(config.line_bytes), lines)),
            "idle":        Out(1),
        })

    def elaborate(self, platform):
        m = Module()
        c = self._cfg
        line_bits = c.line_offset_bits
        layout = row_job_layout(c)

        # Depth 3: SyncFIFOBuffered of depth 2 takes a write only every other cycle, which
        # would cap the traversal at a row per 2 cycles (one uop per lookup, hw/tmu/chain.py).
        jobs = fifo.SyncFIFOBuffered(width=layout.size, depth=3)
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
        have = active | jobs.r_rdy
        per_line = Signal(range(c.line_bytes + 1))       # elements in a whole line
        m.d.comb += per_line.eq(c.line_bytes >> cur.log2_size)

        # Line k of the run from ``cur_addr``: line 0 from the first element, the others whole.
        L = self._lines
        line_addr = [cur_addr] + [Cat(Const(0, line_bits), cur_addr[line_bits:] + k)
                                  for k in range(1, L)]
        in_line = [Signal(range(c.line_bytes + 1), name=f"in_line_{k}") for k in range(L)]
        left_at = [Signal.like(left, name=f"left_{k}") for k in range(L)]
        count = [Signal(range(max(c.line_bytes, 8) + 1), name=f"count_{k}") for k in range(L)]
        last = [Signal(name=f"last_{k}") for k in range(L)]
        m.d.comb += [
            in_line[0].eq((c.line_bytes - cur_addr[0:line_bits]) >> cur.log2_size),
            left_at[0].eq(cur_left),
        ]
        for k in range(1, L):
            m.d.comb += [in_line[k].eq(per_line), left_at[k].eq(left_at[k - 1] - count[k - 1])]
        for k in range(L):
            m.d.comb += [
                count[k].eq(Mux(left_at[k] < in_line[k], left_at[k], in_line[k])),
                last[k].eq(left_at[k] <= in_line[k]),
            ]
        # Request k while requests 0 .. k - 1 are taken: the lines taken are a prefix.
        offered = [have]
        for k in range(1, L):
            offered.append(offered[k - 1] & ~last[k - 1] & self.req_grant[k - 1])
        for k in range(L):
            m.d.comb += [
                self.req_valid[k].eq(offered[k]),
                self.req_addr[k].eq(line_addr[k]),
                self.req_slot[k].eq(cur_slot + k),
                self.issue_bytes[k].eq(count[k] << cur.log2_size),
                self.entry_en[k].eq(offered[k] & self.req_grant[k]),
                self.entry_slot[k].eq(cur_slot + k),
                self.entry[k].load.eq(1),
                self.entry[k].offset.eq(line_addr[k][0:line_bits]),
                self.entry[k].log2_size.eq(cur.log2_size),
                self.entry[k].sign.eq(cur.sign),
                self.entry[k].count.eq(count[k]),
                self.entry[k].pack.eq(cur.pack),
                self.entry[k].flush.eq(cur.flush & last[k]),
            ]
        m.d.comb += self.idle.eq(~have)

        # Requests granted this cycle (a prefix: ``fired``) and where the run goes on.
        fired = [offered[k] & self.req_grant[k] for k in range(L)]
        final_last = Signal()          # the last granted request was the run's last line
        final_left = Signal.like(left)
        m.d.comb += [final_last.eq(last[0]), final_left.eq(left_at[0] - count[0])]
        for k in range(1, L):
            with m.If(fired[k]):
                m.d.comb += [final_last.eq(last[k]), final_left.eq(left_at[k] - count[k])]
        # The next line address and slot for each number of grants, computed from registers
        # before the grants arrive: a grant (late: it depends on every requester before this
        # block on the ports) only selects one, no adder after it.
        next_line = [Signal(64 - line_bits, name=f"next_line_{k}") for k in range(1, L + 1)]
        next_slot = [Signal(c.rob_bits, name=f"next_slot_{k}") for k in range(1, L + 1)]
        for k in range(L):
            m.d.comb += [next_line[k].eq(cur_addr[line_bits:] + k + 1),
                         next_slot[k].eq(cur_slot + k + 1)]
        with m.If(have & self.req_grant[0]):
            m.d.comb += jobs.r_en.eq(~active)
            with m.If(~active):
                m.d.sync += job.eq(head)
            m.d.sync += [
                active.eq(~final_last),
                addr.eq(Cat(Const(0, line_bits), next_line[0])),
                left.eq(final_left),
                slot.eq(next_slot[0]),
            ]
            for k in range(1, L):
                with m.If(fired[k]):
                    m.d.sync += [addr.eq(Cat(Const(0, line_bits), next_line[k])),
                                 slot.eq(next_slot[k])]
        with m.If(self.clear):
            m.d.sync += active.eq(0)
        return m
