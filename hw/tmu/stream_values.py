"""The traversal's stream value registers and their write ports (``docs/isa.md`` §1 "Streams";
``docs/rtl.md`` §2.2 "Write ports"; ``docs/synthesis.md``, "The stream values' and indices' write
ports").

Each stream keeps its last value in a 64-bit register (``value_<s>``). Several places of the
traversal write one: the executed ``STREAM`` uop's result (its chained ALU stream's too), a
blocking load's element when its line arrives, an engine's head taken by the uop, and the
engines popped by a uop (one each). Written from inside the traversal's conditions, each
write became a 64-bit multiplexer per stream behind every condition it sits in (~30 levels
per stream in the small unit). Here every writer is a *port*: an enable assigned where the
write happens, and a stream id and value read outside any condition; each register takes its
next value from the ports in one place, a multiplexer per port, whatever the conditions.

Not a component: :class:`StreamValues` adds its registers and logic to the traversal's
``Module``.
"""

from amaranth.hdl import Array, Mux, Signal, signed


__all__ = ["StreamValues"]


class StreamValues:
    """``streams`` 64-bit value registers written through ports.

    A port is a named writer, ``(enable, stream, value)``: only its enable is assigned where the
    write happens (in as many places as the writer is used); its stream id and value are
    expressions read where the registers are written, outside any condition. Two ports writing
    one stream in the same cycle: the one whose first use comes later in the traversal's code
    wins, as the later of two statements did (a chained uop's ALU stream, then its own
    stream); the engine pops come first of all (a higher engine over a lower one). A start's
    :meth:`clear` overrides them all.

    Parameters
    ----------
    m : Module
    streams : int
    sbits : int
        Bits of a stream id.

    Attributes
    ----------
    registers : Array of Signal(signed(64))
        ``value_<s>``: the streams' values (registers, read by the sources).
    """

    def __init__(self, m, streams, sbits):
        self._m = m
        self._sbits = sbits
        self.registers = Array(Signal(signed(64), name=f"value_{i}") for i in range(streams))
        self._ports = {}                # name -> (enable, stream, value), by priority
        self._pops = []
        self._clear = Signal(name="values_clear")

    def write(self, name, stream, value):
        """Comb, inside the write's condition: stream ``stream`` takes ``value`` (64 bits) at
        the end of this cycle, through port ``name`` (every use of one name must give the same
        ``stream`` and ``value``: only the first use's are kept)."""
        if name not in self._ports:
            self._ports[name] = (Signal(name=f"value_write_{name}"), stream[:self._sbits],
                                 value)
        self._m.d.comb += self._ports[name][0].eq(1)

    def clear(self):
        """Comb, inside a start's condition: every value 0 at the end of this cycle."""
        self._m.d.comb += self._clear.eq(1)

    def add_pops(self, commit, stream_of, head_data):
        """The engine pops' ports, one per engine: ``commit`` (a bit per engine) writes engine
        ``e``'s head ``head_data[e]`` into its stream ``stream_of[e]``
        (``EnginePops.commit``)."""
        for e in range(len(stream_of)):
            self._pops.append((commit[e], stream_of[e][:self._sbits], head_data[e]))

    def elaborate(self, m):
        """Sync: every register's next value from the ports and the clear (call after every
        write is placed)."""
        for i, value in enumerate(self.registers):
            following = value
            for enable, stream, data in (*self._pops, *self._ports.values()):
                following = Mux(enable & (stream == i), data, following)
            m.d.sync += value.eq(Mux(self._clear, 0, following))
