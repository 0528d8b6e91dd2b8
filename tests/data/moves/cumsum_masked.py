"""A cumulative sum along the last dim of x times a boolean mask, written as KernelBench writes it, small and not a
multiple of any block (a move's tiny test problem)."""

import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self, dim: int) -> None:
        super().__init__()
        self.dim = dim

    def forward(self, x: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
        return torch.cumsum(x * mask, dim=self.dim)


def get_inputs():
    x = torch.randn(9, 200)
    return [x, torch.randint(0, 2, x.shape).bool()]


def get_init_inputs():
    return [1]
