"""Memory image: lays tensors out in the access unit's flat address space.

The image is what the memory model is loaded with (back door) before a run: byte address 0 is the
first byte of ``MemoryImage.data``. Each tensor is placed at an address aligned to
``MemoryImage.ALIGN`` bytes, C-contiguous and little-endian, and keeps its own region: the argument
map (``sw.runtime.kernel.ArgSpec``) turns the layout into argument-register values.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Sequence

import numpy as np

from .kernel import ArgKind, ArgSpec, Kernel, ParamKind

__all__ = ["Placement", "MemoryImage", "build_image", "bind_arguments"]


@dataclass(frozen=True)
class Placement:
    name: str
    base: int      # bytes
    nbytes: int    # bytes
    dtype: str
    shape: tuple[int, ...]


@dataclass
class MemoryImage:
    """A flat little-endian memory image; ``data`` is padded to a multiple of 8 bytes."""
    ALIGN = 64   # bytes: a cache line, so a tensor never shares a line with another

    placements: dict[int, Placement] = field(default_factory=dict)   # parameter index -> placement
    _chunks: list[tuple[int, bytes]] = field(default_factory=list)
    size: int = 0

    def add(self, key: int, name: str, array: np.ndarray) -> Placement:
        """Place ``array`` (any dtype, C order, converted to little-endian) at the next aligned address."""
        array = np.ascontiguousarray(array)
        if array.dtype.byteorder == ">":
            array = array.astype(array.dtype.newbyteorder("<"))
        base = -(-self.size // self.ALIGN) * self.ALIGN
        raw = array.tobytes()
        self._chunks.append((base, raw))
        self.size = base + len(raw)
        placement = Placement(name, base, len(raw), str(array.dtype), tuple(array.shape))
        self.placements[key] = placement
        return placement

    @property
    def data(self) -> bytes:
        size = max(8, -(-self.size // 8) * 8)
        buf = bytearray(size)
        for base, raw in self._chunks:
            buf[base:base + len(raw)] = raw
        return bytes(buf)

    def owner(self, addr: int) -> Placement | None:
        """The tensor whose bytes contain ``addr``, if any (to explain a fault address)."""
        for p in self.placements.values():
            if p.base <= addr < p.base + max(p.nbytes, 1):
                return p
        return None

    def nearest(self, addr: int, *, outside: bool = False,
                tensor: int | None = None) -> tuple[int, Placement] | None:
        """``(parameter index, placement)`` of the tensor containing ``addr``, else the nearest one
        (``addr`` is read as a signed 64-bit address: a negative index gives a negative address).
        ``outside``: the nearest tensor that does not contain ``addr`` (a load that faulted
        ``ADDR_RANGE`` was outside its own tensor, even when it landed inside another one).
        ``tensor`` (a parameter index in the image, e.g. the faulting stream's): that tensor."""
        if tensor in self.placements:
            return tensor, self.placements[tensor]
        addr = _signed(addr)
        candidates = [(k, p) for k, p in self.placements.items()
                      if not (outside and p.base <= addr < p.base + max(p.nbytes, 1))]
        if not candidates:
            return None
        if not outside:
            for key, p in candidates:
                if p.base <= addr < p.base + max(p.nbytes, 1):
                    return key, p
        return min(candidates,
                   key=lambda kp: min(abs(addr - kp[1].base), abs(addr - kp[1].base - kp[1].nbytes)))

    def describe(self, addr: int, *, outside: bool = False, tensor: int | None = None) -> str:
        """Human-readable location of a byte address: ``0x48 ('table' + 72 bytes)``, or relative
        to the nearest tensor (``-0xd00 (3328 bytes before the start of 'table', ...)``); the
        address is read as a signed 64-bit value. ``outside`` as in :meth:`nearest` (the tensor
        the address lands in, if any, is then named after the nearest one); ``tensor`` (a
        parameter index in the image): relative to that tensor instead of the nearest."""
        addr = _signed(addr)
        text = f"{addr:#x}"
        found = self.nearest(addr, outside=outside, tensor=tensor)
        if found is None:
            return text
        p = found[1]
        if p.base <= addr < p.base + max(p.nbytes, 1):
            return f"{text} ({p.name!r} + {addr - p.base} bytes)"
        rel = addr - p.base
        where = (f"{-rel} bytes before the start" if rel < 0
                 else f"{rel - p.nbytes} bytes past the end")
        inside = self.owner(addr) if outside else None
        also = f", inside {inside.name!r}" if inside is not None else ""
        return f"{text} ({where} of {p.name!r}, {p.nbytes} bytes at {p.base:#x}{also})"


def _signed(addr: int) -> int:
    addr &= (1 << 64) - 1
    return addr - (1 << 64) if addr >> 63 else addr


def build_image(kernel: Kernel, args: Sequence) -> MemoryImage:
    """Place every parameter the access unit reads (``ParamSpec.in_image``) into a new image.

    Raises
    ------
    TypeError, ValueError
        When an argument does not match its parameter (kind, rank, dtype), naming ``argN``.
    """
    check_arguments(kernel, args)
    image = MemoryImage()
    for n, spec in enumerate(kernel.params):
        if spec.in_image:
            image.add(n, spec.name, np.asarray(args[n], dtype=spec.dtype))
    return image


def check_arguments(kernel: Kernel, args: Sequence) -> None:
    """Check arity, kinds, ranks, dtypes and static extents of the call's arguments against the
    kernel's parameters (``TypeError``/``ValueError`` naming ``argN (name)``)."""
    if len(args) != len(kernel.params):
        raise TypeError(f"kernel {kernel.name!r} takes {len(kernel.params)} arguments "
                        f"({', '.join(p.name for p in kernel.params)}), not {len(args)}")
    for n, (spec, value) in enumerate(zip(kernel.params, args)):
        if spec.kind == ParamKind.MEMREF:
            if not isinstance(value, np.ndarray):
                raise TypeError(f"arg{n} ({spec.name}) must be a NumPy array, not {type(value).__name__}")
            if value.ndim != spec.rank:
                raise ValueError(f"arg{n} ({spec.name}) must have rank {spec.rank}, not {value.ndim} "
                                 f"(shape {value.shape})")
            if value.dtype != np.dtype(spec.dtype):
                raise ValueError(f"arg{n} ({spec.name}) must have dtype {spec.dtype}, not {value.dtype}")
            for axis, extent in enumerate(spec.shape or ()):
                if extent is not None and value.shape[axis] != extent:
                    declared = "x".join("?" if e is None else str(e) for e in spec.shape)
                    raise ValueError(f"arg{n} ({spec.name}) must have {extent} entries on axis "
                                     f"{axis} (its memref type's shape is {declared}), not shape "
                                     f"{value.shape}")
        else:
            if isinstance(value, np.ndarray):
                if value.ndim != 0:
                    raise ValueError(f"arg{n} ({spec.name}) must be a scalar (0-d array), not shape {value.shape}")
                value = value.item()
            if spec.kind in (ParamKind.INDEX, ParamKind.INT) and not isinstance(value, (int, np.integer)):
                raise TypeError(f"arg{n} ({spec.name}) must be an integer, not {value!r}")


def bind_arguments(kernel: Kernel, args: Sequence, image: MemoryImage) -> list[int]:
    """Argument-register values (signed 64-bit ints) for one call, from ``kernel.arg_map``."""
    regs = []
    for n, spec in enumerate(kernel.arg_map):
        if spec.kind == ArgKind.CONST:
            regs.append(int(spec.value))
            continue
        if spec.kind == ArgKind.EXPR:
            try:
                regs.append(int(eval(spec.expr, {"np": np, "__builtins__": {}}, {"args": args})))
            except Exception as e:  # noqa: BLE001 - report any failure with the expression
                raise ValueError(f"argument register {n} = {spec.expr!r} cannot be computed from the "
                                 f"arguments: {e}") from None
            continue
        param = kernel.params[spec.param]
        value = args[spec.param]
        if spec.kind in (ArgKind.BASE, ArgKind.BYTES):
            if spec.param not in image.placements:
                raise ValueError(f"argument register {n} needs the address of arg{spec.param} "
                                 f"({param.name}), which is not in the memory image")
            p = image.placements[spec.param]
            regs.append(p.base if spec.kind == ArgKind.BASE else p.nbytes)
        elif spec.kind == ArgKind.DIM:
            regs.append(int(np.shape(value)[spec.axis]))
        elif spec.kind == ArgKind.SCALAR:
            regs.append(int(np.asarray(value).item()))
        else:  # pragma: no cover - ArgKind is closed
            raise AssertionError(spec.kind)
    return regs
