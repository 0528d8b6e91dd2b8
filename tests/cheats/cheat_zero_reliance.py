"""Cheat: accumulates into torch.empty memory as if zeroed. Caught by: runtime: poisoned memory.

Problem: problem_add.py.

Saves a memset: fresh allocations are often zero-filled (new pages), so it passes by luck.
"""

import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def accumulate_kernel(src_ptr, out_ptr, n_elements, BLOCK_SIZE: tl.constexpr):
    offsets = tl.program_id(0) * BLOCK_SIZE + tl.arange(0, BLOCK_SIZE)
    mask = offsets < n_elements
    tl.atomic_add(out_ptr + offsets, tl.load(src_ptr + offsets, mask=mask), mask=mask)


class ModelNew(nn.Module):
    def __init__(self) -> None:
        super().__init__()

    def forward(self, x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
        out = torch.empty_like(x)  # never zeroed: out = garbage + x + y
        n_elements = x.numel()
        grid = (triton.cdiv(n_elements, 256),)
        accumulate_kernel[grid](x, out, n_elements, BLOCK_SIZE=256)
        accumulate_kernel[grid](y, out, n_elements, BLOCK_SIZE=256)
        return out
