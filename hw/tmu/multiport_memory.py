"""A memory with several write ports that an FPGA maps to block RAM or LUT RAM: one copy per
write port and read port, and a live-value table."""

from amaranth.hdl import Const, Module, Mux, Signal
from amaranth.lib import memory, wiring
from amaranth.lib.wiring import In, Out


__all__ = ["MultiPortMemory"]


class MultiPortMemory(wiring.Component):
    """``depth`` words of ``shape`` with ``write_ports`` write ports and ``read_ports`` read
    ports, each copy of the storage an ``amaranth.lib.memory.Memory`` with one write and one
    read port, which Yosys maps to block RAM (synchronous reads) or LUT RAM (asynchronous reads).

    A memory with two write ports is mapped to flip-flops by the FPGA flow (``synth_ecp5``):
    the reorder buffer's 512 lines of 64 bytes written by two response ports became 262,144
    flip-flops, three times those of an LFE5U-85F (``docs/synthesis.md``). Here write port
    ``w`` writes copy ``(w, r)`` for every read port ``r``, and a *live-value table* (a memory
    of one ``ceil(log2(write_ports))``-bit entry per word, with a write port per writer, which
    the FPGA flow maps to flip-flops) remembers which write port wrote each word last; read
    port ``r`` returns copy ``(lvt[addr], r)``. This is the LVT multi-ported memory of LaForest
    and Steffan, "Efficient Multi-Ported Memories for FPGAs" (FPGA 2010). With one write port
    it is a single ``Memory`` with ``read_ports`` read ports.

    Semantics (those of an ``amaranth.lib.memory.Memory`` whose read ports are transparent for
    every write port): a synchronous read port (``read_domain="sync"``) returns, the cycle after
    ``addr``, the word at ``addr`` including the writes of the cycle ``addr`` was presented in; an
    asynchronous one (``"comb"``) returns the word as written by the writes of earlier cycles.
    When two write ports write the same address in one cycle, the higher-numbered one wins.
    Like the copies, the table is not reset: a word not written since a reset reads whatever
    copy wrote it last (or copy 0 after power-up, as every memory starts at 0).
    Storage is ``write_ports * read_ports * depth * width`` bits (one copy when
    ``write_ports`` is 1) and ``depth * ceil(log2(write_ports))`` flip-flops.

    Parameters
    ----------
    shape : shape-castable
        Word shape.
    depth : int
        Words, >= 1.
    write_ports, read_ports : int
        Ports, >= 1 each.
    read_domain : "sync" or "comb"
        Synchronous (block RAM) or asynchronous (LUT RAM) read ports.

    Members
    -------
    write : In(WriteSignature).array(write_ports)
        ``addr``, ``data``, ``en`` (1 bit).
    read : In(ReadSignature).array(read_ports)
        ``addr`` in, ``data`` out.

    Raises
    ------
    ValueError
        ``depth``, ``write_ports`` or ``read_ports`` below 1, or ``read_domain`` not ``"sync"``
        or ``"comb"``.
    """

    def __init__(self, *, shape, depth, write_ports, read_ports, read_domain="sync"):
        for name, value in (("depth", depth), ("write_ports", write_ports),
                            ("read_ports", read_ports)):
            if not isinstance(value, int) or isinstance(value, bool) or value < 1:
                raise ValueError(f"{name} must be an integer >= 1, not {value!r}")
        if read_domain not in ("sync", "comb"):
            raise ValueError(f"read_domain must be 'sync' or 'comb', not {read_domain!r}")
        self._shape, self._depth = shape, depth
        self._writes, self._reads, self._domain = write_ports, read_ports, read_domain
        addr = range(depth)
        write = wiring.Signature({"addr": Out(addr), "data": Out(shape), "en": Out(1)})
        read = wiring.Signature({"addr": Out(addr), "data": In(shape)})
        super().__init__({
            "write": In(write).array(write_ports),
            "read":  In(read).array(read_ports),
        })

    def elaborate(self, platform):
        m = Module()
        W, R = self._writes, self._reads
        transparent = self._domain == "sync"

        def copy(name, write_port):
            mem = memory.Memory(shape=self._shape, depth=self._depth, init=[])
            m.submodules[name] = mem
            w = mem.write_port()
            m.d.comb += [w.addr.eq(write_port.addr), w.data.eq(write_port.data),
                         w.en.eq(write_port.en)]
            return mem, w

        if W == 1:
            mem, w = copy("storage", self.write[0])
            for r in range(R):
                port = mem.read_port(domain=self._domain,
                                     **({"transparent_for": [w]} if transparent else {}))
                m.d.comb += [port.addr.eq(self.read[r].addr), self.read[r].data.eq(port.data)]
            return m

        # The live-value table: which write port wrote each word last, a memory of
        # ``ceil(log2(W))``-bit words with W write ports and one asynchronous read port per read
        # port. No FPGA memory has two write ports, so the flow maps it to flip-flops with a
        # decoder per word, as a register per word would be; written as a memory, Verilator
        # simulates each write as one indexed store instead of a compare per word and cycle
        # (docs/performance.md, "The C++ harness, re-measured"). A lower-numbered port's
        # write to the address a higher-numbered one writes in the same cycle is dropped: the
        # higher one wins whatever order the memory gives its write ports.
        lvt = memory.Memory(shape=range(W), depth=self._depth, init=[])
        m.submodules.live_value_table = lvt
        for w in range(W):
            port = lvt.write_port()
            overwritten = Const(0)
            for v in range(w + 1, W):
                overwritten = overwritten | (self.write[v].en
                                             & (self.write[v].addr == self.write[w].addr))
            m.d.comb += [port.addr.eq(self.write[w].addr), port.data.eq(w),
                         port.en.eq(self.write[w].en & ~overwritten)]

        for r in range(R):
            read = self.read[r]
            datas = []
            for w in range(W):
                mem, wp = copy(f"copy_{w}_{r}", self.write[w])
                port = mem.read_port(domain=self._domain,
                                     **({"transparent_for": [wp]} if transparent else {}))
                m.d.comb += port.addr.eq(read.addr)
                datas.append(port.data)
            live = Signal(range(W), name=f"live_read_{r}")
            stored = Signal(range(W), name=f"live_stored_{r}")
            lvt_read = lvt.read_port(domain="comb")
            m.d.comb += [lvt_read.addr.eq(read.addr), stored.eq(lvt_read.data)]
            if transparent:
                # The word's writer after this cycle's writes, registered with the address.
                writer = stored
                for w in range(W):
                    writer = Mux(self.write[w].en & (self.write[w].addr == read.addr),
                                 Const(w, range(W)), writer)
                m.d.sync += live.eq(writer)
            else:
                m.d.comb += live.eq(stored)
            data = datas[0]
            for w in range(1, W):
                data = Mux(live == w, datas[w], data)
            m.d.comb += read.data.eq(data)
        return m
