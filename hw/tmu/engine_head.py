"""The head of a run-ahead engine's queue, in registers (``docs/rtl.md`` §2.3;
``docs/synthesis.md``, "The drain window and the engines' heads in registers")."""

from amaranth.hdl import Signal


__all__ = ["EngineHead"]


class EngineHead:
    """The head element of an engine's queue of entries (an affine engine's lines, a chain
    engine's elements) kept in two registers, ``valid`` and ``data``, computed a cycle ahead for
    both outcomes of the traversal's pop and chosen by it, as ``lib.fifo.SyncFIFOBuffered`` does
    for its output: the traversal's path starts at registers, not at a LUT RAM read and an
    element's extraction.

    A response written in cycle ``t`` for the head's entry or the next one is taken from the
    response itself (not only from the memory, which an asynchronous read shows from ``t + 1``),
    so the element is the head in ``t + 1``, as a combinational head would make it
    (``tb/tmu/test_prefetch.py``, ``test_a_line_gives_the_head_two_cycles_after_it_arrives``:
    one more for the output queue, ``hw/tmu/engine_queue.py``).

    Not a component: adds its logic to the engine's ``Module``; the engine owns the slots
    (``head``, ``arrived``, ``count``) and extracts the elements from the words read here.

    Parameters
    ----------
    m : Module
    words : MultiPortMemory
        The entries' words, with (at least) two asynchronous read ports; read port 0 is addressed
        at ``head``, read port 1 at ``head + 1``.
    responses : list of (Value, Value, Value)
        Per response port, ``(valid, slot, word)`` as written into ``words`` in this cycle.
    head : Signal(range(depth))
        Register: the slot of the head's entry (a power-of-two ``depth``: ``head + 1`` wraps).
    arrived : Signal(depth)
        Register: per slot, its response has been written (in an earlier cycle).

    Attributes
    ----------
    valid, data : Signal(1), Signal(64)
        Registers: the head has arrived, and its element (zero/sign-extended to 64 bits).
    next_entry : Signal(range(depth))
        ``head + 1``, the slot after the head's.
    head_word, next_word : Signal(shape of ``words``)
        The head's entry's word and the next entry's: the memory's, or the response written in
        this cycle.
    head_ready, next_ready : Signal
        That word has been written, in an earlier cycle or in this one.
    """

    def __init__(self, m, *, words, responses, head, arrived):
        width = len(words.read[0].data)
        self.next_entry = next_entry = Signal(len(head), name="head_next_entry")
        m.d.comb += [next_entry.eq(head + 1), words.read[0].addr.eq(head),
                     words.read[1].addr.eq(next_entry)]
        self.valid = Signal(name="head_valid")
        self.data = Signal(64, name="head_data")
        head_arrived = Signal(name="head_arrived")
        next_arrived = Signal(name="next_arrived")
        m.d.comb += [head_arrived.eq(arrived.bit_select(head, 1)),
                     next_arrived.eq(arrived.bit_select(next_entry, 1))]
        self.head_word = head_word = Signal(width, name="head_line")
        self.next_word = next_word = Signal(width, name="next_line")
        head_arriving = Signal(name="head_arriving")
        next_arriving = Signal(name="next_arriving")
        m.d.comb += [head_word.eq(words.read[0].data), next_word.eq(words.read[1].data)]
        for valid, slot, word in responses:
            with m.If(valid & (slot == head)):
                m.d.comb += [head_arriving.eq(1), head_word.eq(word)]
            with m.If(valid & (slot == next_entry)):
                m.d.comb += [next_arriving.eq(1), next_word.eq(word)]
        self.head_ready = head_arrived | head_arriving
        self.next_ready = next_arrived | next_arriving

    def update(self, m, *, count, entry_done, refill, head_element, next_element):
        """The head registers after this cycle (later statements of the engine, a start or a
        clear, override them).

        Parameters
        ----------
        count : Value
            Entries issued and not popped (before this cycle's pop).
        entry_done : Value
            This cycle's pop takes the head entry's last element: the head becomes the next
            entry's ``next_element``, valid if that entry exists and its word is ready.
        refill : Value
            Otherwise, the head becomes ``head_element`` (the element after a popped one in the
            same entry, or a waiting head's own), valid if the entry exists and its word is
            ready. Neither: the registers keep their values.
        head_element, next_element : Value(64)
            Extracted from ``head_word`` and ``next_word``.
        """
        with m.If(entry_done):
            m.d.sync += self.valid.eq((count > 1) & self.next_ready)
        with m.Elif(refill):
            m.d.sync += self.valid.eq((count != 0) & self.head_ready)
        # The element: an AND-OR of the three choices, not a multiplexer. Yosys' ``share`` pass
        # (in ``synth_ecp5``) merges two extractions whose results only meet at a
        # multiplexer's data inputs into one, with multiplexers on their inputs (the two line
        # reads, the offsets) selected by ``entry_done``: the traversal's pop then ran through
        # the LUT-RAM read and the extraction, the placed critical path of session 40
        # (``docs/synthesis.md``, "The placed critical path"). Behind AND gates both
        # extractions are always used, and ``entry_done`` selects only their results.
        take_next = Signal(name="head_take_next")
        take_same = Signal(name="head_take_same")
        keep = Signal(name="head_keep")
        m.d.comb += [take_next.eq(entry_done), take_same.eq(~entry_done & refill),
                     keep.eq(~entry_done & ~refill)]
        m.d.sync += self.data.eq((next_element & take_next.replicate(64))
                                 | (head_element & take_same.replicate(64))
                                 | (self.data & keep.replicate(64)))
