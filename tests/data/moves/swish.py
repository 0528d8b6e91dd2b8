"""Swish on a small input of an odd size (a move's tiny test problem)."""

import torch
import torch.nn as nn

size = 1000


class Model(nn.Module):
    def __init__(self) -> None:
        super().__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x * torch.sigmoid(x)


def get_inputs():
    return [torch.randn(3, size) * 4]


def get_init_inputs():
    return []
