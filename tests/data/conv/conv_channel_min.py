"""A 3x3 convolution, the minimum over its output channels and two tanh, fp32 (KernelBench level 2's
Conv2d_Min_Tanh_Tanh, small: 3 input and 20 output channels): the compiler reduces the convolution's output over its
channels in one persistent reduction kernel, each output position a row of as many values as channels."""

import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self, in_channels: int, out_channels: int) -> None:
        super().__init__()
        self.conv = nn.Conv2d(in_channels, out_channels, 3)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = torch.min(self.conv(x), dim=1, keepdim=True)[0]
        return torch.tanh(torch.tanh(x))


def get_inputs():
    return [torch.randn(1, 3, 6, 7)]


def get_init_inputs():
    return [3, 20]
