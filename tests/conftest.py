"""Fixtures shared by the tests of ``tests/``."""

import pytest

from tb.seeds import fresh_seed


@pytest.fixture
def seed(request) -> int:
    """A fresh base seed per test, printed (``EMBER_SEED=...``) so a failure reproduces;
    ``$EMBER_SEED`` fixes it (``tb/seeds.py``)."""
    return fresh_seed(request.node.name)
