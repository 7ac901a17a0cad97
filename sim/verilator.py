"""Verilog generation, the cached Verilator build, and running a cocotb test module.

Everything that depends on the cocotb version (the Python runner moved from ``cocotb.runner``
in 1.9 to ``cocotb_tools.runner`` in 2.x) is imported here and only here.

Build directories live in ``build/rtl/<hash>/``, the hash covering the configuration, the memory
model (preset) and size and the generated Verilog; a small index keyed by the configuration and the hardware
sources (``build/rtl/index/``) skips the Verilog generation when nothing changed.
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import io
import json
import os
import shutil
import sys
import time
from pathlib import Path

from hw.tmu import TmuConfig

import warnings

with warnings.catch_warnings():
    warnings.simplefilter("ignore")     # "Python runners ... are an experimental feature"
    try:                                # cocotb 1.9
        from cocotb.runner import get_runner, get_results
    except ImportError:                 # cocotb 2.x
        from cocotb_tools.runner import get_runner, get_results   # type: ignore


__all__ = ["REPO", "BUILD_ROOT", "TOPLEVEL", "LINT_WAIVERS", "VERILATOR_ARGS", "generate_verilog",
           "build_model", "cached_build", "runner_build", "run_cocotb", "mem_words_for"]


REPO = Path(__file__).resolve().parents[1]
BUILD_ROOT = Path(os.environ.get("EMBER_BUILD_DIR", REPO / "build")) / "rtl"
SYSTEM = "ember_system"      # the Amaranth top (hw.system.System)
TOPLEVEL = "ember_tb_top"    # the Verilog wrapper (sim/system_top.v) Verilator builds
TB_TOP_VERILOG = Path(__file__).resolve().parent / "system_top.v"
MIN_MEM_WORDS = 1 << 16      # 512 KiB: one model serves all small images

#: The Verilog top's wrapper (``sim.registered_reset``): a source of every system model's Verilog.
REGISTERED_RESET = Path(__file__).resolve().parent / "registered_reset.py"

#: Lint waivers (a Verilator configuration file, each waiver with its reason); every build reads
#: it, and tests/test_lint.py fails on any ``--lint-only -Wall`` warning it does not waive.
LINT_WAIVERS = Path(__file__).resolve().parent / "lint_waivers.vlt"

#: ``-Wno-fatal``: a warning the waivers miss (the RTL changes) is printed into ``build.log``
#: but does not stop a simulation build; tests/test_lint.py is the check that fails on it.
VERILATOR_ARGS = [
    "-Wno-fatal", str(LINT_WAIVERS),
    "--x-assign", "fast", "--x-initial", "fast", "-O3", "--timing",
]

_memo: dict[str, Path] = {}


def _runner():
    """The cocotb Verilator runner, without ``--public-flat-rw`` (which makes every signal of the
    design VPI-visible and the model several times slower): the wrapper marks the few signals the
    testbench touches with ``/*verilator public_flat_rw*/``."""
    base = get_runner("verilator")

    class _Verilator(type(base)):
        def _build_command(self):
            cmds = super()._build_command()
            cmds[0] = [arg for arg in cmds[0] if arg != "--public-flat-rw"]
            return cmds

    return _Verilator()


def mem_words_for(nbytes: int) -> int:
    """Memory model size (64-bit words) for an image of ``nbytes``: a power of two >= 64 Ki words."""
    words = max(MIN_MEM_WORDS, -(-nbytes // 8))
    return 1 << (words - 1).bit_length()


def _preset(memory):
    """The memory preset for a name or preset (``"simple"``, ``"HBM2"``, ``"HBM3"``, ...)."""
    from hw.hbm_model.presets import HbmPreset, get_preset
    if isinstance(memory, HbmPreset):
        return memory
    return get_preset(memory)


#: generate_verilog's per-process memo: {(configuration, memory words, preset): Verilog text}
_verilog_memo: dict[str, str] = {}


def generate_verilog(config: TmuConfig, mem_words: int, memory="simple") -> str:
    """Verilog of the system top (``hw.system.System``) for a configuration and memory preset,
    followed by the extra modules it instantiates (the HBM model's channel module).

    Generated once per process and parameters (the default system takes ~60 s of Amaranth and
    Yosys; ``make verilog``, the lint test and a model build ask for the same text)."""
    preset = _preset(memory)
    key = json.dumps([config.as_dict(), mem_words, repr(preset)], sort_keys=True)
    if key not in _verilog_memo:
        from hw.system import System
        from sim.registered_reset import convert
        top = System(config, memory=preset, mem_words=mem_words, storage="verilog")
        text = convert(top, SYSTEM)           # the reset input registered once (sim.registered_reset)
        _verilog_memo[key] = text + "".join(top.verilog_modules.values())
    return _verilog_memo[key]


def _storage_verilog() -> Path:
    from hw.hbm_model import STORAGE_VERILOG
    return STORAGE_VERILOG


@contextlib.contextmanager
def _lock(path: Path):
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "w") as f:
        fcntl.flock(f, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(f, fcntl.LOCK_UN)


def cached_build(key: str, inputs, generate, build, *, root: Path = BUILD_ROOT) -> Path:
    """Build a Verilator model once and reuse it; returns its build directory.

    ``key`` names the parameters (configuration, preset, sizes, Verilator arguments). The model
    lives in ``root/<hash of key and the generated files>/``; an index ``root/index/<hash of key
    and the contents of the ``inputs`` source files>`` skips ``generate`` when no source changed,
    and a per-process memo skips even that. On a miss, ``generate()`` returns ``{file name:
    text}`` (names relative to the build directory, folders allowed), the files are written into
    a fresh build directory (under a file lock, so parallel processes build once) and
    ``build(build_dir, paths)`` runs Verilator there. ``build.log`` and ``build_seconds`` (wall
    time) are left in the directory, ``BUILT`` marks it complete.

    The repository's own path in ``key`` (the lint waivers' path among the Verilator arguments)
    is replaced by a placeholder and the waivers' contents are hashed instead, so every checkout
    and worktree of the repository shares one model per configuration.

    When a Python source among ``inputs`` changed after this process imported ``hw``
    (:func:`changed_since_import`), the index is neither read nor written: the model is the one
    of the code this process generates from, found by the generated files' hash.

    Raises ``RuntimeError`` with the tail of ``build.log`` when ``build`` fails.
    """
    key = (key.replace(str(REPO), "<repository>") + "\0lint_waivers "
           + hashlib.sha256(LINT_WAIVERS.read_bytes()).hexdigest())
    memo_key = f"{root}\0{key}"
    if memo_key in _memo:
        return _memo[memo_key]
    inputs = sorted(inputs)
    digest = hashlib.sha256(key.encode())
    for path in inputs:
        if path.is_file():
            digest.update(str(path.relative_to(REPO)).encode())
            digest.update(path.read_bytes())
    index = root / "index" / digest.hexdigest()[:16]
    changed = changed_since_import(inputs)
    if changed:
        # This process elaborates the hw/ code it imported, not the files on disk: the index
        # (keyed by the files on disk) must neither give nor take its model.
        print(f"sim.verilator: {len(changed)} hw source file(s) changed since this process "
              f"imported hw (e.g. {changed[0]}); generating from the imported code, not "
              f"indexing the model", file=sys.stderr)
        index = None
    if index is not None and index.is_file():
        build_dir = Path(index.read_text().strip())
        if (build_dir / "BUILT").is_file():
            _memo[memo_key] = build_dir
            return build_dir

    t0 = time.perf_counter()
    files = generate()
    digest = hashlib.sha256(key.encode())
    for name in sorted(files):
        digest.update(name.encode() + b"\0" + files[name].encode())
    build_dir = root / digest.hexdigest()[:16]
    with _lock(root / f"{build_dir.name}.lock"):
        if not (build_dir / "BUILT").is_file():
            if build_dir.exists():
                shutil.rmtree(build_dir)
            build_dir.mkdir(parents=True)
            paths = []
            for name, text in files.items():       # a name may have folders: "harness/dut.h"
                (build_dir / name).parent.mkdir(parents=True, exist_ok=True)
                (build_dir / name).write_text(text)
                paths.append(build_dir / name)
            (build_dir / "key.txt").write_text(key + "\n")
            try:
                build(build_dir, paths)
            except (Exception, SystemExit) as e:      # the cocotb runner raises SystemExit
                log = build_dir / "build.log"
                tail = log.read_text(errors="replace")[-3000:] if log.is_file() else ""
                raise RuntimeError(f"verilator build failed ({e}); {log}:\n{tail}") from None
            (build_dir / "build_seconds").write_text(f"{time.perf_counter() - t0:.1f}\n")
            (build_dir / "BUILT").write_text("ok\n")
    if index is not None:
        index.parent.mkdir(parents=True, exist_ok=True)
        index.write_text(f"{build_dir}\n")
    _memo[memo_key] = build_dir
    return build_dir


def changed_since_import(inputs) -> list[Path]:
    """The Python files among ``inputs`` modified after this process imported ``hw``
    (``hw.IMPORTED_AT``): the Verilog this process generates comes from the code it imported,
    so a model built now must not be indexed under the files' new contents (an edit during a
    long test or benchmark once stored old Verilog under the new sources' key)."""
    import hw
    return [p for p in inputs
            if p.suffix == ".py" and p.is_file() and p.stat().st_mtime > hw.IMPORTED_AT]


