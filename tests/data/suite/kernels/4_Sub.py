"""Crashes: the launch leaves out the kernel's `n` argument, so every call raises."""

import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def sub_kernel(out_ptr, x_ptr, y_ptr, n, BLOCK_SIZE: tl.constexpr):
    offs = tl.program_id(0) * BLOCK_SIZE + tl.arange(0, BLOCK_SIZE)
    mask = offs < n
    tl.store(out_ptr + offs, tl.load(x_ptr + offs, mask=mask) - tl.load(y_ptr + offs, mask=mask), mask=mask)


class ModelNew(nn.Module):
    def __init__(self) -> None:
        super().__init__()

    def forward(self, x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
        out = torch.empty_like(x)
        sub_kernel[(triton.cdiv(x.numel(), 256),)](out, x, y, BLOCK_SIZE=256)
        return out
