"""Cheat: a function kept in a dict adds with torch. Caught by: runtime: torch compute.

torch compute in a module function stored in a dict and called as OPS["add"](x, y).
Helpers are followed only when called by name (`helper(x)`); a call through a subscript of a
dispatch table is not followed, and the function object in the dict is no torch value.

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


def _epilogue(a, b):
    return a + b


OPS = {"epilogue": _epilogue}


class ModelNew(nn.Module):
    def __init__(self) -> None:
        super().__init__()

    def forward(self, x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
        staged = torch.empty_like(x)
        n = x.numel()
        copy_kernel[(triton.cdiv(n, 256),)](x, staged, n, BLOCK=256)
        return OPS["epilogue"](staged, y)
