"""The golden model against PyTorch's embedding_bag and against hand-computed token streams."""

import numpy as np
import pytest
import torch

from sw.runtime.golden import AccessFault, run_golden
from sw.runtime.execute import execute_tokens
from sw.runtime.handwritten import (BAG_BEGIN, BAG_END, ROW, embedding_bag_kernel, embedding_bag_memory,
                                    embedding_bag_program)
from sw.runtime.isa import (DONE_TOKEN, Action, ActionKind, AluOp, Event, Fault, Layer, Program, Region,
                            Source, Stream, StreamKind)


def reference(table, indices, offsets, mode):
    out = torch.nn.functional.embedding_bag(torch.from_numpy(indices), torch.from_numpy(table),
                                            torch.from_numpy(offsets[:-1]), mode=mode)
    return out.numpy()


def test_token_stream_of_a_tiny_embedding_bag_by_hand():
    table = np.arange(6, dtype=np.float32).reshape(3, 2)       # rows [0,1] [2,3] [4,5]
    indices = np.array([2, 0, 2], dtype=np.int64)
    offsets = np.array([0, 2, 2, 3], dtype=np.int64)           # bags {2,0}, {}, {2}
    memory, args = embedding_bag_memory(table, indices, offsets)
    r = run_golden(embedding_bag_program(4), memory, args)
    f = lambda x: int(np.float32(x).view(np.uint32))
    assert r.control_tokens == [BAG_BEGIN, ROW, ROW, BAG_END, BAG_BEGIN, BAG_END, BAG_BEGIN, ROW, BAG_END, DONE_TOKEN]
    assert r.data_tokens == [0, f(4), f(5), f(0), f(1), 1, 2, f(4), f(5)]
    assert r.loads == 3 * 2 + 3 + 3 * 2 and r.bytes_loaded == 6 * 8 + 3 * 8 + 6 * 4   # offsets, indices, table


@pytest.mark.parametrize("mode", ["sum", "mean"])
@pytest.mark.parametrize("dtype, size", [(np.float32, 4), (np.float64, 8)])
@pytest.mark.parametrize("seed", range(4))
def test_embedding_bag_matches_pytorch_on_random_shapes(mode, dtype, size, seed):
    rng = np.random.default_rng(seed)
    rows, dim, nbags = rng.integers(1, 20), rng.integers(1, 9), rng.integers(1, 12)
    table = rng.standard_normal((rows, dim)).astype(dtype)
    lengths = rng.integers(0, 5, nbags)
    lengths[0] = 0                                           # always one empty bag
    indices = rng.integers(0, rows, lengths.sum()).astype(np.int64)
    if len(indices) >= 2:
        indices[1] = indices[0]                              # a bag that repeats a row
    offsets = np.concatenate([[0], np.cumsum(lengths)]).astype(np.int64)
    memory, args = embedding_bag_memory(table, indices, offsets)
    r = run_golden(embedding_bag_program(size), memory, args)
    assert not r.faulted
    out = np.zeros((nbags, dim), dtype=dtype)
    kernel = embedding_bag_kernel(np.dtype(dtype).name, mode)
    got = execute_tokens(kernel, [table, indices, offsets, out], r.data_tokens, r.control_tokens).results[0]
    np.testing.assert_allclose(got, reference(table, indices, offsets, mode), rtol=1e-6, atol=1e-6)


def test_index_out_of_range_faults_with_the_address_and_keeps_earlier_tokens():
    table = np.ones((4, 2), dtype=np.float32)
    indices = np.array([1, 4], dtype=np.int64)               # 4 is one past the end
    offsets = np.array([0, 2], dtype=np.int64)
    memory, args = embedding_bag_memory(table, indices, offsets)
    r = run_golden(embedding_bag_program(4), memory, args)
    assert r.fault_code == Fault.ADDR_RANGE
    table_base = args[2]
    assert r.fault_addr == table_base + 4 * 2 * 4            # row 4, element 0
    assert r.control_tokens == [BAG_BEGIN, ROW]              # no DONE after a fault
    assert len(r.data_tokens) == 1 + 2
    with pytest.raises(AccessFault, match=r"outside region 2 \[0x80, 0xa0\) \(fault ADDR_RANGE"):
        run_golden(embedding_bag_program(4), memory, args, raise_on_fault=True)


