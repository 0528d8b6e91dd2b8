"""KernelBench level 1 problem 55: nn.Conv2d(64, 128, 3) over an fp32 (8, 64, 512, 1024) input (1.07 GB in, 2.1 GB
out, 615 GFLOP): the convolution family in 2-D."""

import torch
import torch.nn as nn


class Model(nn.Module):
    """A 2-D convolution with a square kernel over an asymmetric input."""

    def __init__(self, in_channels: int, out_channels: int, kernel_size: int, stride: int = 1, padding: int = 0,
                 dilation: int = 1, groups: int = 1, bias: bool = False):
        super().__init__()
        self.conv2d = nn.Conv2d(in_channels, out_channels, (kernel_size, kernel_size), stride=stride, padding=padding,
                                dilation=dilation, groups=groups, bias=bias)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.conv2d(x)


batch_size = 8
height = 512
width = 1024
in_channels = 64
out_channels = 128
kernel_size = 3


def get_inputs():
    return [torch.rand(batch_size, in_channels, height, width)]


def get_init_inputs():
    return [in_channels, out_channels, kernel_size]
