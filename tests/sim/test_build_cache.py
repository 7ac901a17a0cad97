"""``sim.verilator.cached_build``: one model per configuration whichever checkout or worktree
asks for it (the key once held the lint waivers' absolute path, so every worktree rebuilt every
model: 57 minutes for the 8-unit system)."""

import dataclasses
from pathlib import Path

import sim.verilator as verilator


def test_the_repository_path_does_not_split_the_cache(tmp_path, monkeypatch):
    builds = []

    def generate():
        return {"top.v": "module top; endmodule\n"}

    def build(build_dir, paths):
        builds.append(build_dir)

    first = verilator.cached_build(f"args {verilator.REPO}/sim/lint_waivers.vlt", [], generate,
                                   build, root=tmp_path)
    monkeypatch.setattr(verilator, "REPO", Path("/elsewhere/another_worktree"))
    monkeypatch.setattr(verilator, "_memo", {})
    second = verilator.cached_build("args /elsewhere/another_worktree/sim/lint_waivers.vlt", [],
                                    generate, build, root=tmp_path)
    assert first == second and builds == [first]
    other = verilator.cached_build("args /elsewhere/another_worktree/sim/other.vlt", [],
                                   generate, build, root=tmp_path)
    assert other != first and len(builds) == 2


def _included(path: Path) -> set[Path]:
    """The files ``path`` includes with ``#include "..."`` (resolved next to it), transitively,
    except the Verilated model's own headers."""
    import re
    found = set()
    for name in re.findall(r'^#include "([^"]+)"', path.read_text(), re.M):
        if name in ("Vember_system.h", "verilated.h"):
            continue
        target = (path.parent / name).resolve()
        assert target.is_file(), f"{path.name} includes {name}, which does not exist"
        found |= {target} | _included(target)
    return found


def test_every_harness_source_is_built_and_in_the_cache_key(monkeypatch):
    """The C++ harness is ``sim/harness.cpp`` and the headers it includes: each one must be
    copied into the build directory and be an input of the cache key (else a change to it would
    reuse a stale executable)."""
    import sim.fast as fast
    included = _included(fast.HARNESS)
    assert included and included <= set(fast.HARNESS_SOURCES)
    seen = {}

    def cached_build(key, inputs, generate, build):
        seen["inputs"], seen["files"] = set(inputs), generate()
        return Path("/nonexistent")

    monkeypatch.setattr(fast, "cached_build", cached_build)
    monkeypatch.setattr(fast, "generate_verilog", lambda *a: "module ember_system; endmodule\n")
    fast.build_harness()
    assert set(fast.HARNESS_SOURCES) <= seen["inputs"]
    for path in fast.HARNESS_SOURCES:
        name = path.relative_to(fast.HARNESS.parent).as_posix()
        assert seen["files"][name] == path.read_text(), name


def test_verilog_is_generated_once_per_process_and_parameters(monkeypatch):
    from amaranth.back import verilog as amaranth_verilog
    from hw.tmu import TmuConfig
    calls = []

    def convert(top, **kwargs):
        calls.append(kwargs["name"])
        return f"module ember_system; // {len(calls)}\nendmodule\n"

    monkeypatch.setattr(amaranth_verilog, "convert", convert)
    monkeypatch.setattr(verilator, "_verilog_memo", {})
    small = TmuConfig.small()
    first = verilator.generate_verilog(small, 1024, "simple")
    assert verilator.generate_verilog(small, 1024, "simple") == first and len(calls) == 1
    # another memory size, preset or configuration is generated again
    assert verilator.generate_verilog(small, 2048, "simple") != first and len(calls) == 2
    assert verilator.generate_verilog(small, 1024, "HBM2") != first and len(calls) == 3
    verilator.generate_verilog(dataclasses.replace(small, lanes=2), 1024, "simple")
    assert len(calls) == 4
