"""Cheat: softmax whose running max starts at 0. Caught by: runtime: shifted values.

online softmax whose running max starts at 0.0 instead of -inf.
It assumes every row has a non-negative element. randn rows (and randn * 100) always do, so
every case passes; a row whose entries are all below about -88 underflows exp() to 0 and gives
0/0 = NaN (e.g. x - 200), where torch.softmax is fine.

Problem: problem_softmax.py.
"""

import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def softmax_kernel(out_ptr, in_ptr, stride, n_cols, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    m = 0.0
    total = 0.0
    for start in range(0, n_cols, BLOCK):
        cols = start + tl.arange(0, BLOCK)
        x = tl.load(in_ptr + row * stride + cols, mask=cols < n_cols, other=-float("inf"))
        new_m = tl.maximum(m, tl.max(x, axis=0))
        total = total * tl.exp(m - new_m) + tl.sum(tl.exp(x - new_m), axis=0)
        m = new_m
    for start in range(0, n_cols, BLOCK):
        cols = start + tl.arange(0, BLOCK)
        x = tl.load(in_ptr + row * stride + cols, mask=cols < n_cols, other=-float("inf"))
        tl.store(out_ptr + row * stride + cols, tl.exp(x - m) / total, mask=cols < n_cols)


class ModelNew(nn.Module):
    def __init__(self) -> None:
        super().__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = x.contiguous()
        out = torch.empty_like(x)
        n_rows, n_cols = x.shape
        softmax_kernel[(n_rows,)](out, x, x.stride(0), n_cols, BLOCK=32)
        return out
