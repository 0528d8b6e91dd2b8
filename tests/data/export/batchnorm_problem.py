"""Batch norm over channels in training mode (state: weight, bias and three buffers)."""

import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self, channels: int) -> None:
        super().__init__()
        self.bn = nn.BatchNorm1d(channels)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.bn(x)


def get_inputs():
    return [torch.randn(16, 8)]


def get_init_inputs():
    return [8]
