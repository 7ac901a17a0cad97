"""``sw.runtime.kernel.fma32/fma64`` (the execute sides' fused multiply-add) against an independent
reference: ``sw.workloads.fma_f32`` rounds the exact rational value (``fractions.Fraction``)."""

import os
from fractions import Fraction

import numpy as np

from sw.runtime.kernel import fma32, fma64
from sw.workloads import fma_f32


def _rng():
    seed = int(os.environ.get("EMBER_SEED", np.random.SeedSequence().entropy % 2**32))
    print(f"seed {seed}")
    return np.random.default_rng(seed)


def _floats(rng, n, dtype):
    """Mantissas with few bits set and exponents close together: products and sums near ties."""
    m = rng.integers(-2**12, 2**12, n) * 2.0 ** rng.integers(-12, 0, n) + rng.choice([0, 1], n)
    return (m * 2.0 ** rng.integers(-4, 5, n)).astype(dtype)


def test_fma32_rounds_once_elementwise_and_on_scalars():
    rng = _rng()
    a, b, c = (_floats(rng, 4000, np.float32) for _ in range(3))
    got = fma32(a, b, c)
    want = np.array([fma_f32(x, y, z) for x, y, z in zip(a, b, c)], np.float32)
    assert got.dtype == np.float32 and np.array_equal(got.view(np.int32), want.view(np.int32))
    assert fma32(a[0], b[0], c[0]) == want[0]
    # exact a*b + c = 1 + 2^-23 + 2^-24 - 2^-54: just below the float32 tie, so it rounds down to
    # 1 + 2^-23; a float64 sum first lands on the tie and rounds to even, 1 + 2^-22 (double rounding).
    a, b, c = np.float32(1 + 2.0 ** -15), np.float32(2.0 ** -24 * (1 - 2.0 ** -15)), np.float32(1 + 2.0 ** -23)
    assert np.float32(np.float64(a) * np.float64(b) + np.float64(c)) == np.float32(1 + 2.0 ** -22)
    assert fma32(a, b, c) == np.float32(1 + 2.0 ** -23)


def test_fma64_rounds_once():
    rng = _rng()
    for x, y, z in zip(*(_floats(rng, 300, np.float64) for _ in range(3))):
        exact = Fraction(float(x)) * Fraction(float(y)) + Fraction(float(z))
        assert fma64(x, y, z) == np.float64(float(exact))
    with np.errstate(invalid="ignore"):                  # inf * 0 is NaN, as fma(inf, 0, 1) is
        assert np.isnan(fma64(np.inf, 0.0, 1.0))
