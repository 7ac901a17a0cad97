"""The simulated system: core interface + access unit + memory model (what Verilator builds)."""

from amaranth.hdl import Module
from amaranth.lib import stream, wiring
from amaranth.lib.wiring import In, Out

from .core_if import CoreInterface, CsrSignature, BackdoorSignature
from .core_if.signatures import DataBeatSignature
from .hbm_model import memory_model
from .hbm_model.presets import get_preset
from .tmu import Tmu, TmuConfig


__all__ = ["System", "connect_memory_ports", "system_preset", "system_memory", "connect_unit"]


def system_preset(config, memory):
    """The memory preset of a system: ``memory`` (a preset or its name), the ``simple``
    (fixed-latency) preset with the unit's ``config.mem_latency``."""
    preset = get_preset(memory) if isinstance(memory, str) else memory
    if preset.fixed_latency is not None:
        preset = preset.replace(fixed_latency=config.mem_latency)
    return preset


def system_memory(config, memory, *, mem_words, storage, ports=None, tag_bits=None):
    """The memory model of a system: ``(preset, model)``.

    ``memory`` is a preset or its name; the ``simple`` (fixed-latency) preset takes the unit's
    ``config.mem_latency`` and has one port (a unit with more uses its first, ``docs/rtl.md``);
    a DRAM preset has ``ports`` ports (default ``config.memory_ports``). Tags are ``tag_bits``
    wide (default ``config.tag_bits``)."""
    preset = system_preset(config, memory)
    if preset.fixed_latency is not None:
        ports = 1
    elif ports is None:
        ports = config.memory_ports
    mem = memory_model(preset, words=mem_words,
                       tag_bits=config.tag_bits if tag_bits is None else tag_bits,
                       storage=storage, ports=ports, line_bytes=config.line_bytes)
    return preset, mem


def connect_unit(m, core_if, tmu):
    """Connect a core interface to its access unit (control, data and control-token queues)."""
    wiring.connect(m, core_if.tmu, tmu.ctl)
    wiring.connect(m, tmu.data, core_if.tmu_data)
    wiring.connect(m, tmu.ctrl, core_if.tmu_ctrl)


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
    restart with every ``CTRL.START``; so does the memory's refresh interval (HBM presets:
    ``refresh_restart``, ``docs/hbm_model.md`` §2 "Refresh restart": every run starts at the same
    refresh phase, whatever ran before it in the same simulation).

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
        self.preset, self.mem = system_memory(config, memory, mem_words=mem_words,
                                              storage=storage)
        self.tmu = Tmu(config)
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
        connect_unit(m, cif, tmu)
        wiring.connect(m, cif.data_out, wiring.flipped(self.data_out))
        wiring.connect(m, cif.ctrl_out, wiring.flipped(self.ctrl_out))
        connect_memory_ports(m, tmu, mem)
        wiring.connect(m, wiring.flipped(self.backdoor), mem.backdoor)
        m.d.comb += [
            cif.mem_stats.eq(mem.stats),
            mem.stats_clear.eq(tmu.ctl.start),
            mem.refresh_restart.eq(tmu.ctl.start),     # every run at the same refresh phase
            mem.image_clear.eq(self.image_clear),
            mem.image_load.eq(self.image_load),
            self.busy.eq(tmu.ctl.busy),
            self.done.eq(tmu.ctl.done),
        ]
        return m
