"""Cheat: functools.partial(type(x).add). Caught by: runtime: torch compute.

functools.partial(type(x).add, staged)(y) -- an unbound Tensor method carried by partial.
`type(x).add` is only an attribute here (no call on it, so the method allow-list never sees it),
its dotted path does not resolve to torch, and the partial's call goes through a dotted non-
torch path (functools.partial) and then a call of a call, which the scanner does not inspect.

Problem: problem_add.py.
"""

import functools

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
    def __init__(self) -> None:
        super().__init__()

    def forward(self, x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
        staged = torch.empty_like(x)
        n = x.numel()
        copy_kernel[(triton.cdiv(n, 256),)](x, staged, n, BLOCK=256)
        return functools.partial(type(x).add, staged)(y)
