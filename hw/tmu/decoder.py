"""Program decoder: checks an access program and fills the configuration and the microcode.

A thin top over three blocks (``docs/rtl.md`` §2.1)::

    program memory -> ProgramChecker --descriptor--> ConfigWriter --tables--> MicrocodeBuilder
                            |  --checked (counts, layer modes, stream layers)-->  ^    |
                            +------------------------result------------------------+   +--> result
"""

from amaranth.hdl import Module
from amaranth.lib import data, wiring
from amaranth.lib.wiring import In, Out

from .chain_engine import chain_layout
from .config import TmuConfig
from .config_writer import ConfigWriter
from .isa import FaultCode
from .microcode_builder import MicrocodeBuilder
from .program_checker import ProgramChecker
from .signatures import (TraversalConfigSignature, action_table_write_port, microcode_write_port,
                         program_read_port, stream_table_write_port)


__all__ = ["Decoder"]


class Decoder(wiring.Component):
    """Reads the program from the program memory, checks it, configures the traversal.

    :class:`~hw.tmu.program_checker.ProgramChecker` applies the checks of
    ``sw.runtime.isa.Program.decode`` (``docs/isa.md``) in its order and hands every phase-2
    descriptor to :class:`~hw.tmu.config_writer.ConfigWriter` (layer and region registers,
    stream and action configuration memories, stream classes);
    :class:`~hw.tmu.microcode_builder.MicrocodeBuilder` then assigns the run-ahead engines and
    writes the microcode. The first failing check stops the decode with its fault code and PC.

    Each descriptor takes 6 cycles per phase (5 to read its 4 words, 1 to check); the microcode
    build about ``n_layers * (n_streams + 3 * n_actions)`` cycles.

    Parameters
    ----------
    config : TmuConfig

    Members
    -------
    start : In(1)
        Pulse: decode the program now in the program memory. Ignored while ``busy``.
    prog_len : In(32)
        Program length in bytes (``PROG_LEN``).
    args : In(ArrayLayout(64, config.args))
        Argument registers (region bases and sizes are resolved at decode time).
    program : In(memory.ReadPort.Signature(addr_width, ProgramLine))
        The program memory's read port, a line of 4 words per read
        (``signatures.program_read_port``).
    busy : Out(1)
        From the cycle after ``start`` to the cycle of ``done``, both included (the
        ``decode_cycles`` counter).
    done : Out(1)
        Pulse: decoding finished; ``fault``/``fault_code``/``fault_pc`` valid in the same cycle.
    fault, fault_code, fault_pc : Out(1), Out(FaultCode), Out(32)
        The fault code and word index of the first failing check (``docs/isa.md`` §2).
    config : Out(TraversalConfigSignature(config))
        Configuration registers, valid after a ``done`` without ``fault``.
    chain_engine : Out(chain_layout())
        With ``config.chain_engines``: the chain engine's configuration
        (``hw/tmu/chain_detect.py``), valid likewise.
    stream_table, action_table, microcode : In(memory.WritePort.Signature(...))
        Writes into the stream/action configuration memories and the microcode memory.
    """

    def __init__(self, config):
        if not isinstance(config, TmuConfig):
            raise TypeError(f"config must be a TmuConfig, not {config!r}")
        self._cfg = config
        super().__init__({
            "start":        In(1),
            "prog_len":     In(32),
            "args":         In(data.ArrayLayout(64, config.args)),
            "program":      In(program_read_port(config)),
            "busy":         Out(1),
            "done":         Out(1),
            "fault":        Out(1),
            "fault_code":   Out(FaultCode),
            "fault_pc":     Out(32),
            "config":       Out(TraversalConfigSignature(config)),
            **({"chain_engine": Out(chain_layout())} if config.chain_engines else {}),
            "stream_table": In(stream_table_write_port(config)),
            "action_table": In(action_table_write_port(config)),
            "microcode":    In(microcode_write_port(config)),
        })

    def elaborate(self, platform):
        m = Module()
        m.submodules.checker = checker = ProgramChecker(self._cfg)
        m.submodules.writer  = writer  = ConfigWriter(self._cfg)
        m.submodules.builder = builder = MicrocodeBuilder(self._cfg)

        start = self.start & ~self.busy
        m.d.comb += [checker.start.eq(start), writer.start.eq(start), builder.start.eq(start),
                     checker.prog_len.eq(self.prog_len), writer.args.eq(self.args)]
        wiring.connect(m, checker.program, wiring.flipped(self.program))
        wiring.connect(m, checker.checked, writer.checked, builder.checked)
        wiring.connect(m, checker.descriptor, writer.descriptor)
        wiring.connect(m, writer.tables, builder.tables)
        wiring.connect(m, checker.result, builder.check)
        wiring.connect(m, writer.stream_table, wiring.flipped(self.stream_table))
        wiring.connect(m, writer.action_table, wiring.flipped(self.action_table))
        wiring.connect(m, builder.microcode, wiring.flipped(self.microcode))

        m.d.comb += [
            builder.result.ready.eq(1),
            self.busy.eq(checker.busy | builder.busy),
            self.done.eq(builder.result.valid),
            self.fault.eq(builder.result.payload.fault),
            self.fault_code.eq(builder.result.payload.code),
            self.fault_pc.eq(builder.result.payload.pc),
        ]
        cfg, tables = self.config, writer.tables
        for name in ("layers", "regions", "act_flush", "lockstep_valid", "lockstep_layer",
                     "act_vec", "invariant", "lane_pos", "lane_neg", "contiguous_vector"):
            m.d.comb += getattr(cfg, name).eq(getattr(tables, name))
        for name in ("blocking", "body_pc", "exit_pc", "prefetch_stream", "prefetch_layer",
                     "prefetch_offset", "stream_prefetched", "stream_prefetch_engine",
                     "prefetch_skipped_valid", "prefetch_skipped_stream", "prefetch_skipped_two",
                     "lockstep_vector_mode"):
            m.d.comb += getattr(cfg, name).eq(getattr(builder, name))
        if self._cfg.chain_engines:
            m.d.comb += [self.chain_engine.eq(tables.chain_engine),
                         cfg.chain_root.eq(tables.chain_engine.root)]
        return m
