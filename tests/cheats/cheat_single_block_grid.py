"""Cheat: one 1024-element program covers only small sizes. Caught by: runtime: other sizes (larger).

One program of 1024 elements, grid=(1,). Covers N=1000 and the verifier's predictable 'other
size' N//2+1 = 501; for N > 1024 everything past element 1024 stays 0 (wrong).

Problem: problem_add.py.
"""

import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def add_kernel(x_ptr, y_ptr, out_ptr, n_elements, BLOCK_SIZE: tl.constexpr):
    offsets = tl.arange(0, BLOCK_SIZE)
    mask = offsets < n_elements
    x = tl.load(x_ptr + offsets, mask=mask)
    y = tl.load(y_ptr + offsets, mask=mask)
    tl.store(out_ptr + offsets, x + y, mask=mask)


class ModelNew(nn.Module):
    def __init__(self) -> None:
        super().__init__()

    def forward(self, x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
        out = torch.zeros_like(x)
        add_kernel[(1,)](x, y, out, x.numel(), BLOCK_SIZE=1024)
        return out
