"""Memory models (simulation only; exempt from synthesisability).

* :class:`HbmMemory` (``hbm.py``) — the HBM model of ``docs/hbm_model.md`` (presets ``HBM2``,
  ``HBM3``, or any DRAM :class:`HbmPreset`);
* :class:`FixedLatencyMemory` (``fixed_latency.py``) — the ``simple`` preset (§3);
* :func:`memory_model` — picks one of them for a preset;
* ``presets.py`` / ``reference.py`` — the parameter sets and the Python reference model.
"""

from .fixed_latency import FixedLatencyMemory, STORAGE_VERILOG
from .hbm import HbmMemory
from .blocks import stat_names
from .presets import HbmPreset, get_preset

__all__ = ["FixedLatencyMemory", "HbmMemory", "STORAGE_VERILOG", "memory_model", "stat_names"]


def memory_model(preset, *, words, tag_bits, storage="memory", init=None, ports=1, line_bytes=8):
    """The memory model of a preset: :class:`FixedLatencyMemory` for a fixed-latency preset
    (``simple``: ``latency = preset.fixed_latency``), else :class:`HbmMemory`.

    Parameters
    ----------
    preset : HbmPreset or str
        A preset or its name (``"simple"``, ``"HBM2"``, ``"HBM3"``; ``presets.get_preset``).
    words : int
        Storage in 64-bit words.
    tag_bits : int
        Request/response tag width.
    storage : str
        ``"memory"`` (Amaranth simulation) or ``"verilog"`` (Verilator builds).
    init : sequence of int, optional
        Initial storage contents, 64-bit words from word 0 (``storage="memory"`` only).
    ports : int
        Request and response ports (``docs/hbm_model.md`` §2; 1 for a fixed-latency preset).
    line_bytes : int
        Data width of a port: 8 (the 64-bit word interface) or a line (``ports.py``).

    Both models have the same members: ``req``, ``resp`` (arrays of ``ports`` streams if
    ``ports > 1``), ``backdoor``, ``image_clear``, ``image_load``, ``stats_clear``,
    ``refresh_restart``, ``stats`` (in
    ``stat_names`` order), and the attributes ``addr_bits``, ``stat_names``, ``verilog_modules``
    (extra Verilog the design needs), ``ports``, ``line_bytes``.

    Raises
    ------
    ValueError
        Unknown preset name (from ``get_preset``) or a bad parameter (``ports`` > 1 with a
        fixed-latency preset).
    """
    if isinstance(preset, str):
        preset = get_preset(preset)
    if not isinstance(preset, HbmPreset):
        raise ValueError(f"preset must be an HbmPreset or a preset name, not {preset!r}")
    if preset.fixed_latency is not None:
        if ports != 1:
            raise ValueError(f"ports must be 1 with the fixed-latency preset {preset.name!r}, "
                             f"not {ports!r}")
        return FixedLatencyMemory(words=words, tag_bits=tag_bits, latency=preset.fixed_latency,
                                  storage=storage, init=init, line_bytes=line_bytes)
    return HbmMemory(preset, words=words, tag_bits=tag_bits, storage=storage, init=init,
                     ports=ports, line_bytes=line_bytes)
