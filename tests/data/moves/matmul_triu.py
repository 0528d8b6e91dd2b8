"""fp32 torch.triu of A @ B (KernelBench's product of triangular matrices, with A and B of any values: their
being triangular is data, not the reference's work), small, not square, and not a multiple of any tile."""

import torch
import torch.nn as nn

M, K, N = 37, 29, 45


class Model(nn.Module):
    def __init__(self) -> None:
        super().__init__()

    def forward(self, A: torch.Tensor, B: torch.Tensor) -> torch.Tensor:
        return torch.triu(torch.matmul(A, B), diagonal=1)


def get_inputs():
    return [torch.randn(M, K), torch.randn(K, N)]


def get_init_inputs():
    return []