def test_decreasing_offsets_fault_range_order():
    table = np.ones((4, 2), dtype=np.float32)
    memory, args = embedding_bag_memory(table, np.array([1, 2], dtype=np.int64), np.array([0, 2, 1], dtype=np.int64))
    r = run_golden(embedding_bag_program(4), memory, args)
    assert (r.fault_code, r.fault_addr, r.fault_stream) == (Fault.RANGE_ORDER, 1, None)


def test_misaligned_load_faults():
    prog = Program(n_args=0, layers=[Layer(Source.imm(0), Source.imm(2))],
                   regions=[Region(Source.imm(0), Source.imm(64))],
                   streams=[Stream(0, StreamKind.MEM, Source.imm(4), Source.index(0), size=8, stride=8)])
    r = run_golden(prog, bytes(64), [])
    assert (r.fault_code, r.fault_addr, r.fault_stream) == (Fault.MISALIGNED, 4, 0)


@pytest.mark.parametrize("op, a, b, expected", [
    (AluOp.ADD, 5, -7, -2), (AluOp.SUB, 5, 7, -2), (AluOp.MUL, -3, 4, -12),
    (AluOp.SHL, 1, 65, 2), (AluOp.SHR, -1, 60, 15), (AluOp.SRA, -16, 2, -4),
    (AluOp.AND, 12, 10, 8), (AluOp.OR, 12, 10, 14), (AluOp.XOR, 12, 10, 6),
    (AluOp.MIN, -3, 2, -3), (AluOp.MAX, -3, 2, 2), (AluOp.LT, -3, 2, 1), (AluOp.EQ, 2, 2, 1),
])
def test_alu_streams(op, a, b, expected):
    prog = Program(n_args=2, layers=[Layer(Source.imm(0), Source.imm(1))],
                   streams=[Stream(0, StreamKind.ALU, Source.arg(0), Source.arg(1), op=op)],
                   actions=[Action(0, Event.ITER, ActionKind.OPERAND, source=Source.stream(0))])
    r = run_golden(prog, bytes(8), [a, b])
    assert r.data_tokens == [expected & (2 ** 64 - 1)]


def test_begin_end_fire_around_an_empty_traversal_and_step():
    prog = Program(n_args=1,
                   layers=[Layer(Source.imm(0), Source.imm(2)), Layer(Source.imm(3), Source.arg(0), Source.imm(2))],
                   actions=[Action(0, Event.BEGIN, ActionKind.CONTROL, callback=7),
                            Action(1, Event.BEGIN, ActionKind.CONTROL, callback=1),
                            Action(1, Event.ITER, ActionKind.OPERAND, source=Source.index(1)),
                            Action(1, Event.END, ActionKind.CONTROL, callback=2)])
    assert run_golden(prog, bytes(8), [8]).data_tokens == [3, 5, 7, 3, 5, 7]
    r = run_golden(prog, bytes(8), [3])                       # empty inner traversal
    assert r.control_tokens == [7, 1, 2, 1, 2, DONE_TOKEN] and r.data_tokens == []


@pytest.mark.parametrize("index", [1 << 59, -(1 << 59), (1 << 61) + 5, 1 << 58, (1 << 63) - 1,
                                   -(1 << 63)])
