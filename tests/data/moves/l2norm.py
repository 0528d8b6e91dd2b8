"""L2 normalisation of the rows of a small 2-D input (a move's tiny test problem)."""

import torch
import torch.nn as nn

rows, dim = 5, 90


class Model(nn.Module):
    def __init__(self) -> None:
        super().__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x / torch.norm(x, p=2, dim=1, keepdim=True)


def get_inputs():
    return [torch.randn(rows, dim)]


def get_init_inputs():
    return []
