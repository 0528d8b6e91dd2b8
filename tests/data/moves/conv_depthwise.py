"""A depthwise 2-D convolution with two output channels an input channel, strided, padded and dilated, with a bias
(a small KernelBench-style level-1 problem)."""

import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self, channels, kernel_size, bias=True):
        super().__init__()
        self.conv2d = nn.Conv2d(channels, 2 * channels, (kernel_size, kernel_size + 2), stride=(1, 2),
                                padding=(1, 2), dilation=(2, 1), groups=channels, bias=bias)

    def forward(self, x):
        return self.conv2d(x)


batch_size = 2
channels = 3
height = 13
width = 21


def get_inputs():
    return [torch.rand(batch_size, channels, height, width)]


def get_init_inputs():
    return [channels, 3]
