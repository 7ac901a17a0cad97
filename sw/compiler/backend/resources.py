"""Resource mapping: an access program onto the physical resources of one TMU configuration.

``to_tmu`` turns the logical program the DLC backend builds (``backend/tmu.py``) into a
``tmu.program`` (``dialects/tmu.py``) for a configuration (``sw.runtime.isa.Limits``):

* layers keep their order (layer k is the TU of loop depth k); each gets its mode — ``single``,
  ``broadcast`` (a scalar layer whose values feed a lockstep layer's lanes) or ``lockstep`` with
  its lanes;
* streams take slots of the ``streams`` pool in program order (the ISA numbers them so: stream id
  = pool slot) and, within their layer, the next of its ``streams_per_layer`` slots;
* actions, regions and argument registers are numbered in program order.

``usage`` counts what a program needs of every resource and ``check_fits`` compares it with a
configuration; ``to_program`` reads a ``tmu.program`` back into the ``sw.runtime.isa.Program``
that is encoded (so what ``--emit tmu`` prints is what the binary holds).
"""

from __future__ import annotations

from dataclasses import dataclass

from xdsl.dialects.builtin import ModuleOp

from ...runtime import isa
from ...runtime.kernel import ArgSpec
from ..dialects import tmu

__all__ = ["Usage", "usage", "check_fits", "to_tmu", "to_program", "ResourceError"]


class ResourceError(ValueError):
    """A program does not fit a configuration: ``resource``, ``needed``, ``available``."""

    def __init__(self, resource: str, needed, available, message: str):
        self.resource, self.needed, self.available = resource, needed, available
        super().__init__(message)


@dataclass(frozen=True)
class Usage:
    """What one program needs of a configuration (counts; ``lanes`` the widest layer)."""
    version: int
    layers: int
    regions: int
    streams: int
    max_streams_per_layer: int
    actions: int
    args: int
    lanes: int
    features: frozenset

    def as_dict(self) -> dict:
        return {"version": self.version, "layers": self.layers, "regions": self.regions,
                "streams": self.streams, "streams_per_layer": self.max_streams_per_layer,
                "actions": self.actions, "args": self.args, "lanes": self.lanes,
                "features": sorted(f.value for f in self.features)}


def usage(program: isa.Program) -> Usage:
    per_layer = [sum(1 for s in program.streams if s.layer == k) for k in range(len(program.layers))]
    return Usage(program.required_version(), len(program.layers), len(program.regions),
                 len(program.streams), max(per_layer, default=0), len(program.actions),
                 program.n_args, max((layer.lanes for layer in program.layers), default=1),
                 frozenset(program.features_used()))


def check_fits(program: isa.Program, limits: isa.Limits) -> Usage:
    """Raise :class:`ResourceError` naming the first resource the program lacks.

    Order: ISA version, v1 features, lanes, then layers, streams, stream slots per layer,
    actions, regions, argument registers (the order of ``docs/backend.md``).
    """
    use = usage(program)
    name = limits.name or "the configuration"
    if use.version not in limits.versions:
        raise ResourceError("versions", use.version, limits.versions,
                            f"the program needs ISA version {use.version}, {name} supports "
                            f"{', '.join(map(str, limits.versions))} (Limits.versions)")
    for feature in sorted(use.features, key=lambda f: f.value):
        if feature not in limits.features:
            raise ResourceError("features", feature.value, sorted(f.value for f in limits.features),
                                f"the program needs the ISA feature '{feature.value}', {name} has "
                                f"{sorted(f.value for f in limits.features) or 'no v1 features'} "
                                f"(Limits.features)")
    for what, needed, available, field in (
            ("lanes", use.lanes, limits.lanes, "lanes"),
            ("layers", use.layers, limits.layers, "layers"),
            ("streams", use.streams, limits.streams, "streams"),
            ("stream slots in one layer", use.max_streams_per_layer, limits.slots_per_layer,
             "streams_per_layer"),
            ("actions", use.actions, limits.actions, "actions"),
            ("regions", use.regions, limits.regions, "regions"),
            ("argument registers", use.args, limits.args, "args")):
        if needed > available:
            raise ResourceError(field, needed, available,
                                f"the kernel does not fit the access unit: it needs {needed} {what}, "
                                f"the unit has {available} (Limits.{field})")
    return use


_MODE_NAMES = {isa.LayerMode.SINGLE: "single", isa.LayerMode.LOCKSTEP: "lockstep",
               isa.LayerMode.BROADCAST: "broadcast"}
