"""affine-streams (-O3): a memory stream indexed by ``a·i + c`` reads ``%memref[i]`` with stride
``a·elem`` and byte offset ``c·elem`` (docs/compiler.md, "affine-streams"; the IR-level rule and the
cases it must not fire on are in ``filecheck/affine-streams.mlir`` and
``golden/passes/affine-streams/``).

Checked here: TransE's -O3 access program reads the triples as the hand-written program does
(three MEM streams of stride 24 at base, base + 8, base + 16; no ALU streams ``t·3``, ``+1``);
the pass changes addresses only, so the golden model's tokens equal those of the -O3 pipeline
without it (the DLC reference interpreter), and the results equal PyTorch's (TransE within a
float32 bound: ``torch.linalg.vector_norm`` sums in its own order; the strided gathers bit for
bit). Random data draws a fresh seed each run and prints it (``EMBER_SEED`` replays it).
"""

from __future__ import annotations

import os

import numpy as np
import pytest
import torch

from sw.compiler import compile_mlir
from sw.compiler.backend.python import run_access
from sw.compiler.conversion.slc_to_dlc import ConvertSlcToDlc
from sw.compiler.pipelines import _apply, _kernel_fn, run_pipeline
from sw.compiler.transforms.align_queues import AlignQueues
from sw.compiler.transforms.hoist_streams import HoistStreams
from sw.compiler.transforms.replace_to_val_ops import ReplaceToValOps
from sw.runtime.drivers import run_kernel
from sw.runtime.handwritten.suite import handwritten_kernel
from sw.workloads import WORKLOADS


@pytest.fixture
def rng():
    seed = int(os.environ.get("EMBER_SEED", np.random.SeedSequence().entropy % 2**32))
    print(f"seed {seed}")
    return np.random.default_rng(seed)


def _tokens_without_the_pass(text, args):
    """(data, control) tokens of the -O3 pipeline with affine-streams left out."""
    slcv = run_pipeline(text, until="slcv", opt_level=3)
    dlc = _apply((ConvertSlcToDlc(), HoistStreams(), ReplaceToValOps(), AlignQueues()), slcv.clone())
    return run_access(_kernel_fn(dlc), [a.copy() if isinstance(a, np.ndarray) else a for a in args])


def _mem_streams(program):
    return [s for s in program.streams if s.kind.name == "MEM" and not s.block]


def test_transe_reads_the_triples_as_the_hand_written_program():
    w = WORKLOADS["kg_transe"]
    compiled = compile_mlir(w.path.read_text(), filename=w.example, opt_level=3).program
    hand = handwritten_kernel("kg_transe").program
    got = [(s.stride, s.size, s.b) for s in _mem_streams(compiled)]
    assert got == [(s.stride, s.size, s.b) for s in _mem_streams(hand)]
    assert [s.stride for s in _mem_streams(compiled)] == [24, 24, 24]
    # the bases: the triples' base register, then base + 8 and base + 16 (invariant ALU streams)
    bases = [s.a for s in _mem_streams(compiled)]
    assert bases[0].kind.name == "ARG"
    for base, offset in zip(bases[1:], (8, 16)):
        alu = compiled.streams[base.value]
        assert (alu.op.name, alu.a, alu.b.kind.name, alu.b.value) == ("ADD", bases[0], "IMM", offset)
    # no ALU stream over the triple's index is left (t·3, +1, +1 were its three streams)
    assert not any(s.kind.name == "ALU" and "INDEX" in (s.a.kind.name, s.b.kind.name)
                   for s in compiled.streams)
    assert len(compiled.streams) == len(hand.streams) == 11


def _transe_args(rng, n=23, entities=40, relations=6, dim=13):
    triples = np.stack([rng.integers(0, entities, n), rng.integers(0, relations, n),
                        rng.integers(0, entities, n)], axis=1).astype(np.int64).reshape(-1)
    entity = rng.standard_normal((entities, dim)).astype(np.float32)
    relation = rng.standard_normal((relations, dim)).astype(np.float32)
    return [triples, entity, relation, np.zeros(n, np.float32)]


