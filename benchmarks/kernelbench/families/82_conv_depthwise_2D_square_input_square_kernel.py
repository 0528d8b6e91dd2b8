"""KernelBench level 1 problem 82: a depthwise nn.Conv2d(64, 64, 3, groups=64) over an fp32 (16, 64, 512, 512) input
(1.07 GB in, 1.06 GB out, 4.8 GFLOP): the convolution family where each output channel reads one input channel."""

import torch
import torch.nn as nn


class Model(nn.Module):
    """A depthwise 2-D convolution with a square kernel."""

    def __init__(self, in_channels: int, kernel_size: int, stride: int = 1, padding: int = 0, bias: bool = False):
        super().__init__()
        self.conv2d = nn.Conv2d(in_channels, in_channels, kernel_size, stride=stride, padding=padding,
                                groups=in_channels, bias=bias)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.conv2d(x)


batch_size = 16
in_channels = 64
kernel_size = 3
width = 512
height = 512
stride = 1
padding = 0


def get_inputs():
    return [torch.rand(batch_size, in_channels, height, width)]


def get_init_inputs():
    return [in_channels, kernel_size, stride, padding]
