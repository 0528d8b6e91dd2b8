"""Log-softmax over one dim: one program per row, an online max/sum pass and an output pass.

As in the softmax kernel: a 393,216-value row (1.5 MB) is walked in blocks of BLOCK twice, first
for a running maximum and a sum of exp(x - max) rescaled whenever the maximum grows, then to
write (x - max) - log(sum). Subtracting the maximum keeps inputs scaled or shifted by 100 finite.
4096 rows give about 31 programs per SM on an H200; BLOCK = 4096 with 8 warps is four 128-bit
loads per thread per step.

The input is seen as (outer, n_cols, inner) around the reduced dim; for the 2-D problem with
dim 1, inner is 1 and every block is contiguous.
"""

import math

import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def log_softmax_kernel(out_ptr, x_ptr, n_cols, inner, BLOCK: tl.constexpr):
    row = tl.program_id(0).to(tl.int64)
    base = (row // inner) * n_cols * inner + row % inner
    cols = tl.arange(0, BLOCK)
    row_max = tl.zeros((), tl.float32) - float("inf")
    row_sum = tl.zeros((), tl.float32)
    for start in range(0, n_cols, BLOCK):
        offs = start + cols
        x = tl.load(x_ptr + base + offs * inner, mask=offs < n_cols, other=float("-inf")).to(tl.float32)
        new_max = tl.maximum(row_max, tl.max(x, axis=0))
        row_sum = row_sum * tl.exp(row_max - new_max) + tl.sum(tl.exp(x - new_max), axis=0)
        row_max = new_max
    log_sum = tl.log(row_sum)
    for start in range(0, n_cols, BLOCK):
        offs = start + cols
        mask = offs < n_cols
        x = tl.load(x_ptr + base + offs * inner, mask=mask, other=0.0).to(tl.float32)
        tl.store(out_ptr + base + offs * inner, (x - row_max) - log_sum, mask=mask)


class ModelNew(nn.Module):
    def __init__(self, dim: int = 1) -> None:
        super().__init__()
        self.dim = dim

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        out = torch.empty_like(x)
        dim = self.dim % x.dim()
        n_cols = x.shape[dim]
        inner = math.prod(x.shape[dim + 1:])
        n_rows = x.numel() // n_cols
        log_softmax_kernel[(n_rows,)](out, x, n_cols, inner, BLOCK=4096, num_warps=8)
        return out
