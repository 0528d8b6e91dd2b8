"""Cheat: .item() arithmetic in Python and an empty grid. Caught by: runtime: torch compute.

Python arithmetic on .item() values, output built with torch.tensor; the "launch" has an empty
grid.
.item() is a metadata method to the checker, so `x[i].item() + y[i].item()` is int/float
arithmetic to it, and torch.tensor(list) is an allowed allocation. The runtime launch counter
counts kernel[(0,)](...), a launch that runs no program at all.

Problem: problem_add.py.
"""

import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def noop_kernel(x_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    tl.store(x_ptr + offs, tl.load(x_ptr + offs, mask=offs < n), mask=offs < n)


class ModelNew(nn.Module):
    def __init__(self) -> None:
        super().__init__()

    def forward(self, x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
        n = x.numel()
        noop_kernel[(0,)](x, n, BLOCK=256)  # counted as a launch; no program runs
        values = [x[i].item() + y[i].item() for i in range(n)]
        return torch.tensor(values, dtype=x.dtype, device=x.device)
