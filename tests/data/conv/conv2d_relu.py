"""A 3x3 convolution with ReLU, fp32: on a GPU PyTorch's defaults run it in cuDNN at TF32."""

import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self, in_channels: int, out_channels: int) -> None:
        super().__init__()
        self.conv = nn.Conv2d(in_channels, out_channels, 3)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.relu(self.conv(x))


def get_inputs():
    return [torch.randn(16, 64, 64, 64)]


def get_init_inputs():
    return [64, 128]
