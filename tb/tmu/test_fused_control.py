"""A control token as the second action of a row (``docs/rtl.md`` §9.5 F): the microcode builder
puts a firing's BLOCK row in the uop's first action slot and the control token before it in the
second, so that the pair takes one uop (a row is never a second action).

* Structure: the compiled ``-O3`` TransE (control token first, then three rows) has its last
  row stream's ``STREAM`` uop carry the first row (``fuse_act``) and the control token
  (``fuse_act2``), and the triple takes one uop less than the builder gave before: 5.
* Tokens and faults, token for token against the golden model (``sw/runtime/golden.py``), on
  random triples with rows of one or several chunks, under random back-pressure on the output
  queues: no fault, and an entity index past the table (its row's address faults at its
  ``STREAM`` uop, before the control token of its triple).
"""

import dataclasses

import numpy as np
import pytest

from hw.tmu.config import TmuConfig
from hw.tmu.isa import FaultCode
from hw.tmu.layouts import UopKind
from sw.runtime.golden import run_golden
from sw.runtime.isa import ActionKind, Limits, Program
from tb.golden_compare import assert_matches
from tb.programs import Case
from tb.seeds import fresh_seed
from tb.tmu.amaranth_bench import run_on_amaranth
from tb.tmu.builder_bench import layer_body_uops
from tb.tmu.transe_programs import transe_o3

# The small build with room for TransE's 11 streams and 3 run-ahead engines.
CONFIG = dataclasses.replace(TmuConfig.small(), streams=12, regions=4, args=10, prefetchers=4)
LIMITS = Limits.from_tmu_config(CONFIG)


def _transe_case(seed, dim, bad_entity=False, triples=None):
    """The compiled ``-O3`` TransE on the ``small`` triples (or the first ``triples``) at
    embedding width ``dim``. With ``bad_entity`` one head or tail index is past the entity
    table."""
    kernel, _, image, regs = transe_o3(seed, dim, LIMITS, bad_entity=bad_entity, triples=triples)
    return Case(f"transe_O3_d{dim}", kernel.program.encode(), image.data, regs)


def test_row_carries_the_control_token():
    """TransE's triple: ``STREAM`` (last row stream) ``+act row +act2 control``, two row
    ``ACT``s, 5 uops in all; no action is fired twice or lost."""
    seed = fresh_seed("fused control structure")
    case = _transe_case(seed, 8)
    prog = Program.decode(case.program, LIMITS)
    body = layer_body_uops(CONFIG, case, LIMITS, layer=0)
    carriers = [u for u in body if u.fuse_act2
                and prog.actions[u.act2_id].kind == ActionKind.CONTROL]
    assert len(carriers) == 1, (seed, body)
    [u] = carriers
    first = prog.actions[u.act_id if u.kind == UopKind.STREAM else u.id]
    assert first.kind == ActionKind.OPERAND and prog.streams[first.source.value].block, seed
    assert (u.kind, u.fuse_act, u.act2_load) == (UopKind.STREAM, 1, 0), seed
    # + the NEXT uop the last one carries; the builder's own tests check that every action
    # fires exactly once (tb/tmu/test_microcode_builder.py).
    assert len(body) == 5, (seed, body)


@pytest.mark.parametrize("dim", [8, 40])
def test_fused_control_matches_golden(dim):
    """Compiled -O3 TransE, token for token and the fault against the golden model, rows of
    one chunk (``dim`` 8: 32 bytes) or several (40: 160 bytes, in chunks of up to 64 bytes on
    the small build's 16-byte lines; the first 10 of the 24 triples), random back-pressure on
    the output queues."""
    seed = fresh_seed(f"fused control golden {dim}")
    rng = np.random.default_rng(seed)
    for variant in ("plain", "bad_entity"):
        case = _transe_case(seed, dim, bad_entity=variant == "bad_entity",
                            triples=10 if dim == 40 else None)
        gold = run_golden(case.program, case.memory, case.args, limits=LIMITS)
        assert (gold.fault_code == FaultCode.ADDR_RANGE.value) == (variant == "bad_entity"), \
            (seed, variant, gold.fault_code)
        r = run_on_amaranth(case.program, case.memory, case.args, config=CONFIG,
                            backpressure=float(rng.choice([0.0, 0.4, 0.8])), seed=seed)
        assert_matches(dataclasses.replace(case, name=f"{case.name}_{variant}_{seed}"), r, CONFIG)
