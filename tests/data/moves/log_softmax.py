"""Log-softmax over the last dim of a small 2-D input (a move's tiny test problem)."""

import torch
import torch.nn as nn

rows, dim = 6, 100


class Model(nn.Module):
    def __init__(self) -> None:
        super().__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.log_softmax(x, dim=1)


def get_inputs():
    return [torch.randn(rows, dim) * 3]


def get_init_inputs():
    return []
