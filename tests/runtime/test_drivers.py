"""run_kernel end to end on the golden model with the hand-written kernel; argument and fault errors."""

import numpy as np
import pytest
import torch

from sw.runtime.drivers import run_kernel
from sw.runtime.execute import ExecuteError, execute_tokens
from sw.runtime.golden import AccessFault
from sw.runtime.handwritten import embedding_bag_kernel
from sw.runtime.image import MemoryImage


def inputs(dtype=np.float32, seed=0):
    rng = np.random.default_rng(seed)
    table = rng.standard_normal((10, 5)).astype(dtype)
    indices = np.array([3, 3, 0, 9, 1], dtype=np.int64)           # bag 0 repeats row 3
    offsets = np.array([0, 2, 2, 5], dtype=np.int64)              # bag 1 is empty
    return table, indices, offsets, np.zeros((3, 5), dtype=dtype)


@pytest.mark.parametrize("mode", ["sum", "mean"])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_run_kernel_golden_matches_pytorch(mode, dtype):
    table, indices, offsets, out = inputs(dtype)
    kernel = embedding_bag_kernel(np.dtype(dtype).name, mode)
    result = run_kernel(kernel, [table, indices, offsets, out], "golden")
    expected = torch.nn.functional.embedding_bag(torch.from_numpy(indices), torch.from_numpy(table),
                                                 torch.from_numpy(offsets[:-1]), mode=mode).numpy()
    np.testing.assert_allclose(result.results[0], expected, rtol=1e-6)
    assert result.execute.calls == {0: 3, 1: 5, 2: 3}
    assert result.cycles is None and result.target == "golden"


def test_index_out_of_range_names_the_tensor():
    table, indices, offsets, out = inputs()
    indices[3] = 10
    with pytest.raises(AccessFault, match=r"ADDR_RANGE: a load at 0x[0-9a-f]+ \(0 bytes past the end of 'table'"):
        run_kernel(embedding_bag_kernel(), [table, indices, offsets, out])


def test_decreasing_offsets_are_reported():
    table, indices, offsets, out = inputs()
    offsets[2] = 1
    with pytest.raises(AccessFault, match="RANGE_ORDER: layer 1 got an upper bound below its lower bound; "
                                          "offsets must be non-decreasing"):
        run_kernel(embedding_bag_kernel(), [table, indices, offsets, out])


@pytest.mark.parametrize("bad, message", [
    (lambda a: a[:3], "kernel 'embedding_bag_sum_handwritten' takes 4 arguments (table, indices, offsets, out), not 3"),
    (lambda a: [a[0], a[1].astype(np.int32), a[2], a[3]], "arg1 (indices) must have dtype int64, not int32"),
    (lambda a: [a[0][0], a[1], a[2], a[3]], r"arg0 (table) must have rank 2, not 1 (shape (5,))"),
    (lambda a: [list(a[0]), a[1], a[2], a[3]], "arg0 (table) must be a NumPy array, not list"),
])
def test_bad_arguments_name_the_argument(bad, message):
    with pytest.raises((TypeError, ValueError)) as info:
        run_kernel(embedding_bag_kernel(), bad(list(inputs())))
    assert str(info.value) == message


def test_unknown_target():
    with pytest.raises(ValueError, match="target must be one of golden, rtl, not 'fpga'"):
        run_kernel(embedding_bag_kernel(), list(inputs()), "fpga")


def test_execute_side_detects_lost_or_extra_operands():
    kernel = embedding_bag_kernel()
    table, indices, offsets, out = inputs()
    with pytest.raises(ExecuteError, match="must end with DONE"):
        execute_tokens(kernel, [table, indices, offsets, out], [], [0])
    with pytest.raises(ExecuteError, match="popped 1 operands, the access unit pushed 2"):
        execute_tokens(kernel, [table, indices, offsets, out], [0, 7], [0, 2, 0xFFFF])
    with pytest.raises(ExecuteError, match="control token 9 names no callback"):
        execute_tokens(kernel, [table, indices, offsets, out], [], [9, 0xFFFF])


def test_image_alignment_and_describe():
    image = MemoryImage()
    a = image.add(0, "a", np.arange(3, dtype=np.int64))
    b = image.add(1, "b", np.ones(2, dtype=np.float32))
    assert (a.base, a.nbytes, b.base, b.nbytes) == (0, 24, 64, 8)
    assert len(image.data) == 72 and image.data[64:68] == np.float32(1).tobytes()
    assert image.describe(66) == "0x42 ('b' + 2 bytes)"
    assert image.describe(30) == "0x1e (6 bytes past the end of 'a', 24 bytes at 0x0)"


def test_expression_argument_registers():
    from sw.runtime.image import bind_arguments, build_image
    from sw.runtime.kernel import ArgKind, ArgSpec
    kernel = embedding_bag_kernel()
    kernel.arg_map[3] = ArgSpec(ArgKind.EXPR, expr="args[2].shape[0] - 1")    # nbags from the offsets
    table, indices, offsets, out = inputs()
    image = build_image(kernel, [table, indices, offsets, out])
    assert bind_arguments(kernel, [table, indices, offsets, out], image)[3] == 3
    kernel.arg_map[3] = ArgSpec(ArgKind.EXPR, expr="args[9]")
    with pytest.raises(ValueError, match=r"argument register 3 = 'args\[9\]' cannot be computed from the "
                                         r"arguments: list index out of range"):
        bind_arguments(kernel, [table, indices, offsets, out], image)


def test_golden_runs_a_v1_kernel_with_the_configuration_it_was_compiled_for():
    """An -O3 kernel for configs/tmu_rtl.json (ISA v1) runs on the golden model without limits=;
    the default Limits() (v0 only) would refuse its program with BAD_VERSION."""
    from pathlib import Path

    from sw.compiler import compile_mlir
    from sw.runtime.isa import Limits, ProgramError

    text = (Path(__file__).resolve().parents[2] / "examples" / "embedding_bag_sum.mlir").read_text()
    kernel = compile_mlir(text, opt_level=3, limits=Limits.from_file("tmu_rtl"))
    assert kernel.limits.name == "tmu_rtl"
    rng = np.random.default_rng(0)
    table = rng.standard_normal((10, 13)).astype(np.float32)
    indices = np.array([1, 9, 9, 0, 4], dtype=np.int64)
    offsets = np.array([0, 2, 2, 5], dtype=np.int64)
    out = np.zeros((3, 13), np.float32)
    got = run_kernel(kernel, [table, indices, offsets, out], "golden").results[0]
    expected = np.stack([table[[1, 9]].sum(0), np.zeros(13, np.float32), table[[9, 0, 4]].sum(0)])
    np.testing.assert_allclose(got, expected, rtol=1e-6)
    with pytest.raises(ProgramError):
        run_kernel(kernel, [table, indices, offsets, out], "golden", limits=Limits())
