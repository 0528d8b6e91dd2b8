"""KernelBench level 1 problem 85: a depthwise nn.Conv2d(128, 128, (3, 7), groups=128) over an fp32 (32, 128, 128, 256)
input (0.54 GB in, 0.50 GB out, 7.7 GFLOP): the depthwise stencil with a kernel wider than it is tall."""

import torch
import torch.nn as nn


class Model(nn.Module):
    """A depthwise 2-D convolution with an asymmetric kernel."""

    def __init__(self, in_channels: int, out_channels: int, kernel_size_h: int, kernel_size_w: int, stride_h: int = 1,
                 stride_w: int = 1, padding_h: int = 0, padding_w: int = 0, dilation_h: int = 1, dilation_w: int = 1,
                 groups: int = 1, bias: bool = False):
        super().__init__()
        self.conv2d = nn.Conv2d(in_channels, in_channels, (kernel_size_h, kernel_size_w), stride=(stride_h, stride_w),
                                padding=(padding_h, padding_w), dilation=(dilation_h, dilation_w),
                                groups=in_channels, bias=bias)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.conv2d(x)


batch_size = 32
in_channels = 128
out_channels = 128
kernel_size_h = 3
kernel_size_w = 7
width = 256
height = 128
stride_h = 1
stride_w = 1
padding_h = 0
padding_w = 0
dilation_h = 1
dilation_w = 1
groups = in_channels


def get_inputs():
    return [torch.rand(batch_size, in_channels, height, width)]


def get_init_inputs():
    return [in_channels, out_channels, kernel_size_h, kernel_size_w, stride_h, stride_w, padding_h, padding_w,
            dilation_h, dilation_w, groups]
