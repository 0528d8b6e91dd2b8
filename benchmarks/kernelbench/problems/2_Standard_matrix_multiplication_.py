"""KernelBench level 1 problem 2: C = A @ B with A (2048, 8192) and B (8192, 4096) fp32 (201 MB of
inputs), C (2048, 4096) (34 MB)."""

import torch
import torch.nn as nn


class Model(nn.Module):
    """torch.matmul of A (M, K) and B (K, N)."""

    def __init__(self):
        super(Model, self).__init__()

    def forward(self, A: torch.Tensor, B: torch.Tensor) -> torch.Tensor:
        return torch.matmul(A, B)


M = 1024 * 2
K = 4096 * 2
N = 2048 * 2


def get_inputs():
    A = torch.rand(M, K)
    B = torch.rand(K, N)
    return [A, B]


def get_init_inputs():
    return []
