"""scripts/report.py: rendering from a step's CSV and metadata (table, figure, command, date and
load), sections of steps not run kept as the report has them, a step's data copied into the
report, a failing step named in the error, unknown steps refused (exit 2)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO / "scripts"))
import report  # noqa: E402


def test_render_shows_command_date_load_table_and_figure(tmp_path):
    build, out = tmp_path / "build", tmp_path / "docs"
    build.mkdir()
    (build / "mapping.csv").write_text(
        "set,mapper,units,pieces,makespan_cycles,makespan_over_best,imbalance,extra\n"
        "extreme,round_robin,4,16,24785,3.11,3.45,x\nextreme,stats_guided,4,19,7974,1.0,1.07,y\n")
    (build / "mapping.json").write_text(json.dumps(dict(
        command="python scripts/bench_mapping.py --units 4", quick=False, commit="abc1234",
        load_before="1.00 2.00 3.00", load_after="4.00 5.00 6.00", start="2026-11-25 01:00 UTC",
        end="2026-11-25 01:10 UTC", wall_s=600.0, returncode=0)))
    text = report.render([s for s in report.STEPS if s.name == "mapping"], out, build).read_text()
    assert "python scripts/bench_mapping.py --units 4" in text
    assert "2026-11-25 01:00 UTC to 2026-11-25 01:10 UTC" in text and "`abc1234`" in text
    assert "load average 1.00 2.00 3.00 before, 4.00 5.00 6.00 after" in text
    assert "| extreme | stats_guided | 4 | 19 | 7974 | 1 | 1.07 |" in text
    assert "extra" not in text                      # only the step's columns
    assert (out / "mapping.png").stat().st_size > 1000 and "![" in text


def test_a_step_not_run_says_how_to_run_it(tmp_path):
    text = report.render(report.STEPS[:1], tmp_path / "docs", tmp_path / "empty").read_text()
    assert "Not run yet: `python scripts/report.py --steps bandwidth`" in text


def test_a_failing_step_is_named_with_its_log(tmp_path):
    step = report.Step("broken", "t", [str(REPO / "scripts" / "sweep.py"), "--levels", "9"],
                       [], "--out", [], [], "", "")
    with pytest.raises(RuntimeError, match=r"report step 'broken' failed \(exit 2\); see .*broken.log"):
        report.run_step(step, quick=False, build=tmp_path)
    assert "--levels: '9'" in (tmp_path / "broken.log").read_text()


def test_unknown_step_exits_2():
    p = subprocess.run([sys.executable, str(REPO / "scripts" / "report.py"), "--steps", "speed"],
                       capture_output=True, text=True)
    assert p.returncode == 2 and "--steps: 'speed' is not one of" in p.stderr
    assert "Traceback" not in p.stderr


def test_runs_of_the_other_size_are_not_shown(tmp_path):
    build = tmp_path / "build"
    build.mkdir()
    (build / "mapping.csv").write_text("set,mapper,makespan_cycles\nbalanced,round_robin,99\n")
    (build / "mapping.json").write_text(json.dumps(dict(
        command="c", quick=True, commit="x", load_before="0", load_after="0", start="s", end="e",
        wall_s=1.0, returncode=0)))
    step = [s for s in report.STEPS if s.name == "mapping"]
    full = report.render(step, tmp_path / "full", build).read_text()
    assert "Not run on the full inputs yet" in full and "round_robin" not in full
    quick = report.render(step, tmp_path / "quick", build, quick=True).read_text()
    assert "| balanced | round_robin | 99 |" in quick


def _mapping_run(build: Path, makespan: int) -> None:
    build.mkdir(parents=True, exist_ok=True)
    (build / "mapping.csv").write_text(f"set,mapper,makespan_cycles\nbalanced,greedy,{makespan}\n")
    (build / "mapping.json").write_text(json.dumps(dict(
        command="python scripts/bench_mapping.py", quick=False, commit="c0ffee1", load_before="0",
        load_after="0", start="s", end="e", wall_s=1.0, returncode=0)))


def test_a_step_not_run_keeps_its_section_and_figure(tmp_path):
    """--steps NAME on a fresh clone (no build/report/) re-renders NAME only: the other sections
    and their figures stay as the committed report has them."""
    out = tmp_path / "docs"
    mapping, sweep = [s for s in report.STEPS if s.name in ("mapping", "sweep")]
    _mapping_run(tmp_path / "first", 111)
    report.keep_data(mapping, tmp_path / "first", out)
    (out / "README.md").write_text(
        f"# r\n\n## {sweep.title}\n\nAn earlier sweep: | eb_sum | 64 | 1234 |\n\n"
        f"![x](sweep.png)\n\n## {mapping.title}\n\nold mapping table\n")
    (out / "sweep.png").write_bytes(b"png")
    text = report.render([mapping, sweep], out).read_text()
    assert "An earlier sweep: | eb_sum | 64 | 1234 |" in text and "![x](sweep.png)" in text
    assert (out / "sweep.png").read_bytes() == b"png"
    assert "| balanced | greedy | 111 |" in text and "old mapping table" not in text
    assert text.index(mapping.title) < text.index(sweep.title)      # the steps' order
    (out / "data" / "mapping.csv").unlink()                         # no data, no old section
    (out / "README.md").write_text(f"# r\n\n## {mapping.title}\n\nNot run yet: x\n")
    assert "Not run yet: `python scripts/report.py --steps mapping`" in report.render([mapping], out).read_text()


def test_a_run_step_is_copied_into_the_report_data(tmp_path):
    mapping = [s for s in report.STEPS if s.name == "mapping"][0]
    _mapping_run(tmp_path / "build", 222)
    report.keep_data(mapping, tmp_path / "build", tmp_path / "docs")
    assert (tmp_path / "docs" / "data" / "mapping.csv").read_text().endswith("greedy,222\n")
    assert json.loads((tmp_path / "docs" / "data" / "mapping.json").read_text())["commit"] == "c0ffee1"
