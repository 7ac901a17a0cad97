"""Request and response ports of the memory models (``docs/hbm_model.md`` §2 "Ingress").

A port carries one request (or response) per cycle. Its data width is ``line_bytes``: 8 is the
64-bit word interface of the access unit (``hw.core_if.signatures.MemRequestSignature``, the
same layout), a larger power of two up to the preset's ``access_bytes`` (64) a line port: the
request's byte address selects the aligned line containing it, a read returns the whole line
(word ``i`` of the line in bits ``64i .. 64i+63``) and a write carries a line with one byte enable
per byte.
"""

from amaranth.hdl import unsigned
from amaranth.lib import data, stream

from ..core_if.signatures import (ADDR_BITS, MemRequestSignature, MemResponseSignature,
                                  mem_request_layout, mem_response_layout)

__all__ = ["request_layout", "response_layout", "RequestSignature", "ResponseSignature"]


def request_layout(tag_bits, line_bytes=8):
    """Payload of a request: ``addr`` (byte address), ``tag``, ``write``, ``wdata``
    (``8 * line_bytes`` bits), ``wstrb`` (``line_bytes`` bits; 0 for reads)."""
    if line_bytes == 8:
        return mem_request_layout(tag_bits)
    return data.StructLayout({
        "addr":  unsigned(ADDR_BITS),
        "tag":   unsigned(tag_bits),
        "write": unsigned(1),
        "wdata": unsigned(8 * line_bytes),
        "wstrb": unsigned(line_bytes),
    })


def response_layout(tag_bits, line_bytes=8):
    """Payload of a response: ``tag``, ``write``, ``data`` (the line read; 0 for a write)."""
    if line_bytes == 8:
        return mem_response_layout(tag_bits)
    return data.StructLayout({
        "tag":   unsigned(tag_bits),
        "write": unsigned(1),
        "data":  unsigned(8 * line_bytes),
    })


def RequestSignature(tag_bits, line_bytes=8):
    """One request port (``amaranth.lib.stream``; source side: the requester)."""
    if line_bytes == 8:
        return MemRequestSignature(tag_bits)
    return stream.Signature(request_layout(tag_bits, line_bytes))


def ResponseSignature(tag_bits, line_bytes=8):
    """One response port (source side: the memory); responses in any order, matched by tag."""
    if line_bytes == 8:
        return MemResponseSignature(tag_bits)
    return stream.Signature(response_layout(tag_bits, line_bytes))
