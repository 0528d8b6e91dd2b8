"""Correct at its own 64 elements per program; at 128 (a configuration the offline sweep measures
and ranks first, on ordinary values) every program that meets a value above 50 spins forever:
only the full verification's wide-valued case does. A test that interrupts round 1's verification
uses it: whenever the interrupt comes, that candidate is still running (until its time limit), so
no race decides."""

import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def add_kernel(out_ptr, x_ptr, y_ptr, n, BLOCK_SIZE: tl.constexpr):
    offs = tl.program_id(0) * BLOCK_SIZE + tl.arange(0, BLOCK_SIZE)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask, other=0.0)
    y = tl.load(y_ptr + offs, mask=mask, other=0.0)
    spin = 0
    if BLOCK_SIZE == 128:
        spin = (tl.max(x, axis=0) > 50.0).to(tl.int32)
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
        add_kernel[(triton.cdiv(n, BLOCK_SIZE),)](out, x, y, n, BLOCK_SIZE=BLOCK_SIZE)
        return out
