"""A DLRM sparse module through the PyTorch frontend, on the golden model (issue 12).

Several EmbeddingBags with different dims, modes and dtypes, returned as a dict; then the same
tables on torchrec's jagged layout (keys, values, lengths) without importing torchrec.

    PYTHONPATH=. python3 examples/torch_dlrm_sparse.py
"""

import torch

from sw.api import compile_jagged, compile_torch
from sw.compiler.frontends.torch_jagged import Jagged

EB = torch.nn.EmbeddingBag


class Sparse(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.user = EB(1000, 16, mode="sum")
        self.item = EB(500, 16, mode="mean", padding_idx=0)
        self.geo = EB(100, 8, mode="max", dtype=torch.float16)

    def forward(self, u, uo, i, io, g):
        return {"user": self.user(u, uo), "item": self.item(i, io), "geo": self.geo(g)}


m = Sparse()
ins = (torch.tensor([1, 7, 999, 3]), torch.tensor([0, 2]), torch.tensor([0, 4, 4]), torch.tensor([0, 1]),
       torch.tensor([[5, 6], [7, 8]]))
op = compile_torch(m, ins, opt_level=3)
out, want = op(*ins), m(*ins)
print(f"{len(op.kernels)} programs;", {k: bool(torch.equal(out[k], want[k].detach())) for k in out})

tables = {"user": m.user, "item": m.item}
kjt = Jagged(["item", "user"], torch.tensor([0, 4, 4, 1, 7, 999, 3]), lengths=torch.tensor([1, 2, 2, 2]))
jop = compile_jagged(tables, kjt)
print("jagged (B, 32):", tuple(jop(kjt).shape))
