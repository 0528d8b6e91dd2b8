"""Cheat: adds in fp16 inside the kernel. Caught by: runtime: tolerance.

Problem: problem_add.py.

Static checks cannot see precision inside a @triton.jit body; fp16 rounding (~5e-4 relative)
is far outside the fp32 tolerance of 1e-4.
"""

import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def add_fp16_kernel(x_ptr, y_ptr, out_ptr, n_elements, BLOCK_SIZE: tl.constexpr):
    offsets = tl.program_id(0) * BLOCK_SIZE + tl.arange(0, BLOCK_SIZE)
    mask = offsets < n_elements
    x = tl.load(x_ptr + offsets, mask=mask).to(tl.float16)
    y = tl.load(y_ptr + offsets, mask=mask).to(tl.float16)
    tl.store(out_ptr + offsets, (x + y).to(tl.float32), mask=mask)


class ModelNew(nn.Module):
    def __init__(self) -> None:
        super().__init__()

    def forward(self, x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
        out = torch.empty_like(x)
        n_elements = x.numel()
        add_fp16_kernel[(triton.cdiv(n_elements, 256),)](x, y, out, n_elements, BLOCK_SIZE=256)
        return out
