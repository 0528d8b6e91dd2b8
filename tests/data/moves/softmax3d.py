"""Softmax over dim 1 of a small 3-D input: rows strided by the last dim (a move's tiny test problem)."""

import torch
import torch.nn as nn

batch, features, width = 3, 37, 5


class Model(nn.Module):
    def __init__(self, dim: int) -> None:
        super().__init__()
        self.dim = dim

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.softmax(x, dim=self.dim)


def get_inputs():
    return [torch.randn(batch, features, width) * 5]


def get_init_inputs():
    return [1]
