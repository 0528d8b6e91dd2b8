"""A 3x3x3 convolution, then Mish and tanh, fp32 (KernelBench level 2's Conv3d_Mish_Tanh, small): with dynamic shapes
the compiler's in-place kernel loads the convolution's output twice, at two spellings of one offset
(`max(1, ks7 - 2)` and `max(1, ks0)` where the launch passes ks0 = ks7 - 2)."""

import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    def __init__(self, in_channels: int, out_channels: int) -> None:
        super().__init__()
        self.conv = nn.Conv3d(in_channels, out_channels, 3)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.tanh(F.mish(self.conv(x)))


def get_inputs():
    return [torch.randn(1, 3, 4, 5, 6)]


def get_init_inputs():
    return [3, 16]
