"""``scripts/`` is not a package: its tests load a script as a module with :func:`load_script`
(importable from ``tests/scripts``, which pytest puts on ``sys.path`` for its test modules)."""

from __future__ import annotations

import importlib.util
from pathlib import Path
from types import ModuleType

SCRIPTS = Path(__file__).resolve().parents[2] / "scripts"


def load_script(name: str) -> ModuleType:
    """``scripts/<name>.py``, executed as a module named ``name``. A script that imports its
    sibling scripts (``synth``, ``path_delay``) needs ``scripts/`` on ``sys.path`` first: its
    test puts it there. Raises ``FileNotFoundError`` if there is no such script."""
    path = SCRIPTS / f"{name}.py"
    if not path.is_file():
        raise FileNotFoundError(f"no script {path}")
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module