def test_index_whose_address_wraps_faults_addr_overflow(index):
    """Issue 8 item 2: an index whose byte offset (index * dim * 4) leaves the signed 64-bit
    range used to wrap and read row 0, 0, 5 of an 8-wide f32 table; it now faults
    ADDR_OVERFLOW at the table's stream (6) before the region check, keeping earlier tokens."""
    table = np.arange(48, dtype=np.float32).reshape(6, 8)
    memory, args = embedding_bag_memory(table, np.array([1, index], dtype=np.int64),
                                        np.array([0, 2], dtype=np.int64))
    r = run_golden(embedding_bag_program(4), memory, args)
    assert (r.fault_code, r.fault_addr, r.fault_stream) == (Fault.ADDR_OVERFLOW, 6, 6)
    assert len(r.data_tokens) == 1 + 8 and r.control_tokens == [BAG_BEGIN, ROW]
    with pytest.raises(AccessFault, match=r"stream 6: its address computation overflows 64 bits"):
        run_golden(embedding_bag_program(4), memory, args, raise_on_fault=True)


def test_index_whose_address_fits_still_faults_addr_range():
    table = np.ones((6, 8), dtype=np.float32)
    memory, args = embedding_bag_memory(table, np.array([1 << 57], dtype=np.int64),
                                        np.array([0, 1], dtype=np.int64))
    r = run_golden(embedding_bag_program(4), memory, args)
    assert (r.fault_code, r.fault_addr) == (Fault.ADDR_RANGE, args[2] + (1 << 62))


def _address_program(op, then=AluOp.SUB, k=None):
    """s0 = op(a0, a1); s1 = then(s0, s0) (SUB: 0) or then(s0, #k); s2 loads byte s1;
    pushes s0 and s2."""
    S, R, imm = Source.stream, Source.arg, Source.imm
    return Program(n_args=2, layers=[Layer(imm(0), imm(1))],
                   regions=[Region(imm(0), imm(64))],
                   streams=[Stream(0, StreamKind.ALU, R(0), R(1), op=op),
                            Stream(0, StreamKind.ALU, S(0), S(0) if k is None else imm(k),
                                   op=then),
                            Stream(0, StreamKind.MEM, imm(0), S(1), size=1, stride=1)],
                   actions=[Action(0, Event.ITER, ActionKind.OPERAND, source=S(0)),
                            Action(0, Event.ITER, ActionKind.OPERAND, source=S(2))])


@pytest.mark.parametrize("op, a, b, wraps", [
    (AluOp.ADD, 2**63 - 1, 1, True), (AluOp.ADD, 2**63 - 2, 1, False),
    (AluOp.ADD, -2**63, -1, True), (AluOp.SUB, -2**63, 1, True), (AluOp.SUB, -2**63 + 1, 1, False),
    (AluOp.SUB, 0, -2**63, True), (AluOp.MUL, 2**62, 2, True), (AluOp.MUL, -2**62, 2, False),
    (AluOp.MUL, -2**63, -1, True), (AluOp.MUL, 2**32, 2**31, True), (AluOp.MUL, 2**32, 2**30, False),
    (AluOp.SHL, 1, 62, False), (AluOp.SHL, 1, 63, True), (AluOp.SHL, -1, 63, False),
    (AluOp.SHL, 3, 62, True), (AluOp.SHL, 5, 64 + 1, False),
    (AluOp.SHR, -1, 0, False), (AluOp.XOR, -1, 2**63 - 1, False), (AluOp.MAX, -2**63, 2**63 - 1, False),
])
def test_alu_results_that_wrap_fault_when_they_reach_an_address(op, a, b, wraps):
    """An ALU ADD/SUB/MUL/SHL result outside the signed 64-bit range marks the value wrapped;
    the mark survives a SUB that brings it back into range (x - x), and a load whose address
    reads it faults ADDR_OVERFLOW (address: the load's stream id). Without a load it is only
    pushed; after a SHR or AND (a hash: MUL then SHR) the value is fresh."""
    r = run_golden(_address_program(op), bytes(64), [a, b])
    assert (r.fault_code, r.fault_addr) == ((Fault.ADDR_OVERFLOW, 2) if wraps else (0, 0))
    for then, k in ((AluOp.SHR, 60), (AluOp.AND, 0xF), (AluOp.EQ, 0), (AluOp.LT, 0)):
        assert not run_golden(_address_program(op, then, k), bytes(64), [a, b]).faulted
    pushed = Program(n_args=2, layers=[Layer(Source.imm(0), Source.imm(1))],
                     streams=[Stream(0, StreamKind.ALU, Source.arg(0), Source.arg(1), op=op)],
                     actions=[Action(0, Event.ITER, ActionKind.OPERAND, source=Source.stream(0))])
    assert not run_golden(pushed, bytes(8), [a, b]).faulted


