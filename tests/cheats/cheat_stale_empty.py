"""Cheat: returns torch.empty_like(x) hoping for stale results. Caught by: runtime: poisoned output.

Problem: problem_add.py.

The launched kernel does nothing useful; on a GPU the caching allocator often returns the block
the reference just freed, which still holds the right answer."""

import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def touch_kernel(x_ptr, n_elements, BLOCK_SIZE: tl.constexpr):
    offsets = tl.program_id(0) * BLOCK_SIZE + tl.arange(0, BLOCK_SIZE)
    tl.load(x_ptr + offsets, mask=offsets < n_elements)


class ModelNew(nn.Module):
    def __init__(self) -> None:
        super().__init__()

    def forward(self, x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
        out = torch.empty_like(x)
        touch_kernel[(triton.cdiv(x.numel(), 256),)](x, x.numel(), BLOCK_SIZE=256)
        return out
