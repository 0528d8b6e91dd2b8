"""A cumulative product along the last dim of a 3-D input, small and not a multiple of any block (a move's tiny test
problem); values near 1, so that the products stay far from 0 and inf."""

import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self) -> None:
        super().__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.cumprod(x, dim=-1)


def get_inputs():
    return [1 + 0.01 * torch.randn(3, 5, 130)]


def get_init_inputs():
    return []
