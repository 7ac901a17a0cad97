"""Every -O level of every example kernel gives the results of -O0 and of PyTorch/NumPy.

Each workload of ``sw.workloads`` (EmbeddingBag sum/mean/max/weighted, SpMM over Cora, CSR SpMV,
TransE, block-sparse K/V gather) is compiled at -O0…-O3 for the vector configuration
(``configs/tmu_vector.json``: ISA v1 with 8 lanes, more stream slots) and run two ways:

* on the golden model (``sw.runtime.golden``, the ISA's reference semantics) through the
  runtime's driver, and
* on the DLC reference interpreter (``sw.compiler.backend.python.run_access``), which does not use
  the ISA encoding at all — the two must push the same tokens.

Results are checked against the workload's references (PyTorch, and the sequential NumPy
reference where the accumulation order is the kernel's) and against -O0 bit for bit.

``SUBSET_KERNELS`` adds the examples of the MLIR frontend's subset (docs/compiler.md, "Supported
input"): f16/bf16/i8 tables, an i32 segment sum, three-level indirection with mul/shift address
arithmetic, a two-level CSR, a reduction in a callback — each checked against PyTorch or NumPy.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path

import numpy as np
import pytest

import torch

from sw.compiler import compile_mlir
from sw.compiler.backend.python import run_access
from sw.compiler.pipelines import _kernel_fn, run_pipeline
from sw.runtime.drivers import run_kernel
from sw.runtime.isa import Limits
from sw.workloads import WORKLOADS, widen

# configs/tmu_vector.json with room for TransE's 9 streams in one layer (the kernels, not the
# resource mapping, are under test here; tests/compiler/test_backend_*.py cover the limits).
VECTOR = dataclasses.replace(Limits.from_file("configs/tmu_vector.json"), streams=32,
                             streams_per_layer=None, actions=32, args=32)
LEVELS = (0, 1, 2, 3)


def _copy(args):
    return [a.copy() if isinstance(a, np.ndarray) else a for a in args]


@pytest.fixture(scope="module")
def baseline():
    out = {}
    for name, w in WORKLOADS.items():
        args = w.make("small", 3)
        kernel = compile_mlir(w.path.read_text(), filename=w.example)
        out[name] = (args, run_kernel(kernel, _copy(args), "golden"))
    return out


@pytest.mark.parametrize("level", LEVELS)
@pytest.mark.parametrize("name", list(WORKLOADS))
def test_level_matches_o0_and_the_reference_on_golden(baseline, name, level):
    w = WORKLOADS[name]
    args, base = baseline[name]
    text = w.path.read_text()
    kernel = compile_mlir(text, filename=w.example, limits=VECTOR, opt_level=level)
    got = run_kernel(kernel, _copy(args), "golden", limits=VECTOR)
    w.check(_copy(args), got.results)
    for a, b in zip(got.results, base.results):
        np.testing.assert_array_equal(a, b)
    # the DLC reference interpreter pushes exactly the golden model's tokens
    dlc_fn = _kernel_fn(run_pipeline(text, until="dlc", opt_level=level, limits=VECTOR))
    data, control = run_access(dlc_fn, _copy(args))
    assert data == [t & (2**64 - 1) for t in got.access.data_tokens]
    assert control == got.access.control_tokens


#: Embedding widths beside the workloads' own (8 = one vector of the configuration's 8 lanes):
#: 13 (a masked tail of 5 lanes) and 20 (more than two vectors). A kernel whose vector layer
#: feeds several rows to one callback (TransE's h/r/t, the gather's K/V) is only right at every
#: width if each row reaches the core contiguously (docs/compiler.md, "bufferize",
#: "simplify-streams").
WIDTHS = (13, 20)
#: The default suite runs the two multi-row kernels at width 13 and -O2 (the form that was once
#: wrong: rows collected by one vector layer, interleaved per vector) and -O3 (each row its own
#: block stream); the full (workload, width, level) matrix is slow.
FAST_WIDTH_CASES = {("kg_transe", 13, 2), ("spattn_gather", 13, 2),
                    ("kg_transe", 13, 3), ("spattn_gather", 13, 3)}
#: Workloads with an embedding width (SpMV gathers scalars: nothing to widen).
WIDE_WORKLOADS = [name for name in WORKLOADS if name != "spmv_csr"]


@pytest.fixture(scope="module")
def wide_baseline():
    """(workload, width) -> (arguments, -O0 run on the golden model), built on first use."""
    cache = {}

    def get(name: str, dim: int):
        if (name, dim) not in cache:
            w = WORKLOADS[name]
            args = widen(w.make("small", 3), dim, seed=dim)
            assert any(getattr(a, "shape", ())[-1:] == (dim,) for a in args), f"{name}: not widened"
            kernel = compile_mlir(w.path.read_text(), filename=w.example)
            cache[name, dim] = (args, run_kernel(kernel, _copy(args), "golden"))
        return cache[name, dim]
    return get


@pytest.mark.parametrize("name, dim, level", [
    pytest.param(name, dim, level, marks=() if (name, dim, level) in FAST_WIDTH_CASES
                 else pytest.mark.slow, id=f"{name}-d{dim}-O{level}")
    for name in WIDE_WORKLOADS for dim in WIDTHS for level in LEVELS])
def test_level_at_other_widths_matches_o0_and_the_reference(wide_baseline, name, dim, level):
    """Rows that are not a whole number of vectors: every level equals -O0 and PyTorch."""
    w = WORKLOADS[name]
    args, base = wide_baseline(name, dim)
    w.check(_copy(args), base.results)                  # -O0 itself is right at this width
    text = w.path.read_text()
    kernel = compile_mlir(text, filename=w.example, limits=VECTOR, opt_level=level)
    got = run_kernel(kernel, _copy(args), "golden", limits=VECTOR)
    w.check(_copy(args), got.results)
    for a, b in zip(got.results, base.results):
        np.testing.assert_array_equal(a, b)
    dlc_fn = _kernel_fn(run_pipeline(text, until="dlc", opt_level=level, limits=VECTOR))
    data, control = run_access(dlc_fn, _copy(args))
    assert data == [t & (2**64 - 1) for t in got.access.data_tokens]
    assert control == got.access.control_tokens


#: Two gathers through one index per element: the values the callback reads are not rows
#: (x[idx[i, d]], y[idx[i, d]]), so they cannot be block streams, and one loop cannot push two
#: collected buffers contiguously; bufferize and simplify-streams leave the loop alone
#: (docs/compiler.md).
PAIR_GATHER = """
func.func @pair_gather(%x: memref<?xf32>, %y: memref<?xf32>, %idx: memref<?x?xindex>, %out: memref<?x?xf32>) -> memref<?x?xf32> {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %n = memref.dim %out, %c0 : memref<?x?xf32>
  %dim = memref.dim %out, %c1 : memref<?x?xf32>
  scf.for %i = %c0 to %n step %c1 {
    scf.for %d = %c0 to %dim step %c1 {
      %k = memref.load %idx[%i, %d] : memref<?x?xindex>
      %a = memref.load %x[%k] : memref<?xf32>
      %b = memref.load %y[%k] : memref<?xf32>
      %s = arith.subf %a, %b : f32
      memref.store %s, %out[%i, %d] : memref<?x?xf32>
    }
  }
  return %out : memref<?x?xf32>
}
"""


@pytest.mark.parametrize("level", LEVELS)
def test_two_gathered_values_that_are_not_rows_at_every_level(level):
    rng = np.random.default_rng(5)
    x, y = rng.standard_normal(30).astype(np.float32), rng.standard_normal(30).astype(np.float32)
    idx = rng.integers(0, 30, (3, 13)).astype(np.int64)
    args = [x, y, idx, np.zeros((3, 13), np.float32)]
    limits = VECTOR if level else None
    kernel = compile_mlir(PAIR_GATHER, limits=limits, opt_level=level)
    got = run_kernel(kernel, _copy(args), "golden", limits=limits)
    np.testing.assert_array_equal(got.results[0], x[idx] - y[idx])
    slcv_text = str(run_pipeline(PAIR_GATHER, until="slcv", opt_level=level, limits=limits))
    assert "slcv.to_buffer" not in slcv_text and "slcv.buf_stream" not in slcv_text


def test_lowering_refuses_a_loop_collecting_two_buffers():
    """SLCV written by hand with two buffers collected by one loop: convert-slc-to-dlc refuses
    it (its pushes would interleave the buffers; bufferize never produces it)."""
    from xdsl.parser import Parser
    from sw.compiler import CompileError
    from sw.compiler.context import make_context
    from sw.compiler.conversion.slc_to_dlc import lower_function
    text = """
