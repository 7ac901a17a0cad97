"""Thin top for FPGA synthesis: access unit + core interface, pins within an ECP5 package.

``make synth`` (``scripts/synth.py``, ``docs/synthesis.md``) synthesises this top, not
``hw.system.System``: the memory model is a simulation model, not part of the hardware. The unit's
memory port is 144 bits of request payload and 72 bits of response payload, more than a package
has pins beside the core's register port and output queues, so it goes through a shim:

* the **request payload** (address, tag, write, write data, byte enables) is registered and then
  XOR-folded to ``REQUEST_FOLD_BITS`` output pins (every payload bit reaches a pin, so synthesis
  keeps all the logic that computes it);
* the **response payload** (tag, write, data) is a shift register loaded ``RESPONSE_SERIAL_BITS``
  bits per cycle from input pins (every bit is a free input, so nothing is constant-folded);
* the **register port** and the **output queues** keep their real pins (the core's view);
* **every pin goes through one flip-flop** (inputs and outputs), so the paths nextpnr reports
  are inside the unit, not from a pin through the address decode.

This is not a functional wrapper (the folded request cannot be decoded, the response tag is
whatever the pins shift in): it exists so that the synthesis result counts the unit's logic and
its clock is the unit's. Pins: 78 register port + 66 data queue + 18 control queue + 2 status +
10 request + 5 response + clock and reset = 181; nextpnr places them on the LFE5U-85F in the
CABGA381 package (``tests/test_synth.py`` keeps the count at most 197, the user I/O of the smallest
ECP5 in that package).
"""

from amaranth.hdl import Cat, Module, Signal, Value
from amaranth.lib import stream, wiring
from amaranth.lib.wiring import In, Out

from .core_if import CoreInterface, CsrSignature
from .tmu import Tmu, TmuConfig


__all__ = ["SynthTop", "REQUEST_FOLD_BITS", "RESPONSE_SERIAL_BITS", "xor_fold"]


#: Output pins the registered request payload is XOR-folded to.
REQUEST_FOLD_BITS = 8
#: Input pins that shift into the response payload register each cycle.
RESPONSE_SERIAL_BITS = 4


def xor_fold(value, width):
    """XOR of the ``width``-bit chunks of ``value`` (the last chunk zero-extended): a
    ``width``-bit value that depends on every bit of ``value``. Raises ``ValueError`` for a
    ``width`` that is not a positive integer."""
    if not isinstance(width, int) or width < 1:
        raise ValueError(f"width must be a positive integer, not {width!r}")
    bits = Value.cast(value)
    out = bits[:width]
    for lo in range(width, len(bits), width):
        out = out ^ bits[lo:lo + width]
    return out


class SynthTop(wiring.Component):
    """Access unit (``hw.tmu.Tmu``) and core interface (``hw.core_if.CoreInterface``) behind
    registered pins, for synthesis only (see the module docstring for the shim).

    Parameters
    ----------
    config : TmuConfig
        Default ``TmuConfig()``. Raises ``TypeError`` for anything else.

    Members
    -------
    csr : In(CsrSignature(12))
        Register port of the core interface (inputs and ``r_data`` registered once more, so a
        read returns two cycles later than on ``CoreInterface``).
    data_out : Out(stream.Signature(64)), ctrl_out : Out(stream.Signature(16))
        The output queues (``ready`` registered).
    busy, done : Out(1)
        ``STATUS.BUSY`` / ``STATUS.DONE``, registered.
    req_valid : Out(1), req_ready : In(1)
        The memory request handshake, registered.
    req_fold : Out(REQUEST_FOLD_BITS)
        XOR fold of the registered request payload.
    resp_valid : In(1)
        Response valid, registered.
    resp_serial : In(RESPONSE_SERIAL_BITS)
        Shifted into the response payload register each cycle (low bits first).
    """

    def __init__(self, config=None):
        config = TmuConfig() if config is None else config
        if not isinstance(config, TmuConfig):
            raise TypeError(f"config must be a TmuConfig, not {config!r}")
        self._cfg = config
        super().__init__({
            "csr":         In(CsrSignature(12)),
            "data_out":    Out(stream.Signature(64)),
            "ctrl_out":    Out(stream.Signature(16)),
            "busy":        Out(1),
            "done":        Out(1),
            "req_valid":   Out(1),
            "req_ready":   In(1),
            "req_fold":    Out(REQUEST_FOLD_BITS),
            "resp_valid":  In(1),
            "resp_serial": In(RESPONSE_SERIAL_BITS),
        })

    @property
    def config(self):
        return self._cfg

    def elaborate(self, platform):
        m = Module()
        m.submodules.core_if = cif = CoreInterface(self._cfg)
        m.submodules.tmu = tmu = Tmu(self._cfg)
        wiring.connect(m, cif.tmu, tmu.ctl)
        wiring.connect(m, tmu.data, cif.tmu_data)
        wiring.connect(m, tmu.ctrl, cif.tmu_ctrl)
        m.d.comb += cif.mem_stats.eq(0)

        # Register port and output queues: one flip-flop on every pin.
        m.d.sync += [
            cif.csr.addr.eq(self.csr.addr), cif.csr.w_en.eq(self.csr.w_en),
            cif.csr.w_data.eq(self.csr.w_data), cif.csr.r_en.eq(self.csr.r_en),
            self.csr.r_data.eq(cif.csr.r_data),
            self.data_out.valid.eq(cif.data_out.valid),
            self.data_out.payload.eq(cif.data_out.payload),
            cif.data_out.ready.eq(self.data_out.ready),
            self.ctrl_out.valid.eq(cif.ctrl_out.valid),
            self.ctrl_out.payload.eq(cif.ctrl_out.payload),
            cif.ctrl_out.ready.eq(self.ctrl_out.ready),
            self.busy.eq(tmu.ctl.busy), self.done.eq(tmu.ctl.done),
        ]

        # Memory request: handshake registered, payload registered and folded.
        request = Signal.like(tmu.req.payload)
        m.d.sync += [
            self.req_valid.eq(tmu.req.valid), tmu.req.ready.eq(self.req_ready),
            request.eq(tmu.req.payload),
            self.req_fold.eq(xor_fold(request, REQUEST_FOLD_BITS)),
        ]

        # Memory response: valid registered, payload shifted in from the serial pins.
        response = Signal.like(tmu.resp.payload)
        bits = Value.cast(response)
        m.d.sync += [
            tmu.resp.valid.eq(self.resp_valid),
            bits.eq(Cat(self.resp_serial, bits)[:len(bits)]),
        ]
        m.d.comb += tmu.resp.payload.eq(response)
        return m
