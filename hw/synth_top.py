"""Thin top for FPGA synthesis: access unit + core interface, pins within an ECP5 package.

``make synth`` (``scripts/synth.py``, ``docs/synthesis.md``) synthesises this top, not
``hw.system.System``: the memory model is a simulation model, not part of the hardware. The unit's
memory ports (``config.memory_ports`` of them, each a request with a line of write data and a
response with a line of read data) and its vector-wide data output are far more bits than a
package has pins, so they go through a shim:

* the **request payloads** of all ports are registered and XOR-folded to ``REQUEST_FOLD_BITS``
  output pins, the **data beat** to ``DATA_FOLD_BITS`` (every payload bit reaches a pin, so
  synthesis keeps all the logic that computes it);
* the **response payloads** of all ports are one shift register loaded ``RESPONSE_SERIAL_BITS``
  bits per cycle from input pins (every bit is a free input, so nothing is constant-folded);
* the **register port**, the handshakes and the **control queue** keep their real pins;
* **every pin goes through one flip-flop** (inputs and outputs), so the paths nextpnr reports
  are inside the unit, not from a pin through the address decode.

This is not a functional wrapper (the folded values cannot be decoded, the response tags are
whatever the pins shift in): it exists so that the synthesis result counts the unit's logic and
its clock is the unit's. Pins: 78 register port + 66 data + 18 control + 2 status + 3 per memory
port + 8 request fold + 4 response serial + clock and reset = 184 with the default two ports;
``tests/test_synth.py`` keeps the count at most 197, the user I/O of the smallest ECP5 in the
CABGA381 package.
"""

from amaranth.hdl import Cat, Module, Signal, Value
from amaranth.lib import stream, wiring
from amaranth.lib.wiring import In, Out

from .core_if import CoreInterface, CsrSignature
from .tmu import Tmu, TmuConfig


__all__ = ["SynthTop", "DATA_FOLD_BITS", "REQUEST_FOLD_BITS", "RESPONSE_SERIAL_BITS", "xor_fold"]


#: Output pins the registered request payloads (all memory ports) are XOR-folded to.
REQUEST_FOLD_BITS = 8
#: Output pins the registered data beat (``config.output_tokens`` 64-bit tokens and a count) is
#: XOR-folded to.
DATA_FOLD_BITS = 64
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
    data_out : Out(stream.Signature(DATA_FOLD_BITS))
        The data queue: ``valid``, ``ready`` registered, the registered beat XOR-folded.
    ctrl_out : Out(stream.Signature(16))
        The control queue (``ready`` registered).
    busy, done : Out(1)
        ``STATUS.BUSY`` / ``STATUS.DONE``, registered.
    req_valid : Out(memory_ports), req_ready : In(memory_ports)
        The memory request handshakes (bit ``k``: port ``k``), registered.
    req_fold : Out(REQUEST_FOLD_BITS)
        XOR fold of the registered request payloads of all ports.
    resp_valid : In(memory_ports)
        Response valid per port, registered.
    resp_serial : In(RESPONSE_SERIAL_BITS)
        Shifted into the response payload register (all ports, port 0 lowest) each cycle.
    """

    def __init__(self, config=None):
        config = TmuConfig() if config is None else config
        if not isinstance(config, TmuConfig):
            raise TypeError(f"config must be a TmuConfig, not {config!r}")
        self._cfg = config
        ports = config.memory_ports
        super().__init__({
            "csr":         In(CsrSignature(12)),
            "data_out":    Out(stream.Signature(DATA_FOLD_BITS)),
            "ctrl_out":    Out(stream.Signature(16)),
            "busy":        Out(1),
            "done":        Out(1),
            "req_valid":   Out(ports),
            "req_ready":   In(ports),
            "req_fold":    Out(REQUEST_FOLD_BITS),
            "resp_valid":  In(ports),
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

        # Register port and output queues: one flip-flop on every pin; the data beat is
        # registered and folded to DATA_FOLD_BITS.
        beat = Signal(len(Value.cast(cif.data_out.payload)))
        m.d.sync += [
            cif.csr.addr.eq(self.csr.addr), cif.csr.w_en.eq(self.csr.w_en),
            cif.csr.w_data.eq(self.csr.w_data), cif.csr.r_en.eq(self.csr.r_en),
            self.csr.r_data.eq(cif.csr.r_data),
            self.data_out.valid.eq(cif.data_out.valid),
            beat.eq(cif.data_out.payload),
            self.data_out.payload.eq(xor_fold(beat, DATA_FOLD_BITS)),
            cif.data_out.ready.eq(self.data_out.ready),
            self.ctrl_out.valid.eq(cif.ctrl_out.valid),
            self.ctrl_out.payload.eq(cif.ctrl_out.payload),
            cif.ctrl_out.ready.eq(self.ctrl_out.ready),
            self.busy.eq(tmu.ctl.busy), self.done.eq(tmu.ctl.done),
        ]

        # Memory ports: handshakes registered; request payloads registered and folded together;
        # response payloads one shift register loaded from the serial pins.
        requests = Signal(sum(len(Value.cast(req.payload)) for req in tmu.req))
        responses = Signal(sum(len(Value.cast(resp.payload)) for resp in tmu.resp))
        m.d.sync += [
            requests.eq(Cat(req.payload for req in tmu.req)),
            self.req_fold.eq(xor_fold(requests, REQUEST_FOLD_BITS)),
            responses.eq(Cat(self.resp_serial, responses)[:len(responses)]),
        ]
        low = 0
        for k, (req, resp) in enumerate(zip(tmu.req, tmu.resp)):
            width = len(Value.cast(resp.payload))
            m.d.sync += [
                self.req_valid[k].eq(req.valid), req.ready.eq(self.req_ready[k]),
                resp.valid.eq(self.resp_valid[k]),
            ]
            m.d.comb += resp.payload.eq(responses[low:low + width])
            low += width
        return m
