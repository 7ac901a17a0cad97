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
    """The hand-written kernel has no host checks (they come from the compiler), so the fault
    names no argument; a compiled kernel's names 'offsets' (test_fault_reports_name_...)."""
    table, indices, offsets, out = inputs()
    offsets[2] = 1
    with pytest.raises(AccessFault, match="RANGE_ORDER: layer 1 got an upper bound below its lower bound; "
                                          "loop bounds must be non-decreasing"):
        run_kernel(embedding_bag_kernel(), [table, indices, offsets, out])


def test_decreasing_offsets_of_a_compiled_kernel_name_the_argument():
    """The host's order check refuses them before the unit runs; without it (checks removed
    here) the unit's RANGE_ORDER fault still names 'offsets'."""
    kernel = _example_kernel(3)
    args = [np.ones((10, 8), np.float32), np.array([1, 2, 3], np.int64), np.array([0, 2, 1, 3], np.int64),
            np.zeros((3, 8), np.float32)]
    with pytest.raises(ValueError, match=r"^arg2 \(offsets\)\[2\] = 1 is less than arg2 \(offsets\)\[1\] = 2: "):
        run_kernel(kernel, args, "golden")
    kernel.host_checks = [c for c in kernel.host_checks if c.kind != "order"]
    with pytest.raises(AccessFault, match=r"RANGE_ORDER: layer 1 got an upper bound below its lower bound; "
                                          r"arg2 \('offsets'\) must be non-decreasing"):
        run_kernel(kernel, args, "golden")


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


@pytest.mark.parametrize("index", [2 ** 59, -(2 ** 59), 2 ** 61 + 5, 10, -1])
def test_indices_whose_byte_offset_wraps_are_refused_on_the_host(index):
    """Issue 8 item 2: into an 8-wide f32 table (32-byte rows), 2^59 and -2^59 wrapped to row 0 and
    2^61 + 5 to row 5 on the golden model and the RTL (exit 0). The host now checks every index
    (examples/embedding_bag_sum.mlir, -O0 and -O3) before the unit runs."""
    from pathlib import Path

    from sw.compiler import compile_mlir
    text = (Path(__file__).resolve().parents[2] / "examples" / "embedding_bag_sum.mlir").read_text()
    table = np.arange(80, dtype=np.float32).reshape(10, 8)
    indices = np.array([1, 2, index, 3], dtype=np.int64)
    offsets = np.array([0, 2, 4], dtype=np.int64)
    overflow = f"; its byte offset {index} * 32 does not fit in 64 bits" if abs(index) * 32 >= 2 ** 63 else ""
    for level in (0, 3):
        kernel = compile_mlir(text, filename="eb.mlir", opt_level=level)
        with pytest.raises(ValueError) as info:
            run_kernel(kernel, [table, indices, offsets, np.zeros((2, 8), np.float32)], "golden")
        assert str(info.value) == (f"arg1 (indices)[2] = {index} is outside [0, 10): it indexes axis 0 "
                                   f"of arg0 (table), which has 10 entries (the load at eb.mlir:11:7)"
                                   f"{overflow}")


def _example_kernel(level, name="embedding_bag_sum.mlir"):
    from pathlib import Path

    from sw.compiler import compile_mlir
    text = (Path(__file__).resolve().parents[2] / "examples" / name).read_text()
    return compile_mlir(text, filename="eb.mlir", opt_level=level)


def test_a_dynamic_row_longer_than_max_block_is_refused_before_the_run():
    """Issue 8 item 6, dynamic dimension: the block length is the table's dimension 1 (a DIM
    register), known only at the call; it faulted BLOCK_LENGTH on the unit."""
    kernel = _example_kernel(3)
    table = np.ones((3, 1025), np.float32)
    args = [table, np.array([0, 1, 2], np.int64), np.array([0, 3], np.int64), np.zeros((1, 1025), np.float32)]
    with pytest.raises(ValueError) as info:
        run_kernel(kernel, args, "golden")
    assert str(info.value) == ("arg0 (table) dimension 1 is 1025: block stream 6 would load rows of "
                               "embedding_dim = 1025 elements, more than max_block = 1024 of the TMU "
                               "configuration tmu_rtl (Limits.max_block); compile at -O2 or lower, or "
                               "for a configuration with a larger max_block")
    got = run_kernel(_example_kernel(2), args, "golden").results[0]
    np.testing.assert_array_equal(got, np.full((1, 1025), 3, np.float32))


