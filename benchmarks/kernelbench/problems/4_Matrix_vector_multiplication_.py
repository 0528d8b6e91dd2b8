"""KernelBench level 1 problem 4: C = A @ B with A (2048, 1048576) fp32 and a column B (1048576, 1)
(8.6 GB of inputs, nearly all A), C (2048, 1)."""

import torch
import torch.nn as nn


class Model(nn.Module):
    """torch.matmul of a matrix and a column vector."""

    def __init__(self):
        super(Model, self).__init__()

    def forward(self, A: torch.Tensor, B: torch.Tensor) -> torch.Tensor:
        return torch.matmul(A, B)


M = 256 * 8
K = 131072 * 8


def get_inputs():
    A = torch.rand(M, K)
    B = torch.rand(K, 1)
    return [A, B]


def get_init_inputs():
    return []
