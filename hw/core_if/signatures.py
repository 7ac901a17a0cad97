"""Signatures and payloads shared between the access unit, the core interface and memory."""

from amaranth.hdl import unsigned
from amaranth.lib import data, stream, wiring
from amaranth.lib.wiring import In, Out


__all__ = ["mem_request_layout", "mem_response_layout", "MemRequestSignature",
           "MemResponseSignature", "data_beat_layout", "DataBeatSignature", "CsrSignature", "BackdoorSignature", "ProgramWriteSignature"]


ADDR_BITS = 64   # byte addresses on the access unit's side


def mem_request_layout(tag_bits, line_bytes=8):
    """Payload of a memory request (``docs/hbm_model.md`` §2 "Ingress"): ``line_bytes`` is the
    port's data width (8: a 64-bit word; 16..64: a line)."""
    return data.StructLayout({
        "addr":  unsigned(ADDR_BITS),  # bytes; a read returns the aligned line (word) holding it
        "tag":   unsigned(tag_bits),   # returned unchanged with the response
        "write": unsigned(1),          # 0: read (load), 1: write (store)
        "wdata": unsigned(8 * line_bytes),  # write data, the aligned line containing addr
        "wstrb": unsigned(line_bytes),      # write byte enables (bit i: byte i); 0 for reads
    })


def mem_response_layout(tag_bits, line_bytes=8):
    """Payload of a memory response (one per request, reads and writes)."""
    return data.StructLayout({
        "tag":   unsigned(tag_bits),   # tag of the request
        "write": unsigned(1),          # the request was a write (data is then 0)
        "data":  unsigned(8 * line_bytes),  # read: the aligned line containing the address
    })


def MemRequestSignature(tag_bits, line_bytes=8):
    """Memory requests, one per cycle at most (source side: access unit). The access unit only
    loads and drives ``write = 0``."""
    return stream.Signature(mem_request_layout(tag_bits, line_bytes))


def MemResponseSignature(tag_bits, line_bytes=8):
    """Memory responses, one per cycle at most, in any order across requests (source side:
    memory); matched to requests by tag."""
    return stream.Signature(mem_response_layout(tag_bits, line_bytes))


def data_beat_layout(tokens):
    """One beat of the data output (``docs/rtl.md`` §2.5): up to ``tokens`` 64-bit data tokens
    moved in one cycle. ``tokens[i]`` (bits ``64 i .. 64 i + 63``) for ``i < count`` are the
    next data tokens of ``docs/isa.md``'s sequence, in order; the others are 0."""
    return data.StructLayout({
        "tokens": data.ArrayLayout(64, tokens),
        "count":  unsigned((tokens).bit_length()),   # tokens in the beat, 1..tokens
    })


def DataBeatSignature(tokens):
    """The data output of the access unit and of the core interface: a stream of beats."""
    return stream.Signature(data_beat_layout(tokens))


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
