"""The C execute side (sw/compiler/backend/c.py) at every -O level, against the Python one.

For each workload of ``sw.workloads`` (the list of tests/compiler/test_opt_levels.py) at -O0…-O3
on the vector configuration (``configs/tmu_vector.json``, widened as in test_opt_levels so that
TransE's streams fit one layer), the kernel runs on the golden model through the runtime driver;
its recorded token streams are replayed through the generated C (compiled with
``cc -std=c11 -Wall -Wextra -Werror -c``, linked with ``generate_replay``'s harness), and the C
results must equal the Python execute side's **bit for bit** (same ops in the same order, f32
rounded per op in both; an f32 ``math.fma`` is one rounding in both, C's ``fmaf`` and Python's
``_fma32``).

Two embedding widths: the workloads' own (8 = one vector of 8 lanes) and 13 (a masked tail of 5
lanes, an odd number of f32 elements per packed row: half a token of zero padding).

All kernels of one test are compiled in one ``cc`` invocation. The default suite runs every
workload at -O3, hashed_gather at -O2 (a buffer collected over a vector layer, packed; at -O3 its
row of a flattened table is a block) and every level of the weighted EmbeddingBag (vector fma at
-O1, a collected row at -O2, block rows at -O3); the full matrix is marked slow.
"""

from __future__ import annotations

import dataclasses
import shutil
from collections.abc import Callable
import struct
import subprocess

import numpy as np
import pytest

from sw.compiler import compile_mlir
from sw.compiler.backend.c import generate_c, generate_replay
from sw.compiler.pipelines import _kernel_fn, run_pipeline
from sw.runtime.drivers import run_kernel
from sw.runtime.isa import Limits
from sw.workloads import EXAMPLES, WORKLOADS, widen
from test_kernels_on_golden import OPS
from test_opt_levels import SUBSET_KERNELS

CC = shutil.which("cc")
pytestmark = pytest.mark.skipif(CC is None, reason="no C compiler (cc) on this machine")

VECTOR = dataclasses.replace(Limits.from_file("configs/tmu_vector.json"), streams=32,
                             streams_per_layer=None, actions=32, args=32)
LEVELS = (0, 1, 2, 3)
WIDTHS = (8, 13)
CFLAGS = ["-std=c11", "-Wall", "-Wextra", "-Werror", "-O1"]


#: (case label, level) where the DLC itself is wrong (so the Python and C sides agree on a wrong
#: result): the test expects the reference check to fail, so a fix forces the entry out. Was
#: {("kg_transe_d13", 2), ("spattn_gather_d13", 2)}: a vector layer collecting several buffers
#: pushed them interleaved per `iter` firing; since `bufferize` collects one buffer per loop and
#: `simplify-streams` (-O3) loads each row as its own block stream (docs/compiler.md), every
#: case is right.
PYTHON_SIDE_WRONG: set[tuple[str, int]] = set()


def _copy(args: list) -> list:
    return [a.copy() if isinstance(a, np.ndarray) else a for a in args]


def _token_file(fn, args: list, control: list[int], data: list[int]) -> bytes:
    """The replay harness's input (format: sw.compiler.backend.c.generate_replay)."""
    out = struct.pack("<2I", len(control), len(data))
    for arg, a in zip(fn.args, args):
        if getattr(a, "ndim", 0) > 0:
            a = np.ascontiguousarray(a)
            out += struct.pack("<I", a.ndim) + struct.pack(f"<{a.ndim}q", *a.shape) + a.tobytes()
        elif isinstance(a, float | np.floating):
            out += struct.pack("<d", float(a))
        else:
            out += struct.pack("<q", int(a))
    out += struct.pack(f"<{len(control)}H", *control)
    out += struct.pack(f"<{len(data)}Q", *[t & (2**64 - 1) for t in data])
    return out


@dataclasses.dataclass(frozen=True)
class Case:
    """One kernel on one input: ``make()`` its arguments, ``check(args, results)`` the Python
    side's results against an independent reference (None: covered elsewhere)."""
    label: str
    text: str
    make: Callable[[], list]
    check: Callable[[list, list], None] | None = None


def _workload(name: str, dim: int, level: int) -> Case:
    w = WORKLOADS[name]
    return Case(f"{name}_d{dim}", w.path.read_text(), lambda: widen(w.make("small", 3), dim, level),
                w.check)


def _subset(name: str) -> Case:
    def check(args, results):
        _, expected = SUBSET_KERNELS[name](np.random.default_rng(7))
        for got, want in zip(results, expected, strict=True):
            np.testing.assert_array_equal(got, want)
    return Case(name, (EXAMPLES / f"{name}.mlir").read_text(),
                lambda: SUBSET_KERNELS[name](np.random.default_rng(7))[0], check)