def runner_build(build_dir: Path, sources, toplevel: str, *, parameters=None, waves: bool = False,
                 verbose: bool = False) -> None:
    """Build ``sources`` with the cocotb Verilator runner into ``build_dir`` (for
    :func:`cached_build`), using every core and keeping the runner's command echo quiet."""
    env_make = os.environ.get("MAKEFLAGS")
    os.environ["MAKEFLAGS"] = f"-j{os.cpu_count() or 1}"
    try:
        with contextlib.redirect_stdout(io.StringIO()):   # "INFO: Running command ..."
            _runner().build(verilog_sources=list(sources), hdl_toplevel=toplevel,
                            parameters=parameters or {}, build_dir=build_dir,
                            build_args=VERILATOR_ARGS, waves=waves, verbose=verbose,
                            log_file=build_dir / "build.log")
    finally:
        if env_make is None:
            os.environ.pop("MAKEFLAGS", None)
        else:
            os.environ["MAKEFLAGS"] = env_make


def build_model(config: TmuConfig | None = None, mem_words: int = MIN_MEM_WORDS, *,
                memory="simple", waves: bool = False, verbose: bool = False) -> Path:
    """Build (once) the Verilator model of the system with the memory model of preset
    ``memory`` (name or ``HbmPreset``); returns its build directory. ``build.log`` in it
    records the build, ``build_seconds`` its wall time."""
    config = config or TmuConfig()
    preset = _preset(memory)
    waves = waves or os.environ.get("WAVES") == "1"
    key = json.dumps({"config": config.as_dict(), "mem_words": mem_words, "waves": waves,
                      "memory": repr(preset), "verilator_args": VERILATOR_ARGS}, sort_keys=True)
    inputs = [p for p in (REPO / "hw").rglob("*") if p.suffix in (".py", ".v")] + \
        [TB_TOP_VERILOG, REGISTERED_RESET]

    def generate():
        return {f"{SYSTEM}.v": generate_verilog(config, mem_words, preset),
                "ember_hbm_storage.v": _storage_verilog().read_text(),
                f"{TOPLEVEL}.v": TB_TOP_VERILOG.read_text()}

    def build(build_dir, paths):
        runner_build(build_dir, paths, TOPLEVEL, waves=waves, verbose=verbose,
                     parameters={"ABITS": max(1, (mem_words - 1).bit_length()),
                                 "DATA_TOKENS": config.output_tokens})

    return cached_build(key, inputs, generate, build)


