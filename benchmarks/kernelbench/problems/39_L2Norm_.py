"""KernelBench level 1 problem 39: x divided by the L2 norm of its row, over a (32768, 65535) fp32
input (8.6 GB; the element count stays just under 2**31)."""

import torch
import torch.nn as nn


class Model(nn.Module):
    """x / ||x||_2 over dim 1, keepdim."""

    def __init__(self):
        super(Model, self).__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x / torch.norm(x, p=2, dim=1, keepdim=True)


batch_size = 32768
dim = 65535


def get_inputs():
    x = torch.rand(batch_size, dim)
    return [x]


def get_init_inputs():
    return []
