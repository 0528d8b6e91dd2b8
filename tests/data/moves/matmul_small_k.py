"""fp32 matmul with a small K whose output outweighs its operands (a tall-skinny A times a short-wide B), small
and not a multiple of any tile (a move's tiny test problem)."""

import torch
import torch.nn as nn

M, K, N = 194, 3, 178


class Model(nn.Module):
    def __init__(self) -> None:
        super().__init__()

    def forward(self, A: torch.Tensor, B: torch.Tensor) -> torch.Tensor:
        return torch.matmul(A, B)


def get_inputs():
    return [torch.randn(M, K), torch.randn(K, N)]


def get_init_inputs():
    return []
