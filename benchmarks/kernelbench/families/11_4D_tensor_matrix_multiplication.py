"""KernelBench level 1 problem 11: torch.einsum("bijl,lk->bijk") of an fp32 (8, 256, 512, 256) A and a (256, 768) B
(1.1 GB in, 3.2 GB out): the matmul family read from where einsum's operands lie."""

import torch
import torch.nn as nn


class Model(nn.Module):
    """4-D tensor-matrix multiplication: C[b, i, j, k] = sum over l of A[b, i, j, l] * B[l, k]."""

    def __init__(self):
        super().__init__()

    def forward(self, A, B):
        return torch.einsum("bijl,lk->bijk", A, B)


b = 8
i = 256
j = 512
l = 256  # noqa: E741 - KernelBench's name
k = 768


def get_inputs():
    A = torch.rand(b, i, j, l)
    B = torch.rand(l, k)
    return [A, B]


def get_init_inputs():
    return []
