"""The traversal's fetch stage (``docs/rtl.md`` §2.2 "Fetch stage").

The uop at ``pc`` is evaluated from registered words: its microcode word (a register) and its
stream and action configuration words (synchronous read ports of ``scfg`` and ``acfg``, read a
cycle ahead). Every held word carries the address it was read at (its *tag*); the uop executes
only in a cycle where every tag equals the address the evaluation asks for (``ready``).
Otherwise the cycle is a *bubble*: nothing fires, and the words are read again at the addresses
asked for.

The next uop's words are fetched while the current one executes, from a predicted ``pc``
computed from registers only (the held microcode word, ``pc``, the layer indices and upper
bounds, the layers' body and exit addresses):

* a ``NEXT`` (own uop or fused into a ``STREAM``/``ACT``): its layer's body if the index
  register plus the step is below the upper bound register (exact), else the exit (``pc + 1``,
  or a fused ``NEXT``'s ``exit_pc``); in the LOCKSTEP layer always the body;
* a ``LANE`` step (own uop or fused): the LOCKSTEP layer's body while lanes are left, else
  ``pc + 1``;
* anything else (``ENTER`` of a non-empty range included): ``pc + 1``.

The words are replaced only in a cycle in which the traversal writes ``pc`` (``advance``): a
uop that stays (a full reorder buffer, a blocking load, a row of several chunks) keeps its
words. An empty layer (``ENTER``), the LOCKSTEP layer's exit or a lane step leaving the vector
iteration costs one bubble
(the fetch at the actual ``pc``); an engine-pop fallback step (its stream configuration is not
the uop's) one bubble per step, after the cycle that latches the step (``engine_pop.py``); the
first uop of a run one or two. Tokens, faults and their order are those of the unit without the
stage: only cycles are added.

Left asynchronous: the microcode reads themselves (a register's address: ``pc`` and the
predicted ``pc``, feeding the configuration read addresses). The operand stream's kind and mode,
which the actions need, are not read from ``scfg``: the decoder copies them into the action
words (``ActionCfg.operand_mem``, ``operand_mode``), held here like the rest of the word.
"""

from amaranth.hdl import Array, Mux, Signal

from .layouts import LayerCfg, Uop, UopKind
from .signatures import index_bits
from .source_fields import pick


__all__ = ["Fetch", "entered_layer"]


def entered_layer(m, layers, word, lbits, prefix):
    """The descriptor (``LayerCfg``) of the layer the microcode word ``word`` enters: its
    ``id`` for an ``ENTER``, else its ``next_layer`` (a ``STREAM``'s fused ``ENTER``);
    ``layers``: an ``Array`` of the traversal's layer descriptors."""
    number = Mux(word.kind == UopKind.ENTER, word.id, word.next_layer)[:lbits]
    return pick(m, layers, number, LayerCfg, f"{prefix}_entered_layer")


