"""KernelBench level 1 problem 47: sum over dim 1 (keepdim) of a (128, 4096, 4095) fp32 input
(8.6 GB) into a (128, 1, 4095) output."""

import torch
import torch.nn as nn


class Model(nn.Module):
    """Sum over one dimension, keeping it as size 1."""

    def __init__(self, dim: int):
        super(Model, self).__init__()
        self.dim = dim

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.sum(x, dim=self.dim, keepdim=True)


batch_size = 128
dim1 = 4096
dim2 = 4095
reduce_dim = 1


def get_inputs():
    x = torch.rand(batch_size, dim1, dim2)
    return [x]


def get_init_inputs():
    return [reduce_dim]
