"""``tb.golden_compare.compiled_job`` / ``replay_checked``, the sequence the compiled-kernel RTL
tests share (golden model, RTL tokens compared, execute side replayed from the RTL's tokens),
checked without a simulator: a stand-in RTL result carrying the golden model's tokens must
replay to the PyTorch result, and one token changed, a token missing or a fault must fail with
the place named."""

from types import SimpleNamespace

import numpy as np
import pytest

from sw.compiler import compile_mlir
from sw.workloads import WORKLOADS
from tb.golden_compare import compiled_job, replay_checked
from tb.seeds import fresh_seed


@pytest.fixture(scope="module")
def bag():
    w = WORKLOADS["eb_sum"]
    kernel = compile_mlir(w.path.read_text(), filename=w.example, opt_level=3)
    return w, compiled_job(kernel, w.make("small", fresh_seed("eb_sum small") % 1000),
                           backpressure=0.25, seed=3)


def _rtl(compiled, *, data=None, control=None, fault_code=0):
    g = compiled.golden
    return SimpleNamespace(data_tokens=list(g.data_tokens) if data is None else data,
                           control_tokens=list(g.control_tokens) if control is None else control,
                           fault_code=fault_code, fault_addr=0, cycles=100, stats={},
                           memory_stats={})


def test_the_job_is_the_kernel_on_its_image(bag):
    w, compiled = bag
    assert compiled.job.program == compiled.program == compiled.kernel.program.encode()
    assert (compiled.job.backpressure, compiled.job.seed) == (0.25, 3)
    assert compiled.golden.data_tokens and compiled.golden.control_tokens[-1] == 0xFFFF


def test_golden_tokens_replay_to_the_reference_and_leave_the_inputs(bag):
    w, compiled = bag
    before = [a.copy() if isinstance(a, np.ndarray) else a for a in compiled.args]
    run = replay_checked(compiled, _rtl(compiled), "eb_sum")
    w.check(compiled.args, run.results)
    assert run.cycles == 100
    for a, b in zip(compiled.args, before):
        np.testing.assert_array_equal(a, b)


def test_a_changed_data_token_is_named(bag):
    _, compiled = bag
    data = list(compiled.golden.data_tokens)
    data[5] ^= 1
    with pytest.raises(AssertionError, match=r"bag -O3: data tokens differ at #5"):
        replay_checked(compiled, _rtl(compiled, data=data), "bag -O3")


def test_a_missing_control_token_is_named(bag):
    _, compiled = bag
    control = list(compiled.golden.control_tokens)[:-1]
    with pytest.raises(AssertionError, match=rf"control tokens differ at #{len(control)}"):
        replay_checked(compiled, _rtl(compiled, control=control))


def test_a_fault_is_named(bag):
    _, compiled = bag
    with pytest.raises(AssertionError, match="fault code 4"):
        replay_checked(compiled, _rtl(compiled, fault_code=4), "eb_sum")
