"""``sim.verilator.cached_build``: one model per configuration whichever checkout or worktree
asks for it (the key once held the lint waivers' absolute path, so every worktree rebuilt every
model: 57 minutes for the 8-unit system)."""

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
