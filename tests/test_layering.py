"""One-way layering: every import in ``hw/ sw/ sim/ scripts/`` goes down the layers of
``docs/architecture.md``, never up, and nothing there imports ``tb`` or ``tests``.

The imports are read with ``ast`` from the source (module-level and function-level ones, relative
ones resolved), so a lazy import inside a function counts like any other. Each module belongs to
the group whose prefix in ``LAYERS`` is the longest match; a group may import itself and the groups
of lower layers, not the other groups of its own layer and nothing above it. A module that no group
claims fails the test: a new module gets its place here (and in ``docs/architecture.md``).
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
CHECKED = ("hw", "sw", "sim", "scripts")

#: Bottom to top. A layer is a dict {group name: module prefixes}; the groups of one layer are
#: independent of each other. Keep in step with the drawing in docs/architecture.md.
LAYERS: list[dict[str, tuple[str, ...]]] = [
    {"binary format tables": ("sw.runtime.isa_fields",)},
    {"hardware": ("hw",),
     "formats": ("sw.runtime.isa", "sw.runtime.kernel", "sw.runtime.host_check",
                 "sw.runtime.host_check_computed", "sw.runtime.datasets")},
    {"simulator": ("sim.verilator", "sim.system", "sim.system_top", "sim.hbm", "sim"),
     "compiler": ("sw.compiler",),
     "runtime": ("sw.runtime",)},
    {"drivers": ("sw.runtime.drivers", "sw.runtime.multi_unit", "sw.runtime.coupled_core")},
    {"library": ("sw", "sw.api", "sw.workloads", "sw.hbm_trace")},
    {"main job": ("sim.main_job", "sim.main_job_options")},
    {"command line": ("sw.cli",)},
    {"scripts": ("scripts",)},
]

#: Project packages outside the layers: only tb/ and tests/ may import them.
FORBIDDEN = ("tb", "tests")


def _group_of(module: str) -> tuple[int, str] | None:
    """(layer index, group name) of the longest prefix in LAYERS that matches ``module``."""
    best = None
    for level, groups in enumerate(LAYERS):
        for name, prefixes in groups.items():
            for prefix in prefixes:
                if module == prefix or module.startswith(prefix + "."):
                    if best is None or len(prefix) > best[0]:
                        best = (len(prefix), level, name)
    return None if best is None else best[1:]


def _module_name(path: Path, root: Path = REPO) -> tuple[str, str]:
    """(dotted module name, package the module's relative imports start from)."""
    parts = list(path.relative_to(root).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
        return ".".join(parts), ".".join(parts)
    return ".".join(parts), ".".join(parts[:-1])


def _is_module(root: Path, name: str) -> bool:
    path = root.joinpath(*name.split("."))
    return path.with_suffix(".py").is_file() or (path / "__init__.py").is_file()


def imports_of(path: Path, root: Path = REPO) -> list[tuple[int, str]]:
    """(line, imported module) of every import statement in ``path`` that names a project
    package, at any depth of the syntax tree; ``from . import x`` gives ``package.x``."""
    _, package = _module_name(path, root)
    out = []
    for node in ast.walk(ast.parse(path.read_text(), filename=str(path))):
        if isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")
                base = base[:len(base) - (node.level - 1)] if node.level > 1 else base
                module = ".".join(base + ([node.module] if node.module else []))
            else:
                module = node.module
            # ``from package import name``: the submodule ``package.name`` if there is one
            names = [f"{module}.{alias.name}" if _is_module(root, f"{module}.{alias.name}")
                     else module for alias in node.names]
        else:
            continue
        for name in names:
            if name.split(".")[0] in CHECKED + FORBIDDEN:
                out.append((node.lineno, name))
    return out


def layering_violations(root: Path = REPO) -> list[str]:
    """One line per upward, sideways, forbidden or unplaced import under ``CHECKED``."""
    problems = []
    for top in CHECKED:
        for path in sorted((root / top).rglob("*.py")):
            module, _ = _module_name(path, root)
            where = _group_of(module)
            rel = path.relative_to(root)
            if where is None:
                problems.append(f"{rel}: module {module} has no layer in tests/test_layering.py LAYERS")
                continue
            level, group = where
            for line, name in imports_of(path, root):
                if name.split(".")[0] in FORBIDDEN:
                    problems.append(f"{rel}:{line}: {module} imports {name}: only tb/ and tests/ "
                                    f"may import {name.split('.')[0]}")
                    continue
                target = _group_of(name)
                if target is None:
                    problems.append(f"{rel}:{line}: {module} imports {name}, which has no layer")
                elif target[0] > level:
                    problems.append(f"{rel}:{line}: {module} ({group}) imports {name} "
                                    f"({target[1]}), a higher layer")
                elif target[0] == level and target[1] != group:
                    problems.append(f"{rel}:{line}: {module} ({group}) imports {name} "
                                    f"({target[1]}), a group of the same layer")
    return problems


def test_imports_go_down_the_layers():
    problems = layering_violations()
    assert not problems, "upward imports:\n" + "\n".join(problems)


def test_every_layer_group_names_existing_modules():
    """A group whose prefixes match no module is a stale entry (a module moved or was renamed)."""
    modules = [_module_name(p)[0] for top in CHECKED for p in (REPO / top).rglob("*.py")]
    for groups in LAYERS:
        for name, prefixes in groups.items():
            for prefix in prefixes:
                assert any(m == prefix or m.startswith(prefix + ".") for m in modules), \
                    f"LAYERS group {name!r}: no module under {prefix!r}"


@pytest.mark.parametrize("source, expected", [
    # an upward import hidden in a function, from the hardware into the software
    ("hw/widget.py", "def f():\n    from sw.runtime.golden import run_golden\n"),
    # the testbench is off limits
    ("sw/runtime/widget.py", "import tb.programs\n"),
    # a relative import that climbs from the compiler into the runtime's execute side
    ("sw/compiler/backend/widget.py", "from ...runtime.golden import run_golden\n"),
    # two groups of one layer
    ("sim/verilator.py", "from sw.compiler import compile_mlir\n"),
])
def test_the_check_finds_upward_imports(tmp_path, source, expected):
    """The checker itself: each of these files must be reported."""
    for top in CHECKED:
        (tmp_path / top).mkdir()
    path = tmp_path / source
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(expected)
    problems = layering_violations(tmp_path)
    assert len(problems) == 1 and problems[0].startswith(source), problems


def test_the_check_accepts_downward_imports(tmp_path):
    for top in CHECKED:
        (tmp_path / top).mkdir()
    (tmp_path / "sw" / "runtime").mkdir()
    (tmp_path / "sw" / "runtime" / "drivers.py").write_text(
        "from .golden import run_golden\nfrom sim.system import run_on_rtl\nimport hw.tmu\n")
    (tmp_path / "scripts" / "bench.py").write_text("import sw.cli\n")
    assert layering_violations(tmp_path) == []
