"""Randomised differential tests of the PyTorch frontend's rowwise-quantised embedding bags against
PyTorch itself.

Each run draws a fresh seed (printed, ``EMBER_SEED`` to replay: ``tb/seeds.py``) and from it
configurations across what a user may give ``embedding_bag_byte_rowwise_offsets`` /
``embedding_bag_4bit_rowwise_offsets`` (tables packed by ``embedding_bag_byte_prepack`` /
``embedding_bag_4bit_prepack``) and the ``torch.ao.nn.quantized.EmbeddingBag`` module: 8 or 4 bits,
rows and dims (odd and 1-wide for 8 bits; the 4-bit prepack takes even dims only, and the 4-bit
module pads an odd dim itself), weights of normal, wide, narrow, constant, one-signed, mixed per
row, huge and tiny (8-bit: subnormal scales) ranges, the packed table a buffer, a constant, an
input (another table, of other rows and dims, at each call) or the module's weight (``set_weight``
between calls), int32/int64 indices and offsets (independently), empty bags and calls of 0 lookups
or 0 bags, ``include_last_offset`` (8-bit), ``per_sample_weights`` (float32; float16 for the 4-bit
op) and the -O level. Each op is traced on one input and called on three others, on the golden
model. The claim checked is docs/compiler.md's ("Supported PyTorch input", the rowwise-quantised
row): the result equals PyTorch's CPU result bit for bit, same shape and dtype.

Then random *invalid* calls (one defect each: an id out of range, a wrong index, offsets or weights
dtype, offsets not starting at 0, decreasing or past the end, a strided argument, a 2-D offsets
or 3-D indices, weights of the wrong length, a packed table of another dtype): each must be a
``ValueError`` naming the argument. Where PyTorch raises, that is what the frontend must do; where
it runs, the refusal must be one docs/compiler.md gives with its reason (``_PYTORCH_RUNS``:
PyTorch's 8- and 4-bit kernels disagree or read memory as it lies). Calls PyTorch itself would
answer by reading past a tensor (offsets past the end: the module's 8-bit kernel reads ids beyond
the indices; weights shorter than the indices) are not made in PyTorch. Last, configurations the
frontend refuses when compiling (``CompileError`` naming them): mode 1/2, pruned tables, the
module's mode other than sum and its 4-bit ``include_last_offset``.
"""

from __future__ import annotations

import random
import re
import warnings

import pytest
import torch

from sw.api import compile_torch
from sw.compiler import CompileError
from tb.seeds import fresh_seed, seed_range

Q = torch.ops.quantized
_PREPACK = {8: Q.embedding_bag_byte_prepack, 4: Q.embedding_bag_4bit_prepack}
_OP = {8: Q.embedding_bag_byte_rowwise_offsets, 4: Q.embedding_bag_4bit_rowwise_offsets}
_DIMS = {8: [1, 2, 3, 5, 8, 16, 17, 64], 4: [2, 4, 6, 16, 18, 64]}
_RANGES = ["normal", "wide", "narrow", "constant", "positive", "negative", "mixed", "huge", "tiny"]


def _float_rows(rng: random.Random, gen: torch.Generator, rows: int, dim: int, bits: int) -> torch.Tensor:
    """A float32 table of one of ``_RANGES`` (4-bit: within float16's range, its scale's type)."""
    kind = rng.choice(_RANGES)
    w = torch.randn(rows, dim, generator=gen)
    if kind == "wide":
        w = w * 1e4
    elif kind == "narrow":
        w = 5 + w * 1e-4
    elif kind == "constant":                       # scale 0 (8-bit) or the prepack's own guard
        w = torch.full((rows, dim), rng.uniform(-3, 3)) + torch.zeros(rows, 1).uniform_(-1, 1, generator=gen)
    elif kind == "positive":
        w = w.abs() + 1
    elif kind == "negative":
        w = -w.abs() - 1
    elif kind == "mixed":                          # rows of scales 1e-4 .. 1e4
        w = w * torch.logspace(-4, 4, rows).unsqueeze(1)
    elif kind == "huge":
        w = w * (1e30 if bits == 8 else 1e3)
    elif kind == "tiny":
        w = w * (1e-38 if bits == 8 else 1e-3)     # 8-bit: subnormal float32 scales
    return w


