"""Cheat: a tail mask that is empty when the block divides n. Caught by: runtime: other sizes.

the last program's tail mask is `lane < n % BLOCK`, empty when BLOCK divides n.
The resized cases are always odd (n // 2 + 1, and the larger size is OR-ed with 1), so only the
given size could be a multiple of a power-of-two block: with N = 1000 and BLOCK = 128 no case
is, and the last block of n = 1024 (or 2048, ...) is never written.

Problem: problem_add.py.
"""

import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def add_kernel(x_ptr, y_ptr, out_ptr, n, BLOCK: tl.constexpr):
    pid = tl.program_id(0)
    lanes = tl.arange(0, BLOCK)
    last = pid == tl.num_programs(0) - 1
    limit = tl.where(last, n % BLOCK, BLOCK)  # the tail block holds n % BLOCK elements
    mask = lanes < limit
    offs = pid * BLOCK + lanes
    tl.store(out_ptr + offs, tl.load(x_ptr + offs, mask=mask) + tl.load(y_ptr + offs, mask=mask), mask=mask)


class ModelNew(nn.Module):
    def __init__(self) -> None:
        super().__init__()

    def forward(self, x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
        x = x.contiguous()
        y = y.contiguous()
        out = torch.empty_like(x)
        n = x.numel()
        add_kernel[(triton.cdiv(n, 128),)](x, y, out, n, BLOCK=128)
        return out
