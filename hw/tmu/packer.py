"""Operand packer (ISA v1, ``docs/isa.md`` §7.5): elements into beats of 64-bit data tokens."""

from amaranth.hdl import Cat, Const, Module, Mux, Signal
from amaranth.lib import data, stream, wiring
from amaranth.lib.wiring import In, Out

from ..core_if.signatures import DataBeatSignature
from .datapath import extract


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
    This packer keeps ``tokens`` tokens of that string (``buffer``, ``filled`` bytes) and emits
    them as one beat (``docs/rtl.md`` §2.5) when

    * the buffer is full (``filled = 8 tokens``), or the next element does not fit after it
      (its last token then keeps its zero padding, as the golden model's does);
    * no entry is waiting and the buffer holds a whole token (so a slow memory does not hold
      back tokens that are complete; a partial token of a ``JOIN`` stays).

    Elements whose size in memory equals their packed width move as many per cycle as fit the
    buffer (a 64-byte line of a BLOCK row is one beat of eight tokens in one cycle); others move
    one per cycle, zero-/sign-extended to 64 bits and truncated to ``w`` bytes. With ``lanes``
    > 1 the entries ``i``, ``i_more[0]``, ... are placed one after the other in the same cycle
    (an entry only once the one before it is whole), so that two 64-byte lines fill a 1024-bit
    beat per cycle. The token sequence (the concatenation of the beats' ``tokens[:count]``) is
    the golden model's.

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
        cycle its last element is placed.
    i_more : In(stream.Signature(chunk_layout(line_bytes))).array(lanes - 1)
        The entries after ``i``'s (only with ``lanes`` > 1): ``i_more[k]`` is valid only with
        ``i`` and ``i_more[:k]`` valid, and taken only in a cycle in which they all are.
    o : Out(DataBeatSignature(tokens))
        Beats. At most one per cycle; ``valid`` does not depend on ``ready``.
    clear : In(1)
        Drop the partial beat (start of a run).
    holds_token : Out(1)
        The buffer holds a whole token not yet delivered (the unit is not done before it is).
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
        buffer_bytes = 2 * beat_bytes                   # a beat being filled and the next one
        line_bytes = self._line_bytes
        max_count = max(line_bytes, 8)

        buffer = Signal(8 * buffer_bytes)
        filled = Signal(range(buffer_bytes + 1))        # bytes of ``buffer`` in use (< a beat
                                                        # at the start of a cycle)
        used = Signal(range(max_count + 1))             # elements of the head entry placed

        def place(k, e, contents, start, done):
            """Place what fits of entry ``e`` (``done`` of its elements already placed) after
            ``start`` bytes of ``contents``. Returns the new contents, the bytes in use after
            it (padded to a token on the entry's flush), elements placed, and whether the
            entry's last element was placed."""
            log2_width = Signal(2, name=f"log2_width_{k}")
            m.d.comb += log2_width.eq(3 - e.pack)
            width = Signal(4, name=f"width_{k}")
            m.d.comb += width.eq(Const(1, 4) << log2_width)
            at = Signal(range(buffer_bytes + 8), name=f"at_{k}")    # round_up(start, width)
            m.d.comb += at.eq(((start + width - 1) >> log2_width) << log2_width)
            space = Signal(range(buffer_bytes + 1), name=f"space_{k}")  # elements that fit
            m.d.comb += space.eq(Mux(at >= buffer_bytes, 0, (buffer_bytes - at) >> log2_width))
            remaining = Signal(range(max_count + 1), name=f"remaining_{k}")
            m.d.comb += remaining.eq(e.count - done)
            same = e.log2_size == log2_width
            placed = Signal(range(max_count + 1), name=f"placed_{k}")
            m.d.comb += placed.eq(Mux(same, Mux(remaining < space, remaining, space),
                                      Mux((space != 0) & (remaining != 0), 1, 0)))
            position = Signal(range(2 * line_bytes + 64), name=f"position_{k}")
            m.d.comb += position.eq(e.offset + (done << e.log2_size))
            source = Signal(8 * buffer_bytes, name=f"source_{k}")
            m.d.comb += source.eq(Mux(same, e.line >> Cat(Const(0, 3), position),
                                      extract(e.line, position, e.log2_size, e.sign)))
            moved = Signal(range(buffer_bytes + 1), name=f"moved_{k}")   # bytes placed
            m.d.comb += moved.eq(placed << log2_width)
            mask = Signal(8 * buffer_bytes, name=f"mask_{k}")
            with m.Switch(moved):
                for n in range(min(buffer_bytes, 8 * max_count) + 1):
                    with m.Case(n):
                        m.d.comb += mask.eq((1 << (8 * n)) - 1)
            placed_contents = Signal(8 * buffer_bytes, name=f"placed_buffer_{k}")
            m.d.comb += placed_contents.eq(
                contents | ((source & mask) << Cat(Const(0, 3), at))[:8 * buffer_bytes])
            last = Signal(name=f"last_{k}")
            m.d.comb += last.eq(remaining == placed)
            end = Signal(range(buffer_bytes + 8), name=f"end_{k}")
            m.d.comb += end.eq(Mux(placed != 0, at + moved, start))
            closed_end = Signal(range(buffer_bytes + 8), name=f"closed_end_{k}")
            m.d.comb += closed_end.eq(Mux(last & e.flush, Cat(Const(0, 3), (end + 7)[3:]), end))
            return placed_contents, closed_end, placed, last

        # The lanes, chained: lane k places its entry after lane k - 1's only when that one is
        # whole (``active``); an inactive lane leaves the buffer as it is.
        inputs = [self.i] + ([self.i_more[k] for k in range(self._lanes - 1)]
                             if self._lanes > 1 else [])
        contents, end = buffer, filled
        active_prev = Const(1)
        actives, lasts = [], []
        used_next = Signal.like(used)
        for k, lane in enumerate(inputs):
            active = Signal(name=f"active_{k}")
            m.d.comb += active.eq(lane.valid & active_prev)
            lane_contents, lane_end, placed, last = place(
                k, lane.payload, contents, end, used if k == 0 else Const(0, 1))
            stage_contents = Signal(8 * buffer_bytes, name=f"stage_buffer_{k}")
            stage_end = Signal(range(buffer_bytes + 8), name=f"stage_end_{k}")
            m.d.comb += [stage_contents.eq(Mux(active, lane_contents, contents)),
                         stage_end.eq(Mux(active, lane_end, end))]
            if k == 0:
                m.d.comb += used_next.eq(Mux(last, 0, used + placed))
            else:
                with m.If(active):
                    m.d.comb += used_next.eq(Mux(last, 0, placed))
            contents, end = stage_contents, stage_end
            actives.append(active)
            lasts.append(last)
            active_prev = active & last

        def emit(beat, nbytes):
            m.d.comb += [self.o.valid.eq(1), self.o.payload.tokens.eq(beat[:64 * self._tokens]),
                         self.o.payload.count.eq((nbytes + 7) >> 3)]

        with m.If(self.i.valid):
            # Place what fits (all of a line's elements unless the buffer is short of room);
            # the first beat leaves as soon as it is whole, the rest moves down.
            full = end >= beat_bytes
            with m.If(full):
                emit(contents, beat_bytes)
            with m.If(~full | self.o.ready):
                for lane, active, last in zip(inputs, actives, lasts):
                    m.d.comb += lane.ready.eq(active & last)
                m.d.sync += [
                    buffer.eq(Mux(full, contents >> (8 * beat_bytes), contents)),
                    filled.eq(Mux(full, end - beat_bytes, end)),
                    used.eq(used_next),
                ]
        with m.Elif(filled >= 8):
            # Nothing waiting: deliver the whole tokens now; a partial one (JOIN) moves to the
            # front of the buffer.
            whole = filled[3:]
            emit(buffer, Cat(Const(0, 3), whole))
            with m.If(self.o.ready):
                # Bytes from ``filled`` on are zero, so what is left is the token at ``whole``
                # (the partial one): a token select, not a shift of the buffer.
                m.d.sync += [buffer.eq(buffer.word_select(whole, 64)),
                             filled.eq(filled[:3])]

        m.d.comb += self.holds_token.eq(filled >= 8)
        with m.If(self.clear):
            m.d.sync += [buffer.eq(0), filled.eq(0), used.eq(0)]
        return m
