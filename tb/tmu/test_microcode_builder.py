"""The microcode builder (``hw/tmu/microcode_builder.py``), fed by the configuration writer as in
the decoder, in the Amaranth simulator with random stalls on its handshakes (``check`` offered
after random delays, ``result.ready`` random). Checked against ``docs/rtl.md`` §2.1-§2.2:

* a faulty check goes through unchanged (code, PC) and writes no microcode;
* the run-ahead engines go to the blocking affine streams, deepest layer first, then by stream
  id, then the spare ones to lazy affine loads an OPERAND action reads whose base is an IMM or
  ARG (not BLOCK, not in a LOCKSTEP layer), with their offsets, evaluated in Python from the
  definitions on the decoded program (``tb/tmu/test_config_writer.py``);
* the microcode is written from address 0 without holes and ends with ``DONE``; every action
  fires from exactly one place (an ``ACT`` uop, ``fuse_act`` or ``fuse_act2``), every stream is
  evaluated by exactly one ``STREAM`` uop or popped from its engine (``pop``), except the
  skipped ones (``docs/rtl.md`` §9.5 C, ``tb/tmu/test_fused_skip.expected_skipped``), every
  layer has one ``ENTER`` and one ``NEXT`` uop (``fuse_next`` carries the one that follows),
  every engine one ``PREFETCH``;
  ``body_pc``/``exit_pc`` point into it.
"""

import random

import pytest

from hw.tmu.isa import FaultCode
from hw.tmu.layouts import UopKind
from sw.runtime.isa import ActionKind, Limits, Program, SrcKind, StreamKind
from tb.programs import block_cases, embedding_bag_case, lockstep_cases, random_case, random_v1_case
from tb.seeds import fresh_seed
from tb.tmu.builder_bench import run_builder as _run
from tb.tmu.test_config_writer import reference
from tb.tmu.test_fused_skip import expected_skipped
from tb.tmu.test_spmm_rate import CONFIG, _spmm_case


# The small build with 4 run-ahead engines (SpMM's rowptr[i], rowptr[i + 1], col[j], val[j]).
SMALL = CONFIG


def _reference_engines(prog, ref, engines):
    """``[(stream, layer, offset), ...]`` in engine order (``docs/rtl.md`` §2.1 step 4, §2.3)."""
    S = prog.streams
    blocking = {i for i in range(len(S)) if ref["blocking"] >> i & 1}
    lockstep = ref["lockstep"][1]
    out = []
    for spare in (False, True):
        for k in reversed(range(len(prog.layers))):
            for j, st in enumerate(S):
                if len(out) == engines or st.layer != k or j not in ref["affine_offset"]:
                    continue
                if not spare and j in blocking:
                    out.append((j, k, ref["affine_offset"][j]))
                elif (spare and j not in blocking and not st.block and st.layer != lockstep
                      and ref["operand_read"] >> j & 1 and ref["global_base"] >> j & 1):
                    out.append((j, k, ref["affine_offset"][j]))
                    blocking.add(j)
    return out


