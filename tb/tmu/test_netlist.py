"""The access unit converts to a netlist (Amaranth's RTLIL back end) in the configurations the fast
tests simulate and a few neighbours: no combinational cycle, no driver conflict.

The Amaranth simulator runs a design with a combinational cycle without complaint when the cycle
is not exercised (``abc5055``: ``second_load`` gated by the row made a cycle through ``o_block``
in every build with BLOCK streams; the tb suites passed, the first Verilator build of a benchmark
failed). Netlist conversion finds such a cycle in seconds, so every fast tb run checks it here,
on ``TmuConfig.small()`` (~5 s) and variants of it, not only ``tests/test_lint.py`` on the
default system (~70 s of Verilog generation). The last test shows the check can fail.
"""

from __future__ import annotations

from dataclasses import replace

import pytest
from amaranth.back import rtlil
from amaranth.hdl import CombinationalCycle, Module, Signal

from hw.tmu import Tmu, TmuConfig

_SMALL = TmuConfig.small()

#: (name, configuration): the small build, then the feature sets and widths that change which
#: logic exists (BLOCK streams or not, one memory port and a one-token output, no v1 features)
CONFIGS = [
    ("small", _SMALL),
    ("small_no_block", replace(_SMALL, features=("broadcast", "lockstep", "pack"), max_block=0)),
    ("small_no_features", replace(_SMALL, features=(), max_block=0, lanes=1)),
    ("small_one_port_one_token", replace(_SMALL, memory_ports=1, output_tokens=1)),
]


@pytest.mark.parametrize("name,config", CONFIGS, ids=[n for n, _ in CONFIGS])
def test_unit_converts_to_a_netlist(name, config):
    text = rtlil.convert(Tmu(config), name="tmu")
    assert "module \\tmu\n" in text and "traversal" in text, name


def test_a_combinational_cycle_is_reported():
    m = Module()
    a, b = Signal(), Signal()
    m.d.comb += [a.eq(~b), b.eq(a)]
    with pytest.raises(CombinationalCycle):
        rtlil.convert(m, ports=[a, b])
