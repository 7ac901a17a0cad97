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
    assert (r.fault_code, r.fault_addr) == (Fault.RANGE_ORDER, 1)


def test_misaligned_load_faults():
    prog = Program(n_args=0, layers=[Layer(Source.imm(0), Source.imm(2))],
                   regions=[Region(Source.imm(0), Source.imm(64))],
                   streams=[Stream(0, StreamKind.MEM, Source.imm(4), Source.index(0), size=8, stride=8)])
    r = run_golden(prog, bytes(64), [])
    assert (r.fault_code, r.fault_addr) == (Fault.MISALIGNED, 4)


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