def test_address_past_the_signed_range_faults_before_the_region_check():
    """a + i * stride with a = -2**63 + 2**31 - 8, stride -2**31: iteration 0 reads a (below the
    region: ADDR_RANGE at a); iteration 1 would read -2**63 - 8 (ADDR_OVERFLOW at stream 0)."""
    I, R, imm = Source.index, Source.arg, Source.imm
    a = -(1 << 63) + (1 << 31) - 8
    for lb, fault in ((0, (Fault.ADDR_RANGE, a & (2**64 - 1))), (1, (Fault.ADDR_OVERFLOW, 0))):
        prog = Program(n_args=1, layers=[Layer(imm(lb), imm(3))], regions=[Region(imm(0), imm(64))],
                       streams=[Stream(0, StreamKind.MEM, R(0), I(0), size=8, stride=-(1 << 31))],
                       actions=[Action(0, Event.ITER, ActionKind.OPERAND, source=Source.stream(0))])
        r = run_golden(prog, bytes(64), [a])
        assert (r.fault_code, r.fault_addr) == fault and r.data_tokens == []


def _counting_loop(ub):
    """Two layers: layer 0 over [0, 2), layer 1 over [0, ub) pushing its index."""
    imm = Source.imm
    return Program(n_args=0, layers=[Layer(imm(0), imm(2)), Layer(imm(0), imm(ub))],
                   actions=[Action(1, Event.ITER, ActionKind.OPERAND, source=Source.index(1)),
                            Action(0, Event.END, ActionKind.CONTROL, callback=1)])


def test_max_iterations_stops_a_long_run_with_the_watchdog_fault():
    """Issue 8 item 8: a wrong loop bound (here 2**27 - 1 iterations) stops after
    ``max_iterations`` loop iterations of all layers with WATCHDOG, the RTL watchdog's fault;
    the tokens of the iterations that ran are kept, no DONE."""
    r = run_golden(_counting_loop((1 << 27) - 1), bytes(8), [], max_iterations=1000)
    assert (r.fault_code, r.fault_addr) == (Fault.WATCHDOG, 0)
    assert sum(r.iterations) == 1000 and r.iterations == [1, 999]
    assert r.data_tokens == list(range(999)) and r.control_tokens == []
    with pytest.raises(AccessFault, match=r"exceeds max_iterations=1000 loop iterations \(in layer 1\)"):
        run_golden(_counting_loop(1 << 20), bytes(8), [], max_iterations=1000, raise_on_fault=True)


def test_max_iterations_is_exact_and_has_a_default():
    import inspect
    from sw.runtime.golden import MAX_ITERATIONS
    prog = _counting_loop(5)                                 # 2 + 2 * 5 = 12 iterations
    assert not run_golden(prog, bytes(8), [], max_iterations=12).faulted
    assert run_golden(prog, bytes(8), [], max_iterations=11).fault_code == Fault.WATCHDOG
    assert MAX_ITERATIONS == 1 << 24
    assert inspect.signature(run_golden).parameters["max_iterations"].default == MAX_ITERATIONS
    for bad in (-1, 1.5, True, None):
        with pytest.raises(ValueError, match=rf"^max_iterations must be an int >= 0, not {bad!r}$"):
            run_golden(prog, bytes(8), [], max_iterations=bad)