class Fetch:
    """The fetch stage's logic, added to the traversal's module (not a component: it reads the
    traversal's ``pc``, layers' body addresses and lane state).

    Parameters
    ----------
    m : Module
    t : Traversal
        Its ports ``ucode_data`` (asynchronous read at ``ucode_addr``), ``ucode_predict_*``
        (asynchronous read at the predicted ``pc``), ``scfg_fetch_*``, ``acfg_fetch_*``,
        ``acfg2_fetch_*`` (synchronous reads: the address of this cycle, the word the next) are
        driven and read; ``scfg_addr``, ``acfg_addr``, ``acfg2_addr`` (the addresses the
        evaluation asks for) and ``prefetch_stream`` are read.
    pc : Signal
        The traversal's microcode address (register).
    advance : Value
        The traversal writes ``pc`` this cycle.
    running : Value
        The traversal is running (not idle): the words read this cycle are valid next cycle.
    lanes : LockstepLanes
    loop : tuple of Value
        ``(continues, body, exit)`` of the layer the held uop's ``NEXT`` (own or fused) steps,
        from registers: the loop goes on (predicted: always in a LOCKSTEP layer), its body
        address, its exit address.

    Attributes
    ----------
    uop : Signal(Uop)
        Register: the held microcode word (the entry at ``pc`` when ``ready``).
    ready : Signal
        Every held word is the one the evaluation asks for: the uop may execute.
    predicted : Signal
        The predicted next ``pc`` (combinational, from registers).
    predicted_word : Value(Uop)
        The microcode word at ``predicted`` (the asynchronous read), the uop the held words
        will be when ``pc`` moves to ``predicted`` this cycle.
    current_word : Value(Uop)
        The microcode word at ``pc`` (the asynchronous read), the uop the held words are after
        a bubble.
    lay : Signal(LayerCfg)
        Register: the descriptor of the layer the held microcode word enters
        (:func:`entered_layer`), read with the word (the layer descriptors do not change
        during a run), so that an ``ENTER``'s bound source words are registers.
    """

    def __init__(self, m, t, pc, advance, running, lanes, loop):
        c = t._cfg
        ubits, sbits, abits = index_bits(c.ucode_depth), index_bits(c.streams), index_bits(c.actions)
        engines = c.engines
        self.uop = uop = Signal(Uop, name="fetched_uop")
        self.ready = ready = Signal(name="fetch_ready")
        valid = Signal(name="fetch_valid")          # the held words were read in this run
        uop_pc = Signal(ubits, name="fetched_pc")   # tags of the held words
        scfg_tag = Signal(sbits, name="fetched_scfg_addr")
        acfg_tag = Signal(abits, name="fetched_acfg_addr")
        acfg2_tag = Signal(abits, name="fetched_acfg2_addr")

        prefetch_streams = Array(t.prefetch_stream[i] for i in range(engines))

        # The predicted next pc, from registers only.
        self.predicted = predicted = Signal(ubits, name="predicted_pc")
        pc_inc = (pc + 1)[:ubits]
        lane_next = (Mux(lanes.more_lanes, lanes.body_pc, pc_inc) if lanes.enabled else pc_inc)
        continues, loop_back, loop_exit = loop
        body_kind = (uop.kind == UopKind.STREAM) | (uop.kind == UopKind.ACT)
        with m.If(body_kind & uop.fuse_lane | (uop.kind == UopKind.LANE)):
            m.d.comb += predicted.eq(lane_next)
        with m.Elif(uop.kind == UopKind.NEXT):
            m.d.comb += predicted.eq(Mux(continues, loop_back, pc_inc))
        with m.Elif(body_kind & uop.fuse_next):
            m.d.comb += predicted.eq(Mux(continues, loop_back, loop_exit))
        with m.Else():
            m.d.comb += predicted.eq(pc_inc)

        def config_addresses(word, tag):
            """The configuration addresses a microcode word asks for (as the evaluation
            computes them: ``stream_evaluation.py``, ``actions.py``), outside an engine-pop
            fallback step."""
            pf_engine = word.id[:index_bits(engines)]
            pf_stream = pick(m, prefetch_streams, pf_engine, 8, f"{tag}_prefetch_stream")
            if c.chain_engines:     # the chain engine's PREFETCH reads its root's words
                pf_stream = Mux(pf_engine == c.prefetchers, t.chain_root, pf_stream)
            return (Mux(word.kind == UopKind.PREFETCH, pf_stream, word.id)[:sbits],
                    Mux(word.kind == UopKind.ACT, word.id, word.act_id)[:abits],
                    word.act2_id[:abits])

        m.d.comb += [t.ucode_addr.eq(pc), t.ucode_predict_addr.eq(predicted)]
        self.current_word = current_word = t.ucode_data
        self.predicted_word = predicted_word = t.ucode_predict_data
        uop_ok = valid & (uop_pc == pc)
        asked = (t.scfg_addr, t.acfg_addr, t.acfg2_addr)
        m.d.comb += ready.eq(uop_ok & (scfg_tag == t.scfg_addr) & (acfg_tag == t.acfg_addr)
                             & (acfg2_tag == t.acfg2_addr))

        # The addresses read this cycle: the predicted uop's when pc moves; else the ones the
        # held uop asks for (a uop that stays: the same words; a refetch of a configuration
        # word), or, when the held microcode word is not the one at pc, the current word's.
        reads = (t.scfg_fetch_addr, t.acfg_fetch_addr, t.acfg2_fetch_addr)
        tags = (scfg_tag, acfg_tag, acfg2_tag)
        for read, tag, want, pred, cur in zip(reads, tags, asked,
                                              config_addresses(predicted_word, "predicted"),
                                              config_addresses(current_word, "current")):
            address = Mux(advance, pred, Mux(uop_ok, want, cur))
            m.d.comb += read.eq(address)
            m.d.sync += tag.eq(address)
        fetched_word = Signal(Uop, name="fetched_next_word")
        m.d.comb += fetched_word.eq(Mux(advance, predicted_word, current_word))
        self.lay = Signal(LayerCfg, name="fetched_layer")
        layers = Array(t.layers[i] for i in range(c.layers))
        m.d.sync += [
            self.lay.eq(entered_layer(m, layers, fetched_word, index_bits(c.layers), "fetched")),
            uop.eq(fetched_word),
            uop_pc.eq(Mux(advance, predicted, pc)),
            valid.eq(running),
        ]