_EVENT_NAMES = {isa.Event.BEGIN: "begin", isa.Event.ITER: "iter", isa.Event.END: "end"}


def to_tmu(program: isa.Program, arg_map: list[ArgSpec], limits: isa.Limits) -> ModuleOp:
    """The ``tmu.program`` of ``program`` on ``limits`` (checked with :func:`check_fits`)."""
    check_fits(program, limits)
    ops = []
    for reg, spec in enumerate(arg_map):
        ops.append(tmu.ArgOp.build(reg=reg, spec=str(spec)))
    for n, layer in enumerate(program.layers):
        ops.append(tmu.LayerOp.build(id=n, mode=_MODE_NAMES[layer.mode], lanes=layer.lanes,
                                     lb=str(layer.lb), ub=str(layer.ub), step=layer.step.value,
                                     check_order=layer.check_order))
    for n, r in enumerate(program.regions):
        ops.append(tmu.RegionOp.build(id=n, base=str(r.base), size=str(r.size)))
    slot_in_layer: dict[int, int] = {}
    for n, s in enumerate(program.streams):
        slot = slot_in_layer.get(s.layer, 0)
        slot_in_layer[s.layer] = slot + 1
        fields = dict(id=n, layer=s.layer, slot=slot, kind=s.kind.name.lower(), a=str(s.a))
        if s.kind == isa.StreamKind.MEM:
            fields.update(b=str(s.b), region=s.region, size=s.size, signed=s.signed)
            if s.block:
                fields["block"] = str(s.count)
            else:
                fields["stride"] = s.stride
        elif s.kind == isa.StreamKind.ALU:
            fields.update(b=str(s.b), op=s.op.name.lower())
        ops.append(tmu.StreamOp.build(**fields))
    for n, a in enumerate(program.actions):
        fields = dict(id=n, layer=a.layer, event=_EVENT_NAMES[a.event], kind=a.kind.name.lower())
        if a.kind == isa.ActionKind.OPERAND:
            fields["source"] = str(a.source)
            if a.pack:
                fields["esize"] = a.esize
            fields["join"] = a.join
        else:
            fields["callback"] = a.callback
        ops.append(tmu.ActionOp.build(**fields))
    prog_op = tmu.ProgramOp(program.version, program.n_args, limits.name or "unnamed")
    prog_op.body.block.add_ops(ops)
    module = ModuleOp([prog_op])
    module.verify()
    return module


def to_program(module: ModuleOp) -> isa.Program:
    """The ``sw.runtime.isa.Program`` a ``tmu.program`` describes (validated)."""
    prog_op = next(op for op in module.ops if isinstance(op, tmu.ProgramOp))
    prog = isa.Program(n_args=prog_op.n_args.value.data, version=prog_op.version.value.data)
    src = isa.Source.parse
    for op in prog_op.body.block.ops:
        g = op.get
        if isinstance(op, tmu.LayerOp):
            prog.layers.append(isa.Layer(src(g("lb")), src(g("ub")), isa.Source.imm(g("step")),
                                         bool(g("check_order")), isa.LayerMode[g("mode").upper()],
                                         g("lanes")))
        elif isinstance(op, tmu.RegionOp):
            prog.regions.append(isa.Region(src(g("base")), src(g("size"))))
        elif isinstance(op, tmu.StreamOp):
            kind = isa.StreamKind[g("kind").upper()]
            s = isa.Stream(g("layer"), kind, src(g("a")))
            if kind == isa.StreamKind.MEM:
                s.b, s.region, s.size, s.signed = src(g("b")), g("region"), g("size"), bool(g("signed"))
                if g("block") is not None:
                    s.block, s.count = True, src(g("block"))
                else:
                    s.stride = g("stride")
            elif kind == isa.StreamKind.ALU:
                s.b, s.op = src(g("b")), isa.AluOp[g("op").upper()]
            prog.streams.append(s)
        elif isinstance(op, tmu.ActionOp):
            event = isa.Event[g("event").upper()]
            if g("kind") == "operand":
                esize = g("esize") or 8
                prog.actions.append(isa.Action(g("layer"), event, isa.ActionKind.OPERAND,
                                               source=src(g("source")),
                                               pack={8: 0, 4: 1, 2: 2, 1: 3}[esize],
                                               join=bool(g("join"))))
            else:
                prog.actions.append(isa.Action(g("layer"), event, isa.ActionKind.CONTROL,
                                               callback=g("callback")))
    prog.validate()
    return prog
