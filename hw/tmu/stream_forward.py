"""What an execution writes, forwarded to the evaluation of the ahead uop in the same cycle
(``TmuConfig.uop_stages = 2``; ``docs/rtl.md`` §2.2 "Two-stage uop", *Forwarding*).

:class:`StreamForward` holds the forwarded entries (stream values and ``wrapped`` bits, layer
indices, the LOCKSTEP layer's vector iteration); ``EvaluateStage.drive_forward``
(``hw/tmu/evaluate_stage.py``) drives them, and the evaluation's source selection
(``OperandSources.read``, ``StreamEvaluation``) reads through them.

Not a component: plain signals in the traversal's ``Module``.
"""

from amaranth.hdl import Mux, Signal, signed


__all__ = ["StreamForward"]


class StreamForward:
    """The stream values, layer indices and vector iteration an execution writes, forwarded to
    the evaluation of the ahead uop in the same cycle (two stages): X keeps its uop's stream
    value and ``wrapped`` bit (and a chained uop's ALU stream's) from the held results, and
    its ``NEXT`` or ``ENTER`` writes a layer's index (and for the LOCKSTEP layer starts a
    vector iteration: ``first``, ``count``, ``span``) from registers and held bounds, so E,
    reading such a stream, index or vector iteration, takes that value instead of the
    register (``OperandSources.read``, ``StreamEvaluation``): what the register holds after
    X, as the one-stage unit's next uop reads it.

    Parameters
    ----------
    lbits : int
        Bits of a layer number.
    name : str
        Prefix of the signals' names.

    Attributes
    ----------
    entries : list of (Signal, Signal(8), Signal(signed(64)), Signal)
        Per forwarded stream: forwarded this cycle, its id, its value and its ``wrapped`` bit
        (driven by :meth:`EvaluateStage.drive_forward`).
    index_entries : list of (Signal, Signal(lbits), Signal(signed(64)))
        Per index written (the ``NEXT``'s layer, with ``next_outer`` the outer one, the
        ``ENTER``'s layer): written this cycle, the layer, the new index.
    vector_entries : list of (Signal, Signal(signed(64)), Signal(8), Signal(signed(40)))
        Per way a vector iteration of the LOCKSTEP layer starts (its ``NEXT``, its ``ENTER``):
        started this cycle, its ``first``, ``count`` and ``span`` (``LockstepLanes``).
    """

    def __init__(self, lbits, name="forward"):
        self.entries = [(Signal(name=f"{name}_{k}_en"), Signal(8, name=f"{name}_{k}_id"),
                         Signal(signed(64), name=f"{name}_{k}_value"),
                         Signal(name=f"{name}_{k}_wraps"))
                        for k in ("stream", "chained")]
        self.index_entries = [(Signal(name=f"{name}_{k}_index_en"),
                               Signal(lbits, name=f"{name}_{k}_layer"),
                               Signal(signed(64), name=f"{name}_{k}_index"))
                              for k in ("next", "outer", "enter")]
        self.vector_entries = [(Signal(name=f"{name}_{k}_vector_en"),
                                Signal(signed(64), name=f"{name}_{k}_first"),
                                Signal(8, name=f"{name}_{k}_count"),
                                Signal(signed(40), name=f"{name}_{k}_span"))
                               for k in ("next", "enter")]

    def _vector(self, field, stored):
        out = stored
        for entry in self.vector_entries:
            out = Mux(entry[0], entry[field], out)
        return out

    def first(self, stored):
        """The LOCKSTEP layer's lane 0 index as E sees it, given the register's ``stored``."""
        return self._vector(1, stored)

    def count(self, stored):
        """The LOCKSTEP layer's active lanes as E sees them, given the register's ``stored``."""
        return self._vector(2, stored)

    def span(self, stored):
        """The LOCKSTEP layer's ``(count - 1) * step`` as E sees it, given the register's
        ``stored``."""
        return self._vector(3, stored)

    def index(self, layer, stored):
        """Layer ``layer``'s index as E sees it, given the register's ``stored`` (at most one
        entry is written in a cycle)."""
        out = stored
        for enable, number, value in self.index_entries:
            out = Mux(enable & (number == layer), value, out)
        return out

    def value(self, number, stored):
        """Stream ``number``'s value (8 bits of a source's ``value``) as E sees it, given the
        register's ``stored``."""
        out = stored
        for enable, sid, value, _ in reversed(self.entries):   # the stream's own value wins
            out = Mux(enable & (sid == number), value, out)
        return out

    def wraps(self, number, stored):
        """Stream ``number``'s ``wrapped`` bit as E sees it, given the register's ``stored``."""
        out = stored
        for enable, sid, _, wraps in reversed(self.entries):
            out = Mux(enable & (sid == number), wraps, out)
        return out
