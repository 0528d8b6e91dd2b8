"""Cheat: writes zeros, launching a kernel but computing nothing. Caught by: runtime: own-scale judging.

Outputs within the tolerance of zero are judged on their own scale.

Problem: problem_tiny_scale.py.

Every expected value of x * 1e-6 is within fp32's atol (1e-4) of zero, so zeros passed every case.
"""

import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def zero_kernel(out_ptr, n_elements, BLOCK: tl.constexpr):
    offsets = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    tl.store(out_ptr + offsets, tl.zeros((BLOCK,), tl.float32), mask=offsets < n_elements)


class ModelNew(nn.Module):
    def __init__(self) -> None:
        super().__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        out = torch.empty_like(x)
        n_elements = x.numel()
        zero_kernel[(triton.cdiv(n_elements, 1024),)](out, n_elements, BLOCK=1024)
        return out
