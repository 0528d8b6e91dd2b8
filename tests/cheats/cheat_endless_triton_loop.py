"""Cheat: a Triton loop whose bound never moves (an LLM's wrong loop bound). Caught by: runtime: timeout.

Problem: problem_add.py.
"""

import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def add_kernel(x_ptr, y_ptr, out_ptr, n_elements, BLOCK_SIZE: tl.constexpr):
    offsets = tl.program_id(0) * BLOCK_SIZE + tl.arange(0, BLOCK_SIZE)
    mask = offsets < n_elements
    acc = tl.load(x_ptr + offsets, mask=mask) + tl.load(y_ptr + offsets, mask=mask)
    step = 0
    while step < n_elements:  # `step` is never advanced: every program spins forever
        # an atomic in the loop: a side effect the compiler may not remove with the loop
        tl.atomic_add(out_ptr + offsets, 0.0, mask=mask)
        step = step * 2
    tl.store(out_ptr + offsets, acc, mask=mask)


class ModelNew(nn.Module):
    def __init__(self) -> None:
        super().__init__()

    def forward(self, x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
        out = torch.empty_like(x)
        n_elements = x.numel()
        add_kernel[(triton.cdiv(n_elements, 256),)](x, y, out, n_elements, BLOCK_SIZE=256)
        return out
