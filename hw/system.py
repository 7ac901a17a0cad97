"""The simulated system: core interface + access unit + memory model (what Verilator builds)."""

from amaranth.hdl import Module
from amaranth.lib import stream, wiring
from amaranth.lib.wiring import In, Out

from .core_if import CoreInterface, CsrSignature, BackdoorSignature
from .core_if.signatures import DataBeatSignature
from .hbm_model import memory_model
from .hbm_model.presets import get_preset
from .tmu import Tmu, TmuConfig


__all__ = ["System", "connect_memory_ports"]


def connect_memory_ports(m, tmu, mem):
    """Connect the unit's request/response ports to the memory's, port ``k`` to port ``k``; the
    unit's ports beyond the memory's are never ready and receive nothing."""
    for k in range(len(tmu.req)):
        if k < len(mem.request_ports):
            wiring.connect(m, tmu.req[k], mem.request_ports[k])
            wiring.connect(m, mem.response_ports[k], tmu.resp[k])
        else:
            m.d.comb += [tmu.req[k].ready.eq(0), tmu.resp[k].valid.eq(0)]


class System(wiring.Component):
    """Top level for simulation.

    Parameters
    ----------
    config : TmuConfig
    memory : str or HbmPreset
        The memory model's preset (``hw.hbm_model.memory_model``): ``"simple"`` (default: the
        fixed-latency memory with ``config.mem_latency``), ``"HBM2"``, ``"HBM3"`` or a preset.
    mem_words : int
        Memory model size in 64-bit words.
    storage : str
        Memory model storage, ``"verilog"`` (Verilator builds) or ``"memory"`` (Amaranth sim).

    The memory's statistics are readable through the core interface (``CSR.MEM_STATS``) and
    restart with every ``CTRL.START``.

    Members
    -------
    csr : In(CsrSignature(12))
        Register port of the core interface.
    backdoor : In(BackdoorSignature)
        Memory model back door (one 64-bit word per cycle).
    image_clear, image_load : In(1)
        Memory model fast image load (``storage="verilog"``).
    data_out : Out(DataBeatSignature(config.output_tokens)), ctrl_out : Out(stream.Signature(16))
        The output queues: data beats of up to ``config.output_tokens`` tokens, control tokens.
    busy, done : Out(1)
        ``STATUS.BUSY`` / ``STATUS.DONE`` as wires (so a testbench can wait without polling).
    """

    def __init__(self, config=None, *, memory="simple", mem_words=1 << 16, storage="verilog"):
        config = TmuConfig() if config is None else config
        self._cfg = config
        preset = get_preset(memory) if isinstance(memory, str) else memory
        if preset.fixed_latency is not None:      # simple: the unit's configured latency
            preset = preset.replace(fixed_latency=config.mem_latency)
        self.preset = preset
        self.tmu = Tmu(config)
        # The fixed-latency memory has one port: a unit with more uses its first (``docs/rtl.md``).
        ports = 1 if preset.fixed_latency is not None else config.memory_ports
        self.mem = memory_model(preset, words=mem_words, tag_bits=config.tag_bits,
                                storage=storage, ports=ports, line_bytes=config.line_bytes)
        self.core_if = CoreInterface(config, mem_stats=len(self.mem.stat_names))
        super().__init__({
            "csr":         In(CsrSignature(12)),
            "backdoor":    In(BackdoorSignature(self.mem.addr_bits)),
            "image_clear": In(1),
            "image_load":  In(1),
            "data_out":    Out(DataBeatSignature(config.output_tokens)),
            "ctrl_out":    Out(stream.Signature(16)),
            "busy":        Out(1),
            "done":        Out(1),
        })

    @property
    def verilog_modules(self):
        """Extra Verilog modules the design instantiates (name -> text), beyond ``storage.v``."""
        return dict(self.mem.verilog_modules)

    def elaborate(self, platform):
        m = Module()
        m.submodules.core_if = cif = self.core_if
        m.submodules.tmu = tmu = self.tmu
        m.submodules.mem = mem = self.mem
        wiring.connect(m, wiring.flipped(self.csr), cif.csr)
        wiring.connect(m, cif.tmu, tmu.ctl)
        wiring.connect(m, tmu.data, cif.tmu_data)
        wiring.connect(m, tmu.ctrl, cif.tmu_ctrl)
        wiring.connect(m, cif.data_out, wiring.flipped(self.data_out))
        wiring.connect(m, cif.ctrl_out, wiring.flipped(self.ctrl_out))
        connect_memory_ports(m, tmu, mem)
        wiring.connect(m, wiring.flipped(self.backdoor), mem.backdoor)
        m.d.comb += [
            cif.mem_stats.eq(mem.stats),
            mem.stats_clear.eq(tmu.ctl.start),
            mem.image_clear.eq(self.image_clear),
            mem.image_load.eq(self.image_load),
            self.busy.eq(tmu.ctl.busy),
            self.done.eq(tmu.ctl.done),
        ]
        return m
