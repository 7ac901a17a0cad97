"""Backends: the access program (:mod:`.tmu`) and the execute-side Python (:mod:`.python`)."""
