"""Average pooling 3-D with stride and padding, the padding left out of the count, on a small odd-sized input
(a tiny test problem)."""

import torch
import torch.nn as nn

batch, channels, depth, height, width = 1, 3, 9, 11, 13


class Model(nn.Module):
    def __init__(self, kernel_size: int, stride: int, padding: int) -> None:
        super().__init__()
        self.pool = nn.AvgPool3d(kernel_size=kernel_size, stride=stride, padding=padding, count_include_pad=False)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.pool(x)


def get_inputs():
    return [torch.randn(batch, channels, depth, height, width)]


def get_init_inputs():
    return [3, 2, 1]
