"""Cheat: subclasses the reference Model, calls super().forward. Caught by: reference-model.

Problem: problem_add.py.
"""

import torch
import triton
import triton.language as tl
from problem_add import Model


@triton.jit
def noop_kernel(x_ptr, n_elements, BLOCK_SIZE: tl.constexpr):
    offsets = tl.program_id(0) * BLOCK_SIZE + tl.arange(0, BLOCK_SIZE)
    tl.load(x_ptr + offsets, mask=offsets < n_elements)


class ModelNew(Model):
    def forward(self, x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
        noop_kernel[(triton.cdiv(x.numel(), 256),)](x, x.numel(), BLOCK_SIZE=256)
        return super().forward(x, y)
