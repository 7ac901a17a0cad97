"""The main job's driver (``make sim`` / ``python -m sim.main_job``) on the golden model.

The RTL runs of the same path are covered by tests/e2e/test_regression.py and tb/system; here the
option plumbing: every -O level compiles for configs/tmu_rtl.json, the golden model decodes it with
that configuration, and the result is checked against PyTorch inside ``main`` (exit status 0).
"""

import argparse

import pytest

from sim import main_job


def _args(*argv):
    p = argparse.ArgumentParser()
    main_job.add_arguments(p)
    return p.parse_args(list(argv))


@pytest.mark.parametrize("level", ["0", "1", "2", "3"])
def test_compiled_levels_pass_on_golden(level, capsys):
    assert main_job.main(_args("--target", "golden", "--nodes", "60", "--dim", "13", "-O", level)) == 0
    out = capsys.readouterr().out
    assert f"-O{level})" in out and "PASS" in out


def test_default_is_o3_on_hbm2():
    ns = _args()
    assert (ns.opt_level, ns.memory, ns.target, ns.program) == (3, "HBM2", "rtl", "compiled")


def test_bad_level_is_refused():
    with pytest.raises(SystemExit):
        _args("-O", "4")
