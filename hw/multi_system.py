"""The simulated multi-unit system: K core interfaces + access units sharing one memory model.

Issue 11 ("a multi-unit system"); ``docs/rtl.md`` §"Multi-unit system". Each unit is the unit of
``hw.system.System`` (its own register port, program, arguments, counters and output queues);
their memory ports meet the memory's through :class:`hw.interconnect.Interconnect`.
"""

import math

from amaranth.hdl import Module
from amaranth.lib import stream, wiring
from amaranth.lib.wiring import In, Out

from .core_if import CoreInterface, CsrSignature, BackdoorSignature
from .core_if.signatures import DataBeatSignature
from .interconnect import Interconnect, unit_bits
from .system import connect_unit, system_memory, system_preset
from .tmu import Tmu, TmuConfig


__all__ = ["MultiSystem", "UNITS", "default_memory_ports"]

#: The unit counts a multi-unit system is built with.
UNITS = (1, 2, 4, 8)


def default_memory_ports(config, preset, units):
    """The memory's request/response ports for ``units`` units: 1 for the fixed-latency preset;
    else ``config.memory_ports`` for one unit (as ``hw.system.System``) and, for more, as many
    as the preset's peak needs (``ceil(peak_bytes_per_cycle / access_bytes)``, 4 on HBM2, the
    ports of the memory ceiling ``hw.hbm_model.traces.ceiling``), at least
    ``config.memory_ports`` and at most all the units' ports."""
    if preset.fixed_latency is not None:
        return 1
    if units == 1:
        return config.memory_ports
    peak = max(1, math.ceil(preset.peak_bytes_per_cycle / preset.access_bytes))
    return max(config.memory_ports, min(units * config.memory_ports, peak))


class MultiSystem(wiring.Component):
    """Top level for simulation of K access units on one memory.

    Parameters
    ----------
    config : TmuConfig
        Every unit's parameters.
    units : int
        K, one of :data:`UNITS` (1, 2, 4, 8).
    memory : str or HbmPreset
        The shared memory's preset (as ``hw.system.System``).
    mem_words : int
        Memory model size in 64-bit words.
    storage : str
        ``"verilog"`` (Verilator builds) or ``"memory"`` (Amaranth sim).
    memory_ports : int, optional
        The memory's ports (default :func:`default_memory_ports`).

    Each unit ``u`` is a ``CoreInterface`` + ``Tmu`` wired as in ``hw.system.System``; its memory
    requests carry ``u`` in ``unit_bits(units)`` extra high tag bits (the memory has
    ``config.tag_bits + ceil(log2 K)``-bit tags) and the :class:`Interconnect` routes the responses
    back by them (fair round-robin request rule: see its docstring). The memory's statistics are
    readable through every unit's ``CSR.MEM_STATS``; they restart only when ``stats_clear`` is set
    (not when a unit starts, unlike ``System``), so they can cover several runs of several units:
    the C++ harness sets it in the cycle of the common START of a job's first programs, so a job
    whose units run sequences of programs has the memory's statistics of the whole job
    (``sim.multi.run_sequences_on_rtl``), and a job of one program per unit the same statistics
    as a ``System`` whose start clears them. With ``units=1`` and ``stats_clear`` set with the
    START, the system is ``System`` cycle for cycle (``tests/sim/test_multi_system.py``).

    Members
    -------
    csr : In(CsrSignature(12)).array(units)
        Unit ``u``'s register port.
    backdoor : In(BackdoorSignature)
        Memory model back door (one 64-bit word per cycle).
    image_clear, image_load : In(1)
        Memory model fast image load (``storage="verilog"``).
    stats_clear : In(1)
        Restart the memory's statistics at this clock edge (``docs/hbm_model.md`` §5), and its
        refresh interval (``refresh_restart``, §2 "Refresh restart": the job starts at the same
        refresh phase as a ``System`` run).
    data_out : Out(DataBeatSignature(config.output_tokens)).array(units)
    ctrl_out : Out(stream.Signature(16)).array(units)
        Unit ``u``'s output queues.
    busy, done : Out(1).array(units)
        Unit ``u``'s ``STATUS.BUSY`` / ``STATUS.DONE``.

    Raises
    ------
    ValueError
        ``units`` not in :data:`UNITS`; bad ``memory_ports`` (from the memory model).
    """

    def __init__(self, config=None, *, units=1, memory="simple", mem_words=1 << 16,
                 storage="verilog", memory_ports=None):
        if units not in UNITS or isinstance(units, bool):
            raise ValueError(f"units must be one of {UNITS}, not {units!r}")
        config = TmuConfig() if config is None else config
        self._cfg = config
        self.units = units
        if memory_ports is None:
            memory_ports = default_memory_ports(config, system_preset(config, memory), units)
        self.preset, self.mem = system_memory(
            config, memory, mem_words=mem_words, storage=storage, ports=memory_ports,
            tag_bits=config.tag_bits + unit_bits(units))
        self.tmus = [Tmu(config) for _ in range(units)]
        self.core_ifs = [CoreInterface(config, mem_stats=len(self.mem.stat_names))
                         for _ in range(units)]
        self.interconnect = Interconnect(units=units, unit_ports=config.memory_ports,
                                         memory_ports=self.mem.ports, tag_bits=config.tag_bits,
                                         line_bytes=config.line_bytes)
        super().__init__({
            "csr":         In(CsrSignature(12)).array(units),
            "backdoor":    In(BackdoorSignature(self.mem.addr_bits)),
            "image_clear": In(1),
            "image_load":  In(1),
            "stats_clear": In(1),
            "data_out":    Out(DataBeatSignature(config.output_tokens)).array(units),
            "ctrl_out":    Out(stream.Signature(16)).array(units),
            "busy":        Out(1).array(units),
            "done":        Out(1).array(units),
        })

    @property
    def verilog_modules(self):
        """Extra Verilog modules the design instantiates (name -> text), beyond ``storage.v``."""
        return dict(self.mem.verilog_modules)

    def elaborate(self, platform):
        m = Module()
        m.submodules.mem = mem = self.mem
        m.submodules.interconnect = ic = self.interconnect
        for u, (cif, tmu) in enumerate(zip(self.core_ifs, self.tmus)):
            m.submodules[f"core_if_{u}"] = cif
            m.submodules[f"tmu_{u}"] = tmu
            wiring.connect(m, wiring.flipped(self.csr[u]), cif.csr)
            connect_unit(m, cif, tmu)
            wiring.connect(m, cif.data_out, wiring.flipped(self.data_out[u]))
            wiring.connect(m, cif.ctrl_out, wiring.flipped(self.ctrl_out[u]))
            for k in range(self._cfg.memory_ports):
                wiring.connect(m, tmu.req[k], ic.unit_req[u][k])
                wiring.connect(m, ic.unit_resp[u][k], tmu.resp[k])
            m.d.comb += [
                cif.mem_stats.eq(mem.stats),
                self.busy[u].eq(tmu.ctl.busy),
                self.done[u].eq(tmu.ctl.done),
            ]
        for k, (req, resp) in enumerate(zip(mem.request_ports, mem.response_ports)):
            wiring.connect(m, ic.mem_req[k], req)
            wiring.connect(m, resp, ic.mem_resp[k])
        wiring.connect(m, wiring.flipped(self.backdoor), mem.backdoor)
        m.d.comb += [
            mem.stats_clear.eq(self.stats_clear),
            mem.refresh_restart.eq(self.stats_clear),  # the job's common START: its refresh phase
            mem.image_clear.eq(self.image_clear),
            mem.image_load.eq(self.image_load),
        ]
        return m
