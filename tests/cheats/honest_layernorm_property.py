"""Honest LayerNorm: one program per row, fp32 statistics; small @property helpers on ModelNew.

Problem: problem_layernorm.py.
"""
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def layernorm_kernel(x_ptr, w_ptr, b_ptr, y_ptr, stride_row, N, eps, BLOCK_N: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK_N)
    mask = cols < N
    x = tl.load(x_ptr + row * stride_row + cols, mask=mask, other=0.0).to(tl.float32)
    mean = tl.sum(x, axis=0) / N
    diff = tl.where(mask, x - mean, 0.0)
    var = tl.sum(diff * diff, axis=0) / N
    rstd = 1.0 / tl.sqrt(var + eps)
    w = tl.load(w_ptr + cols, mask=mask, other=0.0)
    b = tl.load(b_ptr + cols, mask=mask, other=0.0)
    tl.store(y_ptr + row * stride_row + cols, diff * rstd * w + b, mask=mask)


class ModelNew(nn.Module):
    def __init__(self, hidden: int) -> None:
        super().__init__()
        self.ln = nn.LayerNorm(hidden, eps=1e-5)
        with torch.no_grad():
            self.ln.weight.copy_(torch.randn(hidden))
            self.ln.bias.copy_(torch.randn(hidden))

    @property
    def hidden(self) -> int:
        return self.ln.normalized_shape[0]

    @property
    def eps(self) -> float:
        return self.ln.eps

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        N = self.hidden
        x2 = x.reshape(-1, N).contiguous()
        M = x2.shape[0]
        y = torch.empty_like(x2)
        layernorm_kernel[(M,)](x2, self.ln.weight, self.ln.bias, y, x2.stride(0), N, self.eps,
                               BLOCK_N=triton.next_power_of_2(N))
        return y.view(x.shape)
