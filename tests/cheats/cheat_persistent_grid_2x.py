"""Cheat: a fixed grid that covers twice the given size. Caught by: runtime: other sizes.

a "persistent" add with a fixed grid and a fixed tile count, covering 2048 elements.
The larger-size case grows a size by a quarter to a half (N=1000 -> at most 1501), so a kernel
that covers up to twice the given size passes every case; n > 2048 leaves the rest unwritten.

Problem: problem_add.py.
"""

import torch
import torch.nn as nn
import triton
import triton.language as tl

NUM_PROGRAMS = 4
TILES_PER_PROGRAM = 2


@triton.jit
def add_kernel(x_ptr, y_ptr, out_ptr, n, BLOCK: tl.constexpr, TILES: tl.constexpr):
    pid = tl.program_id(0)
    for t in range(TILES):
        offs = (pid * TILES + t) * BLOCK + tl.arange(0, BLOCK)
        mask = offs < n
        tl.store(out_ptr + offs, tl.load(x_ptr + offs, mask=mask) + tl.load(y_ptr + offs, mask=mask), mask=mask)


class ModelNew(nn.Module):
    def __init__(self) -> None:
        super().__init__()

    def forward(self, x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
        x = x.contiguous()
        y = y.contiguous()
        out = torch.empty_like(x)
        n = x.numel()
        add_kernel[(NUM_PROGRAMS,)](x, y, out, n, BLOCK=256, TILES=TILES_PER_PROGRAM)
        return out
