"""KernelBench level 1 problem 9: C = A @ B with A (32768, 32) and B (32, 32768) fp32: K is 32, so the
(32768, 32768) output (4.3 GB) dominates; inputs are 8 MB."""

import torch
import torch.nn as nn


class Model(nn.Module):
    """One matrix product of a tall-skinny A and a short-wide B."""

    def __init__(self):
        super(Model, self).__init__()

    def forward(self, A, B):
        return torch.matmul(A, B)


M = 16384 * 2
N = 16 * 2


def get_inputs():
    A = torch.rand(M, N)
    B = torch.rand(N, M)
    return [A, B]


def get_init_inputs():
    return []
