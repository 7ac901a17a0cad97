"""Compiler-to-RTL regression: kernels from MLIR and PyTorch, compiled, run on the golden model and
on the RTL, checked against torch.nn.functional.embedding_bag — on Cora and on random small shapes
(empty bags, repeated rows), plus the bad-input paths. RTL runs are marked ``rtl`` (the Verilator
model is built once per configuration and reused)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import torch

from sw.compiler import compile_mlir
from sw.runtime.datasets import load_cora, node_features
from sw.runtime.drivers import run_kernel
from sw.runtime.golden import AccessFault, run_golden
from sw.runtime.handwritten import embedding_bag_kernel

REPO = Path(__file__).resolve().parents[2]
KERNELS = Path(__file__).resolve().parent / "kernels"
SUM_F32 = REPO / "examples" / "embedding_bag_sum.mlir"


def reference(table, indices, offsets, mode="sum"):
    return torch.nn.functional.embedding_bag(torch.from_numpy(np.asarray(indices, dtype=np.int64)),
                                             torch.from_numpy(table),
                                             torch.from_numpy(np.asarray(offsets[:-1], dtype=np.int64)),
                                             mode=mode).numpy()


def random_bags(seed, dtype=np.float32, max_rows=24, max_dim=9, max_bags=10, max_len=5):
    rng = np.random.default_rng(seed)
    rows, dim, nbags = int(rng.integers(1, max_rows)), int(rng.integers(1, max_dim)), int(rng.integers(2, max_bags))
    table = rng.standard_normal((rows, dim)).astype(dtype)
    lengths = rng.integers(0, max_len, nbags)
    lengths[int(rng.integers(nbags))] = 0                      # an empty bag
    lengths[0] = max(lengths[0], 2)
    indices = rng.integers(0, rows, int(lengths.sum())).astype(np.int64)
    indices[1] = indices[0]                                    # a bag that repeats a row
    offsets = np.concatenate([[0], np.cumsum(lengths)]).astype(np.int64)
    return table, indices, offsets


def call_args(kernel, table, indices, offsets):
    """Positional arguments for the example's signature (table, indices, offsets, out)."""
    out = np.zeros((len(offsets) - 1, table.shape[1]), dtype=table.dtype)
    return [table, indices, offsets, out]


@pytest.fixture(scope="module")
def sum_kernel():
    return compile_mlir(SUM_F32.read_text(), filename=str(SUM_F32))


# ------------------------------------------------------------------------------------------------
# golden model
# ------------------------------------------------------------------------------------------------

@pytest.mark.parametrize("seed", range(6))
def test_compiled_sum_on_golden_matches_pytorch(sum_kernel, seed):
    table, indices, offsets = random_bags(seed)
    result = run_kernel(sum_kernel, call_args(sum_kernel, table, indices, offsets), "golden")
    np.testing.assert_allclose(result.results[0], reference(table, indices, offsets), rtol=1e-5, atol=1e-6)


