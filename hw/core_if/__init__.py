"""The core interface: registers, program load, output queues.

``hw.core_if.signatures`` is imported by ``hw.tmu``; the interface itself (which needs ``hw.tmu``)
is loaded on first use to keep the import graph acyclic.
"""

from .signatures import BackdoorSignature, CsrSignature

__all__ = ["CSR", "ID_VALUE", "CoreInterface", "csr_arg", "CsrSignature", "BackdoorSignature"]


def __getattr__(name):
    if name in ("CSR", "ID_VALUE", "CoreInterface", "csr_arg"):
        from . import core_if
        return getattr(core_if, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
