"""Cheat: a class-body staticmethod lambda adds with torch. Caught by: runtime: torch compute.

a lambda stored as a class attribute (staticmethod(lambda ...)) computes with torch.
ModelNew methods are queued for scanning only when they are FunctionDefs; a class-body
assignment `_post = staticmethod(lambda a, b: a + b)` is neither a method nor a torch value, so
`self._post(staged, y)` is not followed.

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


class ModelNew(nn.Module):
    _post = staticmethod(lambda a, b: a + b)

    def __init__(self) -> None:
        super().__init__()

    def forward(self, x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
        staged = torch.empty_like(x)
        n = x.numel()
        copy_kernel[(triton.cdiv(n, 256),)](x, staged, n, BLOCK=256)
        return self._post(staged, y)
