"""``ember opt`` / ``sw.compiler.opt``: the -O pipelines run pass by pass by name give what the
compiler's own pipeline gives (``emit(..., "dlc")``), so the passes ``ember opt`` runs are the
compiler's, not copies."""

from __future__ import annotations

from pathlib import Path

import pytest

from sw.compiler import emit
from sw.compiler.opt import run_passes
from sw.compiler.pipelines import OPT_LEVELS, PASSES, pipeline, pipeline_spec

REPO = Path(__file__).resolve().parents[2]


@pytest.mark.parametrize("level", OPT_LEVELS)
@pytest.mark.parametrize("example", ["embedding_bag_sum", "spmm_csr"])
def test_level_pipeline_by_name_equals_compile(example, level):
    text = (REPO / "examples" / f"{example}.mlir").read_text()
    by_name = run_passes(text, pipeline_spec(level))
    assert by_name == emit(text, "dlc", opt_level=level)


def test_pipelines_are_made_of_the_named_passes():
    for level in OPT_LEVELS:
        for p in pipeline(level).passes:
            assert PASSES[p.name] is type(p)


def test_pipeline_spec_of_o3():
    assert pipeline_spec(3) == ("choose-decoupling,convert-scf-to-slc,move-to-callback,bufferize,"
                                "simplify-streams,coalesce-rows,vectorize-access,vectorize-callbacks,"
                                "convert-slc-to-dlc,affine-streams,hoist-streams,segment-callbacks,count-segment-index,"
                                "replace-to-val-ops,align-queues")
    assert pipeline_spec(1, vlen=4).split(",")[3] == "vectorize-access{vlen=4}"
