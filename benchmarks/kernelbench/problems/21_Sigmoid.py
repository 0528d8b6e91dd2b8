"""KernelBench level 1 problem 21: sigmoid of a (4096, 393216) fp32 input (6.4 GB)."""

import torch
import torch.nn as nn


class Model(nn.Module):
    """torch.sigmoid."""

    def __init__(self):
        super(Model, self).__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.sigmoid(x)


batch_size = 4096
dim = 393216


def get_inputs():
    x = torch.rand(batch_size, dim)
    return [x]


def get_init_inputs():
    return []
