"""Operand packer (ISA v1, ``docs/isa.md`` §7.5): elements into beats of 64-bit data tokens."""

from amaranth.hdl import Cat, Const, Module, Mux, Signal
from amaranth.lib import data, stream, wiring
from amaranth.lib.wiring import In, Out

from ..core_if.signatures import DataBeatSignature
from .datapath import extend


__all__ = ["chunk_layout", "Packer"]


def chunk_layout(line_bytes):
    """One reorder-buffer entry as the packer sees it: ``count`` consecutive elements of
    ``1 << log2_size`` bytes, the first at byte ``offset`` of ``line``, each to be packed as an
    element of ``8 >> pack`` bytes.

    ``line`` is ``8 * line_bytes`` bits: the aligned line a load returned, or an immediate
    operand in its low 64 bits. ``count`` goes up to ``max(line_bytes, 8)`` (a line of bytes, or
    eight zero elements of masked lanes)."""
    return data.StructLayout({
        "line":      8 * line_bytes,                    # the loaded line or the operand
        "offset":    max(1, (line_bytes - 1).bit_length()),  # byte of the first element
        "log2_size": 2,     # log2 of the element size in ``line``, bytes (3: an immediate)
        "sign":      1,     # sign-extend an element narrower than its packed width
        "count":     max(line_bytes, 8).bit_length(),   # elements (0: no element, only ``flush``)
        "pack":      2,     # packed element width = 8 >> pack bytes
        "flush":     1,     # after the last element: close the partial token
    })


