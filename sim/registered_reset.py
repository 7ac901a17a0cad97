"""The simulated system's Verilog top with its reset input registered once.

Verilator re-evaluates every piece of logic that depends on a top-level input in its input
region (``ico``), at every ``eval()`` call: twice per simulated cycle in ``sim/harness.cpp``, and
Verilator 5.006 runs that region on every call whether the inputs changed or not. Amaranth's
registers read the domain's reset in their next-state logic (``if (rst) next = init``), so with
``rst`` a top-level input almost every register of the design was in that region: ~24,600 lines
of generated C++ evaluated twice per cycle, for an input that only changes before the first
``START`` (``docs/performance.md``, "On an idle machine").

:func:`convert` writes the top (``hw.system.System`` or ``hw.multi_system.MultiSystem``) under a
thin wrapper whose ``sync`` domain is reset by a register of the ``rst`` input — the one
synchroniser stage a system top puts on its external reset. The logic is the same; the input
region shrinks to the logic the live inputs (the output queues' ``ready``, the register port, the
back door) drive, ~2,500 lines. Cycle counts do not change: the harness and the cocotb top hold
``rst`` for three cycles and keep it low for one cycle before their first write, so the
registered reset is low by then (the design is reset once more in that idle cycle).

The wrapper is the Verilog module ``ember_system`` with the same ports as the component (its
signature's members, plus ``clk`` and ``rst``); the component is its instance ``system``.
"""

from __future__ import annotations

from amaranth.hdl import ClockDomain, Elaboratable, Module, Signal
from amaranth.hdl._ast import ValueCastable
from amaranth.hdl._ir import PortDirection
from amaranth.lib import wiring

__all__ = ["RegisteredResetTop", "convert"]


class RegisteredResetTop(Elaboratable):
    """``component`` in a ``sync`` domain clocked by ``clk`` and reset by ``rst`` one cycle late.

    ``clk`` and ``rst`` are this top's inputs (1 bit each); ``rst_registered`` (init 1, itself
    never reset) is ``rst`` of the cycle before, the domain's reset."""

    def __init__(self, component: wiring.Component):
        if not isinstance(getattr(component, "signature", None), wiring.Signature):
            self._MustUse__silence = True       # refused: not an unused elaboratable
            raise TypeError(f"component must be a wiring.Component, not {component!r}")
        self.component = component
        self.clk = Signal(name="clk")
        self.rst = Signal(name="rst")
        self.rst_registered = Signal(init=1, reset_less=True, name="rst_registered")

    def ports(self) -> dict:
        """Verilog port name -> (value, direction): the component's signature members, named as
        ``amaranth.back.verilog.convert`` names a component's, then ``clk`` and ``rst``."""
        ports = {}
        for path, member, value in self.component.signature.flatten(self.component):
            if isinstance(value, ValueCastable):
                value = value.as_value()
            direction = PortDirection.Input if member.flow == wiring.In else PortDirection.Output
            ports["__".join(map(str, path))] = (value, direction)
        ports["clk"] = (self.clk, PortDirection.Input)
        ports["rst"] = (self.rst, PortDirection.Input)
        return ports

    def elaborate(self, platform):
        m = Module()
        m.domains.sync = sync = ClockDomain("sync")
        m.submodules.system = self.component
        m.d.comb += [sync.clk.eq(self.clk), sync.rst.eq(self.rst_registered)]
        m.d.sync += self.rst_registered.eq(self.rst)
        return m


def convert(component: wiring.Component, name: str) -> str:
    """Verilog of ``component`` under :class:`RegisteredResetTop`, module ``name``."""
    from amaranth.back import verilog
    top = RegisteredResetTop(component)
    return verilog.convert(top, name=name, ports=top.ports(), emit_src=False)
