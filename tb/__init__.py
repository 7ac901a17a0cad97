"""Testbenches of the hardware: Amaranth-simulator unit tests and cocotb + Verilator tests.

``tb.harness.run_on_rtl`` is the entry point other parts of the project call.
"""