builtin.module {
  func.func @two(%x: memref<?xf32>, %y: memref<?xf32>, %out: memref<?x?xf32>) -> memref<?x?xf32> {
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %n = memref.dim %out, %c0 : memref<?x?xf32>
    %dim = memref.dim %out, %c1 : memref<?x?xf32>
    slc.for %i = %c0 to %n step 1 : index, index {
      %a_buf, %b_buf = slcv.for %d = %c0 to %dim step 1 vlen 1 config scalar : index, index -> !slcv.buffer<f32>, !slcv.buffer<f32> {
        %a = slc.mem_stream %x[%d] : memref<?xf32>, !slc.stream<index>
        %b = slc.mem_stream %y[%d] : memref<?xf32>, !slc.stream<index>
        slcv.to_buffer %a, %b : !slc.stream<f32>, !slc.stream<f32>
      }
      slc.callback end {
        %a_row = slcv.from_buffer %a_buf : !slcv.buffer<f32> -> memref<?xf32>
        %b_row = slcv.from_buffer %b_buf : !slcv.buffer<f32> -> memref<?xf32>
        %i_1 = slc.from_stream %i : !slc.stream<index>
        scf.for %d_1 = %c0 to %dim step %c1 {
          %a_1 = memref.load %a_row[%d_1] : memref<?xf32>
          %b_1 = memref.load %b_row[%d_1] : memref<?xf32>
          %s = arith.subf %a_1, %b_1 : f32
          memref.store %s, %out[%i_1, %d_1] : memref<?x?xf32>
        }
      }
    }
    func.return %out : memref<?x?xf32>
  }
}
"""
    module = Parser(make_context(), text).parse_module()
    module.verify()
    with pytest.raises(CompileError, match=r"a loop collecting 2 buffers \('slcv.to_buffer' of 2 "
                       r"values\) is not supported: its traversal pushes them interleaved"):
        lower_function(_kernel_fn(module))


def test_rows_of_one_loop_stay_at_o2_and_become_block_streams_at_o3():
    """TransE's element loop reads three rows (h, r, t). -O2: bufferize collects one value per
    loop, so it leaves this loop in its -O1 form (a vector layer, one firing per 8 lanes).
    -O3: simplify-streams loads each row as its own block stream in layer 0 (no vector layer),
    one control token per triple (the rows' callback and the square root's merged)."""
    w = WORKLOADS["kg_transe"]
    text = w.path.read_text()
    slcv_o2 = str(run_pipeline(text, until="slcv", opt_level=2, limits=VECTOR))
    assert "slcv.to_buffer" not in slcv_o2 and "slcv.buf_stream" not in slcv_o2
    assert "vlen 8 config vector" in slcv_o2
    dlc_o3 = str(run_pipeline(text, until="dlc", opt_level=3, limits=VECTOR))
    assert dlc_o3.count("dlc.buf_stream layer 0") == 3 and "vlen" not in dlc_o3
    args = widen(w.make("small", 3), 13, seed=13)
    n = len(args[3])
    got = {level: run_kernel(compile_mlir(text, filename=w.example, limits=VECTOR,
                                          opt_level=level), _copy(args), "golden", limits=VECTOR)
           for level in (2, 3)}
    # -O2: per triple ceil(13/8) = 2 firings of (h, r, t vectors of 8 lanes + t + d0), then t
    # for the square root; one control token per firing (+ DONE)
    assert len(got[2].access.data_tokens) == n * (2 * (3 * 8 + 2) + 1)
    assert len(got[2].access.control_tokens) == 3 * n + 1
    # -O3: per triple three rows of 13 f32 packed two per token (7 tokens each); the triple's
    # index t, which both callbacks used, is counted on the core (replace-to-val-ops), and the
    # two callbacks, back to back on layer 0's iter, are one (align-queues)
    assert len(got[3].access.data_tokens) == n * 3 * 7
    assert len(got[3].access.control_tokens) == n + 1


def _bags(rng, rows, nbags, max_len=6):
    lengths = rng.integers(0, max_len, nbags)
    lengths[0] = 0                                              # an empty bag
    indices = rng.integers(0, rows, int(lengths.sum())).astype(np.int64)
    return indices, np.concatenate([[0], np.cumsum(lengths)]).astype(np.int64)


def _torch_bag(table: torch.Tensor, indices, offsets) -> torch.Tensor:
    return torch.nn.functional.embedding_bag(torch.from_numpy(indices), table,
                                             torch.from_numpy(offsets[:-1]), mode="sum")


def _half(rng, dtype):
    """(table, args, PyTorch's EmbeddingBag sum) for an f16 or bf16 table (bf16 as uint16 bits)."""
    indices, offsets = _bags(rng, 12, 4)
    t = (torch.from_numpy(rng.standard_normal((12, 13)).astype(np.float32)) * 8).to(dtype)
    ref = _torch_bag(t, indices, offsets)
    if dtype == torch.bfloat16:
        bits = lambda x: x.view(torch.int16).numpy().view(np.uint16)  # noqa: E731
        return [bits(t), indices, offsets, np.zeros((4, 13), np.uint16)], [bits(ref)]
    return [t.numpy(), indices, offsets, np.zeros((4, 13), np.float16)], [ref.numpy()]


def _i8(rng):
    indices, offsets = _bags(rng, 12, 4)
    table = rng.integers(-128, 128, (12, 13)).astype(np.int8)
    sums = np.stack([table[indices[s:e]].astype(np.int32).sum(0, dtype=np.int32)
                     for s, e in zip(offsets[:-1], offsets[1:])])
    args = [table, indices, offsets, np.zeros((4, 13), np.int32), np.zeros(4, np.int32)]
    return args, [sums, np.abs(sums).max(1)]


def _segment(rng):
    data = rng.integers(-2**31, 2**31, (10, 5)).astype(np.int32)
    src, seg = rng.integers(0, 10, 23).astype(np.int32), rng.integers(0, 4, 23).astype(np.int32)
    ref = torch.zeros(4, 5, dtype=torch.int32).index_add_(
        0, torch.from_numpy(seg.astype(np.int64)), torch.from_numpy(data[src])).numpy()
    return [data, src, seg, np.zeros((4, 5), np.int32)], [ref]


def _hashed(rng):
    logb, logd, rows = 4, 3, 7
    table = rng.standard_normal(rows << logd).astype(np.float32)
    remap = rng.integers(0, rows, 1 << logb).astype(np.int64)
    ids = rng.integers(-2**63, 2**63 - 1, 11, dtype=np.int64)
    h = (ids.astype(np.uint64) * np.uint64(0x9E3779B97F4A7C15)) >> np.uint64(64 - logb)
    ref = table.reshape(rows, 1 << logd)[remap[h.astype(np.int64)]]
    return [table, remap, ids, logb, logd, np.zeros((11, 1 << logd), np.float32)], [ref]


def _csr_of_csr(rng):
    table = rng.standard_normal((15, 6)).astype(np.float32)
    gptr, sptr = np.array([0, 2, 2, 5]), np.array([0, 3, 3, 4, 8, 9])
    items = rng.integers(0, 15, 9).astype(np.int64)
    ref = np.zeros((3, 6), np.float32)
    for g in range(3):                               # sequential f32 sums, the kernel's order
        for s in range(gptr[g], gptr[g + 1]):
            for k in range(sptr[s], sptr[s + 1]):
                ref[g] += table[items[k]]
    return [table, gptr, sptr, items, np.zeros((3, 6), np.float32)], [ref]


#: example -> rng -> (arguments, expected results), references independent of the compiler.
SUBSET_KERNELS = {
    "embedding_bag_sum_f16": lambda rng: _half(rng, torch.float16),
    "embedding_bag_sum_bf16": lambda rng: _half(rng, torch.bfloat16),
    "embedding_bag_sum_i8": _i8,
    "segment_sum_i32": _segment,
    "hashed_gather": _hashed,
    "csr_of_csr": _csr_of_csr,
}


@pytest.mark.parametrize("level", LEVELS)
@pytest.mark.parametrize("name", list(SUBSET_KERNELS))
def test_subset_kernel_at_every_level_matches_the_reference(name, level):
    args, expected = SUBSET_KERNELS[name](np.random.default_rng(7))
    text = (Path("examples") / f"{name}.mlir").read_text()
    limits = VECTOR if level else None
    kernel = compile_mlir(text, filename=f"{name}.mlir", limits=limits, opt_level=level)
    got = run_kernel(kernel, _copy(args), "golden", limits=limits)
    assert len(got.results) == len(expected)
    for result, ref in zip(got.results, expected):
        assert result.dtype == ref.dtype
        np.testing.assert_array_equal(result, ref)
    dlc_fn = _kernel_fn(run_pipeline(text, until="dlc", opt_level=level, limits=limits))
    data, control = run_access(dlc_fn, _copy(args))
    assert data == [t & (2**64 - 1) for t in got.access.data_tokens]
    assert control == got.access.control_tokens


def test_higher_levels_push_fewer_tokens(baseline):
    """Token counts of the running example fall with every level (docs/compiler.md table)."""
    w = WORKLOADS["eb_sum"] if "eb_sum" in WORKLOADS else next(iter(WORKLOADS.values()))
    args, _ = baseline[w.name]
    counts = []
    for level in LEVELS:
        kernel = compile_mlir(w.path.read_text(), limits=VECTOR, opt_level=level)
        r = run_kernel(kernel, _copy(args), "golden", limits=VECTOR)
        counts.append(len(r.access.data_tokens) + len(r.access.control_tokens))
    assert counts == sorted(counts, reverse=True) and len(set(counts)) == 4, counts


def test_cli_compiles_every_stage_at_o3_for_the_vector_configuration(capsys):
    from sw.cli import main
    for stage in ("scf", "slc", "slcv", "dlc", "tmu", "asm"):
        assert main(["compile", "examples/embedding_bag_sum.mlir", "--emit", stage, "-O3",
                     "--tmu-config", "tmu_vector"]) == 0
    out = capsys.readouterr().out
    assert "slcv.buf_stream" in out and "block n=a5" in out and "tmu.program version 1" in out


def test_cli_refuses_o1_on_a_v0_configuration(capsys, tmp_path):
    """A configuration without the vector extension (ISA v0 only; configs/tmu_rtl.json gained
    every v1 feature with the RTL's v1 support, so the file is written here)."""
    import json
    from sw.cli import main
    conf = json.loads(Path("configs/tmu_rtl.json").read_text())
    conf.update(name="v0_only", versions=[0], features=[], lanes=1, max_block=0,
                description="tmu_rtl without the ISA v1 vector extension")
    path = tmp_path / "v0_only.json"
    path.write_text(json.dumps(conf))
    assert main(["compile", "examples/embedding_bag_sum.mlir", "-O1", "--tmu-config", str(path)]) == 2
    err = capsys.readouterr().err
    assert "v0_only" in err and "version" in err and ("lockstep" in err or "broadcast" in err), err