class _Bag(torch.nn.Module):
    """The quantized op on a packed table that is a buffer, a constant or the first input."""

    def __init__(self, bits: int, packed: torch.Tensor | None, table: str, ilo: bool):
        super().__init__()
        self.bits, self.table, self.ilo = bits, table, ilo
        if table == "buffer":
            self.register_buffer("packed", packed)
        elif table == "constant":
            self.packed = packed

    def forward(self, *args):
        if self.table == "input":
            packed, args = args[0], args[1:]
        else:
            packed = self.packed
        indices, offsets, weights = (tuple(args) + (None,))[:3]
        return _OP[self.bits](packed, indices, offsets, False, 0, False, weights, None, self.ilo)


def _ao_bag(bits: int, w: torch.Tensor, ilo: bool, mode: str = "sum"):
    qc = torch.ao.quantization
    float_bag = torch.nn.EmbeddingBag(*w.shape, mode="sum", include_last_offset=ilo, _weight=w)
    float_bag.qconfig = (qc.float_qparams_weight_only_qconfig if bits == 8
                         else qc.float_qparams_weight_only_qconfig_4bit)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")             # the module's deprecation warnings
        m = torch.ao.nn.quantized.EmbeddingBag.from_float(float_bag)
    m.mode = mode
    return m


class _Case:
    """One random configuration: the PyTorch callable, how to draw a call's inputs, a name."""

    def __init__(self, rng: random.Random, gen: torch.Generator):
        self.rng, self.gen = rng, gen
        self.bits = rng.choice([8, 4])
        self.table = rng.choice(["buffer", "constant", "input", "module"])
        self.ilo = self.bits == 8 and rng.random() < 0.3
        self.weighted = rng.random() < 0.4
        self.w16 = self.weighted and self.bits == 4 and rng.random() < 0.3
        self.rows = rng.choice([1, 2, 7, 50, 300])
        dims = _DIMS[self.bits] + ([3, 5] if self.table == "module" and self.bits == 4 else [])
        self.dim = rng.choice(dims)
        w = _float_rows(rng, gen, self.rows, self.dim, self.bits)
        self.keep = []                              # modules whose weight() the module shares
        if self.table == "module":
            self.m = _ao_bag(self.bits, w, self.ilo)
        else:
            self.m = _Bag(self.bits, _PREPACK[self.bits](w), self.table, self.ilo)
        self.packed = None if self.table in ("module", "input") else self.m.packed
        self.current = _PREPACK[self.bits](w) if self.table == "input" else None
        self.int32 = (rng.random() < 0.4, rng.random() < 0.4)     # indices, offsets

    def __str__(self):
        return (f"bits={self.bits} table={self.table} rows={self.rows} dim={self.dim} "
                f"include_last_offset={self.ilo} weighted={self.weighted} float16 weights={self.w16} "
                f"int32 (indices, offsets)={self.int32}")

    def new_table(self) -> None:
        """Another packed table for the next call: another input (other rows and dims), the
        buffer or constant changed in place, or the module's ``set_weight``."""
        rng, gen = self.rng, self.gen
        if self.table == "input":
            self.rows = rng.choice([1, 3, 50, 300])
            self.dim = rng.choice(_DIMS[self.bits])
            self.current = _PREPACK[self.bits](_float_rows(rng, gen, self.rows, self.dim, self.bits))
        elif self.table == "module":
            other = _ao_bag(self.bits, _float_rows(rng, gen, self.rows, self.dim, self.bits), self.ilo)
            self.keep.append(other)                 # weight() shares its scales with `other`
            self.m.set_weight(other.weight())
        else:
            self.packed.copy_(_PREPACK[self.bits](_float_rows(rng, gen, self.rows, self.dim, self.bits)))

    def inputs(self, nbags: int | None = None, lengths: list | None = None) -> tuple:
        rng, gen = self.rng, self.gen
        if lengths is None:
            nbags = rng.choice([0, 1, 2, 5, 13]) if nbags is None else nbags
            lengths = [rng.choice([0, 0, 1, 2, 5, 9, 30]) for _ in range(nbags)]
        ends = torch.tensor(lengths, dtype=torch.int64).cumsum(0).tolist()
        n = ends[-1] if ends else 0
        indices = torch.randint(0, self.rows, (n,), generator=gen)
        offsets = torch.tensor(([0] + ends) if self.ilo else ([0] + ends[:-1] if ends else []),
                               dtype=torch.int64)
        indices = indices.int() if self.int32[0] else indices
        offsets = offsets.int() if self.int32[1] else offsets
        args = (indices, offsets)
        if self.weighted:
            w = torch.randn(n, generator=gen) * rng.choice([1.0, 1e-3, 1e3])
            args += (w.half() if self.w16 else w,)
        return (self.current,) + args if self.table == "input" else args


