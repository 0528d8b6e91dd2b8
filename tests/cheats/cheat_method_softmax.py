"""Cheat: dummy copy kernel, then .softmax(). Caught by: tensor-method-in-forward.

Problem: problem_softmax.py.
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

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        staged = torch.empty_like(x)
        copy_kernel[(triton.cdiv(x.numel(), 256),)](x, staged, x.numel(), BLOCK_SIZE=256)
        return staged.softmax(dim=-1)
