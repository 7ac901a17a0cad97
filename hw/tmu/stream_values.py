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
next value from the ports in one place, whatever the conditions.

The writes land a cycle late (session 41): each port's hit on each stream (``enable & stream
== s``) and its value are registered, and the register takes the winning port's value in the
next cycle. The execution's decision (a uop completes, its pops commit, its action fires)
then reaches one flip-flop per port and stream, not the enables of every bit of every value
register across the device (``docs/synthesis.md``, "The value registers written a cycle
late"). Readers see :attr:`StreamValues.view`: the register, or the write of the cycle
before that has not landed yet, so every reader sees exactly what the register would hold
had it been written at once.

Not a component: :class:`StreamValues` adds its registers and logic to the traversal's
``Module``.
"""

from amaranth.hdl import Array, Const, Mux, Signal, signed


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
        ``value_<s>``: the streams' values without the last cycle's writes (registers: a
        write lands here a cycle after its port's enable).
    view : Array of Signal(signed(64))
        ``value_view_<s>``: the streams' values after every write up to the cycle before
        (combinational, from registers only: the register or the registered write that wins);
        what the sources read.
    """

    def __init__(self, m, streams, sbits):
        self._m = m
        self._sbits = sbits
        self.registers = Array(Signal(signed(64), name=f"value_{i}") for i in range(streams))
        self.view = Array(Signal(signed(64), name=f"value_view_{i}") for i in range(streams))
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
        """Sync: each port's hits and value registered, every register's next value from the
        view, the clear over everything (call after every write is placed)."""
        ports = [*self._pops, *self._ports.values()]        # lowest priority first
        names = [f"pop_{e}" for e in range(len(self._pops))] + list(self._ports)
        hits, data = [], []
        for name, (enable, stream, value) in zip(names, ports):
            hit = [Signal(name=f"value_write_{name}_hit_{i}") for i in range(len(self.registers))]
            held = Signal(signed(64), name=f"value_write_{name}_data")
            m.d.sync += [h.eq(~self._clear & enable & (stream == i)) for i, h in enumerate(hit)]
            m.d.sync += held.eq(value)
            hits.append(hit)
            data.append(held)
        for i, (register, view) in enumerate(zip(self.registers, self.view)):
            # The last port hitting stream ``i`` wins (one-hot), else the register: an AND-OR.
            later, following = Const(0), Const(0, signed(64))
            for hit, held in zip(reversed(hits), reversed(data)):
                following = following | Mux(hit[i] & ~later, held, 0)
                later = later | hit[i]
            m.d.comb += view.eq(following | Mux(later, 0, register))
            m.d.sync += register.eq(Mux(self._clear, 0, view))
