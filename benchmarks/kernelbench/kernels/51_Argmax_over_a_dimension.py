"""Argmax over one dim (the dim removed, int64 indices): the input seen as (outer, n_reduce,
inner), one program per outer index and INNER_BLOCK inner columns.

In the KernelBench input (128, 4096, 4095) reduced over dim 1, the values competing for one output
lie 4095 apart while neighbouring outputs are adjacent, so a program takes (REDUCE_BLOCK,
INNER_BLOCK) = (32, 128) tiles, reduced rows down and output columns across: every load is a
contiguous 512-byte run. Per column it keeps the best value and its index; a tile's maximum
replaces the best only when strictly greater, and within a tile the smallest row index holding
the maximum wins, so ties go to the first index, as torch.argmax returns. 128 x 32 = 4096
programs, one read of the input in all.
"""

import math

import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def argmax_dim_kernel(
    out_ptr, x_ptr, n_reduce, inner, n_inner_blocks,
    REDUCE_BLOCK: tl.constexpr, INNER_BLOCK: tl.constexpr,
):
    pid = tl.program_id(0)
    outer = pid // n_inner_blocks
    cols = (pid % n_inner_blocks) * INNER_BLOCK + tl.arange(0, INNER_BLOCK)
    col_mask = cols < inner
    base = outer.to(tl.int64) * n_reduce * inner
    rows = tl.arange(0, REDUCE_BLOCK)
    best = tl.full((INNER_BLOCK,), float("-inf"), tl.float32)
    best_index = tl.zeros((INNER_BLOCK,), tl.int64)
    for start in range(0, n_reduce, REDUCE_BLOCK):
        r = start + rows
        mask = (r < n_reduce)[:, None] & col_mask[None, :]
        offs = r.to(tl.int64)[:, None] * inner + cols[None, :]
        x = tl.load(x_ptr + base + offs, mask=mask, other=float("-inf")).to(tl.float32)
        tile_max = tl.max(x, axis=0)
        candidates = tl.where(mask & (x == tile_max[None, :]), r[:, None], n_reduce)
        tile_index = tl.min(candidates, axis=0).to(tl.int64)
        better = tile_max > best
        best = tl.where(better, tile_max, best)
        best_index = tl.where(better, tile_index, best_index)
    tl.store(out_ptr + outer.to(tl.int64) * inner + cols, best_index, mask=col_mask)


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
        out = torch.empty(x.shape[:dim] + x.shape[dim + 1:], device=x.device, dtype=torch.int64)
        n_inner_blocks = triton.cdiv(inner, inner_block)
        argmax_dim_kernel[(outer * n_inner_blocks,)](
            out, x, n_reduce, inner, n_inner_blocks, REDUCE_BLOCK=32, INNER_BLOCK=inner_block, num_warps=4
        )
        return out
