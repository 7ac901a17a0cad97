"""The simulated system's Verilog top with its reset input registered once.

Verilator re-evaluates every piece of logic that depends on a top-level input in its input
region (``ico``), at every ``eval()`` call: twice per simulated cycle in ``sim/harness.cpp``, and
Verilator 5.006 runs that region on every call whether the inputs changed or not. Amaranth's
registers read the domain's reset in their next-state logic (``if (rst) next = init``), so with
``rst`` a top-level input almost every register of the design was in that region: ~24,600 lines
of generated C++ evaluated twice per cycle, for an input that only changes before the first
``START`` (``docs/performance.md``, "On an idle machine").

:func:`convert` writes the top (``hw.system.System`` or ``hw.multi_system.MultiSystem``) under a
thin wrapper that resets it from a register of the ``rst`` input — the one
synchroniser stage a system top puts on its external reset. The logic is the same; the input
region shrinks to the logic the live inputs (the output queues' ``ready``, the register port, the
back door) drive, ~2,500 lines. Cycle counts do not change: the harness and the cocotb top hold
``rst`` for three cycles and keep it low for one cycle before their first write, so the
registered reset is low by then (the design is reset once more in that idle cycle).

The wrapper is the Verilog module ``ember_system`` with the same ports as the component: its
signature's members (the wrapper has the component's signature, connected port by port) and the
``clk``/``rst`` of its own ``sync`` domain. The component is its instance ``system``, in the
domain ``registered`` (``DomainRenamer``): ``sync``'s clock, reset by the register.
"""

from __future__ import annotations

from amaranth.hdl import ClockDomain, ClockSignal, DomainRenamer, Module, ResetSignal, Signal
from amaranth.lib import wiring

__all__ = ["RegisteredResetTop", "convert"]


class RegisteredResetTop(wiring.Component):
    """``component`` clocked by this top's ``sync`` domain and reset by its reset one cycle late.

    The top has ``component``'s signature (its ports, connected straight through) plus, as any
    Amaranth top, the ``clk`` and ``rst`` inputs of ``sync``; ``rst_registered`` (init 1, itself
    never reset) is ``rst`` of the cycle before, the reset of the component's domain. Raises
    ``TypeError`` if ``component`` is not a ``wiring.Component``."""

    def __init__(self, component: wiring.Component):
        if not isinstance(component, wiring.Component):
            self._MustUse__silence = True       # refused: not an unused elaboratable
            raise TypeError(f"component must be a wiring.Component, not {component!r}")
        self.component = component
        self.rst_registered = Signal(init=1, reset_less=True)
        super().__init__(component.signature)

    def elaborate(self, platform):
        m = Module()
        m.domains.registered = registered = ClockDomain("registered")
        m.d.comb += [registered.clk.eq(ClockSignal("sync")), registered.rst.eq(self.rst_registered)]
        m.d.sync += self.rst_registered.eq(ResetSignal("sync"))
        m.submodules.system = DomainRenamer({"sync": "registered"})(self.component)
        # port by port (wiring.connect(m, flipped(self), component) refuses the array members of
        # hw.multi_system.MultiSystem's signature): inputs in, outputs out
        inner = self.component.signature.flatten(self.component)
        for (path, member, mine), (_, _, theirs) in zip(self.signature.flatten(self), inner):
            m.d.comb += theirs.eq(mine) if member.flow == wiring.In else mine.eq(theirs)
        return m


def convert(component: wiring.Component, name: str) -> str:
    """Verilog of ``component`` under :class:`RegisteredResetTop`, module ``name``."""
    from amaranth.back import verilog
    return verilog.convert(RegisteredResetTop(component), name=name, emit_src=False)