def test_compiled_sum_on_cora_golden(sum_kernel):
    g = load_cora()
    x = node_features(g.num_nodes, 8)
    result = run_kernel(sum_kernel, call_args(sum_kernel, x, g.indices, g.offsets), "golden")
    np.testing.assert_allclose(result.results[0], reference(x, g.indices, g.offsets), rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("name, dtype, order", [
    ("foreign_bag_f64.mlir", np.float64, "tio"),     # (table, indices i64, offsets i64, out) -> alloc
    ("foreign_bag_f32.mlir", np.float32, "ptoi"),    # (offsets, table, out, indices) -> out
])
@pytest.mark.parametrize("seed", range(3))
def test_foreign_kernels_on_golden(name, dtype, order, seed):
    kernel = compile_mlir((KERNELS / name).read_text(), filename=name)
    table, indices, offsets = random_bags(seed, dtype)
    out = np.zeros((len(offsets) - 1, table.shape[1]), dtype=dtype)
    args = [table, indices, offsets, out] if order == "tio" else [offsets, table, out, indices]
    result = run_kernel(kernel, args, "golden")
    np.testing.assert_allclose(result.results[0], reference(table, indices, offsets), rtol=1e-6, atol=1e-6)


def test_compiled_and_handwritten_programs_agree_on_the_result(sum_kernel):
    table, indices, offsets = random_bags(11)
    compiled = run_kernel(sum_kernel, call_args(sum_kernel, table, indices, offsets), "golden")
    hand = run_kernel(embedding_bag_kernel(), call_args(None, table, indices, offsets), "golden")
    np.testing.assert_allclose(compiled.results[0], hand.results[0], rtol=1e-6)


def test_index_out_of_range_is_a_clear_error(sum_kernel):
    table, indices, offsets = random_bags(3)
    indices[-1] = table.shape[0]
    n = table.shape[0]
    # checked on the host before the unit runs (the unit's ADDR_RANGE fault: tests/runtime/test_drivers.py)
    with pytest.raises(ValueError, match=rf"^arg1 \(indices\)\[{len(indices) - 1}\] = {n} is outside "
                                         rf"\[0, {n}\): it indexes axis 0 of arg0 \(table\)"):
        run_kernel(sum_kernel, call_args(sum_kernel, table, indices, offsets), "golden")


def test_decreasing_offsets_are_a_clear_error(sum_kernel):
    table, indices, offsets = random_bags(4)
    offsets[1], offsets[2] = offsets[2] + 1, offsets[1]
    # checked on the host before the unit runs (the unit's RANGE_ORDER fault: tests/runtime/test_drivers.py)
    with pytest.raises(ValueError, match=rf"^arg2 \(offsets\)\[2\] = {offsets[2]} is less than arg2 "
                                         rf"\(offsets\)\[1\] = {offsets[1]}: they are the upper and lower bound"):
        run_kernel(sum_kernel, call_args(sum_kernel, table, indices, offsets), "golden")


# ------------------------------------------------------------------------------------------------
# PyTorch frontend
# ------------------------------------------------------------------------------------------------

@pytest.mark.parametrize("mode", ["sum", "mean"])
def test_torch_embedding_bag_module_on_golden(mode):
    from sw.api import compile_torch
    torch.manual_seed(0)
    bag = torch.nn.EmbeddingBag(20, 6, mode=mode)
    inp, offsets = torch.tensor([1, 2, 4, 5, 4, 3, 19, 0]), torch.tensor([0, 3, 3, 6])
    op = compile_torch(bag, (inp, offsets))
    got = op(inp, offsets, target="golden")
    torch.testing.assert_close(got, bag(inp, offsets).detach(), rtol=1e-5, atol=1e-6)
    other, other_offsets = torch.tensor([7, 7, 7]), torch.tensor([0, 1])
    torch.testing.assert_close(op(other, other_offsets), bag(other, other_offsets).detach())


def test_torch_functional_embedding_bag_on_golden():
    from sw.api import compile_torch
    weight = torch.randn(12, 4, dtype=torch.float64)

    def fn(indices, offsets):
        return torch.nn.functional.embedding_bag(indices, weight, offsets, mode="sum")

    inp, offsets = torch.tensor([0, 11, 5, 5]), torch.tensor([0, 2])
    got = compile_torch(fn, (inp, offsets))(inp, offsets)
    torch.testing.assert_close(got, fn(inp, offsets))


def test_torch_index_out_of_range_is_rejected():
    from sw.api import compile_torch
    bag = torch.nn.EmbeddingBag(5, 2)
    op = compile_torch(bag, (torch.tensor([1, 2]), torch.tensor([0])))
    with pytest.raises((ValueError, AccessFault), match="5"):
        op(torch.tensor([1, 5]), torch.tensor([0]))


# ------------------------------------------------------------------------------------------------
# RTL
# ------------------------------------------------------------------------------------------------

@pytest.mark.rtl
@pytest.mark.parametrize("seed, backpressure", [(0, 0.0), (1, 0.5), (2, 0.0)])
def test_compiled_sum_on_rtl_matches_golden_token_by_token_and_pytorch(sum_kernel, seed, backpressure):
    from sw.runtime.image import bind_arguments, build_image
    from sim.system import run_on_rtl
    table, indices, offsets = random_bags(seed)
    args = call_args(sum_kernel, table, indices, offsets)
    image = build_image(sum_kernel, args)
    regs = bind_arguments(sum_kernel, args, image)
    program = sum_kernel.program.encode()
    gold = run_golden(program, image.data, regs)
    rtl = run_on_rtl(program, image.data, regs, backpressure=backpressure, seed=seed)
    assert (rtl.fault_code, rtl.control_tokens, rtl.data_tokens) == (0, gold.control_tokens, gold.data_tokens)
    result = run_kernel(sum_kernel, args, "rtl", backpressure=backpressure, seed=seed)
    np.testing.assert_allclose(result.results[0], reference(table, indices, offsets), rtol=1e-5, atol=1e-6)
    assert result.cycles > 0


@pytest.mark.rtl
def test_foreign_f64_kernel_on_rtl():
    kernel = compile_mlir((KERNELS / "foreign_bag_f64.mlir").read_text(), filename="foreign_bag_f64.mlir")
    table, indices, offsets = random_bags(5, np.float64)
    out = np.zeros((len(offsets) - 1, table.shape[1]))
    result = run_kernel(kernel, [table, indices, offsets, out], "rtl", backpressure=0.3)
    np.testing.assert_allclose(result.results[0], reference(table, indices, offsets), rtol=1e-12)


@pytest.mark.rtl
def test_cora_subset_on_rtl(sum_kernel):
    """The first 300 Cora nodes (about 1,100 lookups) compiled and run on the RTL."""
    g = load_cora()
    offsets = g.offsets[:301]
    indices = g.indices[:offsets[-1]]
    x = node_features(g.num_nodes, 8)
    result = run_kernel(sum_kernel, call_args(sum_kernel, x, indices, offsets), "rtl")
    np.testing.assert_allclose(result.results[0], reference(x, indices, offsets), rtol=1e-5, atol=1e-5)


@pytest.mark.rtl
def test_index_out_of_range_faults_on_rtl(sum_kernel):
    table, indices, offsets = random_bags(7)
    indices[-1] = table.shape[0] + 3
    with pytest.raises(ValueError, match=r"arg1 \(indices\)"):        # the host check, first
        run_kernel(sum_kernel, call_args(sum_kernel, table, indices, offsets), "rtl")
    import dataclasses
    unchecked = dataclasses.replace(sum_kernel)                          # the unit's own region check
    unchecked.check_arguments = lambda args: None                        # (checks kept for the report)
    with pytest.raises(AccessFault, match=r"ADDR_RANGE: a load at .* past the end of 'table'.*; a value "
                                          r"of arg1 \('indices'\), which selects positions in 'table'") as rtl:
        run_kernel(unchecked, call_args(sum_kernel, table, indices, offsets), "rtl")
    # The unit names the stream that faulted (STATUS.FAULT_STREAM), the golden model's.
    with pytest.raises(AccessFault) as golden:
        run_kernel(unchecked, call_args(sum_kernel, table, indices, offsets), "golden")
    assert rtl.value.stream is not None and rtl.value.stream == golden.value.stream
    assert (rtl.value.code, rtl.value.addr) == (golden.value.code, golden.value.addr)


@pytest.mark.rtl
def test_torch_module_on_rtl():
    from sw.api import compile_torch
    torch.manual_seed(1)
    bag = torch.nn.EmbeddingBag(30, 8, mode="mean")
    inp, offsets = torch.tensor([3, 1, 4, 1, 5, 9, 2, 6]), torch.tensor([0, 2, 2, 5])
    op = compile_torch(bag, (inp, offsets))
    torch.testing.assert_close(op(inp, offsets, target="rtl"), bag(inp, offsets).detach(), rtol=1e-5, atol=1e-6)
    assert op.last_run.cycles > 0


@pytest.mark.rtl
@pytest.mark.parametrize("opt_level", [0, 3])
def test_torch_module_coupled_replays_its_own_execute_side(opt_level):
    """``op(..., coupled=True, core="replay")``: the op's DLC module goes with it, the core is
    made from its execute side (``RunResult.coupled_core``), the result is PyTorch's and the
    simulated core popped DONE after the unit's last token."""
    from sw.api import compile_torch
    torch.manual_seed(2)
    bag = torch.nn.EmbeddingBag(30, 8, mode="sum")
    inp, offsets = torch.tensor([3, 1, 4, 1, 5, 9, 2, 6]), torch.tensor([0, 2, 2, 5])
    op = compile_torch(bag, (inp, offsets), opt_level=opt_level)
    got = op(inp, offsets, target="rtl", coupled=True, core="replay")
    torch.testing.assert_close(got, bag(inp, offsets).detach(), rtol=1e-5, atol=1e-6)
    made = op.last_run.coupled_core
    assert made is not None and made.mode == "replay" and made.execute_cycles > 0
    assert op.last_run.dae_cycles >= op.last_run.cycles


@pytest.mark.rtl
@pytest.mark.slow
def test_cora_full_on_rtl(sum_kernel):
    g = load_cora()
    x = node_features(g.num_nodes, 16)
    result = run_kernel(sum_kernel, call_args(sum_kernel, x, g.indices, g.offsets), "rtl")
    np.testing.assert_allclose(result.results[0], reference(x, g.indices, g.offsets), rtol=1e-5, atol=1e-5)