def run_cocotb(build_dir: Path, test_module: str, *, test_dir: Path, env: dict[str, str] | None = None,
               plusargs: list[str] | None = None, waves: bool = False,
               hdl_toplevel: str = TOPLEVEL) -> None:
    """Run the cocotb ``test_module`` (dotted name, importable from the repository root) on a built
    model whose top module is ``hdl_toplevel`` (default: the system wrapper). Raises
    ``RuntimeError`` if a test failed (the log is in ``test_dir/sim.log``)."""
    runner = _runner()
    extra_env = {"PYTHONPATH": os.pathsep.join([str(REPO)] + [p for p in sys.path if p])}
    extra_env.update(env or {})
    log = test_dir / "sim.log"
    try:
        # results_xml must stay unset under pytest (the runner then names the file itself).
        with contextlib.redirect_stdout(io.StringIO()):       # "INFO: Running command ..."
            results = runner.test(
                test_module=test_module,
                hdl_toplevel=hdl_toplevel,
                hdl_toplevel_lang="verilog",
                build_dir=build_dir,
                test_dir=test_dir,
                extra_env=extra_env,
                plusargs=plusargs or [],
                waves=waves or os.environ.get("WAVES") == "1",
                log_file=log,
            )
    except (Exception, SystemExit) as e:      # the runner raises SystemExit for failed tests
        tail = log.read_text(errors="replace")[-4000:] if log.is_file() else ""
        raise RuntimeError(f"cocotb test {test_module} failed ({e}); log {log}:\n{tail}") from None
    results = Path(results)
    if not results.is_file():
        raise RuntimeError(f"cocotb produced no results; see {log}")
    _, failed = get_results(results)
    if failed:
        tail = log.read_text(errors="replace")[-4000:] if log.is_file() else ""
        raise RuntimeError(f"cocotb test {test_module} failed; log {log}:\n{tail}")
