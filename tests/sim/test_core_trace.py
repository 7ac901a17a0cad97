"""The sequential form's instruction stream (sim/core_trace.py): results, addresses, dependences.

Independent references: the workloads' PyTorch/NumPy references for the results, and addresses
recomputed with NumPy from the inputs (table row = index x row bytes) for the load stream.
"""

from __future__ import annotations

import warnings

import pytest

from sim.core_trace import ALU, LINE_BYTES, LOAD, STORE, trace_kernel
from sw.compiler.frontends.mlir import parse_mlir
from sw.workloads import WORKLOADS, widen

warnings.simplefilter("ignore", UserWarning)



@pytest.mark.parametrize("vector_bytes", [0, 64])
@pytest.mark.parametrize("name", list(WORKLOADS))
def test_the_sequential_form_computes_the_workload(name, vector_bytes, seed):
    w = WORKLOADS[name]
    args = w.make("small", seed)
    tr = trace_kernel(parse_mlir(w.path.read_text()), args, vector_bytes=vector_bytes)
    w.check(args, list(tr.results))        # PyTorch (bit-exact where the workload says so)


def _closure(tr, i):
    seen, todo = set(), [i]
    while todo:
        for d in tr.deps[todo.pop()]:
            if d not in seen:
                seen.add(d)
                todo.append(d)
    return seen


def test_embedding_bag_loads_follow_offsets_indices_rows(seed):
    w = WORKLOADS["eb_sum"]
    table, indices, offsets, out = w.make("small", seed)
    dim, esize = table.shape[1], table.itemsize
    tr = trace_kernel(parse_mlir(w.path.read_text()), [table, indices, offsets, out], vector_bytes=0)
    tb, ib, ob = tr.bases["table"], tr.bases["indices"], tr.bases["offsets"]
    loads = [i for i, k in enumerate(tr.kind) if k == LOAD]
    table_loads = [i for i in loads if tr.array[i] == "table"]
    # program order: bag by bag, lookup by lookup, column by column
    want = [tb + (int(indices[j]) * dim + d) * esize
            for b in range(len(offsets) - 1) for j in range(offsets[b], offsets[b + 1])
            for d in range(dim)]
    assert [tr.addrs[i][0] for i in table_loads] == want
    assert all(tr.lines[i] == ((a // LINE_BYTES) * LINE_BYTES,) for i, a in zip(table_loads, want))
    # each row address depends on the load of its index, which depends on the bag's offset load
    index_load = {tr.addrs[i][0]: i for i in loads if tr.array[i] == "indices"}
    offset_load = {tr.addrs[i][0]: i for i in loads if tr.array[i] == "offsets"}
    k = 0
    for b in range(len(offsets) - 1):
        for j in range(offsets[b], offsets[b + 1]):
            il = index_load[ib + 8 * j]
            assert il in tr.deps[table_loads[k]]
            assert offset_load[ob + 8 * b] in _closure(tr, il)
            k += dim
    # the accumulator load of out[b, d] waits for the previous store to it and is forwarded
    # from it; the first load of each out[b, d] is not
    stores = {}
    for i, kd in enumerate(tr.kind):
        if kd == STORE:
            stores[tr.addrs[i][0]] = i
        elif kd == LOAD and tr.array[i] == "out":
            a = tr.addrs[i][0]
            assert tr.forwarded[i] == (a in stores)
            if a in stores:
                assert stores[a] in tr.deps[i]
        elif kd == LOAD:
            assert not tr.forwarded[i]


def test_vector_form_loads_one_row_per_lookup(seed):
    w = WORKLOADS["eb_sum"]
    args = widen(w.make("small", seed), 16, seed)       # 16 f32 = one 64-byte line per row
    table, indices, offsets = args[:3]
    tr = trace_kernel(parse_mlir(w.path.read_text()), args, vector_bytes=64)
    tb = tr.bases["table"]
    rows = [i for i, k in enumerate(tr.kind) if k == LOAD and tr.array[i] == "table"]
    assert [tr.lines[i] for i in rows] == [(tb + int(r) * 64,) for r in indices]
    assert all(tr.nbytes[i] == 64 for i in rows)
    scalar = trace_kernel(parse_mlir(w.path.read_text()), args, vector_bytes=0)
    assert tr.load_bytes == scalar.load_bytes       # the same bytes, in fewer instructions
    assert len(tr) < len(scalar) / 4


def test_gather_touches_the_lines_of_its_lanes(seed):
    w = WORKLOADS["spmv_csr"]
    rowptr, col, val, x, y = w.make("small", seed)
    tr = trace_kernel(parse_mlir(w.path.read_text()), [rowptr, col, val, x, y], vector_bytes=64)
    xb = tr.bases["x"]
    got = sorted(a for i, k in enumerate(tr.kind) if k == LOAD and tr.array[i] == "x"
                 for a in tr.addrs[i])
    assert got == sorted(xb + 4 * int(c) for c in col)
    for i, k in enumerate(tr.kind):
        if k == LOAD and tr.array[i] == "x":
            assert set(tr.lines[i]) == {a // 64 * 64 for a in tr.addrs[i]}


def test_alu_instructions_carry_latencies():
    w = WORKLOADS["kg_transe"]
    tr = trace_kernel(parse_mlir(w.path.read_text()), w.make("small", 0), vector_bytes=0)
    lat = {tr.latency[i] for i, k in enumerate(tr.kind) if k == ALU}
    assert lat == {1, 4, 12}       # index arithmetic, FP add/mul, sqrt


def test_bad_arguments():
    w = WORKLOADS["eb_sum"]
    args = w.make("small", 0)
    with pytest.raises(ValueError, match="vector_bytes"):
        trace_kernel(parse_mlir(w.path.read_text()), args, vector_bytes=-64)
    with pytest.raises(ValueError, match="args"):
        trace_kernel(parse_mlir(w.path.read_text()), args[:2])
    with pytest.raises(ValueError, match="module"):
        trace_kernel(w.path.read_text(), args)


def test_a_dealloc_is_free():
    """``memref.dealloc`` (in the frontend's subset) costs no instruction: a copy through a
    scratch buffer is its loop's increments, loads and stores only."""
    import numpy as np
    text = """func.func @k(%x: memref<4xf32>) {
  %c0 = arith.constant 0 : index
  %c4 = arith.constant 4 : index
  %c1 = arith.constant 1 : index
  %t = memref.alloc() : memref<4xf32>
  scf.for %i = %c0 to %c4 step %c1 {
    %v = memref.load %x[%i] : memref<4xf32>
    memref.store %v, %t[%i] : memref<4xf32>
  }
  memref.dealloc %t : memref<4xf32>
  return
}"""
    tr = trace_kernel(parse_mlir(text), [np.arange(4, dtype=np.float32)], vector_bytes=0)
    assert (tr.kind.count(ALU), tr.kind.count(LOAD), tr.kind.count(STORE)) == (4, 4, 4)