def _check_microcode(prog, writes, engines, pcs, skipped=frozenset()):
    uops = [u for _, u in writes]
    assert [a for a, _ in writes] == list(range(len(writes)))
    assert uops[-1].kind == UopKind.DONE
    acts, streams, enters, nexts, prefetches = [], [], [], [], []
    for i, u in enumerate(uops):
        if u.kind == UopKind.ACT:
            acts.append(u.id)
        elif u.kind == UopKind.STREAM:
            streams.append(u.id)
            streams += [engines[e][0] for e in range(len(engines)) if u.pop >> e & 1]
            if u.chain:             # the ALU stream before it (hw/tmu/chain.py)
                streams.append(u.id - 1)
        elif u.kind == UopKind.ENTER:
            enters.append(u.id)
        elif u.kind == UopKind.NEXT:
            nexts.append(u.id)
        elif u.kind == UopKind.PREFETCH:
            prefetches.append(u.id)
        if u.kind in (UopKind.STREAM, UopKind.ACT):
            if u.fuse_act:
                acts.append(u.act_id)
            if u.fuse_act2:
                acts.append(u.act2_id)
            if u.fuse_act2 and u.act2_load:     # docs/rtl.md §9.5 A: an operand load after an
                first = prog.actions[u.act_id if u.kind == UopKind.STREAM else u.id]
                second = prog.actions[u.act2_id]
                assert first.kind == ActionKind.OPERAND          # immediate first operand
                assert (second.kind, second.source.kind) == (ActionKind.OPERAND,
                                                             SrcKind.STREAM)
                assert prog.streams[second.source.value].kind == StreamKind.MEM
                assert second.source.value not in [e[0] for e in engines]
            if u.fuse_next:         # a copy of the following NEXT uop (which stays, for jumps)
                assert (uops[i + 1].kind, uops[i + 1].id) == (UopKind.NEXT, u.next_layer)
        if u.kind == UopKind.STREAM and u.fuse_enter:
            # docs/rtl.md §9.5 E: the next layer's ENTER, its bounds the stream's own sources
            k, st = u.next_layer, prog.streams[u.id]
            enters.append(k)
            assert st.kind != StreamKind.MEM and k == st.layer + 1, i
            assert not (u.chain or u.fuse_next or u.fuse_lane), i
            bounds = (prog.layers[k].lb, prog.layers[k].ub)
            assert (st.b, st.a) == bounds if u.enter_swap else (st.a, st.b) == bounds, i
            assert u.id not in [src.value for src in (st.a, st.b)
                                if src.kind == SrcKind.STREAM], i
            assert pcs[0][k] > i, i                 # the layer's body follows the uop
    layers = list(range(len(prog.layers)))
    assert sorted(acts) == list(range(len(prog.actions)))
    assert sorted(streams + list(skipped)) == list(range(len(prog.streams)))
    assert sorted(enters) == layers and sorted(nexts) == layers
    assert sorted(prefetches) == list(range(len(engines)))
    for pc in pcs[0] + pcs[1]:
        assert 0 < pc < len(uops)


@pytest.mark.parametrize("ready_probability", [1.0, 0.4], ids=["no_stalls", "stalls"])
def test_engines_and_microcode(ready_probability):
    seed = fresh_seed("microcode builder")
    rng = random.Random(seed)
    limits = Limits.from_tmu_config(SMALL)
    cases = [embedding_bag_case("eb", rows=4, dim=3, lengths=[2, 0, 1], indices=[1, 3, 0])]
    cases += [random_case(seed + i, layers=SMALL.layers, streams=SMALL.streams,
                          actions=SMALL.actions, regions=2, args=SMALL.args) for i in range(4)]
    cases += [random_v1_case(seed + i, SMALL, block_prob=0.5, lockstep_prob=0.3)
              for i in range(6)]
    cases += lockstep_cases(SMALL.lanes)[:3] + block_cases()[:3]
    cases += [_spmm_case(seed, rows=4)[0]]          # val[j]: a spare engine
    items = []
    for case in cases:
        prog = Program.decode(case.program, limits)
        items.append((case, prog, None))
        if rng.random() < 0.3:      # the same tables, but the checker found a fault
            items.append((case, prog, (rng.choice(list(FaultCode)).value, rng.randrange(1 << 16))))
    results = _run(SMALL, items, ready_probability=ready_probability, seed=seed)
    for (case, prog, fault), (got_fault, code, pc, writes, engines, pcs) in zip(items, results):
        if fault is not None:
            assert (got_fault, code, pc, writes) == (1, fault[0], fault[1], []), case.name
            continue
        assert got_fault == 0, case.name
        ref = reference(prog, case.args)
        assert engines == _reference_engines(prog, ref, SMALL.prefetchers), case.name
        _check_microcode(prog, writes, engines, pcs, expected_skipped(prog, case.args, engines))
