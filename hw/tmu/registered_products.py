"""The evaluation's multiplies off its cycle: a shift for a power-of-two factor, a registered
product for any other (``docs/rtl.md`` §2.2 "Multiplies"; ``docs/synthesis.md``, "The
multipliers off the evaluation's cycle").

The evaluation (``hw/tmu/stream_evaluation.py``) multiplies its ``b`` operand by two factors of
the evaluated stream's configuration: a MEM stream's address ``a + b * stride`` (a chained
uop's ``a + S * K``), and a chained uop's ``D = S * X``. Both factors are constants of the run
(a descriptor's stride, ``X`` and ``K = X * stride`` resolved at decode, ``hw/tmu/chain.py``);
the operand is a stream value, an index or an engine's head, known only in the evaluation's
cycle, ~18 ns into it on the small unit after ECP5 mapping. A multiplier there puts a DSP and
the carry chains that sum its partial products (~14 ns) between the operand and the address's
checks.

So the product is taken one of two ways:

* the factor is zero or a power of two (``0 < factor = 2**k``; element sizes, rows of
  ``2**k`` elements: every stride of the project's workloads): ``b << k`` (or 0), a shifter
  of five multiplexer levels, in the evaluation's cycle;
* otherwise the product of the operand and the factor of two cycles ago: a registered
  multiplier (operands registered in the evaluation's cycle, the product in the next) keeps
  with its product the operands it came from. The evaluation uses the product when those are
  the ones it reads (``ready``); if not, the uop waits as for an engine's value
  (``StreamEvaluation.product_wait``, held like the engines' ``wait``): its sources do not
  change while it waits (nothing is written; engine pops it carries may commit, and its
  next evaluation reads the same values from the value registers), so its third evaluation
  finds its product: two more cycles; the tokens are the same. A product counts only for operands
  evaluated in a run with every popped head they read there (``enable``): never a head
  register's stale value, so that a run's cycles depend on that run alone.

The multiplier's own path starts and ends at registers: the DSPs and the sum of their partial
products, nothing of the evaluation's operand read before it nor of its checks after it.
"""

from amaranth.hdl import Cat, Mux, Signal, signed


__all__ = ["power_of_two", "shifted_product", "RegisteredProducts"]


def power_of_two(m, value, name):
    """Whether the signed ``value`` is a positive power of two, and its log2 (meaningful only
    then): ``(is_power, log2)``, a 1-bit signal and one of ``(len(value) - 1).bit_length()``
    bits. A one-hot test (``value & (value - 1) == 0``) and an encoder that ORs the indices of
    the set bits (exact for one bit set)."""
    width = len(value)
    is_power = Signal(name=f"{name}_is_power_of_two")
    m.d.comb += is_power.eq(~value[-1] & (value != 0)
                            & ((value & (value - 1)[:width]) == 0))
    log2 = Signal((width - 1).bit_length(), name=f"{name}_log2")
    for bit in range(len(log2)):
        ones = [value[i] for i in range(width) if i >> bit & 1]
        m.d.comb += log2[bit].eq(Cat(*ones).any())
    return is_power, log2


def shifted_product(m, x, factor, name):
    """``x * factor`` when the signed ``factor`` is zero or a positive power of two: a shift.
    Returns ``(shifts, product)``: whether it is such a factor, and the exact product then
    (``signed(len(x) + len(factor))``; meaningless otherwise). :func:`power_of_two` works
    beside the operand's read; only the shifter follows it."""
    zero = Signal(name=f"{name}_is_zero")
    shifts = Signal(name=f"{name}_shifts")
    is_power, log2 = power_of_two(m, factor, name)
    m.d.comb += [zero.eq(factor == 0), shifts.eq(zero | is_power)]
    product = Signal(signed(len(x) + len(factor)), name=f"{name}_shifted")
    m.d.comb += product.eq(Mux(zero, 0, x << log2))
    return shifts, product


class RegisteredProducts:
    """Products ``x * factors[i]`` two cycles after their operands, with the operands they came
    from: ``product[i]`` (``signed(len(x) + len(factors[i]))``, exact) is valid for this
    cycle's ``x`` and ``factors[i]`` when ``ready[i]``.

    The operand, factor and product registers take their inputs every cycle, with no enable
    and no reset (so that nothing but the multiplier lies between them: Yosys 0.70's ABC9
    reintegration asserts on this unit when they have both); whether a product may be used
    is a separate bit that follows it through the two stages (``valid``), set only for
    operands taken in an ``enable`` cycle and cleared by ``clear``.

    Parameters
    ----------
    m : Module
    x : Value, signed
        The operand, read every cycle.
    factors : list of Value, signed
        The factors, read every cycle.
    name : str
        Prefix of the registers' names.
    clear : Value or None
        No product is valid after it (a run's start).
    enable : Value or None
        Only the operands of the cycles it is set give a valid product; None: every cycle's.
        The traversal sets it in a run when every popped head its evaluation reads is there,
        so that whether a product is ready, and with it every run's cycles, depends on that
        run alone (``tb/system/test_v1.py``, ``test_start_resets_state``), not on a head
        register's value an earlier run left.
    """

    def __init__(self, m, x, factors, name, clear=None, enable=None):
        x_in = Signal(signed(len(x)), name=f"{name}_operand")
        x_out = Signal(signed(len(x)), name=f"{name}_operand_of_product")
        valid_in = Signal(name=f"{name}_valid_operand")
        valid_out = Signal(name=f"{name}_valid_product")
        m.d.sync += [x_in.eq(x), x_out.eq(x_in),
                     valid_in.eq(1 if enable is None else enable), valid_out.eq(valid_in)]
        if clear is not None:
            with m.If(clear):
                m.d.sync += [valid_in.eq(0), valid_out.eq(0)]
        self.product, self.ready = [], []
        for i, factor in enumerate(factors):
            f_in = Signal(signed(len(factor)), name=f"{name}_factor_{i}")
            f_out = Signal(signed(len(factor)), name=f"{name}_factor_of_product_{i}")
            product = Signal(signed(len(x) + len(factor)), name=f"{name}_product_{i}")
            m.d.sync += [f_in.eq(factor), f_out.eq(f_in), product.eq(x_in * f_in)]
            ready = Signal(name=f"{name}_ready_{i}")
            m.d.comb += ready.eq(valid_out & (x == x_out) & (factor == f_out))
            self.product.append(product)
            self.ready.append(ready)