def _callback_arith() -> Case:
    """tests/compiler/test_kernels_on_golden.py's OPS: every integer/float arith op, casts, an
    iter_args loop and an scf.if with results in one callback (its own test checks Python)."""
    x = np.array([7, -7, 2**62, -(2**63), 5, 123456789123], dtype=np.int64)
    y = np.array([2, 2, 5, 3, -3, -1000], dtype=np.int64)
    # no (+0, -0) pair: min/max of zeros of both signs is where the two sides may differ (C's
    # fmin/fmax may return either; NumPy's scalar and array paths disagree with each other)
    f = np.array([1.5, -2.25, 0.0, 3e3, 0.25, -0.0], dtype=np.float32)
    g = np.array([0.5, 4.0, 1.0, 3e38, 0.0, 1.0], dtype=np.float32)
    return Case("callback_arith", OPS, lambda: [x, y, f, g, np.zeros((6, 18), np.int64),
                                                np.zeros((6, 12), np.float32)])


def _replay(cases: list[tuple[Case, int]], tmp_path) -> None:
    """Compile the C of every (case, level) into one replay binary and check the C side's
    memref arguments after the run and its results against the Python side's, bit for bit."""
    runs, kernels = [], {}
    for case, level in cases:
        sym = f"{case.label}_O{level}"
        fn = _kernel_fn(run_pipeline(case.text, until="dlc", opt_level=level, limits=VECTOR))
        kernels[fn.sym_name.data + f"_O{level}"] = fn
        args = case.make()
        kernel = compile_mlir(case.text, limits=VECTOR, opt_level=level)
        after = _copy(args)
        got = run_kernel(kernel, after, "golden", limits=VECTOR)
        if (case.label, level) in PYTHON_SIDE_WRONG:
            with pytest.raises(AssertionError):    # still wrong: else drop it from the set
                case.check(_copy(args), got.results)
        elif case.check is not None:
            case.check(_copy(args), got.results)   # the Python side is right to begin with
        expected = [a for a in after if getattr(a, "ndim", 0) > 0] + list(got.results)
        runs.append((sym, fn.sym_name.data + f"_O{level}", args, got, expected))
    sources = []
    for sym, fn in kernels.items():
        path = tmp_path / f"{sym}.c"
        path.write_text(generate_c(fn, symbol=sym))
        sources.append(path.name)
    (tmp_path / "replay.c").write_text(generate_replay(kernels))
    # every kernel compiles on its own (-c) without a warning, then links with the harness
    r = subprocess.run([CC, *CFLAGS, "-c", *sources, "replay.c"], cwd=tmp_path,
                       capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    objects = [s[:-2] + ".o" for s in sources] + ["replay.o"]
    r = subprocess.run([CC, *objects, "-lm", "-o", "replay"], cwd=tmp_path, capture_output=True,
                       text=True)
    assert r.returncode == 0, r.stderr
    for label, sym, args, got, expected in runs:
        feed = tmp_path / f"{label}.tokens"
        feed.write_bytes(_token_file(kernels[sym], args, got.access.control_tokens,
                                     got.access.data_tokens))
        run = subprocess.run([str(tmp_path / "replay"), sym, str(feed)], capture_output=True)
        assert run.returncode == 0, f"{label}: {run.stderr.decode()}"
        at = 0
        for k, want in enumerate(expected):
            want = np.ascontiguousarray(want)
            c_bytes = run.stdout[at:at + want.nbytes]
            at += want.nbytes
            c = np.frombuffer(c_bytes, dtype=want.dtype).reshape(want.shape)
            np.testing.assert_array_equal(c, want, err_msg=f"{label}: output {k}")
            assert c_bytes == want.tobytes(), f"{label}: output {k} not bit for bit"
        assert at == len(run.stdout), f"{label}: the C side wrote {len(run.stdout) - at} extra bytes"


def _all_cases(level: int) -> list[tuple[Case, int]]:
    return ([(_workload(name, dim, level), level) for name in WORKLOADS for dim in WIDTHS]
            + [(_subset(name), level) for name in SUBSET_KERNELS] + [(_callback_arith(), level)])


def test_c_matches_python_every_kernel_at_o3_and_weighted_eb_at_every_level(tmp_path):
    _replay(_all_cases(3) + [(_workload("eb_weighted", dim, level), level)
                             for level in (0, 1, 2) for dim in WIDTHS]
            + [(_subset("hashed_gather"), 2)], tmp_path)


@pytest.mark.slow
def test_c_matches_python_full_matrix(tmp_path):
    _replay([c for level in LEVELS for c in _all_cases(level)], tmp_path)
