"""KernelBench level 1 problem 24: log-softmax over dim 1 of a (4096, 393216) fp32 input (6.4 GB)."""

import torch
import torch.nn as nn


class Model(nn.Module):
    """Log-softmax over one dimension (dim 1 by default)."""

    def __init__(self, dim: int = 1):
        super(Model, self).__init__()
        self.dim = dim

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.log_softmax(x, dim=self.dim)


batch_size = 4096
dim = 393216


def get_inputs():
    x = torch.rand(batch_size, dim)
    return [x]


def get_init_inputs():
    return []
