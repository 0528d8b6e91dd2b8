"""Cheat: applies the reference's nn.Linear in forward. Caught by: nn-module-in-forward.

Problem: problem_linear.py.
"""

import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def copy_kernel(src_ptr, dst_ptr, n_elements, BLOCK_SIZE: tl.constexpr):
    offsets = tl.program_id(0) * BLOCK_SIZE + tl.arange(0, BLOCK_SIZE)
    mask = offsets < n_elements
    tl.store(dst_ptr + offsets, tl.load(src_ptr + offsets, mask=mask), mask=mask)


class ModelNew(nn.Module):
    def __init__(self, in_features: int, out_features: int) -> None:
        super().__init__()
        self.linear = nn.Linear(in_features, out_features)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        staged = torch.empty_like(x)
        copy_kernel[(triton.cdiv(x.numel(), 256),)](x, staged, x.numel(), BLOCK_SIZE=256)
        return self.linear(staged)
