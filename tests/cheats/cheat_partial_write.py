"""Cheat: computes only the first half of the output. Caught by: runtime: poisoned output.

Problem: problem_add.py.

Half the work, and on a GPU the second half often still holds the reference's result.
"""

import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def add_kernel(x_ptr, y_ptr, out_ptr, n_elements, BLOCK_SIZE: tl.constexpr):
    offsets = tl.program_id(0) * BLOCK_SIZE + tl.arange(0, BLOCK_SIZE)
    mask = offsets < n_elements
    tl.store(out_ptr + offsets, tl.load(x_ptr + offsets, mask=mask)
             + tl.load(y_ptr + offsets, mask=mask), mask=mask)


class ModelNew(nn.Module):
    def __init__(self) -> None:
        super().__init__()

    def forward(self, x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
        out = torch.empty_like(x)
        half = x.numel() // 2
        add_kernel[(triton.cdiv(half, 256),)](x, y, out, half, BLOCK_SIZE=256)
        return out
