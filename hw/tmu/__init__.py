"""The access unit (a TMU-like traversal and marshaling unit), ISA version 0."""

from .config import TmuConfig
from .tmu import COUNTERS, CountersLayout, Tmu, TmuControlSignature

__all__ = ["TmuConfig", "Tmu", "TmuControlSignature", "COUNTERS", "CountersLayout"]
