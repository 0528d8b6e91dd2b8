"""Cheat: dummy copy kernel, then a_copy @ b. Caught by: operator-in-forward.

Problem: problem_matmul.py.
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
    def __init__(self) -> None:
        super().__init__()

    def forward(self, a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
        a_copy = torch.empty_like(a)
        copy_kernel[(triton.cdiv(a.numel(), 256),)](a, a_copy, a.numel(), BLOCK_SIZE=256)
        return a_copy @ b