def test_fault_reports_name_the_argument_and_a_signed_address():
    """Issue 8 item 7: a negative index was reported as '18446744073709548288 bytes past the end
    of 'offsets'', and every ADDR_RANGE fault was blamed on 'indices'. The host checks catch
    these inputs first; the explanation of a fault the unit raises is tested directly."""
    from sw.runtime.drivers import explain_fault
    from sw.runtime.image import build_image
    from sw.runtime.isa import Fault
    kernel = _example_kernel(0)
    args = [np.ones((10, 8), np.float32), np.array([1, 2], np.int64), np.array([0, 2], np.int64),
            np.zeros((1, 8), np.float32)]
    image = build_image(kernel, args)
    table, indices = image.placements[0], image.placements[1]
    assert table.base == 0
    before_table = (-104 * 32) & ((1 << 64) - 1)                 # row -104 of the table
    assert explain_fault(kernel, image, Fault.ADDR_RANGE, before_table) == (
        "access unit fault ADDR_RANGE: a load at -0xd00 (3328 bytes before the start of 'table', "
        "320 bytes at 0x0) is outside the memory region it was granted; a value of arg1 ('indices'), "
        "which selects positions in 'table', is out of range")
    past_indices = indices.base + indices.nbytes + 8
    assert explain_fault(kernel, image, Fault.ADDR_RANGE, past_indices) == (
        f"access unit fault ADDR_RANGE: a load at {past_indices:#x} (8 bytes past the end of 'indices', "
        f"16 bytes at {indices.base:#x}) is outside the memory region it was granted; a value of "
        f"arg2 ('offsets'), which selects positions in 'indices', is out of range")
    assert explain_fault(kernel, image, Fault.RANGE_ORDER, 1) == (
        "access unit fault RANGE_ORDER: layer 1 got an upper bound below its lower bound; "
        "arg2 ('offsets') must be non-decreasing")


def test_a_fault_of_the_unit_is_explained_when_no_host_check_applies():
    """Without the host checks (a kernel whose index goes through arithmetic has none), the
    unit's ADDR_RANGE fault stops the run with the signed address and the arrays named."""
    from sw.runtime.golden import AccessFault
    kernel = _example_kernel(0)
    kernel.host_checks = []
    args = [np.ones((10, 8), np.float32), np.array([1, -104], np.int64), np.array([0, 2], np.int64),
            np.zeros((1, 8), np.float32)]
    with pytest.raises(AccessFault, match=r"a load at -0xd00 \(3328 bytes before the start of 'table'"):
        run_kernel(kernel, args, "golden")


def test_an_execute_side_index_error_names_the_line():
    """A too-small output that no host check covers (checks removed here) stops with a ValueError
    quoting the generated line that indexed it (was an IndexError traceback, exit status 1)."""
    kernel = _example_kernel(0)
    kernel.host_checks = []
    args = [np.ones((10, 8), np.float32), np.array([1, 2], np.int64), np.array([0, 2], np.int64),
            np.zeros((1, 4), np.float32)]
    with pytest.raises(ValueError, match=r"^the execute side of kernel 'embedding_bag' indexed outside an "
                                         r"argument \('acc = out\[b, d\]'\): index 4 is out of bounds "
                                         r"for axis 1 with size 4$"):
        run_kernel(kernel, args, "golden")


