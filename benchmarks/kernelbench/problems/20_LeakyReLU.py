"""KernelBench level 1 problem 20: LeakyReLU (slope 0.01) of a (4096, 393216) fp32 input (6.4 GB)."""

import torch
import torch.nn as nn


class Model(nn.Module):
    """torch.nn.functional.leaky_relu with the given negative slope."""

    def __init__(self, negative_slope: float=0.01):
        super(Model, self).__init__()
        self.negative_slope = negative_slope

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.nn.functional.leaky_relu(x, negative_slope=self.negative_slope)


batch_size = 4096
dim = 393216


def get_inputs():
    x = torch.rand(batch_size, dim)
    return [x]


def get_init_inputs():
    return []
