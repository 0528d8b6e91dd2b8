"""The fastest: one program of 4096 elements."""

import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def add_kernel(out_ptr, x_ptr, y_ptr, n, BLOCK_SIZE: tl.constexpr):
    offs = tl.program_id(0) * BLOCK_SIZE + tl.arange(0, BLOCK_SIZE)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask)
    y = tl.load(y_ptr + offs, mask=mask)
    tl.store(out_ptr + offs, x + 2 * y, mask=mask)


class ModelNew(nn.Module):
    def __init__(self) -> None:
        super().__init__()

    def forward(self, x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
        out = torch.empty_like(x)
        n = x.numel()
        BLOCK_SIZE = 4096
        add_kernel[(triton.cdiv(n, BLOCK_SIZE),)](out, x, y, n, BLOCK_SIZE=BLOCK_SIZE)
        return out
