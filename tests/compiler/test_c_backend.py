"""C execute side (sw/compiler/backend/c.py): compiles with cc -std=c11 -Wall -Werror, and, linked
with a harness that replays the golden model's token streams, gives the Python execute side's
results bit for bit."""

import glob
import os
import shutil
import struct
import subprocess

import numpy as np
import pytest

from sw.compiler.backend.c import generate_c
from sw.compiler.backend.python import generate_execute
from sw.compiler.backend.tmu import build_program
from sw.runtime.golden import run_golden
from sw.runtime.isa import Limits

GOLDEN = os.path.join(os.path.dirname(__file__), "golden")
CC = shutil.which("cc")
pytestmark = pytest.mark.skipif(CC is None, reason="no C compiler (cc) on this machine")


def dlc_function(path):
    from xdsl.parser import Parser
    from sw.compiler.context import make_context
    return next(iter(Parser(make_context(), open(path).read()).parse_module().ops))


@pytest.mark.parametrize("path", sorted(glob.glob(os.path.join(GOLDEN, "*.dlc.mlir"))))
def test_generated_c_compiles_warning_free(path, tmp_path):
    src = tmp_path / "kernel.c"
    src.write_text(generate_c(dlc_function(path)))
    r = subprocess.run([CC, "-std=c11", "-Wall", "-Wextra", "-Werror", "-c", str(src), "-o",
                        str(tmp_path / "kernel.o")], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr


HARNESS = r"""
#include <stdio.h>
#include <stdint.h>
#include <stdlib.h>
typedef struct { void *data; int64_t rank; int64_t sizes[4]; } ember_memref_t;
#define EMBER_MEMREF_DEFINED
int ember_embedding_bag(ember_memref_t *, ember_memref_t *, ember_memref_t *, ember_memref_t *,
                        ember_memref_t *, void *, size_t);
static uint16_t *ctrl; static uint64_t *data; static size_t nc, nd, ic, id;
uint16_t ember_pop_control(void) { if (ic >= nc) { fprintf(stderr, "control underflow\n"); exit(2); } return ctrl[ic++]; }
uint64_t ember_pop_data(void) { if (id >= nd) { fprintf(stderr, "data underflow\n"); exit(2); } return data[id++]; }
int main(int argc, char **argv) {
    (void)argc;
    FILE *f = fopen(argv[1], "rb");
    uint32_t n[2]; int64_t sz[5];
    if (fread(n, 4, 2, f) != 2 || fread(sz, 8, 5, f) != 5) return 3;
    nc = n[0]; nd = n[1];
    ctrl = malloc(2 * nc + 2); data = malloc(8 * nd + 8);
    if (fread(ctrl, 2, nc, f) != nc || fread(data, 8, nd, f) != nd) return 3;
    float *out = calloc((size_t)(sz[3] * sz[4]), sizeof(float));
    ember_memref_t table = {0, 2, {sz[0], sz[1]}}, indices = {0, 1, {sz[2]}},
                   offsets = {0, 1, {sz[3] + 1}}, o = {out, 2, {sz[3], sz[4]}}, r;
    if (ember_embedding_bag(&table, &indices, &offsets, &o, &r, NULL, 0) != 0) return 5;
    if (id != nd) { fprintf(stderr, "data left over\n"); return 4; }
    fwrite(r.data, sizeof(float), (size_t)(sz[3] * sz[4]), stdout);
    return 0;
}
"""


def test_c_execute_side_replays_golden_tokens_like_python(tmp_path):
    fn = dlc_function(os.path.join(GOLDEN, "embedding_bag_sum.dlc.mlir"))
    access = build_program(fn, Limits.from_file("tmu_rtl"))
    rng = np.random.default_rng(7)
    table = rng.standard_normal((10, 5)).astype(np.float32)
    indices = rng.integers(0, 10, 9).astype(np.int64)
    offsets = np.array([0, 3, 3, 7, 9], dtype=np.int64)
    out = np.zeros((4, 5), dtype=np.float32)
    arrays = [table, indices, offsets, out]
    bases, memory = [], b""
    for a in arrays:
        bases.append(len(memory))
        memory += a.tobytes()
    regs = [{"base": bases[s.param], "bytes": arrays[s.param].nbytes,
             "dim": arrays[s.param].shape[s.axis] if s.kind.value == "dim" else 0}[s.kind.value]
            for s in access.arg_map]
    tokens = run_golden(access.program, memory, regs)
    assert not tokens.faulted

    ns: dict = {}
    exec(generate_execute(fn), ns)
    pops = iter(tokens.data_tokens)
    (py_out,) = (ns["execute"]([table, indices, offsets, out.copy()], iter(tokens.control_tokens),
                               lambda: next(pops)),)
    py_out = py_out[0] if isinstance(py_out, tuple) else py_out

    (tmp_path / "kernel.c").write_text(generate_c(fn))
    (tmp_path / "harness.c").write_text(HARNESS)
    exe = tmp_path / "run"
    r = subprocess.run([CC, "-std=c11", "-Wall", "-Werror", "-O1", str(tmp_path / "kernel.c"),
                        str(tmp_path / "harness.c"), "-lm", "-o", str(exe)], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    feed = tmp_path / "tokens.bin"
    feed.write_bytes(struct.pack("<2I", len(tokens.control_tokens), len(tokens.data_tokens))
                     + struct.pack("<5q", 10, 5, 9, 4, 5)
                     + struct.pack(f"<{len(tokens.control_tokens)}H", *tokens.control_tokens)
                     + struct.pack(f"<{len(tokens.data_tokens)}Q", *tokens.data_tokens))
    run = subprocess.run([str(exe), str(feed)], capture_output=True)
    assert run.returncode == 0, run.stderr.decode()
    c_out = np.frombuffer(run.stdout, dtype=np.float32).reshape(4, 5)
    assert c_out.tobytes() == np.asarray(py_out, dtype=np.float32).tobytes()   # bit for bit
    expected = np.stack([table[indices[offsets[b]:offsets[b + 1]]].sum(0, dtype=np.float32)
                         if offsets[b + 1] > offsets[b] else np.zeros(5, np.float32) for b in range(4)])
    np.testing.assert_allclose(c_out, expected, rtol=1e-6)