def test_a_fault_address_inside_another_tensor_is_blamed_on_the_one_it_left():
    """A load past the end of 'table' may land inside 'indices' (the next tensor of the image):
    the region check faults, and the report names 'table' (a load inside its own tensor never
    faults ADDR_RANGE). Seen on the RTL with a row 3 past the table."""
    from sw.runtime.drivers import explain_fault
    from sw.runtime.image import build_image
    from sw.runtime.isa import Fault
    kernel = _example_kernel(0)
    args = [np.ones((18, 8), np.float32), np.arange(8, dtype=np.int64), np.array([0, 8], np.int64),
            np.zeros((1, 8), np.float32)]
    image = build_image(kernel, args)
    table, indices = image.placements[0], image.placements[1]
    addr = indices.base + 24
    assert addr > table.base + table.nbytes
    assert explain_fault(kernel, image, Fault.ADDR_RANGE, addr) == (
        f"access unit fault ADDR_RANGE: a load at {addr:#x} ({addr - table.nbytes} bytes past the end "
        f"of 'table', 576 bytes at 0x0, inside 'indices') is outside the memory region it was granted; "
        f"a value of arg1 ('indices'), which selects positions in 'table', is out of range")


def test_block_length_fault_names_max_block():
    from sw.runtime.drivers import explain_fault
    from sw.runtime.image import build_image
    from sw.runtime.isa import Fault
    kernel = _example_kernel(3)
    args = [np.ones((4, 8), np.float32), np.array([1], np.int64), np.array([0, 1], np.int64),
            np.zeros((1, 8), np.float32)]
    assert explain_fault(kernel, build_image(kernel, args), Fault.BLOCK_LENGTH, 5) == (
        "access unit fault BLOCK_LENGTH: block stream 5 got a length above max_block = 1024 of the "
        "TMU configuration tmu_rtl or below 0")


CONSTANT_LOOP = """\
func.func @first8(%table: memref<?x?xf32>, %idx: memref<?xindex>, %out: memref<?x?xf32>) -> memref<?x?xf32> {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c8 = arith.constant 8 : index
  %n = memref.dim %idx, %c0 : memref<?xindex>
  scf.for %i = %c0 to %n step %c1 {
    %row = memref.load %idx[%i] : memref<?xindex>
    scf.for %d = %c0 to %c8 step %c1 {
      %v = memref.load %table[%row, %d] : memref<?x?xf32>
      memref.store %v, %out[%i, %d] : memref<?x?xf32>
    }
  }
  return %out : memref<?x?xf32>
}
"""


def test_a_loop_to_a_constant_past_an_argument_is_refused():
    from sw.compiler import compile_mlir
    kernel = compile_mlir(CONSTANT_LOOP, filename="first8.mlir")
    table = np.arange(40, dtype=np.float32).reshape(4, 10)
    got = run_kernel(kernel, [table, np.array([3, 1], np.int64), np.zeros((2, 8), np.float32)], "golden")
    np.testing.assert_array_equal(got.results[0], table[[3, 1], :8])
    with pytest.raises(ValueError) as info:
        run_kernel(kernel, [table[:, :6].copy(), np.array([3, 1], np.int64), np.zeros((2, 8), np.float32)],
                   "golden")
    assert str(info.value) == ("arg0 (table) has 6 entries along axis 1, fewer than the loop at "
                               "first8.mlir:8:5 that indexes it runs over (the constant 8)")


def test_address_overflow_fault_names_the_array_and_the_index_argument():
    """ADDR_OVERFLOW (docs/isa.md §1) carries the stream id; the report names what it loads and
    which argument indexes it."""
    from sw.runtime.drivers import explain_fault
    from sw.runtime.image import build_image
    from sw.runtime.isa import Fault
    kernel = _example_kernel(0)
    args = [np.ones((4, 8), np.float32), np.array([1], np.int64), np.array([0, 1], np.int64),
            np.zeros((1, 8), np.float32)]
    table_stream = next(n for n, s in enumerate(kernel.program.streams)
                        if s.kind.name == "MEM" and kernel.arg_map[kernel.program.regions[s.region].base.value].param == 0)
    assert explain_fault(kernel, build_image(kernel, args), Fault.ADDR_OVERFLOW, table_stream) == (
        f"access unit fault ADDR_OVERFLOW: the address computation of stream {table_stream} (a load "
        f"from arg0 ('table')) left the signed 64-bit range; a value of arg1 ('indices') is too large")


