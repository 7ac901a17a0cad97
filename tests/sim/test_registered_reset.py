"""The Verilog top with a registered reset (sim/registered_reset.py): the same ports as the
component converted alone, and the domain's reset taken from a register of ``rst``.

(Every RTL test runs on this top: the system's token-for-token suites are its behavioural test.)
"""

import re

import pytest
from amaranth.back import verilog
from amaranth.hdl import Module
from amaranth.lib import wiring
from amaranth.lib.wiring import In, Out

from sim.registered_reset import RegisteredResetTop, convert


class _Counter(wiring.Component):
    enable: In(1)
    count: Out(8)

    def elaborate(self, platform):
        m = Module()
        with m.If(self.enable):
            m.d.sync += self.count.eq(self.count + 1)
        return m


def _ports(text: str, name: str) -> set[str]:
    header = re.search(rf"^module {name}\((.*?)\);", text, re.M | re.S).group(1)
    return {p.strip() for p in header.split(",")}


def test_the_top_has_the_components_ports_and_registers_its_reset():
    text = convert(_Counter(), "top")
    assert _ports(text, "top") == _ports(verilog.convert(_Counter(), name="top"), "top") \
        == {"enable", "count", "clk", "rst"}
    top = text[text.index("module top("):text.index("endmodule")]
    # the component's reset is a register (initially 1) whose input is the top's rst
    reset = re.search(r"\.(?:registered_)?rst\((\S+?) ?\)", top).group(1)   # the instance's reset
    assert reset != "rst"
    assert re.search(rf"reg {re.escape(reset)}\s*= 1'h1;", top)
    assert re.search(rf"always @\(posedge clk\)\s*{re.escape(reset)}\s*<= rst;", top)


def test_a_top_needs_a_component():
    with pytest.raises(TypeError, match="wiring.Component, not 42"):
        RegisteredResetTop(42)
