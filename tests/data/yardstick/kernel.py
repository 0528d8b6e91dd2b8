"""Exact where the reference is not: each program reads its row's last element."""

import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def last_column_kernel(x_ptr, out_ptr, cols, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    offs = tl.arange(0, BLOCK)
    value = tl.load(x_ptr + row * cols + (cols - 1) + offs, mask=offs < 1)
    tl.store(out_ptr + row + offs, value, mask=offs < 1)


class ModelNew(nn.Module):
    def __init__(self) -> None:
        super().__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        rows, cols = x.shape
        out = torch.empty(rows, device=x.device, dtype=x.dtype)
        last_column_kernel[(rows,)](x, out, cols, BLOCK=2)
        return out
