"""fp32 torch.matmul of a 3-D A and a 2-D B (A's leading dims are rows), small and not a multiple of any tile
(a move's tiny test problem)."""

import torch
import torch.nn as nn

N, M, K, L = 2, 12, 20, 9


class Model(nn.Module):
    def __init__(self) -> None:
        super().__init__()

    def forward(self, A: torch.Tensor, B: torch.Tensor) -> torch.Tensor:
        return torch.matmul(A, B)


def get_inputs():
    return [torch.randn(N, M, K), torch.randn(K, L)]


def get_init_inputs():
    return []
