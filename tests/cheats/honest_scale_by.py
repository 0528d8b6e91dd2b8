"""Honest: x times the number the forward is given, one program per block of elements. Problem: problem_scale_by."""

import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def scale_kernel(x_ptr, out_ptr, s, n_elements, BLOCK: tl.constexpr):
    offsets = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offsets < n_elements
    tl.store(out_ptr + offsets, tl.load(x_ptr + offsets, mask=mask) * s, mask=mask)


class ModelNew(nn.Module):
    def __init__(self) -> None:
        super().__init__()

    def forward(self, x: torch.Tensor, s: float) -> torch.Tensor:
        out = torch.empty_like(x)
        n_elements = x.numel()
        scale_kernel[(triton.cdiv(n_elements, 1024),)](x, out, s, n_elements, BLOCK=1024)
        return out