def test_transe_at_o3_same_tokens_and_matches_pytorch(rng):
    w = WORKLOADS["kg_transe"]
    text = w.path.read_text()
    args = _transe_args(rng)
    assert "stride 24 offset 8" in str(run_pipeline(text, until="dlc", opt_level=3))
    got = run_kernel(compile_mlir(text, filename=w.example, opt_level=3),
                     [a.copy() for a in args], "golden")
    data, control = _tokens_without_the_pass(text, args)
    assert [t & (2**64 - 1) for t in got.access.data_tokens] == data
    assert got.access.control_tokens == control
    t = torch.from_numpy(args[0].reshape(-1, 3))
    ent, rel = torch.from_numpy(args[1]), torch.from_numpy(args[2])
    want = torch.linalg.vector_norm(ent[t[:, 0]] + rel[t[:, 1]] - ent[t[:, 2]], dim=1)
    # float32, 13 squares summed in another order: a few ulps of the norm
    torch.testing.assert_close(torch.from_numpy(got.results[0]), want, rtol=1e-5, atol=1e-6)
    w.check([a.copy() for a in args], got.results)


# Strided gathers of row ids (a scalar layer 0 over i from 1, rows loaded in layer 1):
# out[i] = table[x[3i + 2]] + table[y[(i << 2) + 1]] - table[x[i * k]], k a scalar argument
# (a factor computed at run time, left to the ALU).
STRIDED = """
func.func @strided(%x: memref<?xi64>, %y: memref<?xi32>, %table: memref<?x?xf32>, %k: index,
                   %out: memref<?x?xf32>) -> memref<?x?xf32> {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c2 = arith.constant 2 : index
  %c3 = arith.constant 3 : index
  %n = memref.dim %out, %c0 : memref<?x?xf32>
  %dim = memref.dim %table, %c1 : memref<?x?xf32>
  scf.for %i = %c1 to %n step %c1 {
    %a0 = arith.muli %i, %c3 : index
    %a = arith.addi %a0, %c2 : index
    %b0 = arith.shli %i, %c2 : index
    %b = arith.addi %b0, %c1 : index
    %m = arith.muli %i, %k : index
    %ra64 = memref.load %x[%a] : memref<?xi64>
    %ra = arith.index_cast %ra64 : i64 to index
    %rb32 = memref.load %y[%b] : memref<?xi32>
    %rb = arith.index_cast %rb32 : i32 to index
    %rm64 = memref.load %x[%m] : memref<?xi64>
    %rm = arith.index_cast %rm64 : i64 to index
    scf.for %d = %c0 to %dim step %c1 {
      %va = memref.load %table[%ra, %d] : memref<?x?xf32>
      %vb = memref.load %table[%rb, %d] : memref<?x?xf32>
      %vm = memref.load %table[%rm, %d] : memref<?x?xf32>
      %s = arith.addf %va, %vb : f32
      %r = arith.subf %s, %vm : f32
      memref.store %r, %out[%i, %d] : memref<?x?xf32>
    }
  }
  return %out : memref<?x?xf32>
}
"""


def test_strided_gathers_on_golden(rng):
    n, rows, dim = int(rng.integers(2, 30)), 17, int(rng.integers(1, 12))
    k = int(rng.integers(0, 3))
    x = rng.integers(0, rows, 3 * n + 2).astype(np.int64)
    y = rng.integers(0, rows, 4 * n + 2).astype(np.int32)
    table = rng.standard_normal((rows, dim)).astype(np.float32)
    args = [x, y, table, k, np.zeros((n, dim), np.float32)]
    dlc = str(run_pipeline(STRIDED, until="dlc", opt_level=3))
    assert "%x[%i] stride 24 offset 16" in dlc and "%y[%i] stride 16 offset 4" in dlc
    assert "dlc.alu_stream layer 0 mul %i, %k" in dlc           # not folded: run-time factor
    got = run_kernel(compile_mlir(STRIDED, opt_level=3), [a.copy() if isinstance(a, np.ndarray)
                                                           else a for a in args], "golden")
    data, control = _tokens_without_the_pass(STRIDED, args)
    assert [t & (2**64 - 1) for t in got.access.data_tokens] == data
    assert got.access.control_tokens == control
    i = np.arange(1, n)
    want = np.zeros((n, dim), np.float32)
    want[1:] = (table[x[3 * i + 2]] + table[y[4 * i + 1]]) - table[x[i * k]]
    np.testing.assert_array_equal(got.results[0], want)
