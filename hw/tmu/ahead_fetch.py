"""The words of the uop evaluated during another's execution (``TmuConfig.uop_stages = 2``;
``docs/rtl.md`` §2.2 "Two-stage uop", ``hw/tmu/evaluate_stage.py``).

With two stages a uop is evaluated (E) in one cycle and executed (X) in the next. While X
executes a uop, E may evaluate the uop that follows it, if the two do not touch the same
registers (:meth:`~hw.tmu.evaluate_stage.EvaluateStage.overlap`). E then needs that uop's words
in X's cycle, while X still reads its own from the fetch stage (``hw/tmu/fetch.py``): this block
holds a second set, the *ahead* words: a microcode word (a register) and its stream
configuration word (a synchronous read port of ``scfg``, read a cycle ahead).

Which uop: in an E cycle, the one the fetch stage predicts after the uop being evaluated (so
that X's cycle holds the words of the uop after it); in a fetch bubble, the one after the uop
at ``pc`` (the word the bubble fetches: a uop that evaluates nothing executes right after the
bubble, ``EvaluateStage.evaluates_nothing``, and its X cycle evaluates the one after it); in an
X cycle, the one after the ahead uop itself (so that the next X cycle, if it executes the
ahead uop, holds the words of the uop after that): ``pc + 1``, or for a ``NEXT`` (own or
fused) the fetch stage's prediction from the index registers
(``loop_control.predicted_after``), counting the ``NEXT`` the executed uop performs on the same
layer in this cycle (or the range its ``ENTER`` starts): a loop's last iteration is followed by
its exit (or the outer layer's body). In the cycle a blocking load's line arrives (its
completion, ``BWAIT``), as in an X cycle. The prediction needs not be
right: the ahead words are always the words at ``pc`` (the microcode word read at ``pc``, the
stream word at its ``id``), and the execution takes E's results only when it moves to exactly
that ``pc``. A LOCKSTEP layer's ``NEXT`` is predicted by vector iterations (``lanes`` steps
from lane 0's index); a lane step is not predicted (it is not overlapped).

Not a component: it adds its registers and read addresses to the traversal's ``Module``.
"""

from amaranth.hdl import Const, Mux, Signal, signed

from .fetch import entered_layer
from .layouts import LayerCfg, Uop
from .loop_control import has_next, next_layer_of, predicted_after
from .signatures import index_bits


__all__ = ["AheadFetch"]


class AheadFetch:
    """The ahead words and their address.

    Parameters
    ----------
    m : Module
    t : Traversal
        Its ports ``ucode_ahead_*`` (asynchronous microcode read) and ``scfg_ahead_*``
        (synchronous stream configuration read) are driven and read.
    fetch : Fetch
        ``predicted`` and ``predicted_word``: the uop after the one the fetch stage holds.
    executing : Value
        This cycle executes (X: the register; or the cycle a blocking load's line arrives,
        which completes it); otherwise it evaluates (E).
    running : Value
        The traversal is running: the words read this cycle are valid next cycle.
    registers : (indices, ubr, layers, body_pc, exit_pc)
        As :class:`~hw.tmu.loop_control.LoopControl`'s.
    lanes : LockstepLanes
        The LOCKSTEP layer (its ``NEXT`` steps by vector iterations).
    executed : Uop
        The uop X executes (its ``NEXT`` advances a layer before the ahead uop's).
    entered : (Value, Value, Value, Value)
        Whether X's uop performs an ``ENTER`` (own or fused), its layer and its bounds (the
        ahead uop's ``NEXT`` is predicted in the entered range).
    bubble : Value
        A fetch bubble in which nothing executes: the words after ``fetch.current_word`` are
        read.
    hold : Value
        An X cycle in which the executed uop waits and is evaluated again: the ahead words
        stay (the next cycle executes the same uop).

    Attributes
    ----------
    pc : Signal
        Register: the microcode address of the ahead uop.
    uop : Signal(Uop)
        Register: its microcode word.
    sc : Value(StreamCfg)
        Its stream configuration word (``scfg`` at ``uop.id``).
    valid : Signal
        Register: the words were read in this run.
    lay : Signal(LayerCfg)
        Register: the descriptor of the layer the ahead uop enters (its ``id`` for an
        ``ENTER``, else its ``next_layer``: a fused ``ENTER``), read with its words (the layer
        descriptors do not change during a run), so that its bounds' source words are
        registers.
    """

    def __init__(self, m, t, fetch, executing, running, registers, lanes, executed, entered,
                 bubble, hold):
        c = t._cfg
        ubits, sbits, lbits = (index_bits(c.ucode_depth), index_bits(c.streams),
                               index_bits(c.layers))
        self.pc = Signal(ubits, name="ahead_pc")
        self.uop = Signal(Uop, name="ahead_uop")
        self.valid = Signal(name="ahead_valid")
        self.sc = t.scfg_ahead_data
        self.lay = Signal(LayerCfg, name="ahead_layer")

        # The uop after the ahead one: its NEXT's (own or fused) predicted target, else the
        # next entry.
        word = self.uop
        advanced = (has_next(executed), next_layer_of(executed))
        after_ahead = Signal(ubits, name="ahead_next_pc")
        m.d.comb += after_ahead.eq(Mux(has_next(word),
                                       predicted_after(m, word, registers, lanes, advanced,
                                                       entered, ubits, lbits,
                                                       "ahead_loop_next_pc"),
                                       (self.pc + 1)[:ubits]))
        # In a bubble (nothing executes: no index moves), the uop after the one fetched.
        current = fetch.current_word
        nothing = (Const(0), Const(0, lbits))
        no_bounds = (Const(0, signed(64)), Const(0, signed(64)))
        after_current = Signal(ubits, name="ahead_after_fetched_pc")
        m.d.comb += after_current.eq(Mux(has_next(current),
                                         predicted_after(m, current, registers, lanes, nothing,
                                                         (*nothing, *no_bounds), ubits, lbits,
                                                         "ahead_bubble_next_pc"),
                                         (t.ucode_addr + 1)[:ubits]))
        m.d.comb += t.ucode_ahead_addr.eq(Mux(bubble, after_current, after_ahead))

        address = Mux(hold, self.pc, Mux(executing, after_ahead,
                                         Mux(bubble, after_current, fetch.predicted)))
        next_word = Signal(Uop, name="ahead_next_word")
        m.d.comb += next_word.eq(Mux(hold, self.uop,
                                     Mux(executing | bubble, t.ucode_ahead_data,
                                         fetch.predicted_word)))
        m.d.comb += t.scfg_ahead_addr.eq(next_word.id[:sbits])
        m.d.sync += [self.pc.eq(address), self.uop.eq(next_word), self.valid.eq(running),
                     self.lay.eq(entered_layer(m, registers[2], next_word, lbits, "ahead"))]
