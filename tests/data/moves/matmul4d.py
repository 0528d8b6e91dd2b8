"""fp32 torch.matmul of two 4-D inputs with the same leading dims, B entering transposed (attention's scores, Q @
K^T, per batch and head): a bmm over the leading dims viewed as one batch, small and not a multiple of any tile."""

import torch
import torch.nn as nn

BATCH, HEADS, M, K, N = 2, 3, 20, 36, 12


class Model(nn.Module):
    def __init__(self) -> None:
        super().__init__()

    def forward(self, A: torch.Tensor, B: torch.Tensor) -> torch.Tensor:
        return torch.matmul(A, B.transpose(-1, -2))


def get_inputs():
    return [torch.randn(BATCH, HEADS, M, K), torch.randn(BATCH, HEADS, N, K)]


def get_init_inputs():
    return []