class Packer(wiring.Component):
    """The data-queue packer of ``docs/isa.md`` §7.5, ``tokens`` tokens wide.

    The golden model's packer keeps one partial 64-bit token and a byte offset ``o``: for each
    element of ``w = 8 >> pack`` bytes, ``o' = round_up(o, w)``; if ``o' + w > 8`` the partial
    token is emitted first; the element's low ``w`` bytes go to bytes ``[o', o' + w)``; a full
    token is emitted; ``flush`` emits a partial token (bytes ``[o, 8)`` zero). Since ``w``
    divides 8, that is the same as appending elements, each aligned to its width, to a byte
    string cut into tokens every 8 bytes, with ``flush`` padding to the next token boundary.
    This packer works on that string in two stages (``docs/rtl.md`` §2.5):

    1. **Segments.** Each cycle it takes entries into a *group*, registered: the segment of
       each entry (``i``, then ``i_more[0]``, ...) placed in that cycle, its elements from byte
       0 and zero after them, and the byte of the group where it starts. Elements whose size
       in memory equals their packed width go as they lie in the line, up to ``min(line_bytes,
       8 * tokens)`` bytes per cycle (a 64-byte line of a BLOCK row in one cycle); others one per
       cycle, zero-/sign-extended to 64 bits and truncated to ``w`` bytes. The group counts its
       bytes from the start of the token in which the string ends: the string's length modulo
       8 (``phase``) depends only on what was packed, never on the beats, so this stage aligns
       each segment to its width and pads each flush itself, knowing nothing of stage 2. An
       entry joins the group only once the one before it is whole in it, and only while the
       group ends within ``8 * tokens + 8`` bytes (``limit``): two 64-byte lines for a 1024-bit
       beat, or a 64-byte line and an immediate operand (SpMM's row and ``val[j]``), go in one
       cycle.
    2. **Beats.** A buffer of ``8 * tokens + limit`` bytes (``buffer``, ``filled``) takes the
       group after its last whole token (no rounding: the group carries its padding) when it
       fits, and emits its first tokens as one beat (``docs/rtl.md`` §2.5), from the register,
       when

       * it holds a whole beat (``tokens`` tokens);
       * nothing waits in stage 1 or at ``i`` and it holds a whole token (so a slow memory does
         not hold back tokens that are complete; a partial token of a ``JOIN`` stays).

       It always takes the group when what stays after this cycle's beat is short of a beat,
       and it keeps taking groups while the output stalls, so after a stall the beats are
       whole again from the first one on.

    An entry's first tokens leave two cycles after the cycle that takes it, at the earliest
    (stage 1, stage 2, then the beat), one cycle more than the one-stage packer this replaced
    (issue 10) for a partial beat and two for a whole one; the rates are the same: a 64-byte
    line per lane per cycle into a beat per cycle, one element per cycle of an entry whose
    elements are extended. The token sequence (the concatenation
    of the beats' ``tokens[:count]``) is the golden model's.

    Parameters
    ----------
    line_bytes : int
        Width of an entry's ``line``, bytes (``TmuConfig.line_bytes``).
    tokens : int
        Tokens per beat, 1..32 (``TmuConfig.output_tokens``).
    lanes : int
        Entries taken per cycle, 1..4 (``TmuConfig.drain_lines``).

    Members
    -------
    i : In(stream.Signature(chunk_layout(line_bytes)))
        Entries from the reorder buffer, in program order. An entry is taken (``ready``) in the
        cycle its last element goes into stage 1's group.
    i_more : In(stream.Signature(chunk_layout(line_bytes))).array(lanes - 1)
        The entries after ``i``'s (only with ``lanes`` > 1): ``i_more[k]`` is valid only with
        ``i`` and ``i_more[:k]`` valid, and taken only in a cycle in which they all are.
    o : Out(DataBeatSignature(tokens))
        Beats. At most one per cycle; ``valid`` does not depend on ``ready``.
    clear : In(1)
        Drop everything the packer holds, in both stages (start of a run).
    holds_token : Out(1)
        A group waits in stage 1, or the buffer holds a whole token not yet delivered (the unit
        is not done before both are false: ``hw/tmu/tmu.py``'s ``rob_empty``).
    """

    def __init__(self, line_bytes=8, tokens=1, lanes=1):
        if line_bytes not in (8, 16, 32, 64):
            raise ValueError(f"line_bytes must be 8, 16, 32 or 64, not {line_bytes!r}")
        if tokens not in (1, 2, 4, 8, 16, 32):
            raise ValueError(f"tokens must be 1, 2, 4, 8, 16 or 32, not {tokens!r}")
        if not isinstance(lanes, int) or not 1 <= lanes <= 4:
            raise ValueError(f"lanes must be an integer in 1..4, not {lanes!r}")
        self._line_bytes = line_bytes
        self._tokens = tokens
        self._lanes = lanes
        members = {
            "i": In(stream.Signature(chunk_layout(line_bytes))),
            "o": Out(DataBeatSignature(tokens)),
            "clear": In(1),
            "holds_token": Out(1),
        }
        if lanes > 1:
            members["i_more"] = In(stream.Signature(chunk_layout(line_bytes))).array(lanes - 1)
        super().__init__(members)

    def elaborate(self, platform):
        m = Module()
        beat_bytes = 8 * self._tokens
        line_bytes = self._line_bytes
        max_count = max(line_bytes, 8)
        seg_bytes = min(line_bytes, beat_bytes)         # an entry's bytes per cycle, at most
        limit = beat_bytes + 8                          # a group's end, at most (see below)
        buffer_bytes = beat_bytes + limit               # a beat and a group
        position_end = 2 * line_bytes + 64              # bound of an element's byte in a line
        inputs = [self.i] + ([self.i_more[k] for k in range(self._lanes - 1)]
                             if self._lanes > 1 else [])

        # Stage 1: entries into a group of aligned byte segments. The group's byte positions
        # count from the start of the token holding the fill position (``phase`` = its bytes
        # before that position), which is the same in stage 2's buffer when the group arrives:
        # the position modulo 8 depends only on what was packed, never on the beats.
        phase = Signal(3)                   # byte string length modulo 8 after the last group
        # The head entry when earlier groups took some of its elements (``partial``): elements
        # left and the byte of the next one in its line, so no adder precedes the extraction.
        partial = Signal()
        left = Signal(range(max_count + 1))
        resume = Signal(range(position_end))
        seg_valid = Signal()                # a group waits for stage 2
        seg_data = [Signal(8 * seg_bytes, name=f"seg_data_{k}") for k in range(self._lanes)]
        seg_start = [Signal(range(limit + 1), name=f"seg_start_{k}")
                     for k in range(self._lanes)]
        seg_on = [Signal(name=f"seg_on_{k}") for k in range(self._lanes)]
        seg_end = Signal(range(limit + 1))  # the group's end (its flushes' padding included)

        # Stage 2: the buffer. ``filled`` <= ``buffer_bytes``; bytes from ``filled`` on are 0.
        buffer = Signal(8 * buffer_bytes)
        filled = Signal(range(buffer_bytes + 1))

        def round_up(value, log2_align, name):
            """``value`` rounded up to a multiple of ``1 << log2_align`` (at most 8): an
            increment of ``value[3:]`` and a choice of its low 3 bits, not a general adder."""
            low = Signal(4, name=f"{name}_low")     # round_up(value[:3], align), 0..8
            with m.Switch(Cat(value[:3], log2_align)):
                for v in range(8):
                    for j in range(4):
                        with m.Case(v | (j << 3)):
                            m.d.comb += low.eq(-(-v >> j) << j)
            rounded = Signal(len(value) + 1, name=name)
            m.d.comb += rounded.eq(Cat(low[:3], value[3:] + low[3]))
            return rounded

        def lane_part(k, e, remaining, position):
            """What entry ``e`` (``remaining`` elements left, the next at byte ``position`` of
            its line) puts in the group, wherever it goes: its data (elements from byte 0, zero
            after them), bytes, whether it holds the entry's last element, the elements, the
            packed width's log2 and whether the entry is not empty."""
            log2_width = Signal(2, name=f"log2_width_{k}")
            m.d.comb += log2_width.eq(3 - e.pack)
            same = Signal(name=f"same_{k}")
            m.d.comb += same.eq(e.log2_size == log2_width)
            cap = Signal(range(seg_bytes + 1), name=f"cap_{k}")    # same-size elements that fit
            with m.Switch(e.log2_size):
                for j in range(4):
                    with m.Case(j):
                        m.d.comb += cap.eq(seg_bytes >> j)
            # Same-size elements: as many as ``seg_bytes`` hold; others one per group.
            some = Signal(name=f"some_{k}")
            m.d.comb += some.eq(remaining != 0)
            last = Signal(name=f"last_{k}")
            m.d.comb += last.eq(Mux(same, remaining <= cap, remaining <= 1))
            placed = Signal(range(max_count + 1), name=f"placed_{k}")
            m.d.comb += placed.eq(Mux(same, Mux(last, remaining, cap), some))
            moved = Signal(range(seg_bytes + 1), name=f"moved_{k}")    # bytes in the group
            m.d.comb += moved.eq(Mux(same, Mux(last, remaining << e.log2_size, seg_bytes),
                                     Mux(some, Const(1, 4) << log2_width, 0)))
            # The data: the line from byte ``position`` on, or the element there extended; the
            # bytes after the segment's (the line's next elements) cleared.
            shifted = Signal(8 * seg_bytes, name=f"shifted_{k}")
            m.d.comb += shifted.eq(e.line >> Cat(Const(0, 3), position))
            element = Signal(64, name=f"element_{k}")
            m.d.comb += element.eq(Mux(e.log2_size == 0, extend(shifted, 8, e.sign),
                                   Mux(e.log2_size == 1, extend(shifted, 16, e.sign),
                                   Mux(e.log2_size == 2, extend(shifted, 32, e.sign),
                                       shifted[:64]))))
            # Byte b is kept when b < moved: for same-size elements when the element b holds
            # is one of ``remaining`` (a comparison with a constant per size, not a decoder of
            # ``moved``); for an extended one when b < its packed width.
            keep = Signal(seg_bytes, name=f"keep_{k}")
            for b in range(seg_bytes):
                m.d.comb += keep[b].eq(Mux(same, remaining > (b >> e.log2_size)[:8],
                                           some & (b < (Const(1, 4) << log2_width))))
            data_k = Signal(8 * seg_bytes, name=f"data_{k}")
            m.d.comb += data_k.eq(Mux(same, shifted, element) &
                                  Cat(keep[b].replicate(8) for b in range(seg_bytes)))
            return data_k, moved, last, placed, log2_width, some

        # The lanes, chained: lane k joins the group after lane k - 1's entry, only when that
        # one is whole in it and the group still ends by ``limit``.
        advance = Signal()                  # stage 1 takes a group (registered next edge)
        accept = Signal()                   # stage 2 appends the waiting group
        m.d.comb += advance.eq(self.i.valid & (~seg_valid | accept))
        datas, starts, joins = [], [], []
        joined_prev = last_prev = flush_prev = end_prev = None
        group_end = None
        partial_next, left_next, resume_next = Const(0), Const(0), Const(0)
        for k, lane in enumerate(inputs):
            e = lane.payload
            remaining = Signal(range(max_count + 1), name=f"remaining_{k}")
            position = Signal(range(position_end), name=f"position_{k}")
            if k == 0:
                m.d.comb += [remaining.eq(Mux(partial, left, e.count)),
                             position.eq(Mux(partial, resume, e.offset))]
            else:
                m.d.comb += [remaining.eq(e.count), position.eq(e.offset)]
            data_k, moved, last, placed, log2_width, some = lane_part(k, e, remaining, position)
            closing = Signal(name=f"closing_{k}")       # the entry's flush closes its token
            m.d.comb += closing.eq(last & e.flush)
            # Where the segment starts: after the previous lane's end (its flush's padding
            # included), aligned to the packed width; one rounding of the end.
            start = Signal(range(limit + 1), name=f"start_{k}")
            if k == 0:
                m.d.comb += start.eq(round_up(phase, Mux(some, log2_width, 0), f"aligned_{k}"))
            else:
                m.d.comb += start.eq(round_up(end_prev, Mux(flush_prev, 3,
                                                            Mux(some, log2_width, 0)),
                                              f"aligned_{k}"))
            end = Signal(range(limit + seg_bytes + 1), name=f"end_{k}")
            m.d.comb += end.eq(start + moved)
            closed = Signal(range(limit + seg_bytes + 9), name=f"closed_{k}")
            m.d.comb += closed.eq(Mux(closing, round_up(end, Const(3, 2), f"closed_up_{k}"),
                                      end))
            joined = Signal(name=f"joined_{k}")
            if k == 0:
                m.d.comb += joined.eq(lane.valid)
            else:
                # round_up(closed_prev, width) + moved <= limit is closed_prev <= limit - moved
                # (a multiple of the width); round_up(end_prev, 8) <= x is end_prev <= x & ~7.
                room = Signal(range(limit + 1), name=f"room_{k}")
                m.d.comb += room.eq(limit - moved)
                fits = Signal(name=f"fits_{k}")
                m.d.comb += fits.eq(end_prev <= Mux(flush_prev, Cat(Const(0, 3), room[3:]), room))
                m.d.comb += joined.eq(lane.valid & joined_prev & last_prev & fits)
            m.d.comb += lane.ready.eq(advance & joined & last)
            # The head entry after this group: the first joined lane whose entry is not whole.
            stays = joined & ~last
            partial_next = Mux(stays, 1, partial_next) if k else stays
            left_next = Mux(stays, remaining - placed, left_next) if k else remaining - placed
            resume_next = (Mux(stays, position + (placed << e.log2_size), resume_next) if k
                           else position + (placed << e.log2_size))
            group_end_k = Signal(range(limit + 1), name=f"group_end_{k}")
            m.d.comb += group_end_k.eq(Mux(joined, closed, group_end) if k else closed)
            datas.append(data_k)
            starts.append(start)
            joins.append(joined)
            joined_prev, last_prev, flush_prev, end_prev = joined, last, closing, end
            group_end = group_end_k

        with m.If(advance):
            m.d.sync += [phase.eq(group_end[:3]), seg_end.eq(group_end),
                         partial.eq(partial_next), left.eq(left_next), resume.eq(resume_next)]
            m.d.sync += [seg_data[k].eq(datas[k]) for k in range(self._lanes)]
            m.d.sync += [seg_start[k].eq(starts[k]) for k in range(self._lanes)]
            m.d.sync += [seg_on[k].eq(joins[k]) for k in range(self._lanes)]
        m.d.sync += seg_valid.eq(advance | (seg_valid & ~accept))

        # Stage 2: beats leave from the buffer register: a whole beat when it holds one; whole
        # tokens when nothing waits in stage 1 or at the inputs (a partial token of a JOIN
        # stays). The waiting group is appended after the token ``whole`` when it fits what
        # stays of the buffer: always when that is short of a beat (``beat_bytes - 8 + limit
        # <= buffer_bytes``). A buffer that stopped taking groups while the output stalled
        # (``8 whole + group > buffer_bytes``) holds, after its beat leaves, more than
        # ``buffer_bytes - beat_bytes = limit`` bytes with or without the group: the next beat
        # is whole too (no bubble when the output resumes).
        whole = filled[3:]                  # whole tokens in the buffer
        beat_full = Signal()
        m.d.comb += beat_full.eq(filled >= beat_bytes)
        idle = ~seg_valid & ~self.i.valid
        m.d.comb += [
            self.o.valid.eq(beat_full | (idle & (whole != 0))),
            self.o.payload.tokens.eq(buffer[:8 * beat_bytes]),
            self.o.payload.count.eq(Mux(beat_full, self._tokens, whole)),
        ]
        taken_beat = Signal()               # a whole beat leaves
        taken_tokens = Signal()             # whole tokens leave, the partial one stays
        m.d.comb += [taken_beat.eq(beat_full & self.o.ready),
                     taken_tokens.eq(~beat_full & idle & (whole != 0) & self.o.ready)]
        group_end = Signal(range(buffer_bytes + limit + 1))   # the group's end in the buffer
        m.d.comb += group_end.eq(Cat(Const(0, 3), whole) + seg_end)
        m.d.comb += accept.eq(seg_valid & Mux(taken_beat, group_end <= buffer_bytes + beat_bytes,
                                              group_end <= buffer_bytes))
        # The segments after the token ``whole`` of the buffer, before this cycle's beat leaves
        # (so that ``o.ready`` selects only the last multiplexer).
        merged_bytes = buffer_bytes + beat_bytes
        merged_prev = buffer
        for k in range(self._lanes):
            at = Signal(range(buffer_bytes + limit + 1), name=f"at_{k}")  # bytes before segment k
            m.d.comb += at.eq(Cat(Const(0, 3), whole) + seg_start[k])
            merged_k = Signal(8 * merged_bytes, name=f"merged_{k}")
            m.d.comb += merged_k.eq(merged_prev | (Mux(seg_on[k], seg_data[k], 0)
                                                   << Cat(Const(0, 3), at))[:8 * merged_bytes])
            merged_prev = merged_k
        source = Signal(8 * merged_bytes)
        m.d.comb += source.eq(Mux(accept, merged_prev, buffer))
        source_filled = Signal(range(buffer_bytes + beat_bytes + 1))
        m.d.comb += source_filled.eq(Mux(accept, group_end, filled))
        m.d.sync += [
            buffer.eq(Mux(taken_beat, source[8 * beat_bytes:],
                          Mux(taken_tokens, buffer.word_select(whole, 64), source))),
            filled.eq(Mux(taken_beat, source_filled - beat_bytes,
                          Mux(taken_tokens, filled[:3], source_filled))),
        ]

        m.d.comb += self.holds_token.eq((filled >= 8) | seg_valid)
        with m.If(self.clear):
            m.d.sync += [buffer.eq(0), filled.eq(0), partial.eq(0), phase.eq(0), seg_valid.eq(0)]
        return m
