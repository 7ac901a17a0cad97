"""Memory models (simulation only; exempt from synthesisability)."""

from .fixed_latency import FixedLatencyMemory, STORAGE_VERILOG

__all__ = ["FixedLatencyMemory", "STORAGE_VERILOG"]
