"""Softmax over dim 1: one program per row, an online max/sum pass and a normalising pass.

A row of the KernelBench size holds 393,216 fp32 values (1.5 MB), far beyond registers, so a
program walks its row in blocks of BLOCK elements twice: first keeping a running maximum and a
sum of exponentials rescaled whenever the maximum grows (one exp per element), then writing
exp(x - max) / sum. Every exponent is at most 0, so inputs scaled or shifted by 100 stay finite.
4096 rows give about 31 programs per SM on an H200. BLOCK = 4096 with 8 warps is 16 values per
thread per step: four 128-bit loads in flight. Traffic is two reads and one write per element.

The input is seen as (outer, n_cols, inner) around dim 1, so inputs of more than two dims work;
for the 2-D problem inner is 1 and every block is contiguous.
"""

import math

import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def softmax_kernel(out_ptr, x_ptr, n_cols, inner, BLOCK: tl.constexpr):
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
    for start in range(0, n_cols, BLOCK):
        offs = start + cols
        mask = offs < n_cols
        x = tl.load(x_ptr + base + offs * inner, mask=mask, other=float("-inf")).to(tl.float32)
        tl.store(out_ptr + base + offs * inner, tl.exp(x - row_max) / row_sum, mask=mask)


class ModelNew(nn.Module):
    def __init__(self) -> None:
        super().__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        out = torch.empty_like(x)
        n_cols = x.shape[1]
        inner = math.prod(x.shape[2:])
        softmax_kernel[(x.numel() // n_cols,)](out, x, n_cols, inner, BLOCK=4096, num_warps=8)
        return out
