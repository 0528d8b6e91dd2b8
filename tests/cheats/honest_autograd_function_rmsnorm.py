"""Honest RMSNorm wrapped in a torch.autograd.Function (the Liger/unsloth style). Problem: problem_rmsnorm.py."""
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def _rms_fwd(X, W, Y, stride, N, eps, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK)
    m = cols < N
    x = tl.load(X + row * stride + cols, mask=m, other=0.0).to(tl.float32)
    rstd = 1.0 / tl.sqrt(tl.sum(x * x, axis=0) / N + eps)
    w = tl.load(W + cols, mask=m, other=0.0)
    tl.store(Y + row * stride + cols, x * rstd * w, mask=m)


class RMSNormFunction(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x, weight, eps):
        shape = x.shape
        x2 = x.reshape(-1, shape[-1]).contiguous()
        n_rows, n_cols = x2.shape
        y = torch.empty_like(x2)
        _rms_fwd[(n_rows,)](x2, weight, y, x2.stride(0), n_cols, eps, BLOCK=triton.next_power_of_2(n_cols))
        ctx.save_for_backward(x2, weight)
        ctx.eps = eps
        return y.view(shape)

    @staticmethod
    def backward(ctx, dy):
        raise NotImplementedError("inference only")


class ModelNew(nn.Module):
    def __init__(self, hidden: int, eps: float = 1e-6) -> None:
        super().__init__()
        self.eps = eps
        self.weight = nn.Parameter(torch.randn(hidden))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return RMSNormFunction.apply(x, self.weight, self.eps)
