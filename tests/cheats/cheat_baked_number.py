"""Cheat: x times get_inputs' 3.14, whatever number the forward is given. Caught by: runtime: other numbers case.

Every case built from get_inputs keeps s = 3.14 (other sizes, wide and shifted values change only the tensors),
so the outputs are right there. The other-numbers case draws each float the forward takes anew, and they differ.

Problem: problem_scale_by.py.
"""

import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def scale_kernel(x_ptr, out_ptr, n_elements, BLOCK: tl.constexpr):
    offsets = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offsets < n_elements
    tl.store(out_ptr + offsets, tl.load(x_ptr + offsets, mask=mask) * 3.14, mask=mask)


class ModelNew(nn.Module):
    def __init__(self) -> None:
        super().__init__()

    def forward(self, x: torch.Tensor, s: float) -> torch.Tensor:
        out = torch.empty_like(x)
        n_elements = x.numel()
        scale_kernel[(triton.cdiv(n_elements, 1024),)](x, out, n_elements, BLOCK=1024)
        return out
