"""The C execute side's helpers and failure paths (sw/compiler/backend/c.py), against independent
references: NumPy's float16 and PyTorch's bfloat16 conversions, hand-built token streams with
hand-computed values (docs/isa.md §7.5), hand-computed scratch sizes, and the error codes."""

from __future__ import annotations

import shutil
import struct
import subprocess

import numpy as np
import pytest
import torch
from xdsl.parser import Parser

from sw.compiler import CompileError
from sw.compiler.backend.c import PRELUDE, generate_c, generate_replay
from sw.compiler.backend.python import generate_execute
from sw.compiler.context import make_context
from sw.compiler.pipelines import _kernel_fn, run_pipeline
from sw.runtime.isa import Limits
from sw.workloads import EXAMPLES

CC = shutil.which("cc")
pytestmark = pytest.mark.skipif(CC is None, reason="no C compiler (cc) on this machine")
CFLAGS = ["-std=c11", "-Wall", "-Wextra", "-Werror", "-O1"]


def _parse(text: str):
    module = Parser(make_context(), text).parse_module()
    module.verify()
    return next(iter(module.ops))


def _build(tmp_path, sources: dict[str, str]) -> str:
    for name, text in sources.items():
        (tmp_path / name).write_text(text)
    exe = tmp_path / "prog"
    r = subprocess.run([CC, *CFLAGS, *sources, "-lm", "-o", str(exe)], cwd=tmp_path,
                       capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    return str(exe)


# ------------------------------------------------------------------------------------------------
# f16 / bf16
# ------------------------------------------------------------------------------------------------

HALF_MAIN = r"""
#include <stdio.h>
int main(void)
{
    double x;
    while (scanf("%la", &x) == 1) {
        printf("%u %u %u %u %u %u\n", ember_f16_bits(ember_round_f16(x)),
               ember_bf16_bits(ember_round_bf16(x)),
               ember_f16_bits((float)ember_round(x, 11, -14, 15, 3)),
               ember_f16_bits((float)ember_round(x, 11, -14, 15, 4)),
               ember_bf16_bits((float)ember_round(x, 8, -126, 127, 3)),
               ember_bf16_bits((float)ember_round(x, 8, -126, 127, 4)));
    }
    for (unsigned h = 0; h < 65536; h++) {   /* every bit pattern back and forth */
        float f16 = ember_f16_value((uint16_t)h), bf = ember_bf16_value((uint16_t)h);
        uint32_t u; memcpy(&u, &f16, 4);
        printf("%08x %u %u\n", u, isnan(f16) ? 0xFFFFu : ember_f16_bits(f16),
               isnan(bf) ? 0xFFFFu : ember_bf16_bits(bf));
    }
    return 0;
}
"""


def test_half_conversions_equal_numpy_float16_and_torch_bfloat16(tmp_path):
    exe = _build(tmp_path, {"half.c": PRELUDE + HALF_MAIN})
    rng = np.random.default_rng(5)
    # f32 values of every magnitude (f16 subnormals, normals, overflow) and exact ties
    xs = np.concatenate([rng.standard_normal(2000) * 10.0 ** rng.integers(-9, 6, 2000),
                         [0.0, -0.0, 65504.0, 65519.99, 65520.0, 1e6, -1e6, 2.0**-24, 2.0**-25,
                          3 * 2.0**-26, 1 + 2.0**-11, 1 + 3 * 2.0**-11, 1 + 2.0**-8,
                          1 + 3 * 2.0**-8, 3.4e38, -1e-40]]).astype(np.float32).astype(np.float64)
    feed = "".join(f"{float(x).hex()}\n" for x in xs)
    out = subprocess.run([exe], input=feed, capture_output=True, text=True, check=True).stdout
    lines = out.splitlines()
    got = np.array([[int(v) for v in line.split()] for line in lines[:len(xs)]])
    with np.errstate(over="ignore"):                                 # 1e6 -> inf is the point
        f16 = xs.astype(np.float16).view(np.uint16)                 # NumPy: ties to even
    bf16 = torch.from_numpy(xs.astype(np.float32)).bfloat16().view(torch.int16).numpy().view(np.uint16)
    np.testing.assert_array_equal(got[:, 0], f16)
    np.testing.assert_array_equal(got[:, 1], bf16)
    # toward zero never exceeds |x| and is within one f16 ulp; away from zero on ties goes up
    tz = got[:, 2].astype(np.uint16).view(np.float16).astype(np.float64)
    assert np.all(np.abs(tz) <= np.abs(xs))
    # hand-computed rounding modes (toward zero, to nearest away) at f16 and bf16 ties
    cases = {1 + 2.0**-11: (0x3C00, 0x3C01), 65520.0: (0x7BFF, 0x7C00), 2.0**-25: (0x0000, 0x0001),
             1e6: (0x7BFF, 0x7C00), -1e6: (0xFBFF, 0xFC00)}
    for x, (zero, away) in cases.items():
        row = got[list(xs).index(x)]
        assert (row[2], row[3]) == (zero, away), x
    row = got[list(xs).index(1 + 2.0**-8)]                       # a bf16 tie: 1 and 1 + 2^-7
    assert (row[4], row[5]) == (0x3F80, 0x3F81)
    # every f16 pattern decodes to NumPy's value and encodes back (NaNs: 0xFFFF marker)
    pats = np.arange(65536, dtype=np.uint16)
    dec = np.array([int(line.split()[0], 16) for line in lines[len(xs):]], dtype=np.uint32)
    ref = pats.view(np.float16).astype(np.float32)
    nan = np.isnan(ref)
    np.testing.assert_array_equal(dec[~nan], ref[~nan].view(np.uint32))
    back = np.array([[int(v) for v in line.split()[1:]] for line in lines[len(xs):]])
    np.testing.assert_array_equal(back[~nan, 0], pats[~nan])
    bf_nan = np.isnan((pats.astype(np.uint32) << 16).view(np.float32))
    np.testing.assert_array_equal(back[~bf_nan, 1], pats[~bf_nan])


# ------------------------------------------------------------------------------------------------
# Packed groups by hand
# ------------------------------------------------------------------------------------------------

PACKED = """
func.func @packed(%out: memref<?xf64>) -> memref<?xf64> {
  dlc.configure_access {
  }
  dlc.compute_loop {
    dlc.case 3 {
      %a, %h, %b, %i, %m, %v = dlc.pop_packed : i32, f16, i8, index, vector<8xi1>, vector<3xf32>
      %fa = arith.sitofp %a : i32 to f64
      %fh = arith.extf %h : f16 to f64
      %fb = arith.sitofp %b : i8 to f64
      %i64 = arith.index_cast %i : index to i64
      %fi = arith.sitofp %i64 : i64 to f64
      %c0 = arith.constant 0 : index
      %c1 = arith.constant 1 : index
      %c2 = arith.constant 2 : index
      %c3 = arith.constant 3 : index
      memref.store %fa, %out[%c0] : memref<?xf64>
      memref.store %fh, %out[%c1] : memref<?xf64>
      memref.store %fb, %out[%c2] : memref<?xf64>
      memref.store %fi, %out[%c3] : memref<?xf64>
""" + "".join(f"""      %m{k} = vector.extract %m[{k}] : i1 from vector<8xi1>
      %fm{k} = arith.uitofp %m{k} : i1 to f64
      %p{k} = arith.constant {4 + k} : index
      memref.store %fm{k}, %out[%p{k}] : memref<?xf64>
""" for k in range(8)) + "".join(f"""      %v{k} = vector.extract %v[{k}] : f32 from vector<3xf32>
      %fv{k} = arith.extf %v{k} : f32 to f64
      %q{k} = arith.constant {12 + k} : index
      memref.store %fv{k}, %out[%q{k}] : memref<?xf64>
""" for k in range(3)) + """    }
  }
  func.return %out : memref<?xf64>
}
"""


def _f32(x: float) -> int:
    return struct.unpack("<I", struct.pack("<f", x))[0]


def _tokens(control, data) -> bytes:
    return (struct.pack(f"<{len(control)}H", *control) + struct.pack(f"<{len(data)}Q", *data))


def test_packed_group_unpacks_at_natural_alignment(tmp_path):
    """i32 at byte 0, f16 at 4, i8 at 6, index at 8, the mask (8 bytes) at 16, three f32 at 24,
    28, 32: five tokens, the last half zero padding (docs/isa.md §7.5)."""
    fn = _parse(PACKED)
    data = [(0xFFFFFFFB) | (0x3E00 << 32) | (0xFD << 48),          # -5, f16 1.5, i8 -3
            123456789012, 5,                                       # index, COUNT = 5 lanes
            _f32(0.25) | (_f32(-2.5) << 32), _f32(1e10)]
    expected = [-5.0, 1.5, -3.0, 123456789012.0] + [1.0] * 5 + [0.0] * 3 + \
               [0.25, -2.5, float(np.float32(1e10))]
    # the Python execute side agrees with the hand-computed values ...
    ns: dict = {}
    exec(generate_execute(fn), ns)
    pops = iter(data)
    (py,) = ns["execute"]([np.zeros(15)], iter([3, 0xFFFF]), lambda: next(pops))
    assert py.tolist() == expected
    # ... and so does the C one
    exe = _build(tmp_path, {"k.c": generate_c(fn), "replay.c": generate_replay({"packed": fn})})
    feed = tmp_path / "t.bin"
    feed.write_bytes(struct.pack("<2I", 2, len(data)) + struct.pack("<Iq", 1, 15) + bytes(15 * 8)
                     + _tokens([3, 0xFFFF], data))
    run = subprocess.run([exe, "packed", str(feed)], capture_output=True, check=True)
    out = np.frombuffer(run.stdout, np.float64)
    assert out[:15].tolist() == expected and out[15:].tolist() == expected
    # a control token that names no callback: EMBER_ERR_CONTROL (2), exit status 12
    feed.write_bytes(struct.pack("<2I", 2, len(data)) + struct.pack("<Iq", 1, 15) + bytes(15 * 8)
                     + _tokens([4, 0xFFFF], data))
    run = subprocess.run([exe, "packed", str(feed)], capture_output=True)
    assert run.returncode == 12 and run.stderr.decode() == "kernel error 2\n"


# ------------------------------------------------------------------------------------------------
# Scratch area
# ------------------------------------------------------------------------------------------------

def test_scratch_bytes_and_the_scratch_check(tmp_path):
    """TransE at -O3 pops three f32 rows per firing: 3 * 8 * ceil(13 * 4 / 8) = 168 bytes for
    rows of 13; with 167 (rounded down to 160) the kernel returns EMBER_ERR_SCRATCH."""
    from sw.runtime.drivers import run_kernel
    from sw.compiler import compile_mlir
    from sw.workloads import WORKLOADS
    limits = Limits.from_file("configs/tmu_vector.json")
    limits = type(limits)(**{**limits.__dict__, "streams": 32, "streams_per_layer": None,
                             "actions": 32, "args": 32})
    w = WORKLOADS["kg_transe"]
    text = w.path.read_text()
    fn = _kernel_fn(run_pipeline(text, until="dlc", opt_level=3, limits=limits))
    exe = _build(tmp_path, {"k.c": generate_c(fn, symbol="t"),
                            "replay.c": generate_replay({"t": fn})})
    sizes = subprocess.run([exe, "t", "--scratch-bytes", "13"], capture_output=True, text=True,
                           check=True).stdout
    assert sizes == "168\n"
    rng = np.random.default_rng(1)
    triples, entity, relation, out = w.make("small", 1)
    entity = rng.standard_normal((entity.shape[0], 13)).astype(np.float32)
    relation = rng.standard_normal((relation.shape[0], 13)).astype(np.float32)
    args = [triples, entity, relation, out]
    got = run_kernel(compile_mlir(text, limits=limits, opt_level=3), [a.copy() for a in args],
                     "golden", limits=limits)
    feed = struct.pack("<2I", len(got.access.control_tokens), len(got.access.data_tokens))
    for a in args:
        feed += struct.pack("<I", a.ndim) + struct.pack(f"<{a.ndim}q", *a.shape) + a.tobytes()
    feed += _tokens(got.access.control_tokens, [t & (2**64 - 1) for t in got.access.data_tokens])
    (tmp_path / "t.bin").write_bytes(feed)
    ok = subprocess.run([exe, "t", str(tmp_path / "t.bin"), "168"], capture_output=True)
    assert ok.returncode == 0, ok.stderr
    assert np.frombuffer(ok.stdout, np.float32)[-len(out):].tobytes() == got.results[0].tobytes()
    short = subprocess.run([exe, "t", str(tmp_path / "t.bin"), "167"], capture_output=True)
    assert short.returncode == 11 and short.stderr.decode() == "kernel error 1\n"


# ------------------------------------------------------------------------------------------------
# Refusals
# ------------------------------------------------------------------------------------------------

def test_an_op_without_a_c_form_is_named():
    text = (EXAMPLES / "embedding_bag_sum.mlir").read_text()
    fn = _kernel_fn(run_pipeline(text, until="dlc", opt_level=0))
    dlc_text = str(fn).replace("%sum = arith.addf %acc, %v_1 : f32",
                               "%sum = arith.addf %acc, %v_1 : f32\n"
                               "        %bits = arith.bitcast %sum : f32 to i32")
    assert "arith.bitcast" in dlc_text
    with pytest.raises(CompileError) as e:
        generate_c(_parse(dlc_text))
    assert str(e.value) == "'arith.bitcast' has no C form in the execute side yet"


def test_a_buffer_popped_in_a_loop_carrying_values_is_refused():
    """A buffer popped in a loop reuses the scratch from the loop's start in every iteration
    (segment-callbacks: one row per lookup, ``test_c_levels`` replays it); a loop that carries
    values out could carry a buffer out, so it is refused."""
    text = (EXAMPLES / "embedding_bag_sum.mlir").read_text()
    fn = _kernel_fn(run_pipeline(text, until="dlc", opt_level=3,
                                 limits=Limits.from_file("configs/tmu_vector.json")))
    dlc_text = str(fn)
    pop = "%v_row = dlc.pop_buffer %dim packed : memref<?xf32>"
    assert pop in dlc_text
    generate_c(_parse(dlc_text))                        # -O3 pops a row per lookup in a loop
    dlc_text = dlc_text.replace(pop, "%zz = scf.for %z = %c0 to %dim step %c1 iter_args(%za = %c0) -> (index) {\n"
                                     "        %w_row = dlc.pop_buffer %dim packed : memref<?xf32>\n"
                                     "        scf.yield %za : index\n"
                                     "      }\n      " + pop)
    with pytest.raises(CompileError) as e:
        generate_c(_parse(dlc_text))
    assert str(e.value) == ("a dlc.pop_buffer inside a loop of a callback that carries values has "
                            "no C form")
