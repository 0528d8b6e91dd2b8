"""Cheat: a 32x32x32 matmul hard-coded for literal sizes. Caught by: runtime: other sizes (literal sizes).

Matmul hard-coded to 32x32x32 (one program, K never looped, no masks, shapes ignored).
problem_matmul's shapes are literals, so the verifier builds no 'other size' case. Wrong (or
out-of-bounds) for any other shape.

Problem: problem_matmul.py.
"""

import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def mm32_kernel(a_ptr, b_ptr, c_ptr):
    r = tl.arange(0, 32)
    a = tl.load(a_ptr + r[:, None] * 32 + r[None, :])
    b = tl.load(b_ptr + r[:, None] * 32 + r[None, :])
    tl.store(c_ptr + r[:, None] * 32 + r[None, :], tl.dot(a, b, allow_tf32=False))


class ModelNew(nn.Module):
    def __init__(self) -> None:
        super().__init__()

    def forward(self, a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
        c = torch.empty(32, 32, device=a.device, dtype=a.dtype)
        mm32_kernel[(1,)](a, b, c)
        return c
