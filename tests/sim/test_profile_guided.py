"""The profile-guided build of the C++ harness (``sim/profile_guided.py``, ``make sim PGO=1``):
asked for through ``EMBER_PROFILE_GUIDED``, and giving the plain harness's results.

The reference is the plain C++ harness (``engine="cpp"``), which ``test_fast_engine.py`` checks
against the cocotb engine: the same batch of jobs must give identical tokens, cycles, fault
codes and addresses, counters and memory statistics on both builds. The first run in a fresh
tree builds the profile-guided harness (~4 minutes on two cores); later runs reuse it.
"""

import pytest

import sim.fast
from hw.tmu import TmuConfig
from sim import profile_guided
from sim.system import RtlJob, run_many_on_rtl
from sw.runtime.isa import Fault
from tb.programs import embedding_bag_case, fault_cases, random_case
from tb.golden_compare import comparable
from tb.seeds import fresh_seed, seed_range

@pytest.mark.parametrize("value, expected", [("", False), ("0", False), ("1", True)])
def test_requested_reads_the_environment(monkeypatch, value, expected):
    monkeypatch.setenv(profile_guided.ENVIRONMENT, value)
    assert profile_guided.requested() is expected


def test_requested_is_false_without_the_variable(monkeypatch):
    monkeypatch.delenv(profile_guided.ENVIRONMENT, raising=False)
    assert profile_guided.requested() is False


def test_a_bad_value_names_the_variable(monkeypatch):
    monkeypatch.setenv(profile_guided.ENVIRONMENT, "yes")
    with pytest.raises(ValueError, match=r"EMBER_PROFILE_GUIDED must be 1 .* not 'yes'"):
        profile_guided.requested()


def test_a_build_without_a_makefile_is_an_error(tmp_path):
    obj = tmp_path / "build" / "obj"
    obj.mkdir(parents=True)
    (obj / "ember_harness").write_text("")
    with pytest.raises(RuntimeError, match="no Verilator makefile"):
        profile_guided.profile_guided_harness(obj / "ember_harness", [], sim.fast._run_jobs)
    assert not (tmp_path / "build" / profile_guided.DIRECTORY / "BUILT").exists()


@pytest.mark.rtl
@pytest.mark.slow           # ~4 min (a second, instrumented build and its training run): make test-all
def test_profile_guided_harness_gives_the_plain_harness_results(monkeypatch):
    config = TmuConfig()
    base = fresh_seed("random_case")
    cases = [embedding_bag_case("eb_sum", rows=10, dim=4, lengths=[3, 1, 2, 4]),
             embedding_bag_case("eb_empty_bag", rows=6, dim=3, lengths=[0, 2, 0, 0, 1])]
    cases += [random_case(s) for s in seed_range(base, 4)]
    cases.append({c.name: c for c in fault_cases(config)}["addr_range"])
    jobs = [RtlJob(c.program, c.memory, c.args, backpressure=0.3, seed=n, max_cycles=2_000_000)
            for n, c in enumerate(cases)]
    used = []

    def recording(executable, spec, job_dir, run=sim.fast._run_jobs):
        used.append(executable)
        return run(executable, spec, job_dir)

    monkeypatch.setattr(sim.fast, "_run_jobs", recording)
    monkeypatch.setenv(profile_guided.ENVIRONMENT, "0")
    plain = run_many_on_rtl(jobs, config=config, engine="cpp")
    monkeypatch.setenv(profile_guided.ENVIRONMENT, "1")
    guided = run_many_on_rtl(jobs, config=config, engine="cpp")

    assert used[0].parent.parent.name != profile_guided.DIRECTORY
    assert used[-1].parent.parent.name == profile_guided.DIRECTORY
    assert used[-1].parent.parent.parent == used[0].parent.parent    # beside the plain build
    assert len(guided) == len(plain) == len(jobs)
    for n, (a, b) in enumerate(zip(plain, guided)):
        assert comparable(b) == comparable(a), f"job {n}"
    assert Fault.ADDR_RANGE in [r.fault_code for r in guided] and guided[0].data_tokens
