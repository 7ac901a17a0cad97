"""The compiler's own dialects: ``slc`` (structured lookup-compute) and ``dlc`` (decoupled)."""