def _assert_same(got, want, what: str):
    assert got.shape == want.shape and got.dtype == want.dtype, (what, got.shape, want.shape, got.dtype)
    # bit patterns: a NaN (none is expected from finite tables) must be the same NaN
    assert torch.equal(got.view(torch.int32), want.view(torch.int32)), (
        what, (got.double() - want.double()).abs().max().item())


def test_random_quantized_bags_equal_pytorch_bit_for_bit():
    base = fresh_seed("quant_fuzz")
    for seed in seed_range(base, 12):
        rng, gen = random.Random(seed), torch.Generator().manual_seed(seed)
        case = _Case(rng, gen)
        opt_level = rng.choice([0, 1, 2, 3])
        what = f"seed {seed}: {case} -O{opt_level}"
        example = case.inputs(nbags=rng.choice([1, 3, 6]))
        op = compile_torch(case.m, example, opt_level=opt_level)
        for k in range(3):                          # the last: bags of 0 lookups only
            if k == 1:
                case.new_table()
            call = case.inputs() if k < 2 else case.inputs(lengths=[0] * rng.choice([1, 4]))
            _assert_same(op(*call), case.m(*call), f"{what}, call {k}")


# ------------------------------------------------------------------------------------------------
# invalid calls
# ------------------------------------------------------------------------------------------------

#: refusals where PyTorch runs, each with docs/compiler.md's reason
_PYTORCH_RUNS = {
    "offsets[0] > 0": "PyTorch's 8-bit kernel starts the first bag there, the 4-bit one at 0",
    "decreasing offsets": "PyTorch's 8-bit kernel raises, the 4-bit one runs",
    "offsets[-1] < n with include_last_offset": "PyTorch's 8-bit kernel drops the ids after it, "
                                                "the 4-bit one raises",
    "a weight too many": "PyTorch reads the first n",
    "strided weights": "PyTorch reads the weights' storage, ignoring the strides",
}
#: calls PyTorch answers by reading past a tensor: not made in PyTorch
_NOT_IN_PYTORCH = {"offsets past the end", "a weight too few"}


def _strided(t: torch.Tensor) -> torch.Tensor:
    """``t``'s values, every other element along its last axis of a tensor twice as wide (not
    contiguous when that axis has 2 or more elements)."""
    wide = torch.zeros(tuple(t.shape[:-1]) + (2 * t.shape[-1],), dtype=t.dtype)
    wide[..., ::2] = t
    return wide[..., ::2]


def _defects(case: _Case, args: tuple) -> list:
    """(what, argument named, the call's inputs) for each defect that applies to ``args``."""
    first = 1 if case.table == "input" else 0
    idx, off = args[first], args[first + 1]
    n = idx.numel()
    rng = case.rng

    def with_(pos: int, value) -> tuple:
        out = list(args)
        out[first + pos] = value
        return tuple(out)

    out = []
    if n:
        k = rng.randrange(n)
        high, low = idx.clone(), idx.clone()
        high[k] = case.rows + rng.choice([0, 1, 1000])
        low[k] = -rng.choice([1, 2, case.rows])
        out += [("an id too large", r"indices\[", with_(0, high)),
                ("a negative id", r"indices\[", with_(0, low))]
    bad_int = rng.choice([torch.int8, torch.int16, torch.uint8])
    out += [("indices of " + str(bad_int), "indices", with_(0, idx.to(bad_int))),
            ("float indices", "indices", with_(0, idx.float())),
            ("offsets of " + str(bad_int), "offsets", with_(1, off.to(bad_int))),
            ("float offsets", "offsets", with_(1, off.double())),
            ("strided indices", "indices", with_(0, _strided(idx))),
            ("strided offsets", "offsets", with_(1, _strided(off))),
            ("2-D offsets", "offsets", with_(1, off[None])),
            ("3-D indices", "indices", with_(0, idx.reshape(1, 1, -1)))]
    if off.numel() >= 2 and int(off[1]) > 0:
        first_bag = off.clone()
        first_bag[0] = rng.randint(1, int(off[1]))   # still non-decreasing
        out.append(("offsets[0] > 0", "offsets", with_(1, first_bag)))
    if n and off.numel() >= 4:
        down = off.clone()
        down[1], down[2] = n, 0                     # (include_last_offset: the last stays n)
        out.append(("decreasing offsets", "offsets", with_(1, down)))
    past = off.clone()
    if past.numel():
        past[-1] = n + rng.choice([1, 5])
        out.append(("offsets past the end", "offsets", with_(1, past)))
    if case.ilo and off.numel() >= 2 and int(off[-2]) < n:
        short = off.clone()
        short[-1] = n - 1
        out.append(("offsets[-1] < n with include_last_offset", "offsets", with_(1, short)))
    if case.weighted:
        w = args[first + 2]
        wrong = rng.choice([torch.float64, torch.int64] + ([torch.float16] if case.bits == 8 else []))
        out += [("weights of " + str(wrong), "per_sample_weights", with_(2, w.to(wrong))),
                ("a weight too many", "per_sample_weights", with_(2, torch.cat([w, w[:1] + 1]))),
                ("strided weights", "per_sample_weights", with_(2, _strided(w)))]
        if n:
            out.append(("a weight too few", "per_sample_weights", with_(2, w[:-1].clone())))
    if case.table == "input":
        packed = args[0]
        out += [("a packed table of " + str(d), "packed weight", (packed.to(d),) + tuple(args[1:]))
                for d in (rng.choice([torch.int8, torch.float32]),)]
        out.append(("a strided packed table", "packed weight", (_strided(packed),) + tuple(args[1:])))
    return out


