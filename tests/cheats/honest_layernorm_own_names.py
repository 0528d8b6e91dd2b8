"""Honest: a LayerNorm whose weight and bias live under names of its own. Problem: problem_layernorm_default.

Applies its affine; the parameters case cannot find Model's names in it, so it is not run on that
case, and the verdict says so.
"""

import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def layernorm_kernel(x_ptr, w_ptr, b_ptr, y_ptr, stride, N, eps, BLOCK_N: tl.constexpr):
    # One program per row: mean and variance of N values, then the affine.
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK_N)
    mask = cols < N
    x = tl.load(x_ptr + row * stride + cols, mask=mask, other=0.0).to(tl.float32)
    mean = tl.sum(x, axis=0) / N
    d = tl.where(mask, x - mean, 0.0)
    rstd = 1.0 / tl.sqrt(tl.sum(d * d, axis=0) / N + eps)
    w = tl.load(w_ptr + cols, mask=mask, other=0.0)
    b = tl.load(b_ptr + cols, mask=mask, other=0.0)
    tl.store(y_ptr + row * stride + cols, d * rstd * w + b, mask=mask)


class ModelNew(nn.Module):
    def __init__(self, hidden: int) -> None:
        super().__init__()
        self.gamma = nn.Parameter(torch.ones(hidden))
        self.beta = nn.Parameter(torch.zeros(hidden))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        n = self.gamma.shape[0]
        x2 = x.reshape(-1, n).contiguous()
        y = torch.empty_like(x2)
        layernorm_kernel[(x2.shape[0],)](x2, self.gamma, self.beta, y, x2.stride(0), n, 1e-5,
                                         BLOCK_N=triton.next_power_of_2(n))
        return y.view(x.shape)
