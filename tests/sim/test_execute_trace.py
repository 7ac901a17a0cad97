"""The execute side's instruction stream (sim/execute_trace.py) and scalar replacement in the core
traces (sim/core_trace.py ``promote``).

Independent references: the workloads' PyTorch/NumPy references for the results (the execute side
interprets the compiler's DLC compute loop over the golden model's tokens, so its results are
the kernel's), and counts of bags and lookups read from the inputs for the queue pops.
"""

from __future__ import annotations

import warnings

import pytest

from hw.hbm_model.presets import get_preset
from sim.core_only import CoreConfig, run_core
from sim.core_trace import ALU, LOAD, STORE, trace_kernel
from sim.execute_trace import run_execute_side, trace_execute
from sw.compiler.frontends.mlir import parse_mlir
from sw.compiler.pipelines import run_pipeline
from sw.runtime.drivers import run_kernel
from sw.runtime.execute import CoreReplay
from sw.workloads import WORKLOADS

warnings.simplefilter("ignore", UserWarning)

SUPPORTED = [(n, lvl) for n in WORKLOADS for lvl in (0, 1, 2, 3)]


def _compiled(name, level, seed):
    w = WORKLOADS[name]
    comp = run_pipeline(w.path.read_text(), opt_level=level)
    args = w.make("small", seed)
    tokens = run_kernel(comp.kernel, w.make("small", seed), "golden").access
    return w, comp, args, tokens


@pytest.mark.parametrize("promote", [False, True])
@pytest.mark.parametrize("name,level", SUPPORTED)
def test_the_execute_side_computes_the_workload(name, level, promote, seed):
    w, comp, args, tokens = _compiled(name, level, seed)
    tr = trace_execute(comp.dlc, args, tokens.data_tokens, tokens.control_tokens, promote=promote)
    w.check(w.make("small", seed), list(tr.results))       # PyTorch
    # one pop per control token, and no instruction waits for one (the dispatch is predicted)
    control_pops = {i for i, a in enumerate(tr.array) if a == "control queue"}
    assert len(control_pops) == len(tokens.control_tokens)
    assert not any(control_pops & set(deps) for deps in tr.deps)
    assert all(tr.kind[i] == LOAD and not tr.lines[i] for i in control_pops)


def test_embedding_bag_pops_one_vector_per_row_and_one_per_token(seed):
    """-O3 EmbeddingBag sum: per bag a control pop and its length's pop, per lookup one pop of
    the packed row (at most 64 bytes: one 512-bit vector of tokens), then the DONE pop."""
    w, comp, args, tokens = _compiled("eb_sum", 3, seed)
    table, indices, offsets, out = args
    assert table.shape[1] * table.itemsize <= 64
    tr = trace_execute(comp.dlc, args, tokens.data_tokens, tokens.control_tokens)
    bags, lookups = len(offsets) - 1, int(offsets[-1])
    assert tr.array.count("control queue") == bags + 1
    assert tr.array.count("data queue") == bags + lookups
    # each row is stored into the scratch buffer once, after its pop
    scratch_stores = [i for i, (k, a) in enumerate(zip(tr.kind, tr.array))
                      if k == STORE and a.startswith("scratch:")]
    assert len(scratch_stores) == lookups
    assert all(len(tr.deps[i]) == 1 and tr.kind[tr.deps[i][0]] == LOAD for i in scratch_stores)


def _scalar_bag_traces(seed):
    """The scalar EmbeddingBag sum's core-only trace without and with ``promote`` (results
    checked against PyTorch), and its bags, lookups, dim and offsets."""
    w = WORKLOADS["eb_sum"]
    table, indices, offsets, out = w.make("small", seed)
    module = parse_mlir(w.path.read_text())
    plain = trace_kernel(module, w.make("small", seed), vector_bytes=0)
    promoted = trace_kernel(module, w.make("small", seed), vector_bytes=0, promote=True)
    w.check(w.make("small", seed), list(promoted.results))
    return plain, promoted, len(offsets) - 1, int(offsets[-1]), table.shape[1], offsets


def test_scalar_replacement_keeps_the_accumulator_in_a_register(seed):
    """Scalar form of the EmbeddingBag sum: without ``promote`` every lookup loads out[b, d]
    (forwarded from the previous store); with it only the first touch of each out[b, d] loads,
    and the adds of a bag's column chain through registers."""
    plain, promoted, bags, lookups, dim, offsets = _scalar_bag_traces(seed)
    out_loads = lambda tr: [i for i, (k, a) in enumerate(zip(tr.kind, tr.array))  # noqa: E731
                            if k == LOAD and a == "out"]
    assert len(out_loads(plain)) == lookups * dim
    nonempty = sum(1 for b in range(bags) if offsets[b + 1] > offsets[b])
    assert len(out_loads(promoted)) == nonempty * dim
    assert not any(promoted.forwarded[i] for i in out_loads(promoted))
    # an add's accumulator operand is the previous add (through the stored value), not a load
    adds = [i for i, k in enumerate(promoted.kind) if k == ALU and promoted.latency[i] == 4]
    assert any(any(promoted.kind[d] == ALU and promoted.latency[d] == 4 for d in promoted.deps[i])
               for i in adds)
    # and it is faster on the same core: no 5-cycle forwarding on the accumulation chain
    preset = get_preset("simple")
    assert run_core(promoted, preset).cycles <= run_core(plain, preset).cycles


