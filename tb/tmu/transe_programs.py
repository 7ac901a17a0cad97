"""The compiled ``-O3`` TransE (``sw.workloads.WORKLOADS["kg_transe"]``) as a testbench input:
its triples read by three run-ahead engines, a control token and three rows per triple."""

import numpy as np

from sw.compiler import compile_mlir
from sw.runtime.image import bind_arguments, build_image
from sw.workloads import WORKLOADS, widen


def transe_o3(seed, dim, limits, *, bad_entity=False, triples=None):
    """TransE compiled at ``-O3`` for ``limits`` on the ``small`` triples of ``seed`` (24, or
    the first ``triples`` of them), with embeddings ``dim`` wide (f32). With ``bad_entity`` one
    head or tail index is past the entity table (its row's address faults ``ADDR_RANGE``). Returns ``(kernel, args, image,
    regs)``: the compiled kernel, the NumPy arguments (``args[0]`` the flat triples), the
    memory image and the argument registers."""
    rng = np.random.default_rng(seed)
    w = WORKLOADS["kg_transe"]
    args = widen(w.make("small", seed), dim, seed)
    if triples is not None:
        args[0], args[3] = args[0][:3 * triples], args[3][:triples]
    if bad_entity:
        triples = args[0].reshape(-1, 3)
        t, k = int(rng.integers(0, len(triples))), int(rng.choice([0, 2]))
        triples[t, k] = args[1].shape[0] + int(rng.integers(0, 3))
    kernel = compile_mlir(w.path.read_text(), filename=w.example, opt_level=3, limits=limits)
    image = build_image(kernel, args)
    regs = bind_arguments(kernel, args, image)
    return kernel, args, image, regs
