"""Frontends: MLIR SCF text (:mod:`.mlir`) and PyTorch (:mod:`.torch`)."""