def test_the_execute_side_runs_on_the_core_model(seed):
    """run_execute_side: the promoted trace on the baseline's core, the caller's arrays
    untouched."""
    w, comp, args, tokens = _compiled("spmv_csr", 3, seed)
    before = [a.copy() for a in args]
    tr, r = run_execute_side(comp.dlc, args, tokens.data_tokens, tokens.control_tokens,
                             get_preset("HBM2"))
    w.check(w.make("small", seed), list(tr.results))
    assert all((a == b).all() for a, b in zip(args, before))
    assert r.instructions == len(tr) and r.cycles >= len(tr) / CoreConfig().width
    promoted = trace_execute(comp.dlc, args, tokens.data_tokens, tokens.control_tokens,
                             promote=True)
    assert (promoted.kind, promoted.deps) == (tr.kind, tr.deps)


def test_bad_tokens_and_modules_are_named(seed):
    w, comp, args, tokens = _compiled("eb_sum", 3, seed)
    data, control = list(tokens.data_tokens), list(tokens.control_tokens)
    with pytest.raises(ValueError, match="data_tokens must be consumed exactly"):
        trace_execute(comp.dlc, args, data + [0], control)
    with pytest.raises(ValueError, match="data_tokens must hold every operand"):
        trace_execute(comp.dlc, args, data[:-1], control)
    with pytest.raises(ValueError, match=r"control_tokens\[0\] must name a dlc.case"):
        trace_execute(comp.dlc, args, data, [77] + control)
    with pytest.raises(ValueError, match="control_tokens must end with DONE"):
        trace_execute(comp.dlc, args, data, control[:-1])
    with pytest.raises(ValueError, match="args must have 4 entries"):
        trace_execute(comp.dlc, args[:3], data, control)
    with pytest.raises(ValueError, match="vector_bytes must be a non-negative integer"):
        trace_execute(comp.dlc, args, data, control, vector_bytes=-1)


