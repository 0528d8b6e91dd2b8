"""KernelBench level 1 problem 86: a depthwise-separable convolution, a depthwise nn.Conv2d(64, 64, 3, padding=1,
groups=64) then a pointwise nn.Conv2d(64, 128, 1), over an fp32 (16, 64, 512, 512) input (1.07 GB in, 2.1 GB out,
73 GFLOP): the stencil and a 1 x 1 convolution (a GEMM of K = 64) in one problem."""

import torch
import torch.nn as nn


class Model(nn.Module):
    """A depthwise-separable 2-D convolution."""

    def __init__(self, in_channels: int, out_channels: int, kernel_size: int, stride: int = 1, padding: int = 0,
                 dilation: int = 1, bias: bool = False):
        super().__init__()
        self.depthwise = nn.Conv2d(in_channels, in_channels, kernel_size, stride=stride, padding=padding,
                                   dilation=dilation, groups=in_channels, bias=bias)
        self.pointwise = nn.Conv2d(in_channels, out_channels, kernel_size=1, bias=bias)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.pointwise(self.depthwise(x))


batch_size = 16
in_channels = 64
out_channels = 128
kernel_size = 3
width = 512
height = 512
stride = 1
padding = 1
dilation = 1


def get_inputs():
    return [torch.rand(batch_size, in_channels, height, width)]


def get_init_inputs():
    return [in_channels, out_channels, kernel_size, stride, padding, dilation]
