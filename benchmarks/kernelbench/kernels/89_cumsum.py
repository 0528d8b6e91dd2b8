"""Cumulative sum along one dim: the input seen as (outer, n, inner), one program per line.

The KernelBench input (32768, 32768) is scanned along dim 1, so each of the 32,768 programs
(about 248 per SM) owns one contiguous 128 KB row and walks it in blocks of BLOCK = 1024 values
(4 warps, 8 per thread): a block's inclusive scan (tl.cumsum, in fp32) plus the running total of
the blocks before it, then the total grows by the block's sum. One read and one write per
element. For a dim other than the last, a line's values lie `inner` apart: correct, if slow.
"""

import math

import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def cumsum_kernel(y_ptr, x_ptr, n, inner, BLOCK: tl.constexpr):
    line = tl.program_id(0).to(tl.int64)
    base = (line // inner) * n * inner + line % inner
    cols = tl.arange(0, BLOCK)
    carry = tl.zeros((), tl.float32)
    for start in range(0, n, BLOCK):
        offs = start + cols
        mask = offs < n
        x = tl.load(x_ptr + base + offs * inner, mask=mask, other=0.0).to(tl.float32)
        scanned = tl.cumsum(x, axis=0)
        tl.store(y_ptr + base + offs * inner, scanned + carry, mask=mask)
        carry += tl.sum(x, axis=0)


class ModelNew(nn.Module):
    def __init__(self, dim: int) -> None:
        super().__init__()
        self.dim = dim

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        dim = self.dim % x.dim()
        n = x.shape[dim]
        inner = math.prod(x.shape[dim + 1:])
        y = torch.empty_like(x)
        cumsum_kernel[(x.numel() // max(n, 1),)](y, x, n, inner, BLOCK=1024, num_warps=4)
        return y
