"""Mean over one dim (the dim removed): the input seen as (outer, n_reduce, inner), one program per
outer index and INNER_BLOCK inner columns.

In the KernelBench input (128, 4096, 4095) averaged over dim 1, the reduced values of one output
lie 4095 apart while neighbouring outputs are adjacent, so a program takes (REDUCE_BLOCK,
INNER_BLOCK) = (32, 128) tiles, reduced rows down and output columns across: every load is a
contiguous 512-byte run. It keeps one fp32 partial sum per tile element, folds the tile's rows
together at the end and divides by n_reduce. 128 x 32 = 4096 programs, each reading 2 MB once:
one read of the input in all. When the reduced dim is the last one, inner is 1 and a program
reads one strided column; correct, if slow.
"""

import math

import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def mean_dim_kernel(
    out_ptr, x_ptr, n_reduce, inner, n_inner_blocks,
    REDUCE_BLOCK: tl.constexpr, INNER_BLOCK: tl.constexpr,
):
    pid = tl.program_id(0)
    outer = pid // n_inner_blocks
    cols = (pid % n_inner_blocks) * INNER_BLOCK + tl.arange(0, INNER_BLOCK)
    col_mask = cols < inner
    base = outer.to(tl.int64) * n_reduce * inner
    rows = tl.arange(0, REDUCE_BLOCK)
    acc = tl.zeros((REDUCE_BLOCK, INNER_BLOCK), tl.float32)
    for start in range(0, n_reduce, REDUCE_BLOCK):
        r = start + rows
        mask = (r < n_reduce)[:, None] & col_mask[None, :]
        offs = r.to(tl.int64)[:, None] * inner + cols[None, :]
        acc += tl.load(x_ptr + base + offs, mask=mask, other=0.0).to(tl.float32)
    mean = tl.sum(acc, axis=0) / n_reduce
    tl.store(out_ptr + outer.to(tl.int64) * inner + cols, mean, mask=col_mask)


class ModelNew(nn.Module):
    def __init__(self, dim: int) -> None:
        super().__init__()
        self.dim = dim

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        inner_block = 128
        dim = self.dim % x.dim()
        n_reduce = x.shape[dim]
        inner = math.prod(x.shape[dim + 1:])
        outer = math.prod(x.shape[:dim])
        out = torch.empty(x.shape[:dim] + x.shape[dim + 1:], device=x.device, dtype=x.dtype)
        n_inner_blocks = triton.cdiv(inner, inner_block)
        mean_dim_kernel[(outer * n_inner_blocks,)](
            out, x, n_reduce, inner, n_inner_blocks, REDUCE_BLOCK=32, INNER_BLOCK=inner_block, num_warps=4
        )
        return out
