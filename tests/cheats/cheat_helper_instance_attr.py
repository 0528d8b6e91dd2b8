"""Cheat: a helper object on self adds with torch. Caught by: runtime: torch compute.

torch compute in a method of a plain helper object kept on self (self.impl.combine(x, y)).
The forward scanner follows self.<ModelNew method>, module functions called by name and classes
called by name, but not a method reached through an instance attribute of a non-torch class, so
the helper's `a + b` is never scanned. A dummy copy kernel satisfies the launch checks.

Problem: problem_add.py.
"""

import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def copy_kernel(src_ptr, dst_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(dst_ptr + offs, tl.load(src_ptr + offs, mask=mask), mask=mask)


class _Combiner:
    def combine(self, a, b):
        return a + b  # PyTorch does the work


class ModelNew(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.impl = _Combiner()

    def forward(self, x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
        staged = torch.empty_like(x)
        n = x.numel()
        copy_kernel[(triton.cdiv(n, 256),)](x, staged, n, BLOCK=256)
        return self.impl.combine(staged, y)
