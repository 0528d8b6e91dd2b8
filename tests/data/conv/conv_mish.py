"""A 3x3 convolution with Mish applied twice, fp32 (KernelBench level 2's Conv2d_Mish_Mish, small): on a CPU the
compiler lays the convolution's output channels last and applies the first Mish in place, under a new name."""

import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    def __init__(self, in_channels: int, out_channels: int) -> None:
        super().__init__()
        self.conv = nn.Conv2d(in_channels, out_channels, 3)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return F.mish(F.mish(self.conv(x)))


def get_inputs():
    return [torch.randn(2, 5, 9, 11)]


def get_init_inputs():
    return [5, 12]
