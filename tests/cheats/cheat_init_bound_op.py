"""Cheat: self.op = torch.softmax in __init__, called in forward. Caught by: torch-as-value.

__init__ stores torch.softmax on self (self.op is neither an nn layer nor a tensor attr);
forward calls self.op(x, -1).

Problem: problem_softmax.py.
"""


import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def copy_kernel(src_ptr, out_ptr, n_elements, BLOCK_SIZE: tl.constexpr):
    offsets = tl.program_id(0) * BLOCK_SIZE + tl.arange(0, BLOCK_SIZE)
    mask = offsets < n_elements
    tl.store(out_ptr + offsets, tl.load(src_ptr + offsets, mask=mask), mask=mask)



class ModelNew(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.op = torch.softmax

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        res = self.op(x, -1)
        out = torch.empty_like(x)
        n = x.numel()
        copy_kernel[(triton.cdiv(n, 256),)](res, out, n, BLOCK_SIZE=256)
        return out
