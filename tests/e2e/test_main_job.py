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


def test_ceiling_line_puts_the_useful_bytes_against_the_memory_alone(capsys):
    """100 rows of 16 f32 (64 B, one line each) in 1,000 cycles: 6.4 useful bytes/cycle against
    the fixed-latency memory's 100 * 64 / (100 + 32) bytes/cycle for the same 100 line reads."""
    import numpy as np
    main_job.print_ceiling(np.arange(100), 16, "simple", 1000)
    out = capsys.readouterr().out
    bound = 100 * 64 / 132
    assert out == (f"memory's ceiling for this row trace: {bound:.1f} bytes/cycle (1 port, no cap); "
                   f"the unit's useful bytes/cycle: 6.40 = {100 * 6.4 / bound:.1f} % of it\n"
                   f"min(memory's ceiling, the unit's output bound of 64 bytes/cycle) = "
                   f"{bound:.1f} bytes/cycle; the unit reaches {100 * 6.4 / bound:.1f} % of it\n")
    main_job.print_ceiling(np.arange(100), 16, "simple", 1000, output_bytes=16)
    assert capsys.readouterr().out.endswith(
        "min(memory's ceiling, the unit's output bound of 16 bytes/cycle) = 16.0 bytes/cycle; "
        "the unit reaches 40.0 % of it\n")
