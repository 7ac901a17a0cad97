"""The RUN-line golden tests of ``tests/compiler/filecheck/`` (lit + filecheck, as xDSL's
``tests/filecheck``), run under pytest so ``make test`` covers them.

Each ``.mlir`` there has ``// RUN:`` lines (``%ember opt %s --passes ...``, piped into
``filecheck``) and ``// CHECK:`` lines: one file per pass, plus the diagnostics. By hand:
``lit -v tests/compiler/filecheck``.
"""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

lit = pytest.importorskip("lit", reason="lit is not installed (pip install -e '.[test]')")
pytest.importorskip("filecheck", reason="filecheck is not installed (pip install -e '.[test]')")

FILECHECK = Path(__file__).resolve().parent / "filecheck"
TESTS = sorted(FILECHECK.glob("*.mlir"))
# "CHECK" (or a --check-prefix) followed by anything but ":" / "-NEXT:" ...: filecheck ignores such
# a line silently, so the expectation it was meant to state would never be checked.
_PREFIXES = r"CHECK|UNKNOWN|OPTION|TYPE|SYNTAX|EMPTY|MISSING"
_MALFORMED = re.compile(rf"^//\s*({_PREFIXES})(?!(-(NEXT|SAME|NOT|DAG|LABEL|EMPTY|COUNT-\d+))?:)\b")


def test_lit_runs_every_file():
    out = subprocess.run([sys.executable, "-c", "from lit.main import main; main()", "-v",
                          str(FILECHECK)], capture_output=True, text=True)
    assert out.returncode == 0, out.stdout[-6000:] + out.stderr[-2000:]
    assert f"Passed: {len(TESTS)}" in out.stdout or f"Passed : {len(TESTS)}" in out.stdout, out.stdout


@pytest.mark.parametrize("path", TESTS, ids=[p.name for p in TESTS])
def test_check_lines_are_well_formed(path):
    text = path.read_text()
    assert "// RUN:" in text, f"{path.name} has no RUN line"
    bad = [f"{path.name}:{n}: {line}" for n, line in enumerate(text.splitlines(), 1)
           if _MALFORMED.match(line)]
    assert not bad, "check lines without their colon (filecheck would ignore them):\n" + "\n".join(bad)


def test_every_pass_has_a_golden_file():
    from sw.compiler.pipelines import PASSES
    assert sorted(p.stem for p in TESTS if p.stem in PASSES) == sorted(PASSES)
