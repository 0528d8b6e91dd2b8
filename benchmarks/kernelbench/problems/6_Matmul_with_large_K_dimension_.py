"""KernelBench level 1 problem 6: C = A @ B with a large K: A (256, 524288) and B (524288, 256) fp32
(1.07 GB of inputs), C (256, 256) (262 KB)."""

import torch
import torch.nn as nn


class Model(nn.Module):
    """torch.matmul of A (M, K) and B (K, N), K far larger than M and N."""

    def __init__(self):
        super(Model, self).__init__()

    def forward(self, A: torch.Tensor, B: torch.Tensor) -> torch.Tensor:
        return torch.matmul(A, B)


M = 256
N = 256
K = 131072 * 4


def get_inputs():
    A = torch.rand(M, K)
    B = torch.rand(K, N)
    return [A, B]


def get_init_inputs():
    return []
