"""The interconnect of a multi-unit system: K access units' memory ports onto one memory's ports.

Simulation and synthesis alike (plain combinational muxes and one rotation register);
``hw.multi_system.MultiSystem`` instantiates it, ``docs/rtl.md`` §"Multi-unit system" describes it.
"""

from amaranth.hdl import Array, Cat, Const, Module, Signal
from amaranth.lib import wiring
from amaranth.lib.wiring import In, Out

from .hbm_model.ports import RequestSignature, ResponseSignature


__all__ = ["Interconnect", "unit_bits"]

REQUEST_FIELDS = ("addr", "write", "wdata", "wstrb")    # copied as they are; the tag is extended


def unit_bits(units):
    """Tag bits that name a unit: ``ceil(log2 units)`` (0 for one unit)."""
    return (units - 1).bit_length()


class Interconnect(wiring.Component):
    """Requests of ``units`` access units onto ``memory_ports`` memory request ports, and the
    memory's responses back to the unit each belongs to.

    **Tags.** A request of unit ``u`` leaves with tag ``{u, tag}``: the unit's ``tag_bits``-bit
    tag in the low bits and ``u`` in ``unit_bits(units)`` extra high bits, so the memory sees
    ``tag_bits + ceil(log2 units)``-bit tags. A response goes to the unit named by its high tag
    bits, with the low ``tag_bits`` bits as its tag.

    **Request rule (fair).** Each cycle the unit ports are listed in *rotated* order: units
    ``r, r+1, ..., r-1 (mod units)``, each unit's ports in port order, where ``r`` is a register
    that advances by one every cycle (round-robin; 0 with one unit). The ``k``-th *valid* unit
    port of that list is offered on memory port ``k`` (``k < memory_ports``), and is ``ready``
    exactly when memory port ``k`` is; unit ports beyond the ``memory_ports``-th valid one are not
    ready this cycle. Since the memory's ingress serves ports in port order (a refused port
    refuses all above it, ``docs/hbm_model.md`` §2 "Ingress"), the unit listed first is served
    first; every unit is listed first once in ``units`` cycles, so no unit starves under
    saturation. With one unit whose valid ports are a prefix (the access unit's are,
    ``hw/tmu/tmu.py``), port ``k`` goes to memory port ``k``: the connection of ``hw.system``.

    **Response rule.** For each unit, the memory response ports carrying its responses are taken
    in port order; the ``j``-th of them is presented on the unit's response port ``j`` (``j <
    unit_ports``) and is ``ready`` when that unit port is. A unit's ``(unit_ports + 1)``-th and
    later responses of a cycle are not ready: the memory holds them (its response ports may carry
    any channel's response, §2 "Response ports"). Nothing is lost or duplicated: a transfer on
    one side is a transfer on exactly one port of the other side in the same cycle.

    ``valid`` and payloads never depend on ``ready``; a unit port's ``ready`` depends on the
    ``valid``\\ s of the unit ports listed before it and the memory's ``ready``.

    Parameters
    ----------
    units : int
        K, a power of two (1, 2, 4, 8).
    unit_ports : int
        Request (and response) ports per unit (``TmuConfig.memory_ports``).
    memory_ports : int
        Request (and response) ports of the memory model.
    tag_bits : int
        A unit's tag width (``TmuConfig.tag_bits``).
    line_bytes : int
        Data width of every port (``hw/hbm_model/ports.py``).

    Members
    -------
    unit_req : In(RequestSignature(tag_bits, line_bytes)).array(units, unit_ports)
        The units' requests (``unit_req[u][k]``: unit ``u``'s port ``k``).
    unit_resp : Out(ResponseSignature(tag_bits, line_bytes)).array(units, unit_ports)
        The units' responses.
    mem_req : Out(RequestSignature(tag_bits + unit_bits(units), line_bytes)).array(memory_ports)
        Requests to the memory model.
    mem_resp : In(ResponseSignature(tag_bits + unit_bits(units), line_bytes)).array(memory_ports)
        Responses from the memory model.

    Raises
    ------
    ValueError
        ``units`` not a power of two in 1..64, or a port count or ``tag_bits`` below 1.
    """

    def __init__(self, *, units, unit_ports, memory_ports, tag_bits, line_bytes=8):
        if not isinstance(units, int) or units < 1 or units > 64 or units & (units - 1):
            raise ValueError(f"units must be a power of two in 1..64, not {units!r}")
        for name, value in (("unit_ports", unit_ports), ("memory_ports", memory_ports),
                            ("tag_bits", tag_bits)):
            if not isinstance(value, int) or value < 1:
                raise ValueError(f"{name} must be a positive integer, not {value!r}")
        self.units, self.unit_ports, self.memory_ports = units, unit_ports, memory_ports
        self.tag_bits = tag_bits
        self.memory_tag_bits = tag_bits + unit_bits(units)
        super().__init__({
            "unit_req": In(RequestSignature(tag_bits, line_bytes)).array(units, unit_ports),
            "unit_resp": Out(ResponseSignature(tag_bits, line_bytes)).array(units, unit_ports),
            "mem_req": Out(RequestSignature(self.memory_tag_bits, line_bytes)).array(memory_ports),
            "mem_resp": In(ResponseSignature(self.memory_tag_bits, line_bytes)).array(memory_ports),
        })

    def elaborate(self, platform):
        m = Module()
        K, P, M = self.units, self.unit_ports, self.memory_ports
        ub = unit_bits(K)

        # Requests: rotate the unit ports by `rotation` units, then the k-th valid one of the
        # rotated list goes to memory port k.
        rotation = Signal(range(K), name="rotation")
        m.d.sync += rotation.eq(rotation + 1 if K > 1 else 0)   # wraps: K is a power of two
        before = Const(0, range(K * P + 1))              # valid rotated ports so far
        readies = {}                                     # (position) -> ready signal
        for j in range(K * P):
            slot, port = divmod(j, P)
            unit = Signal(range(K), name=f"request_unit_{j}")
            m.d.comb += unit.eq((rotation + slot)[:ub] if K > 1 else 0)
            payload = Array(self.unit_req[u][port].payload for u in range(K))[unit]
            valid = Signal(name=f"request_valid_{j}")
            ready = Signal(name=f"request_ready_{j}")
            m.d.comb += valid.eq(Array(self.unit_req[u][port].valid for u in range(K))[unit])
            readies[j] = (unit, port, ready)
            for k in range(M):
                with m.If(valid & (before == k)):
                    out = self.mem_req[k].payload
                    m.d.comb += [self.mem_req[k].valid.eq(1), ready.eq(self.mem_req[k].ready)]
                    m.d.comb += [getattr(out, name).eq(getattr(payload, name))
                                 for name in REQUEST_FIELDS]
                    m.d.comb += out.tag.eq(Cat(payload.tag, unit) if ub else payload.tag)
            counted = Signal(range(K * P + 1), name=f"request_valid_before_{j + 1}")
            m.d.comb += counted.eq(before + valid)
            before = counted
        # Each unit port's ready: the rotated position it sits at this cycle.
        for u in range(K):
            for port in range(P):
                for j, (unit, p, ready) in readies.items():
                    if p == port:
                        with m.If(unit == u):
                            m.d.comb += self.unit_req[u][port].ready.eq(ready)

        # Responses: per unit, the j-th memory port carrying one of its responses -> its port j.
        for u in range(K):
            taken = Const(0, range(M + 1))
            for k in range(M):
                resp = self.mem_resp[k]
                mine = Signal(name=f"response_{k}_to_unit_{u}")
                owner = resp.payload.tag[self.tag_bits:] if ub else None
                m.d.comb += mine.eq(resp.valid & (owner == u) if ub else resp.valid)
                for j in range(P):
                    with m.If(mine & (taken == j)):
                        m.d.comb += [
                            self.unit_resp[u][j].valid.eq(1),
                            self.unit_resp[u][j].payload.write.eq(resp.payload.write),
                        self.unit_resp[u][j].payload.data.eq(resp.payload.data),
                            self.unit_resp[u][j].payload.tag.eq(resp.payload.tag[:self.tag_bits]),
                            resp.ready.eq(self.unit_resp[u][j].ready),
                        ]
                counted = Signal(range(M + 1), name=f"response_{k}_before_unit_{u}")
                m.d.comb += counted.eq(taken + mine)
                taken = counted
        return m
