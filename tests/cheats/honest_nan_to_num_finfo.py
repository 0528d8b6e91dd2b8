"""Honest nan_to_num: NaN -> 0, +inf -> finfo.max, -inf -> -finfo.max (PyTorch's defaults).

Problem: problem_nan_to_num.py.
"""
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def nan_to_num_kernel(x_ptr, y_ptr, n, nan_val, posinf_val, neginf_val, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    x = tl.load(x_ptr + offs, mask=m, other=0.0)
    y = tl.where(x != x, nan_val, x)
    y = tl.where(x == float("inf"), posinf_val, y)
    y = tl.where(x == float("-inf"), neginf_val, y)
    tl.store(y_ptr + offs, y, mask=m)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        x = x.contiguous()
        y = torch.empty_like(x)
        n = x.numel()
        fmax = torch.finfo(x.dtype).max
        nan_to_num_kernel[(triton.cdiv(n, 1024),)](x, y, n, 0.0, fmax, -fmax, BLOCK=1024)
        return y
