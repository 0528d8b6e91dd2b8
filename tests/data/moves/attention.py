"""fp32 scaled dot-product attention (KernelBench's 97 in small: batch, heads, sequence, head dim)."""

import torch
import torch.nn as nn

batch, heads, sequence, dim = 2, 4, 256, 64


class Model(nn.Module):
    def __init__(self) -> None:
        super().__init__()

    def forward(self, Q: torch.Tensor, K: torch.Tensor, V: torch.Tensor) -> torch.Tensor:
        return torch.nn.functional.scaled_dot_product_attention(Q, K, V)


def get_inputs():
    return [torch.rand(batch, heads, sequence, dim) for _ in range(3)]


def get_init_inputs():
    return []
