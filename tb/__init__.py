"""Testbenches of the hardware: Amaranth-simulator unit tests and cocotb + Verilator tests.

Nothing outside ``tb/`` and ``tests/`` imports this package; the simulator the testbenches and the
rest of the project share (Verilog generation, the cached Verilator build, ``run_on_rtl``) is
``sim/``.
"""
