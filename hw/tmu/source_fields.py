"""Fields of a source word (``docs/isa.md`` §2 "Sources") as Amaranth values, for the decoder's
blocks (``program_checker.py``, ``config_writer.py``, ``microcode_builder.py``)."""

from amaranth.hdl import Signal

from .isa import Source


__all__ = ["pick", "source_kind", "source_number", "source_imm"]


def pick(m, array, index, shape, name):
    """``array[index]`` as a signal (operations on an ``Array`` proxy would be replicated)."""
    sig = Signal(shape, name=name)
    m.d.comb += sig.eq(array[index])
    return sig


def source_kind(word):
    """Kind of a source word, as a plain value (4..15 are illegal in v0, 6..15 in v1)."""
    return Source(word).kind.as_value()


def source_number(word):
    """Argument, stream or layer number of a non-IMM source (bits [27:8] are reserved)."""
    return Source(word).value[:8]


def source_imm(word):
    """The signed 28-bit immediate of an IMM source."""
    return Source(word).value.as_signed()
