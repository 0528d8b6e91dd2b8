"""A transposed 4x4 convolution of stride 2, a softmax over its output channels, a bias and a sigmoid, fp32
(KernelBench level 2's ConvTranspose2d_Softmax_BiasAdd_Scaling_Sigmoid, small): each output position's channels are
one row of the softmax."""

import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self, in_channels: int, out_channels: int) -> None:
        super().__init__()
        self.conv = nn.ConvTranspose2d(in_channels, out_channels, 4, stride=2, padding=1, output_padding=1)
        self.bias = nn.Parameter(torch.randn(out_channels, 1, 1))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = torch.softmax(self.conv(x), dim=1)
        return torch.sigmoid((x + self.bias) * 2.0)


def get_inputs():
    return [torch.randn(1, 6, 3, 4)]


def get_init_inputs():
    return [6, 20]
