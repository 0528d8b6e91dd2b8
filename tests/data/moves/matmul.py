"""fp32 matmul of plain operands, small and not a multiple of any tile (a move's tiny test problem)."""

import torch
import torch.nn as nn

M, K, N = 40, 72, 24


class Model(nn.Module):
    def __init__(self) -> None:
        super().__init__()

    def forward(self, A: torch.Tensor, B: torch.Tensor) -> torch.Tensor:
        return torch.matmul(A, B)


def get_inputs():
    return [torch.randn(M, K), torch.randn(K, N)]


def get_init_inputs():
    return []
