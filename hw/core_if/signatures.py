"""Signatures and payloads shared between the access unit, the core interface and memory."""

from amaranth.hdl import unsigned
from amaranth.lib import data, stream, wiring
from amaranth.lib.wiring import In, Out


__all__ = ["mem_request_layout", "mem_response_layout", "MemRequestSignature",
           "MemResponseSignature", "CsrSignature", "BackdoorSignature", "ProgramWriteSignature"]


ADDR_BITS = 64   # byte addresses on the access unit's side


def mem_request_layout(tag_bits):
    """Payload of a memory request (``docs/hbm_model.md`` §2 "Ingress")."""
    return data.StructLayout({
        "addr":  unsigned(ADDR_BITS),  # bytes; a read returns the aligned 64-bit word
        "tag":   unsigned(tag_bits),   # returned unchanged with the response
        "write": unsigned(1),          # 0: read (load), 1: write (store)
        "wdata": unsigned(64),         # write data, the aligned 64-bit word containing addr
        "wstrb": unsigned(8),          # write byte enables of wdata (bit i: byte i); 0 for reads
    })


def mem_response_layout(tag_bits):
    """Payload of a memory response (one per request, reads and writes)."""
    return data.StructLayout({
        "tag":   unsigned(tag_bits),   # tag of the request
        "write": unsigned(1),          # the request was a write (data is then 0)
        "data":  unsigned(64),         # read: the aligned 64-bit word containing the address
    })


def MemRequestSignature(tag_bits):
    """Memory requests, one per cycle at most (source side: access unit). The access unit only
    loads today and drives ``write = 0``."""
    return stream.Signature(mem_request_layout(tag_bits))


def MemResponseSignature(tag_bits):
    """Memory responses, one per cycle at most, in any order across requests (source side:
    memory); matched to requests by tag."""
    return stream.Signature(mem_response_layout(tag_bits))


class CsrSignature(wiring.Signature):
    """A simple 32-bit register port (initiator side: the host / testbench).

    Members
    -------
    addr : Out(addr_bits)
        Byte address of the register; bits [1:0] are ignored.
    w_en : Out(1)
        Write ``w_data`` to ``addr`` at the next active clock edge.
    w_data : Out(32)
    r_en : Out(1)
        Read ``addr``; ``r_data`` is valid the cycle after.
    r_data : In(32)
    """
    def __init__(self, addr_bits=12):
        super().__init__({
            "addr":   Out(addr_bits),
            "w_en":   Out(1),
            "w_data": Out(32),
            "r_en":   Out(1),
            "r_data": In(32),
        })


class BackdoorSignature(wiring.Signature):
    """Back-door write port of the memory model (initiator side: the testbench).

    Members
    -------
    addr : Out(addr_bits)
        Word address (byte address / 8).
    data : Out(64)
    en : Out(1)
        Write ``data`` at ``addr`` at the next active clock edge.
    """
    def __init__(self, addr_bits):
        super().__init__({
            "addr": Out(addr_bits),
            "data": Out(64),
            "en":   Out(1),
        })


class ProgramWriteSignature(wiring.Signature):
    """Write port into the access unit's program memory (initiator side: core interface)."""
    def __init__(self, addr_bits):
        super().__init__({
            "addr": Out(addr_bits),  # word index
            "data": Out(32),
            "en":   Out(1),
        })
