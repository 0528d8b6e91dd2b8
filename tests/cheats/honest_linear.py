"""Honest: linear layer using nn.Linear's weights only. Problem: problem_linear."""

import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def linear_kernel(x_ptr, w_ptr, b_ptr, out_ptr, K, N, BLOCK_K: tl.constexpr):
    # One program per output element (row, col): a dot product over K plus the bias.
    row = tl.program_id(0)
    col = tl.program_id(1)
    ks = tl.arange(0, BLOCK_K)
    mask = ks < K
    x = tl.load(x_ptr + row * K + ks, mask=mask, other=0.0)
    w = tl.load(w_ptr + col * K + ks, mask=mask, other=0.0)
    acc = tl.sum(x * w, axis=0) + tl.load(b_ptr + col)
    tl.store(out_ptr + row * N + col, acc)


class ModelNew(nn.Module):
    def __init__(self, in_features: int, out_features: int) -> None:
        super().__init__()
        # Same parameters (and initialisation) as the reference; forward never calls the layer.
        self.linear = nn.Linear(in_features, out_features)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = x.contiguous()
        M, K = x.shape
        N = self.linear.weight.shape[0]
        out = torch.empty((M, N), device=x.device, dtype=x.dtype)
        linear_kernel[(M, N)](x, self.linear.weight, self.linear.bias, out, K, N,
                              BLOCK_K=triton.next_power_of_2(K))
        return out
