"""Max over one dim (the dim removed): the input seen as (outer, n_reduce, inner), one program per
outer index and INNER_BLOCK inner columns.

In the KernelBench input (128, 4096, 4095) reduced over dim 1, the reduced values of one output
lie 4095 apart while neighbouring outputs are adjacent, so a program takes (REDUCE_BLOCK,
INNER_BLOCK) = (32, 128) tiles, reduced rows down and output columns across: every load is a
contiguous 512-byte run. It keeps a running maximum per tile element (masked lanes read -inf) and
folds the tile's rows together at the end. 128 x 32 = 4096 programs, one read of the input in
all. Values are compared in the input's own dtype, so the output is exactly an input value.
"""

import math

import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def max_dim_kernel(
    out_ptr, x_ptr, n_reduce, inner, n_inner_blocks,
    REDUCE_BLOCK: tl.constexpr, INNER_BLOCK: tl.constexpr,
):
    pid = tl.program_id(0)
    outer = pid // n_inner_blocks
    cols = (pid % n_inner_blocks) * INNER_BLOCK + tl.arange(0, INNER_BLOCK)
    col_mask = cols < inner
    base = outer.to(tl.int64) * n_reduce * inner
    rows = tl.arange(0, REDUCE_BLOCK)
    best = tl.full((REDUCE_BLOCK, INNER_BLOCK), float("-inf"), x_ptr.dtype.element_ty)
    for start in range(0, n_reduce, REDUCE_BLOCK):
        r = start + rows
        mask = (r < n_reduce)[:, None] & col_mask[None, :]
        offs = r.to(tl.int64)[:, None] * inner + cols[None, :]
        best = tl.maximum(best, tl.load(x_ptr + base + offs, mask=mask, other=float("-inf")))
    tl.store(out_ptr + outer.to(tl.int64) * inner + cols, tl.max(best, axis=0), mask=col_mask)


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
        max_dim_kernel[(outer * n_inner_blocks,)](
            out, x, n_reduce, inner, n_inner_blocks, REDUCE_BLOCK=32, INNER_BLOCK=inner_block, num_warps=4
        )
        return out
