"""`make verilog` (issue 8 item 9: declared, without a recipe): the system's Verilog in build/verilog/."""

import os
import subprocess
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]


def test_make_verilog_has_a_recipe():
    # Under `make test` this runs inside make: without the parent's MAKEFLAGS/MAKELEVEL and with
    # --no-print-directory, the dry run prints only the recipe ("make[1]: Entering directory" not).
    env = {k: v for k, v in os.environ.items() if k not in ("MAKEFLAGS", "MAKELEVEL", "MFLAGS")}
    out = subprocess.run(["make", "--no-print-directory", "-n", "verilog"], cwd=REPO, env=env,
                         capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    assert out.stdout.split() == ["python3", "-m", "sim.write_verilog", "--out", "build/verilog"]


@pytest.mark.rtl
def test_write_verilog_writes_the_system(tmp_path, capsys):
    from sim.write_verilog import main
    assert main(["--out", str(tmp_path / "v")]) == 0
    system = (tmp_path / "v" / "ember_system.v").read_text()
    assert "module ember_system(" in system
    assert "module ember_tb_top" in (tmp_path / "v" / "ember_tb_top.v").read_text()
    assert (tmp_path / "v" / "ember_hbm_storage.v").stat().st_size > 0
    assert f"{tmp_path / 'v' / 'ember_system.v'}: {len(system.encode())} bytes" in capsys.readouterr().out
