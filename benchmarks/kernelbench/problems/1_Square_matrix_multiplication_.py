"""KernelBench level 1 problem 1: C = A @ B for square (4096, 4096) fp32 matrices (134 MB of inputs, a
67 MB output)."""

import torch
import torch.nn as nn


class Model(nn.Module):
    """torch.matmul of two square matrices."""

    def __init__(self):
        super(Model, self).__init__()

    def forward(self, A: torch.Tensor, B: torch.Tensor) -> torch.Tensor:
        return torch.matmul(A, B)


N = 2048 * 2


def get_inputs():
    A = torch.rand(N, N)
    B = torch.rand(N, N)
    return [A, B]


def get_init_inputs():
    return []
