"""Average pooling 2-D with stride and padding, the padding left out of each average
(count_include_pad=False), on a small odd-sized input (a tiny test problem)."""

import torch
import torch.nn as nn

batch, channels, height, width = 2, 3, 11, 14


class Model(nn.Module):
    def __init__(self, kernel_size: int, stride: int, padding: int) -> None:
        super().__init__()
        self.pool = nn.AvgPool2d(kernel_size=kernel_size, stride=stride, padding=padding, count_include_pad=False)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.pool(x)


def get_inputs():
    return [torch.randn(batch, channels, height, width)]


def get_init_inputs():
    return [3, 2, 1]
