"""KernelBench level 2 problem 45: Linear (2048 -> 4096), sigmoid, Linear (4096 -> 1024), logsumexp
over the features, on a (16384, 2048) fp32 input (134 MB); the output is (16384,)."""

import torch
import torch.nn as nn


class Model(nn.Module):
    """Linear, sigmoid, Linear, logsumexp over dim 1."""

    def __init__(self, input_size, hidden_size, output_size):
        super().__init__()
        self.linear1 = nn.Linear(input_size, hidden_size)
        self.linear2 = nn.Linear(hidden_size, output_size)

    def forward(self, x):
        x = self.linear1(x)
        x = torch.sigmoid(x)
        x = self.linear2(x)
        x = torch.logsumexp(x, dim=1)
        return x


batch_size = 16384
input_size = 2048
hidden_size = 4096
output_size = 1024


def get_inputs():
    return [torch.rand(batch_size, input_size)]


def get_init_inputs():
    return [input_size, hidden_size, output_size]
