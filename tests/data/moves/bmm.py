"""fp32 batched matmul with B entering transposed, small and not a multiple of any tile (a move's tiny test problem)."""

import torch
import torch.nn as nn

BATCH, M, K, N = 3, 20, 36, 12


class Model(nn.Module):
    def __init__(self) -> None:
        super().__init__()

    def forward(self, A: torch.Tensor, B: torch.Tensor) -> torch.Tensor:
        return torch.bmm(A, B.transpose(1, 2))


def get_inputs():
    return [torch.randn(BATCH, M, K), torch.randn(BATCH, N, K)]


def get_init_inputs():
    return []
