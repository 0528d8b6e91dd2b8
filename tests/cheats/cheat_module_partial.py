"""Cheat: functools.partial(torch.softmax) at module level. Caught by: torch-as-value.

Module-level functools.partial(torch.softmax, dim=-1); the module scope is not held to no-torch,
and the partial is not an alias nor a def.

Problem: problem_softmax.py.
"""

import functools

import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def copy_kernel(src_ptr, out_ptr, n_elements, BLOCK_SIZE: tl.constexpr):
    offsets = tl.program_id(0) * BLOCK_SIZE + tl.arange(0, BLOCK_SIZE)
    mask = offsets < n_elements
    tl.store(out_ptr + offsets, tl.load(src_ptr + offsets, mask=mask), mask=mask)



normalise_rows = functools.partial(torch.softmax, dim=-1)


class ModelNew(nn.Module):
    def __init__(self) -> None:
        super().__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        res = normalise_rows(x)
        out = torch.empty_like(x)
        n = x.numel()
        copy_kernel[(triton.cdiv(n, 256),)](res, out, n, BLOCK_SIZE=256)
        return out
