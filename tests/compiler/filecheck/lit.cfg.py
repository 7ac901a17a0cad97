# lit configuration of the compiler's RUN-line golden tests (as xDSL's tests/filecheck).
# Run: lit -v tests/compiler/filecheck   (tests/compiler/test_filecheck.py runs it under pytest)
import os
import sys

import lit.formats

config.name = "ember-compiler"
config.test_format = lit.formats.ShTest(execute_external=False)
config.suffixes = [".mlir"]
config.test_source_root = os.path.dirname(__file__)
_repo = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", "..", ".."))
config.environment["PYTHONPATH"] = os.pathsep.join(
    [_repo] + [p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p])
for _name in ("EMBER_BUILD_DIR", "HOME", "PATH"):
    if _name in os.environ:
        config.environment[_name] = os.environ[_name]
# `ember` of this tree (not an installed copy), and filecheck of the same Python.
config.substitutions.append(("%ember", f"{sys.executable} -m sw.cli"))
config.substitutions.append(("filecheck", f"{sys.executable} -m filecheck"))
