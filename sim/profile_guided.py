"""A profile-guided build of the C++ harness: the same model, compiled again by GCC with a
profile of one run (``-fprofile-generate``, a training run, ``-fprofile-use``), ~1.35-1.45x more
simulated cycles per second (``docs/performance.md``, "A profile-guided harness").

Verilator's generated C++ is one large function per evaluation region; built at ``-Os`` (what
the harness uses: ``-O2`` alone makes it ~2.5x slower, its code no longer fits the instruction
caches), every cycle runs through code laid out without knowing which branches are hot. With a
profile, GCC optimises the per-cycle code for speed and keeps it together, and leaves the rest
small. The tokens, cycles, counters and memory statistics do not change: the C++ is the same,
only its compilation differs (``tests/sim/test_profile_guided.py`` checks that against the
plain harness).

Asked for with the environment variable ``EMBER_PROFILE_GUIDED=1`` (``make sim PGO=1``): then
:func:`sim.fast.run_jobs` runs every job on the profile-guided build of the harness it is given,
building it first if needed, trained on the first job of that call. The build is cached beside
the plain one (``build/rtl/<hash>/profile_guided/``) and costs, on a 2-core machine, about as
much again as the plain build (an instrumented compile, the training run, a second compile:
~4 minutes for the default unit), so it pays for long runs on one build (``make report``,
sweeps), not for a single ``make sim``. Needs GCC (``g++``, Verilator's default compiler).
"""

from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
from pathlib import Path

__all__ = ["ENVIRONMENT", "requested", "profile_guided_harness"]

#: The environment variable that asks for the profile-guided harness: ``1`` yes, ``0`` or unset no.
ENVIRONMENT = "EMBER_PROFILE_GUIDED"
#: The directory of the profile-guided build, inside the plain build's directory
DIRECTORY = "profile_guided"
#: GCC's flags for the two compiles (Verilator's makefile variables ``OPT_FAST``, ``OPT_GLOBAL``;
#: ``OPT_SLOW`` is the model's start-up code, left at its default but instrumented so that the
#: link finds the profiling runtime)
INSTRUMENTED = "-Os -fprofile-generate"
OPTIMISED = ("-O2 -fprofile-use -fprofile-correction -Wno-missing-profile "
             "-Wno-coverage-mismatch")


def requested() -> bool:
    """Whether ``EMBER_PROFILE_GUIDED`` asks for the profile-guided harness. Raises
    ``ValueError`` naming the variable for a value other than ``0``, ``1`` or empty."""
    value = os.environ.get(ENVIRONMENT, "")
    if value not in ("", "0", "1"):
        raise ValueError(f"{ENVIRONMENT} must be 1 (profile-guided harness) or 0, not {value!r}")
    return value == "1"


def profile_guided_harness(executable: Path, training: list[dict], run) -> Path:
    """The profile-guided build of the harness ``executable`` (a ``sim.fast.build_harness``
    result, ``<build>/obj/ember_harness``), built once and cached in
    ``<build>/profile_guided/obj/``; returns its executable.

    ``training`` is a job list as ``sim.fast.run_jobs`` takes it (its entries' image paths must
    exist); ``run(executable, spec, job_dir)`` runs it (``sim.fast.run_jobs`` without this
    step). Only a build that does not exist yet is trained. Raises ``RuntimeError`` with the
    tail of ``profile_guided/build.log`` if a compile fails or the training run writes no
    profile."""
    from sim.verilator import _lock
    obj = executable.parent
    build = obj.parent / DIRECTORY
    result = build / "obj" / executable.name
    built = build / "BUILT"
    stamp = f"{INSTRUMENTED}\n{OPTIMISED}\n"      # other flags: build again
    if built.is_file() and built.read_text() == stamp:
        return result
    with _lock(obj.parent / f"{DIRECTORY}.lock"):
        if built.is_file() and built.read_text() == stamp:
            return result
        shutil.rmtree(build, ignore_errors=True)
        build.mkdir()
        # the generated makefile and C++ (the harness's own sources stay where the makefile's
        # VPATH finds them: the plain build's directory)
        shutil.copytree(obj, build / "obj", ignore=shutil.ignore_patterns(
            "*.o", "*.a", "*.gcda", executable.name))
        log = build / "build.log"
        _make(build / "obj", executable.name, log, OPT_FAST=INSTRUMENTED, OPT_GLOBAL=INSTRUMENTED,
              OPT_SLOW="-fprofile-generate", USER_LDFLAGS="-fprofile-generate")
        with tempfile.TemporaryDirectory(prefix="ember_training_") as tmp:
            run(result, _copy_images(training, Path(tmp)), Path(tmp))
        if not any((build / "obj").glob("*.gcda")):
            raise RuntimeError(f"the training run wrote no profile (*.gcda) in {build / 'obj'}")
        for path in (build / "obj").iterdir():
            if path.suffix in (".o", ".a") or path.name == executable.name:
                path.unlink()
        _make(build / "obj", executable.name, log, OPT_FAST=OPTIMISED, OPT_GLOBAL=OPTIMISED)
        built.write_text(stamp)
    return result


def _copy_images(spec: list[dict], directory: Path) -> list[dict]:
    """``spec`` with each job's memory image copied into ``directory`` (the harness moves an
    image file when it loads it, and the caller's run still needs the original)."""
    copies = []
    for n, entry in enumerate(spec):
        if "image" in entry:
            path = directory / f"training_image_{n}.hex"
            shutil.copyfile(entry["image"], path)
            entry = {**entry, "image": str(path)}
        copies.append(entry)
    return copies


def _make(obj: Path, target: str, log: Path, **variables: str) -> None:
    names = sorted(p.name for p in obj.glob("V*.mk") if not p.name.endswith("_classes.mk"))
    if not names:
        raise RuntimeError(f"no Verilator makefile in {obj}")
    cmd = ["make", "-j", str(os.cpu_count() or 1), "-f", names[0], target,
           *[f"{k}={v}" for k, v in variables.items()]]
    with open(log, "a") as f:
        f.write(" ".join(cmd) + "\n")
        f.flush()
        proc = subprocess.run(cmd, cwd=obj, stdout=f, stderr=subprocess.STDOUT)
    if proc.returncode != 0:
        tail = log.read_text(errors="replace")[-3000:]
        raise RuntimeError(f"the profile-guided harness build failed (make exit "
                           f"{proc.returncode}); {log}:\n{tail}")
