"""Log-softmax over dim 1 in three passes of BLOCK values: the max, the sum of exponentials, the output.

A slow start on purpose: one program per row walks its row three times in small blocks, where a
whole row fits in one program's registers.
"""

import torch
import torch.nn as nn
import triton
import triton.language as tl

BLOCK = 16


@triton.jit
def log_softmax_kernel(out_ptr, x_ptr, n, BLOCK: tl.constexpr):
    row = tl.program_id(0).to(tl.int64)
    cols = tl.arange(0, BLOCK)
    row_max = tl.full((), float("-inf"), tl.float32)
    for start in range(0, n, BLOCK):
        x = tl.load(x_ptr + row * n + start + cols, mask=start + cols < n, other=float("-inf"))
        row_max = tl.maximum(row_max, tl.max(x, axis=0))
    total = tl.zeros((), tl.float32)
    for start in range(0, n, BLOCK):
        x = tl.load(x_ptr + row * n + start + cols, mask=start + cols < n, other=float("-inf"))
        total += tl.sum(tl.exp(x - row_max), axis=0)
    for start in range(0, n, BLOCK):
        mask = start + cols < n
        x = tl.load(x_ptr + row * n + start + cols, mask=mask, other=0.0)
        tl.store(out_ptr + row * n + start + cols, x - row_max - tl.log(total), mask=mask)


class ModelNew(nn.Module):
    def __init__(self) -> None:
        super().__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        out = torch.empty_like(x)
        log_softmax_kernel[(x.shape[0],)](out, x, x.shape[1], BLOCK=BLOCK, num_warps=1)
        return out
