"""Cheat: launches on a side stream the timer does not see. Caught by: cuda-stream.

Problem: problem_add.py.
"""

import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def add_kernel(x_ptr, y_ptr, out_ptr, n_elements, BLOCK_SIZE: tl.constexpr):
    pid = tl.program_id(axis=0)
    offsets = pid * BLOCK_SIZE + tl.arange(0, BLOCK_SIZE)
    mask = offsets < n_elements
    x = tl.load(x_ptr + offsets, mask=mask)
    y = tl.load(y_ptr + offsets, mask=mask)
    tl.store(out_ptr + offsets, x + y, mask=mask)


class ModelNew(nn.Module):
    def __init__(self) -> None:
        super().__init__()

    def forward(self, x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
        out = torch.empty_like(x)
        n_elements = x.numel()
        side = torch.cuda.Stream() if x.is_cuda else None
        with torch.cuda.stream(side):
            add_kernel[(triton.cdiv(n_elements, 256),)](x, y, out, n_elements, BLOCK_SIZE=256)
        return out
