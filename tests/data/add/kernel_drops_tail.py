"""Broken at other sizes: launches n // BLOCK_SIZE programs, so a tail shorter than a block is
never written (right at 4096, wrong at 1000: its last 232 values stay zero)."""

import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def add_kernel(out_ptr, x_ptr, y_ptr, n, BLOCK_SIZE: tl.constexpr):
    offs = tl.program_id(0) * BLOCK_SIZE + tl.arange(0, BLOCK_SIZE)
    x = tl.load(x_ptr + offs)
    y = tl.load(y_ptr + offs)
    tl.store(out_ptr + offs, x + 2 * y)


class ModelNew(nn.Module):
    def __init__(self) -> None:
        super().__init__()

    def forward(self, x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
        out = torch.zeros_like(x)
        n = x.numel()
        BLOCK_SIZE = 256
        add_kernel[(n // BLOCK_SIZE,)](out, x, y, n, BLOCK_SIZE=BLOCK_SIZE)
        return out
