"""The tests that compare with PyTorch's CPU kernels, re-run with PyTorch's older kernels.

PyTorch dispatches its vectorised CPU kernels on the processor (``ATEN_CPU_CAPABILITY``: unset =
the best the machine has, ``avx2``, ``default`` = no vector extension), and its sparse and
weighted kernels may accumulate or fuse differently per kernel (docs/compiler.md, "Numerics").
Our claims — bit for bit where the order is ours to define, within the stated summation bound
where it is PyTorch's — must hold on every x86-64 machine, so the tests making them run here again
in a child process under each capability.
"""

import os
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]

#: The tests that compare with a PyTorch CPU kernel whose vector code depends on the capability.
AGAINST_PYTORCH = [
    "tests/compiler/test_torch_frontend.py::test_sparse_csr_times_dense_matches_the_fma_reference_and_pytorch",
    "tests/compiler/test_torch_frontend.py::test_per_sample_weights",
    "tests/compiler/test_torch_frontend.py::test_per_sample_weights_f64",
    "tests/compiler/test_torch_frontend.py::test_f_embedding_bag_with_2d_input",
    "tests/compiler/test_kernels_on_golden.py::test_spmm_csr_example_against_torch_sparse",
    "tests/compiler/test_replace_to_val_ops.py::test_embedding_bag_at_o3_matches_pytorch_bit_for_bit",
    "tests/e2e/test_main_job.py::test_compiled_levels_pass_on_golden",
    # csr_of_csr's reference is an unweighted embedding_bag sum, compared bit for bit
    "tests/runtime/test_chained_workloads.py::test_csr_of_csr_references_agree_bit_for_bit_and_sum_each_group",
    "tests/runtime/test_chained_workloads.py::test_full_inputs_at_O3_on_the_golden_model",
    # session 50: PyTorch's paths without FBGEMM (padding_idx, strided weights: multiply, then
    # add), its max bag's and scatter_reduce's NaN / signed-zero rules, and its 16-bit sum(1) /
    # mean(1) (f32 accumulation in index order), each compared bit for bit
    "tests/compiler/test_torch_dlrm_frontend.py::test_weighted_bags_with_and_without_padding_idx_bit_for_bit",
    "tests/compiler/test_torch_frontend.py::test_strides_that_take_pytorchs_kernel_without_fbgemm_bit_for_bit",
    "tests/compiler/test_torch_frontend.py::test_max_takes_the_first_entry_then_greater_ones_as_pytorch",
    "tests/compiler/test_torch_frontend.py::test_scatter_reduce_extrema_of_nan_and_signed_zeros_bit_for_bit",
    "tests/compiler/test_torch_fused_frontend.py::test_embedding_then_reduce_16_bit_rows_bit_for_bit",
    # session 51's random bag and segment tests (test_torch_bag_fuzz.py,
    # test_torch_segment_fuzz.py) ran here too until session 52: CI time (27-35 min of its 30
    # on this machine); their deterministic bit-for-bit counterparts above stay
]

_RANK = {"DEFAULT": 0, "AVX2": 1, "AVX512": 2}


def _capability(env_value: str | None) -> str:
    env = {k: v for k, v in os.environ.items() if k != "ATEN_CPU_CAPABILITY"}
    if env_value is not None:
        env["ATEN_CPU_CAPABILITY"] = env_value
    return subprocess.run([sys.executable, "-c", "import torch; print(torch.backends.cpu.get_cpu_capability())"],
                          env=env, capture_output=True, text=True, check=True).stdout.strip()


@pytest.mark.parametrize("capability", ["default", "avx2"])
def test_pytorch_comparisons_hold_under_older_cpu_kernels(capability):
    native = _capability(None)
    if _RANK.get(native, 0) < _RANK[capability.upper()]:
        pytest.skip(f"this processor's best PyTorch capability is {native}, below {capability}")
    assert _capability(capability) == capability.upper()       # the variable took effect
    env = dict(os.environ, ATEN_CPU_CAPABILITY=capability)
    r = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", *AGAINST_PYTORCH],
                       cwd=REPO, env=env, capture_output=True, text=True)
    assert r.returncode == 0, f"under ATEN_CPU_CAPABILITY={capability}:\n{r.stdout[-4000:]}\n{r.stderr[-2000:]}"
    assert " passed" in r.stdout and " error" not in r.stdout, r.stdout[-2000:]