def test_random_invalid_calls_are_refused_naming_the_argument():
    base = fresh_seed("quant_fuzz_invalid")
    for seed in seed_range(base, 6):
        rng, gen = random.Random(seed), torch.Generator().manual_seed(seed)
        case = _Case(rng, gen)
        example = case.inputs(nbags=rng.choice([2, 4]))
        op = compile_torch(case.m, example)
        # 4 bags of 1+ lookups: each strided argument has 2+ elements, each defect applies
        for defect, name, call in _defects(case, case.inputs(lengths=[rng.choice([1, 2, 5]) for _ in range(4)])):
            what = f"seed {seed}: {case}: {defect}"
            runs = None
            if defect not in _NOT_IN_PYTORCH:
                try:
                    runs = case.m(*call)
                except (RuntimeError, ValueError, IndexError, TypeError):
                    pass
                assert runs is None or defect in _PYTORCH_RUNS, (what, "PyTorch runs it")
            try:
                op(*call)
            except ValueError as e:
                assert re.match(rf"(the )?{name}", str(e)), (what, str(e))
            else:
                pytest.fail(f"{what}: no ValueError (PyTorch: {'a result' if runs is not None else 'refused'})")


# ------------------------------------------------------------------------------------------------
# configurations refused when compiling
# ------------------------------------------------------------------------------------------------

class _Pruned(torch.nn.Module):
    def __init__(self, bits, packed, mode, pruned, mapping):
        super().__init__()
        self.bits, self.mode, self.pruned, self.mapping = bits, mode, pruned, mapping
        self.register_buffer("packed", packed)

    def forward(self, indices, offsets):
        return _OP[self.bits](self.packed, indices, offsets, False, self.mode, self.pruned, None,
                              self.mapping, False)


def test_random_unsupported_configurations_are_compile_errors_naming_them():
    base = fresh_seed("quant_fuzz_refused")
    for seed in seed_range(base, 3):
        rng, gen = random.Random(seed), torch.Generator().manual_seed(seed)
        bits, rows, dim = rng.choice([8, 4]), rng.choice([3, 20]), rng.choice([4, 16])
        w = torch.randn(rows, dim, generator=gen)
        idx, off = torch.randint(0, rows, (6,), generator=gen), torch.tensor([0, 2, 2])
        kind = rng.choice(["mode", "pruned", "module mode", "module 4-bit include_last_offset"])
        what = f"seed {seed}: bits={bits} {kind}"
        if kind == "mode":
            mode = rng.choice([1, 2])
            m, match = _Pruned(bits, _PREPACK[bits](w), mode, False, None), f"mode={mode}"
        elif kind == "pruned":
            mapping = torch.arange(rows, dtype=torch.int32)
            m, match = _Pruned(bits, _PREPACK[bits](w), 0, True, mapping), "pruned_weights"
        elif kind == "module mode":
            mode = rng.choice(["mean", "max"])
            m, match = _ao_bag(bits, w, False, mode), f"mode='{mode}'"
        else:
            m, match = _ao_bag(4, w, True), "include_last_offset"
            off = torch.tensor([0, 2, 6])
        with pytest.raises(CompileError, match=match):
            compile_torch(m, (idx, off))
            pytest.fail(f"{what}: compiled")
