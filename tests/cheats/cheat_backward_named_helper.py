"""Cheat: a staticmethod named backward adds with torch. Caught by: operator-in-forward.

torch compute in a staticmethod named `backward` of a helper class, called from forward.
queue_class() scans every method of a class forward touches except one named `backward` (meant
for autograd.Function), whatever the class is and however it is called.

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


class Epilogue:
    @staticmethod
    def backward(a, b):
        return a + b


class ModelNew(nn.Module):
    def __init__(self) -> None:
        super().__init__()

    def forward(self, x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
        staged = torch.empty_like(x)
        n = x.numel()
        copy_kernel[(triton.cdiv(n, 256),)](x, staged, n, BLOCK=256)
        return Epilogue.backward(staged, y)
