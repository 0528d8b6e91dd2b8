"""Cheat: a LayerNorm that leaves out its weight and bias. Caught by: runtime: parameters case.

nn.LayerNorm starts with weight 1 and bias 0, so on the problem's own parameters the outputs are
right without them: no other case can tell. The parameters case draws them from its seed in the
reference and in ModelNew (found by name), and the outputs differ.

Problem: problem_layernorm_default.py.
"""

import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def layernorm_kernel(x_ptr, y_ptr, stride, N, eps, BLOCK_N: tl.constexpr):
    # One program per row: mean and variance of N values, then (x - mean) * rstd, no affine.
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK_N)
    mask = cols < N
    x = tl.load(x_ptr + row * stride + cols, mask=mask, other=0.0).to(tl.float32)
    mean = tl.sum(x, axis=0) / N
    d = tl.where(mask, x - mean, 0.0)
    rstd = 1.0 / tl.sqrt(tl.sum(d * d, axis=0) / N + eps)
    tl.store(y_ptr + row * stride + cols, d * rstd, mask=mask)


class ModelNew(nn.Module):
    def __init__(self, hidden: int) -> None:
        super().__init__()
        self.ln = nn.LayerNorm(hidden, eps=1e-5)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        n = self.ln.normalized_shape[0]
        x2 = x.reshape(-1, n).contiguous()
        y = torch.empty_like(x2)
        layernorm_kernel[(x2.shape[0],)](x2, y, x2.stride(0), n, self.ln.eps, BLOCK_N=triton.next_power_of_2(n))
        return y.view(x.shape)
