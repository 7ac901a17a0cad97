"""pytest configuration of the hardware tests: markers, and skipping RTL tests without Verilator."""

import shutil
import warnings

import pytest


def pytest_configure(config):
    config.addinivalue_line("markers", "rtl: builds or runs the Verilator model of the RTL (needs verilator)")
    config.addinivalue_line("markers", "slow: long RTL runs, left out of the default `make test`")
    # Elaboratables created by constructor-argument tests that raise are never elaborated.
    warnings.filterwarnings("ignore", message=".*created but never used", category=Warning)


def pytest_collection_modifyitems(config, items):
    if shutil.which("verilator"):
        return
    skip = pytest.mark.skip(reason="verilator is not installed")
    for item in items:
        if "rtl" in item.keywords:
            item.add_marker(skip)
