"""Max pooling 3-D with stride, padding and dilation on a small odd-sized input (a tiny test problem)."""

import torch
import torch.nn as nn

batch, channels, depth, height, width = 1, 3, 9, 11, 13


class Model(nn.Module):
    def __init__(self, kernel_size: int, stride: int, padding: int, dilation: int) -> None:
        super().__init__()
        self.pool = nn.MaxPool3d(kernel_size=kernel_size, stride=stride, padding=padding, dilation=dilation)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.pool(x)


def get_inputs():
    return [torch.randn(batch, channels, depth, height, width)]


def get_init_inputs():
    return [3, 2, 1, 2]
