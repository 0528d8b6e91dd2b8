"""KernelBench level 1 problem 17: C = A @ B.T with A (2048, 8192) and B (4096, 8192) fp32 (201 MB of
inputs), C (2048, 4096) (34 MB)."""

import torch
import torch.nn as nn


class Model(nn.Module):
    """torch.matmul of A (M, K) and the transpose of B (N, K)."""

    def __init__(self):
        super(Model, self).__init__()

    def forward(self, A: torch.Tensor, B: torch.Tensor) -> torch.Tensor:
        return torch.matmul(A, B.T)


M = 1024 * 2
K = 4096 * 2
N = 2048 * 2


def get_inputs():
    A = torch.rand(M, K)
    B = torch.rand(N, K)
    return [A, B]


def get_init_inputs():
    return []
