"""Fresh seeds for the randomised differential tests (golden model against the RTL).

Every run draws a new base seed from the operating system and prints it, so each run checks
programs no earlier run has seen and a failure reproduces:

>>> base = fresh_seed("random_v1")        # prints "EMBER_SEED=1234567890 (random_v1)"
>>> cases = [random_v1_case(s, cfg) for s in seed_range(base, 60)]

With ``EMBER_SEED`` set in the environment (decimal or ``0x`` hexadecimal) that value is used
instead, e.g. ``EMBER_SEED=1234567890 python3 -m pytest tb/system/test_v1.py``. pytest shows the
printed line with a failing test's captured output; the case names carry their seed too.
"""

from __future__ import annotations

import os

__all__ = ["ENV", "fresh_seed", "seed_range"]

#: The environment variable that fixes the base seed.
ENV = "EMBER_SEED"


def fresh_seed(what: str = "") -> int:
    """A base seed in ``[0, 2**32)``: ``$EMBER_SEED`` if set, else 4 bytes of ``os.urandom``.

    Prints ``EMBER_SEED=<seed> (<what>)``. Raises ``ValueError`` naming ``EMBER_SEED`` and its
    value when it is not an integer in that range."""
    text = os.environ.get(ENV, "").strip()
    if text:
        try:
            seed = int(text, 0)
        except ValueError:
            raise ValueError(f"{ENV} must be an integer, not {text!r}") from None
        if not 0 <= seed < 1 << 32:
            raise ValueError(f"{ENV} must be in [0, 2**32), not {seed}")
    else:
        seed = int.from_bytes(os.urandom(4), "little")
    print(f"{ENV}={seed}" + (f" ({what})" if what else ""))
    return seed


def seed_range(base: int, count: int) -> range:
    """``count`` consecutive program seeds from ``base`` (what one printed seed reproduces)."""
    return range(base, base + count)
