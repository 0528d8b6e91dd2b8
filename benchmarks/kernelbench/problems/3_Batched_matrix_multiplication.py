"""KernelBench level 1 problem 3: batched C = A @ B with A (128, 512, 1024) and B (128, 1024, 2048)
fp32 (1.34 GB of inputs), C (128, 512, 2048) (537 MB)."""

import torch
import torch.nn as nn


class Model(nn.Module):
    """torch.bmm of two batches of matrices."""

    def __init__(self):
        super(Model, self).__init__()

    def forward(self, A: torch.Tensor, B: torch.Tensor) -> torch.Tensor:
        return torch.bmm(A, B)


batch_size = 128
m = 128 * 4
k = 256 * 4
n = 512 * 4


def get_inputs():
    A = torch.rand(batch_size, m, k)
    B = torch.rand(batch_size, k, n)
    return [A, B]


def get_init_inputs():
    return []
