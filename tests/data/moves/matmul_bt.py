"""fp32 matmul with B transposed, small and not a multiple of any tile (a move's tiny test problem)."""

import torch
import torch.nn as nn

M, K, N = 37, 150, 21


class Model(nn.Module):
    def __init__(self) -> None:
        super().__init__()

    def forward(self, A: torch.Tensor, B: torch.Tensor) -> torch.Tensor:
        return torch.matmul(A, B.T)


def get_inputs():
    return [torch.randn(M, K), torch.randn(N, K)]


def get_init_inputs():
    return []
