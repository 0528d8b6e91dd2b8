"""Honest broadcasting add: torch.broadcast_shapes + expand give stride-0 views; 3-D strided
kernel.

Problem: problem_bcast_add.py.
"""
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def bcast_add_kernel(x_ptr, y_ptr, o_ptr, D0, D1, D2,
                     sx0, sx1, sx2, sy0, sy1, sy2, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < D0 * D1 * D2
    i2 = offs % D2
    i1 = (offs // D2) % D1
    i0 = offs // (D1 * D2)
    x = tl.load(x_ptr + i0 * sx0 + i1 * sx1 + i2 * sx2, mask=mask)
    y = tl.load(y_ptr + i0 * sy0 + i1 * sy1 + i2 * sy2, mask=mask)
    tl.store(o_ptr + offs, x + y, mask=mask)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x, y):
        shape = torch.broadcast_shapes(x.shape, y.shape)
        assert len(shape) == 3, f"this kernel handles 3-D broadcasts, got {shape}"
        xb = x.expand(shape)
        yb = y.expand(shape)
        out = torch.empty(shape, device=x.device, dtype=x.dtype)
        n = out.numel()
        BLOCK = 1024
        bcast_add_kernel[(triton.cdiv(n, BLOCK),)](xb, yb, out, shape[0], shape[1], shape[2],
                                                   *xb.stride(), *yb.stride(), BLOCK=BLOCK)
        return out