def test_vector_accumulator_stays_in_a_register_at_o1(seed):
    """-O1 EmbeddingBag sum pops each row as 8-lane vectors and accumulates with masked loads and
    stores of out[b, d0:d0+8]: without ``promote`` every vector of every lookup loads its
    accumulator (forwarded after the first), with it only the first vector of each bag's
    columns does; results equal either way."""
    w, comp, args, tokens = _compiled("eb_sum", 1, seed)
    table, indices, offsets, out = args
    bags, lookups, dim = len(offsets) - 1, int(offsets[-1]), table.shape[1]
    vectors = -(-dim // 8)
    traces = {p: trace_execute(comp.dlc, w.make("small", seed), tokens.data_tokens,
                               tokens.control_tokens, promote=p) for p in (False, True)}
    out_loads = {p: [i for i, (k, a) in enumerate(zip(tr.kind, tr.array)) if k == LOAD and a == "out"]
                 for p, tr in traces.items()}
    assert len(out_loads[False]) == lookups * vectors
    nonempty = sum(1 for b in range(bags) if offsets[b + 1] > offsets[b])
    assert len(out_loads[True]) == nonempty * vectors
    assert not any(traces[True].forwarded[i] for i in out_loads[True])
    for tr in traces.values():
        w.check(w.make("small", seed), list(tr.results))
        # a masked load touches the lines of its active lanes
        assert all(len(tr.addrs[i]) == min(8, dim) for i in out_loads[False][:vectors])


def test_promoted_stores_are_sunk_to_the_last_value_of_each_address(seed):
    """Scalar form of the EmbeddingBag sum with ``promote``: out[b, d] is stored once, with the
    last add of its bag's column (LICM's store sinking beside its load hoisting); without it
    once per lookup. Results equal."""
    plain, promoted, bags, lookups, dim, offsets = _scalar_bag_traces(seed)
    out_stores = lambda tr: [i for i, (k, a) in enumerate(zip(tr.kind, tr.array))  # noqa: E731
                             if k == STORE and a == "out"]
    assert len(out_stores(plain)) == lookups * dim
    nonempty = sum(1 for b in range(bags) if offsets[b + 1] > offsets[b])
    kept = out_stores(promoted)
    assert len(kept) == nonempty * dim
    assert len({promoted.addrs[i][0] for i in kept}) == len(kept)       # one per element
    # each stores the last add of its column: no later add reads that add
    adds_read = {d for i, k in enumerate(promoted.kind) if k == ALU for d in promoted.deps[i]}
    for i in kept:
        (value,) = [d for d in promoted.deps[i] if promoted.kind[d] == ALU
                    and promoted.latency[d] == 4]
        assert value not in adds_read
    # the trace is renumbered consistently: every dependence points backwards
    assert all(d < i for i, deps in enumerate(promoted.deps) for d in deps)


def test_a_store_is_dropped_only_when_every_address_is_written_again_unread():
    """The rule of ``promote``'s store sinking on hand-made stores: overwritten → dropped;
    overwritten but read from memory by a load → kept; a vector store one of whose addresses
    is not written again → kept; without ``promote`` nothing is dropped."""
    from sim.core_trace import OpLatency, _Tracer

    def build(promote):
        tr = _Tracer(0, OpLatency(), promote)
        value = tr.emit(None, ALU, [], latency=1)

        def store(addrs):
            i = tr.emit(None, STORE, [value], addr=addrs[0], size=4)
            tr.t.addrs[i].extend(addrs[1:])
            for a in addrs:
                tr.record_store(i, a, value)
            return i

        s = [store([0]), store([0]),               # the first is overwritten: dropped
             store([8])]
        tr.read_stores.add(s[2])                   # a load reads address 8 from memory
        s += [store([8]), store([16, 24]), store([16])]   # 8 kept (read); 16/24 kept (24 live)
        tr.finish()
        return tr.t, s

    plain, _ = build(False)
    assert plain.kind == [ALU] + [STORE] * 6
    t, s = build(True)
    assert t.kind == [ALU] + [STORE] * 5
    assert [a[0] for a in t.addrs[1:]] == [0, 8, 8, 16, 16]
    assert t.deps == [()] + [(0,)] * 5


def _control_trace(alu_latencies):
    """A hand trace: per callback a control-token pop and one ALU of the given latency that
    depends on the callback before it (a chain through the callbacks), then DONE's pop."""
    from sim.core_trace import Trace
    from sim.execute_trace import CONTROL_QUEUE
    t = Trace()

    def add(kind, deps, latency, array):
        t.kind.append(kind)
        t.deps.append(tuple(deps))
        t.latency.append(latency)
        t.lines.append(())
        t.nbytes.append(8 if kind == LOAD else 0)
        t.array.append(array)
        t.addrs.append([])
        t.forwarded.append(False)
        return len(t.kind) - 1

    pops, prev = [], None
    for latency in alu_latencies:
        pops.append(add(LOAD, [], 0, CONTROL_QUEUE.name))
        prev = add(ALU, [] if prev is None else [prev], latency, "")
    pops.append(add(LOAD, [], 0, CONTROL_QUEUE.name))
    return t, pops


def test_callback_pace_is_the_distance_between_control_pops_retiring():
    """Each callback's pace: its control pop's retirement to the next one's. One ALU per
    callback, 30, 2 and 50 cycles, in a chain; each control pop retires in order behind the ALU
    before it, so the second and third paces are the ALUs' 2 and 50 cycles."""
    from sim.execute_trace import callback_pace, replay_parameters
    trace, pops = _control_trace([30, 2, 50])
    result = run_core(trace, get_preset("HBM2"), CoreConfig(), record_retire=True)
    retire = result.retire_cycles
    assert len(retire) == len(trace) and retire == sorted(retire)
    assert retire[-1] + 1 == result.core_cycles
    pace = callback_pace(trace, result)
    assert pace == tuple(retire[b] - retire[a] for a, b in zip(pops, pops[1:])) + (0,)
    alu_done = [retire[p + 1] for p in pops[:-1]]
    assert alu_done[1] - alu_done[0] == 2 and alu_done[2] - alu_done[1] == 50
    assert pace[1] == 2 and pace[2] == 50
    assert replay_parameters(trace, result, CoreConfig(load_ports=1, rob_entries=64)) == dict(
        pace=pace, instructions=(2, 2, 2, 1), window=64, tokens_per_cycle=8)
    assert replay_parameters(trace, result)["tokens_per_cycle"] == 16   # two 512-bit pops
    assert CoreReplay(**replay_parameters(trace, result)).cycles([0, 0, 0]) == sum(pace)
    # two core cycles per memory cycle: the retirements halved (rounded down), then differenced
    assert callback_pace(trace, result, clock_ratio=2) == \
        tuple(retire[b] // 2 - retire[a] // 2 for a, b in zip(pops, pops[1:])) + (0,)
    with pytest.raises(ValueError, match="record_retire=True"):
        callback_pace(trace, run_core(trace, get_preset("HBM2"), CoreConfig()))


def test_the_replayed_execute_side_takes_the_core_models_time(seed):
    """On a workload: one pace per control token, the replay's own estimate at least the
    operands at two vectors per cycle and at least the sum of the paces (the core model's time
    from the first control pop's retirement to DONE's)."""
    from sim.execute_trace import replay_parameters
    w, comp, args, tokens = _compiled("eb_sum", 3, seed)
    tr, r = run_execute_side(comp.dlc, args, tokens.data_tokens, tokens.control_tokens,
                             get_preset("HBM2"))
    core = CoreReplay(**replay_parameters(tr, r))
    assert len(core.pace) == len(tokens.control_tokens) and core.pace[-1] == 0
    pops = run_kernel(comp.kernel, w.make("small", seed), "golden").execute.pops_per_control[:-1]
    assert core.cycles(pops) >= max(sum(core.pace), -(-sum(pops) // 16))
    assert sum(core.pace) <= r.core_cycles
