"""KernelBench level 1 problem 8: C = A @ B with irregular sizes, A (8205, 2949) and B (2949, 5921)
fp32 (167 MB of inputs), C (8205, 5921) (194 MB)."""

import torch
import torch.nn as nn


class Model(nn.Module):
    """torch.matmul of A (M, K) and B (K, N), no size a multiple of a block."""

    def __init__(self):
        super(Model, self).__init__()

    def forward(self, A: torch.Tensor, B: torch.Tensor) -> torch.Tensor:
        return torch.matmul(A, B)


M = 8205
K = 2949
N = 5921


def get_inputs():
    A = torch.rand(M, K)
    B = torch.rand(K, N)
    return [A, B]


def get_init_inputs():
    return []