def test_address_overflow_fault_blames_index_arguments_only():
    """A loop to a constant that indexes the table is an extent check with no source argument
    (source -1): ADDR_OVERFLOW's report blamed ``arg-1``, the last parameter ('out'), beside the
    index argument."""
    from sw.compiler import compile_mlir
    from sw.runtime.drivers import explain_fault
    from sw.runtime.image import build_image
    from sw.runtime.isa import Fault
    kernel = compile_mlir(CONSTANT_LOOP, filename="first8.mlir")
    assert any(c.source == -1 and c.target == 0 for c in kernel.host_checks)
    args = [np.ones((4, 10), np.float32), np.array([1], np.int64), np.zeros((1, 8), np.float32)]
    table_stream = next(n for n, s in enumerate(kernel.program.streams)
                        if s.kind.name == "MEM" and kernel.arg_map[kernel.program.regions[s.region].base.value].param == 0)
    assert explain_fault(kernel, build_image(kernel, args), Fault.ADDR_OVERFLOW, table_stream) == (
        f"access unit fault ADDR_OVERFLOW: the address computation of stream {table_stream} (a load "
        f"from arg0 ('table')) left the signed 64-bit range; a value of arg1 ('idx') is too large")


def test_run_kernel_refuses_options_it_would_ignore():
    """An unknown option (a typo, an input given by keyword) is a TypeError; an RTL option with the
    golden target a ValueError (the golden model has no timing): neither is silently dropped."""
    table, indices, offsets, out = inputs()
    args = [table, indices, offsets, out]
    with pytest.raises(TypeError, match=r"run_kernel: unknown option 'backpresure' \(options: "):
        run_kernel(embedding_bag_kernel(), args, "golden", backpresure=0.5)
    with pytest.raises(ValueError, match=r"seed=3, memory='HBM2' applies to target 'rtl' only"):
        run_kernel(embedding_bag_kernel(), args, "golden", memory="HBM2", seed=3)
    assert run_kernel(embedding_bag_kernel(), args, "golden", limits=None).target == "golden"


STATIC_BAG = """\
func.func @bag(%table: memref<10x4xf32>, %indices: memref<?xindex>, %offsets: memref<3xindex>, %out: memref<2x4xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c2 = arith.constant 2 : index
  %c4 = arith.constant 4 : index
  scf.for %b = %c0 to %c2 step %c1 {
    %b1 = arith.addi %b, %c1 : index
    %start = memref.load %offsets[%b] : memref<3xindex>
    %end = memref.load %offsets[%b1] : memref<3xindex>
    scf.for %j = %start to %end step %c1 {
      %row = memref.load %indices[%j] : memref<?xindex>
      scf.for %d = %c0 to %c4 step %c1 {
        %v = memref.load %table[%row, %d] : memref<10x4xf32>
        %acc = memref.load %out[%b, %d] : memref<2x4xf32>
        %sum = arith.addf %acc, %v : f32
        memref.store %sum, %out[%b, %d] : memref<2x4xf32>
      }
    }
  }
  return
}
"""


@pytest.mark.parametrize("shape, axis, extent", [((10, 8), 1, 4), ((12, 4), 0, 10)])
def test_a_static_memref_shape_is_checked(shape, axis, extent):
    """The program's strides come from memref<10x4xf32>: a 10x8 table read with them gave the
    rows of a 10x4 one (a silent wrong answer), a 12x4 one ran; both are refused now."""
    from sw.compiler import compile_mlir
    kernel = compile_mlir(STATIC_BAG)
    indices, offsets = np.array([9, 1, 9], np.int64), np.array([0, 1, 3], np.int64)
    table = np.arange(40, dtype=np.float32).reshape(10, 4)
    out = np.zeros((2, 4), np.float32)
    run_kernel(kernel, [table, indices, offsets, out], "golden")
    np.testing.assert_array_equal(out, [table[9], table[1] + table[9]])
    wrong = np.arange(np.prod(shape), dtype=np.float32).reshape(shape)
    with pytest.raises(ValueError, match=rf"arg0 \(table\) must have {extent} entries on axis "
                                         rf"{axis} \(its memref type's shape is 10x4\), not shape "
                                         rf"\({shape[0]}, {shape[1]}\)"):
        run_kernel(kernel, [wrong, indices, offsets, np.zeros((2, 4), np.float32)], "golden")


