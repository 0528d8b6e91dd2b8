"""Correct at its own 64 elements per program; the offline search's first step (BLOCK_SIZE 64 -> 128)
makes every program spin forever. A test that interrupts round 1's verification uses it: whenever
the interrupt comes, that candidate is still running (until its time limit), so no race decides."""

import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def add_kernel(out_ptr, x_ptr, y_ptr, n, spin, BLOCK_SIZE: tl.constexpr):
    offs = tl.program_id(0) * BLOCK_SIZE + tl.arange(0, BLOCK_SIZE)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask)
    y = tl.load(y_ptr + offs, mask=mask)
    step = 0
    while step < spin:  # `step` never moves: with spin=1 the program never ends
        step = step * 2
    tl.store(out_ptr + offs, x + 2 * y, mask=mask)


class ModelNew(nn.Module):
    def __init__(self) -> None:
        super().__init__()

    def forward(self, x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
        out = torch.empty_like(x)
        n = x.numel()
        BLOCK_SIZE = 64
        spin = 1 if BLOCK_SIZE == 128 else 0
        add_kernel[(triton.cdiv(n, BLOCK_SIZE),)](out, x, y, n, spin, BLOCK_SIZE=BLOCK_SIZE)
        return out
