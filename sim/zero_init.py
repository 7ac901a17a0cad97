"""Compact the zero initialisation of memories in generated Verilog, for large Verilator builds.

Amaranth (through Yosys ``write_verilog``) initialises every memory element by element::

    initial begin
      storage[0] = 516'h000...0;
      storage[1] = 516'h000...0;
      ...
    end

Verilator turns each of these lines into straight-line C++ of one function
(``_eval_initial__TOP``, in the ``__0__Slow.cpp`` file), which ``--output-split`` and
``--output-split-cfuncs`` do not split (Verilator 5.006 splits files and some model functions,
not the initial block). For the 8-unit system on HBM2 that is 48,800 Verilog lines (the memory
model's response-tag store, 4096 entries of 516 bits, is most of them) and an 84 MB function
that ``cc1plus`` could not compile in 24 GiB, even at ``-O0`` (``OPT_SLOW`` is empty).

:func:`compact_zero_init` rewrites each such block, when every line of it sets element ``i`` of
the same memory to zero for ``i = 0, 1, ..., N-1``, into the loop::

    initial begin : ember_zero_init_<n>
      integer i;
      for (i = 0; i < N; i = i + 1) storage[i] = 516'h0;
    end

which sets the same elements to the same value at the same time (time 0), so the simulation is
unchanged; Verilator keeps loops of more than ``--unroll-count`` (default 64) iterations as
loops. Blocks with any other content are left exactly as they are.
"""

from __future__ import annotations

import re

__all__ = ["ZERO_INIT_THRESHOLD", "zero_init_lines", "compact_zero_init"]

#: Designs with more zero-initialised memory elements than this are compacted by the builds
#: (``sim.fast.build_harness``): the 8-unit system (48,800) and the 4-unit system with 512 lines
#: per unit (24,400; uncompacted, cc1plus took over 18 minutes and 10 GB for that one function
#: on the loaded machine, 2026-11-25) are; the 4-unit system with 256 lines per unit (13,136)
#: and every smaller design are not, so their generated text and cached builds stay as they were.
ZERO_INIT_THRESHOLD = 16_384

_ELEMENT = re.compile(r"^(\s*)([A-Za-z_][A-Za-z0-9_$]*)\[(\d+)\] = (\d+)'h0+;$")
_COUNT = re.compile(r"^\s*[A-Za-z_][A-Za-z0-9_$]*\[\d+\] = \d+'h0+;$", re.MULTILINE)


def zero_init_lines(text: str) -> int:
    """Number of lines of ``text`` that set one memory element to zero (``name[i] = W'h0...;``)."""
    return len(_COUNT.findall(text))


def compact_zero_init(text: str) -> str:
    """``text`` with every all-zero, element-by-element memory ``initial`` block written as a
    loop (see the module doc); every other line unchanged. Raises nothing: text that is not of
    this form is returned as it is."""
    lines = text.split("\n")
    out: list[str] = []
    i, blocks = 0, 0
    while i < len(lines):
        line = lines[i]
        if line.strip() == "initial begin":
            j, name, width, indent = i + 1, None, None, ""
            while j < len(lines):
                m = _ELEMENT.match(lines[j])
                if m is None:
                    break
                if name is None:
                    indent, name, width = m.group(1), m.group(2), m.group(4)
                if (m.group(2), m.group(4), int(m.group(3))) != (name, width, j - i - 1):
                    break
                j += 1
            count = j - i - 1
            if count > 1 and j < len(lines) and lines[j].strip() == "end":
                head = line[:len(line) - len(line.lstrip())]
                out += [f"{head}initial begin : ember_zero_init_{blocks}",
                        f"{indent}integer i;",
                        f"{indent}for (i = 0; i < {count}; i = i + 1) {name}[i] = {width}'h0;",
                        lines[j]]
                blocks += 1
                i = j + 1
                continue
        out.append(line)
        i += 1
    return "\n".join(out)
