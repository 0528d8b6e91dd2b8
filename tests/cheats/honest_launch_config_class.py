"""Honest row softmax (fp16) whose launch parameters come from a small helper class. Problem: problem_softmax16.py."""
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def softmax_kernel(x_ptr, y_ptr, stride, n_cols, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    offs = tl.arange(0, BLOCK)
    m = offs < n_cols
    x = tl.load(x_ptr + row * stride + offs, mask=m, other=-float("inf")).to(tl.float32)
    e = tl.exp(x - tl.max(x, axis=0))
    tl.store(y_ptr + row * stride + offs, (e / tl.sum(e, axis=0)).to(y_ptr.dtype.element_ty), mask=m)


class LaunchConfig:
    """Block size and warp count for rows of n_cols elements."""

    def __init__(self, n_cols):
        self.block = max(16, triton.next_power_of_2(n_cols))
        self.num_warps = 4 if n_cols <= 2048 else 8

    def grid(self, n_rows):
        return (n_rows,)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        x = x.contiguous()
        y = torch.empty_like(x)
        n_rows, n_cols = x.shape
        cfg = LaunchConfig(n_cols)
        softmax_kernel[cfg.grid(n_rows)](x, y, x.stride(0), n_cols, BLOCK=cfg.block, num_warps=cfg.num_warps)
        return y
