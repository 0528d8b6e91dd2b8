"""A depthwise-separable 2-D convolution (KernelBench's 86 in small): a depthwise convolution of two output channels
an input channel (18 middle channels), strided along W, dilated along H, padded, then a 1 x 1 convolution to 20
channels, both biased."""

import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self, channels, out_channels, kernel_size):
        super().__init__()
        self.depthwise = nn.Conv2d(channels, 2 * channels, kernel_size, stride=(1, 2), padding=(2, 1), dilation=(2, 1),
                                   groups=channels, bias=True)
        self.pointwise = nn.Conv2d(2 * channels, out_channels, 1, bias=True)

    def forward(self, x):
        return self.pointwise(self.depthwise(x))


batch_size = 2
channels = 9
out_channels = 20
height = 6
width = 37


def get_inputs():
    return [torch.rand(batch_size, channels, height, width)]


def get_init_inputs():
    return [channels, out_channels, 3]
