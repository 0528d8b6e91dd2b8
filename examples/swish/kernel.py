"""A naive swish: one small block of 128 elements per program.

With BLOCK_SIZE = 128 the grid has n / 128 programs, each moving 1 KiB: launch and scheduling
overhead dominate and the memory system is never kept busy.
"""

import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def swish_kernel(out_ptr, x_ptr, n_elements, BLOCK_SIZE: tl.constexpr):
    pid = tl.program_id(0)
    offs = pid * BLOCK_SIZE + tl.arange(0, BLOCK_SIZE)
    mask = offs < n_elements
    x = tl.load(x_ptr + offs, mask=mask)
    tl.store(out_ptr + offs, x * tl.sigmoid(x), mask=mask)


class ModelNew(nn.Module):
    def __init__(self) -> None:
        super().__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = x.contiguous()
        out = torch.empty_like(x)
        n = x.numel()
        BLOCK_SIZE = 128
        swish_kernel[(triton.cdiv(n, BLOCK_SIZE),)](out, x, n, BLOCK_SIZE=BLOCK_SIZE, num_warps=4)
        return out
