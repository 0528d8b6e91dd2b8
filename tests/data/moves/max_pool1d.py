"""Max pooling 1-D at stride 1 with padding and dilation on a small odd-sized input (a tiny test problem)."""

import torch
import torch.nn as nn

batch, channels, length = 2, 3, 41


class Model(nn.Module):
    def __init__(self, kernel_size: int, stride: int, padding: int, dilation: int) -> None:
        super().__init__()
        self.pool = nn.MaxPool1d(kernel_size=kernel_size, stride=stride, padding=padding, dilation=dilation)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.pool(x)


def get_inputs():
    return [torch.randn(batch, channels, length)]


def get_init_inputs():
    return [4, 1, 2, 3]
