"""KernelBench level 2 problem 14: x @ W.T (8192 -> 8192), halved, summed over the features and scaled
by 1.5, on a (1024, 8192) fp32 input (34 MB; W is 268 MB); the output is (1024, 1)."""

import torch
import torch.nn as nn


class Model(nn.Module):
    """Matmul with a weight, divide by 2, sum over dim 1 (keepdim), scale."""

    def __init__(self, input_size, hidden_size, scaling_factor):
        super().__init__()
        self.weight = nn.Parameter(torch.randn(hidden_size, input_size))
        self.scaling_factor = scaling_factor

    def forward(self, x):
        x = torch.matmul(x, self.weight.T)
        x = x / 2
        x = torch.sum(x, dim=1, keepdim=True)
        x = x * self.scaling_factor
        return x


batch_size = 1024
input_size = 8192
hidden_size = 8192
scaling_factor = 1.5


def get_inputs():
    return [torch.rand(batch_size, input_size)]


def get_init_inputs():
    return [input_size, hidden_size, scaling_factor]
