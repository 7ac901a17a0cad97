"""Golden-file tests of each pass: input IR -> expected IR, compared in full.

``tests/compiler/golden/passes/<pass>/<example>.input.mlir`` is the IR the pipeline hands the pass
for ``examples/<example>.mlir`` and ``<example>.output.mlir`` what the pass must produce; both
were reviewed against the pass's rules (docs/compiler.md, "Passes"). The test parses the input,
runs the pass as an xDSL ``ModulePass``, and compares the printed result; every file also
round-trips (print, parse, print: identical).

Full-text comparison (stricter than FileCheck patterns, and no lit/FileCheck dependency). After an intended change, regenerate and review the diff with::

    EMBER_UPDATE_GOLDEN=1 python -m pytest tests/compiler/test_pass_golden.py
    git diff tests/compiler/golden/passes
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from xdsl.dialects.builtin import ModuleOp
from xdsl.parser import Parser

from sw.compiler import pipelines as P
from sw.compiler.context import make_context
from sw.compiler.conversion.scf_to_slc import ConvertScfToSlc
from sw.compiler.conversion.slc_to_dlc import ConvertSlcToDlc
from sw.compiler.transforms.affine_streams import AffineStreams, affine_streams
from sw.compiler.transforms.coalesce_rows import CoalesceRows
from sw.compiler.transforms.count_segment_index import CountSegmentIndex
from sw.compiler.transforms.segment_callbacks import SegmentCallbacks, segment_callbacks
from sw.compiler.frontends.mlir import check_supported, parse_mlir
from sw.compiler.transforms.align_queues import AlignQueues
from sw.compiler.transforms.bufferize import bufferize
from sw.compiler.transforms.hoist_streams import hoist_streams
from sw.compiler.transforms.move_to_callback import move_to_callback
from sw.compiler.transforms.simplify_streams import simplify_streams
from sw.compiler.transforms.vectorize_access import vectorize_access
from sw.compiler.transforms.vectorize_callbacks import vectorize_callbacks
from sw.compiler.transforms.bufferize import Bufferize
from sw.compiler.transforms.choose_decoupling import ChooseDecoupling
from sw.compiler.transforms.hoist_streams import HoistStreams
from sw.compiler.transforms.move_to_callback import MoveToCallback
from sw.compiler.transforms.replace_to_val_ops import ReplaceToValOps
from sw.compiler.transforms.simplify_streams import SimplifyStreams
from sw.compiler.transforms.vectorize_access import VectorizeAccess
from sw.compiler.transforms.vectorize_callbacks import VectorizeCallbacks

REPO = Path(__file__).resolve().parents[2]
GOLDEN = Path(__file__).resolve().parent / "golden" / "passes"
UPDATE = os.environ.get("EMBER_UPDATE_GOLDEN") == "1"


def _fn(m: ModuleOp):
    return P._kernel_fn(m)


def _scf(text):
    return parse_mlir(text)


def _slc(text):
    m = parse_mlir(text)
    return P._slc(check_supported(m))


def _slcv_before(text, passes):
    """SLC after the -O pipeline steps in ``passes`` (names), in pipeline order."""
    m = _slc(text).clone()
    fn = _fn(m)
    for name in passes:
        {"move": move_to_callback, "buf": bufferize, "simp": simplify_streams,
         "va": lambda f: vectorize_access(f, 8), "vc": vectorize_callbacks}[name](fn)
    return m


def _dlc(text, level, hoisted=False, affine=False):
    m = P._dlc(P._slcv(_slc(text), level, 8), 0)
    if affine:
        affine_streams(_fn(m))
    if hoisted:
        hoist_streams(_fn(m))
    return m


def _segmented(text):
    """The DLC the -O3 pipeline hands count-segment-index (after segment-callbacks)."""
    m = _dlc(text, 3, hoisted=True, affine=True)
    segment_callbacks(_fn(m))
    return m


# pass -> (ModulePass, examples, function building the input from example text)
CASES = {
    "choose-decoupling": (ChooseDecoupling(), ["embedding_bag_mean"], _scf),
    "convert-scf-to-slc": (ConvertScfToSlc(), ["embedding_bag_mean"], lambda t: _scf(t)),
    "move-to-callback": (MoveToCallback(), ["embedding_bag_mean", "spmm_csr"], _slc),
    # one value per loop -> a collected buffer (a row; a row + a stream of an outer layer; a
    # value that is not a row, hashed_gather: table[(row << logd) + d]); several values
    # (TransE's h/r/t rows) -> left alone
    "bufferize": (Bufferize(), ["embedding_bag_sum", "spmm_csr", "transe_score", "hashed_gather"],
                  lambda t: _slcv_before(t, ["move"])),
    # rows -> block streams: a collected row (embedding_bag_sum; with an end callback beside
    # the loop, embedding_bag_mean), three rows read by a callback (transe_score), two rows
    # and an outer stream in the third of four layers (block_sparse_gather); a collected row of a
    # flattened table, table[(row << logd) + d] (hashed_gather)
    "simplify-streams": (SimplifyStreams(), ["embedding_bag_sum", "embedding_bag_mean",
                                             "transe_score", "block_sparse_gather", "hashed_gather"],
                         lambda t: _slcv_before(t, ["move", "buf"])),
    # the bs consecutive key/value rows of a block -> one block each (block_sparse_gather); a
    # loop over a gather's rows (embedding_bag_sum's lookups: rows through an index) is left alone
    "coalesce-rows": (CoalesceRows(), ["block_sparse_gather", "embedding_bag_sum"],
                      lambda t: _slcv_before(t, ["move", "buf", "simp"])),
    "vectorize-access": (VectorizeAccess(8), ["embedding_bag_sum", "spmv_csr"],
                         lambda t: _slcv_before(t, ["move"])),
    "vectorize-callbacks": (VectorizeCallbacks(), ["embedding_bag_sum", "transe_score"],
                            lambda t: _slcv_before(t, ["move", "va"])),
    # the -O3 SLCV: a block stream (embedding_bag_sum); the -O2 SLCV: a buffer collected over a
    # vector layer (hashed_gather, whose row -O3 loads as a block)
    "convert-slc-to-dlc": (ConvertSlcToDlc(), ["embedding_bag_sum", "hashed_gather"],
                           lambda t: _slcv_before(t, ["move", "buf", "va", "vc"]
                                                  if "@hashed_gather" in t
                                                  else ["move", "buf", "simp", "va", "vc"])),
    # triples[3t + k] -> affine streams of t (transe_score); offsets[b + 1] is left alone
    # (embedding_bag_sum: the unit serves INDEX + c ahead already)
    "affine-streams": (AffineStreams(), ["transe_score", "embedding_bag_sum"], lambda t: _dlc(t, 3)),
    "hoist-streams": (HoistStreams(), ["embedding_bag_sum"], lambda t: _dlc(t, 1)),
    # one callback per bag / row, the index hoisted (embedding_bag_sum, spmv_csr); the end
    # callback merged (embedding_bag_mean), the begin and end ones (embedding_bag_max); one layer
    # (transe_score) left alone
    "segment-callbacks": (SegmentCallbacks(), ["embedding_bag_sum", "spmv_csr", "embedding_bag_mean",
                                               "embedding_bag_max", "transe_score"],
                          lambda t: _dlc(t, 3, hoisted=True, affine=True)),
    # the key-block position j of the block-sparse gather counted on the core, its output block
    # j*bs no longer pushed (block_sparse_gather); a CSR layer whose operands are loaded values
    # (spmm_csr: col[j], val[j]) left alone
    "count-segment-index": (CountSegmentIndex(), ["block_sparse_gather", "spmm_csr"], _segmented),
    # layer 0's index kept on the core: a new callback on layer 1's end (embedding_bag_sum),
    # the existing end callback increments last (embedding_bag_mean), the begin callback first
    # (embedding_bag_sum_bf16), layer 0's own iter callback first, one layer (transe_score), and
    # the CSR row beside a weight (spmm_csr)
    "replace-to-val-ops": (ReplaceToValOps(), ["embedding_bag_sum", "embedding_bag_mean",
                                               "embedding_bag_sum_bf16", "transe_score", "spmm_csr"],
                           lambda t: _dlc(t, 3, hoisted=True)),
    "align-queues": (AlignQueues(), ["embedding_bag_sum", "embedding_bag_mean"],
                     lambda t: _dlc(t, 3, hoisted=True)),
}

PARAMS = [(p, e) for p, (_, examples, _) in CASES.items() for e in examples]


def _parse(text: str) -> ModuleOp:
    return Parser(make_context(), text).parse_module()


@pytest.mark.parametrize("pass_name, example", PARAMS)
def test_pass_matches_golden(pass_name, example):
    module_pass, _, make_input = CASES[pass_name]
    inp = GOLDEN / pass_name / f"{example}.input.mlir"
    out = GOLDEN / pass_name / f"{example}.output.mlir"
    if UPDATE:
        inp.parent.mkdir(parents=True, exist_ok=True)
        inp.write_text(str(make_input((REPO / "examples" / f"{example}.mlir").read_text())) + "\n")
    module = _parse(inp.read_text())
    module.verify()
    assert str(module) + "\n" == inp.read_text()          # round trip of the input
    module_pass.apply(make_context(), module)
    module.verify()
    got = str(module) + "\n"
    if UPDATE:
        out.write_text(got)
    assert got == out.read_text()
    again = _parse(got)                                    # round trip of the output
    again.verify()
    assert str(again) + "\n" == got


@pytest.mark.parametrize("pass_name", sorted(CASES))
def test_pass_has_a_kebab_case_name(pass_name):
    assert CASES[pass_name][0].name == pass_name
