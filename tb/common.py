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


__all__ = ["REPO", "BUILD_ROOT", "TOPLEVEL", "generate_verilog", "build_model", "run_cocotb",
           "mem_words_for"]


REPO = Path(__file__).resolve().parents[1]
BUILD_ROOT = Path(os.environ.get("EMBER_BUILD_DIR", REPO / "build")) / "rtl"
SYSTEM = "ember_system"      # the Amaranth top (hw.system.System)
TOPLEVEL = "ember_tb_top"    # the Verilog testbench wrapper (tb/system/tb_top.v) Verilator builds
TB_TOP_VERILOG = Path(__file__).resolve().parent / "system" / "tb_top.v"
MIN_MEM_WORDS = 1 << 16      # 512 KiB: one model serves all small images

VERILATOR_ARGS = [
    "-Wno-fatal", "-Wno-lint", "-Wno-style", "-Wno-MULTIDRIVEN", "-Wno-BLKANDNBLK",
    "-Wno-TIMESCALEMOD", "--x-assign", "fast", "--x-initial", "fast", "-O3", "--timing",
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


def generate_verilog(config: TmuConfig, mem_words: int, memory="simple") -> str:
    """Verilog of the system top (``hw.system.System``) for a configuration and memory preset,
    followed by the extra modules it instantiates (the HBM model's channel module)."""
    from amaranth.back import verilog
    from hw.system import System
    top = System(config, memory=_preset(memory), mem_words=mem_words, storage="verilog")
    text = verilog.convert(top, name=SYSTEM, emit_src=False)
    return text + "".join(top.verilog_modules.values())


def _sources_digest() -> str:
    h = hashlib.sha256()
    for path in sorted(list((REPO / "hw").rglob("*")) + [TB_TOP_VERILOG]):
        if path.suffix in (".py", ".v") and path.is_file():
            h.update(str(path.relative_to(REPO)).encode())
            h.update(path.read_bytes())
    return h.hexdigest()


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


def build_model(config: TmuConfig | None = None, mem_words: int = MIN_MEM_WORDS, *,
                memory="simple", waves: bool = False, verbose: bool = False) -> Path:
    """Build (once) the Verilator model of the system with the memory model of preset
    ``memory`` (name or ``HbmPreset``); returns its build directory. ``build.log`` in it
    records the build, ``build_seconds`` its wall time."""
    config = config or TmuConfig()
    preset = _preset(memory)
    waves = waves or os.environ.get("WAVES") == "1"
    cfg_key = json.dumps({"config": config.as_dict(), "mem_words": mem_words, "waves": waves,
                          "memory": repr(preset), "verilator_args": VERILATOR_ARGS},
                         sort_keys=True)
    key1 = hashlib.sha256((cfg_key + _sources_digest()).encode()).hexdigest()[:16]
    if key1 in _memo:
        return _memo[key1]
    index = BUILD_ROOT / "index" / key1
    if index.is_file():
        build_dir = Path(index.read_text().strip())
        if (build_dir / "BUILT").is_file():
            _memo[key1] = build_dir
            return build_dir

    t0 = time.perf_counter()
    verilog_text = generate_verilog(config, mem_words, preset)
    storage_text = _storage_verilog().read_text()
    tb_text = TB_TOP_VERILOG.read_text()
    key2 = hashlib.sha256((cfg_key + verilog_text + storage_text + tb_text).encode()).hexdigest()[:16]
    build_dir = BUILD_ROOT / key2
    with _lock(BUILD_ROOT / f"{key2}.lock"):
        if not (build_dir / "BUILT").is_file():
            if build_dir.exists():
                shutil.rmtree(build_dir)
            build_dir.mkdir(parents=True)
            (build_dir / f"{SYSTEM}.v").write_text(verilog_text)
            (build_dir / "ember_hbm_storage.v").write_text(storage_text)
            (build_dir / f"{TOPLEVEL}.v").write_text(tb_text)
            (build_dir / "config.json").write_text(cfg_key)
            runner = _runner()
            env_make = os.environ.get("MAKEFLAGS")
            os.environ["MAKEFLAGS"] = f"-j{os.cpu_count() or 1}"
            try:
                with contextlib.redirect_stdout(io.StringIO()):   # "INFO: Running command ..."
                    runner.build(
                        verilog_sources=[build_dir / f"{SYSTEM}.v", build_dir / "ember_hbm_storage.v",
                                         build_dir / f"{TOPLEVEL}.v"],
                        hdl_toplevel=TOPLEVEL,
                        parameters={"ABITS": max(1, (mem_words - 1).bit_length())},
                        build_dir=build_dir,
                        build_args=VERILATOR_ARGS,
                        waves=waves,
                        verbose=verbose,
                        log_file=build_dir / "build.log",
                    )
            finally:
                if env_make is None:
                    os.environ.pop("MAKEFLAGS", None)
                else:
                    os.environ["MAKEFLAGS"] = env_make
            (build_dir / "build_seconds").write_text(f"{time.perf_counter() - t0:.1f}\n")
            (build_dir / "BUILT").write_text("ok\n")
    index.parent.mkdir(parents=True, exist_ok=True)
    index.write_text(str(build_dir) + "\n")
    _memo[key1] = build_dir
    return build_dir


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