def test_a_fault_far_from_every_tensor_is_blamed_on_the_stream_that_faulted():
    """Row 10,000 of a 10-row table lands past every tensor of the image: the nearest one is the
    last placed ('offsets'), which the report blamed. The fault names the stream that raised it
    (the golden model's AccessFault.stream, the RTL's STATUS.FAULT_STREAM, carried by
    AccessRun.fault_stream) and the explanation follows it; without a stream it falls back to
    the nearest tensor."""
    from dataclasses import replace

    from sw.runtime.drivers import AccessRun, _raise_fault
    from sw.runtime.image import build_image
    from sw.runtime.isa import Fault
    kernel = _example_kernel(0)
    kernel.host_checks = []                      # as for an index computed by arithmetic
    args = [np.ones((10, 8), np.float32), np.array([1, 10_000], np.int64),
            np.array([0, 2], np.int64), np.zeros((1, 8), np.float32)]
    image = build_image(kernel, args)
    addr = 10_000 * 32
    assert image.nearest(addr, outside=True)[1].name == "offsets"
    with pytest.raises(AccessFault) as info:
        run_kernel(kernel, [a.copy() for a in args], "golden")
    assert info.value.code == Fault.ADDR_RANGE and info.value.addr == addr
    table_text = (f"a load at {addr:#x} ({addr - 320} bytes past the end of 'table', 320 bytes at "
                  f"0x0) is outside the memory region it was granted; an index used to address "
                  f"'table' is out of range")
    assert table_text in str(info.value)
    stream = info.value.stream
    assert kernel.program.streams[stream].kind.name == "MEM"
    rtl_like = AccessRun([], [], int(Fault.ADDR_RANGE), addr, fault_stream=stream)
    with pytest.raises(AccessFault) as again:
        _raise_fault(kernel, image, rtl_like)
    assert table_text in str(again.value) and again.value.stream == stream
    with pytest.raises(AccessFault) as nearest:
        _raise_fault(kernel, image, replace(rtl_like, fault_stream=None))
    assert "'offsets'" in str(nearest.value) and table_text not in str(nearest.value)


def test_a_misaligned_load_names_its_stream_and_tensor():
    """MISALIGNED (docs/isa.md §5) with the stream the RTL reports (STATUS.FAULT_STREAM): the
    explanation names the stream and the tensor it loads from; without one, the address only."""
    from sw.runtime.drivers import AccessRun, _raise_fault, _stream_param
    from sw.runtime.image import build_image
    from sw.runtime.isa import Fault
    kernel = _example_kernel(0)
    args = [np.ones((10, 8), np.float32), np.array([1, 2], np.int64),
            np.array([0, 2], np.int64), np.zeros((1, 8), np.float32)]
    image = build_image(kernel, args)
    table_stream = next(sid for sid in range(len(kernel.program.streams))
                        if _stream_param(kernel, sid) == 0)
    run = AccessRun([], [], int(Fault.MISALIGNED), 2, fault_stream=table_stream)
    with pytest.raises(AccessFault, match=rf"a load of stream {table_stream} \(from arg0 "
                                          r"\('table'\)\) at .* is not aligned to its size") as info:
        _raise_fault(kernel, image, run)
    assert info.value.stream == table_stream
    with pytest.raises(AccessFault, match=r"fault MISALIGNED: a load at .* is not aligned"):
        _raise_fault(kernel, image, AccessRun([], [], int(Fault.MISALIGNED), 2))
