"""A grouped, strided, dilated 2-D convolution with a bias (a small KernelBench-style level-1 problem)."""

import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self, in_channels, out_channels, kernel_size, groups=1, bias=False):
        super().__init__()
        self.conv2d = nn.Conv2d(in_channels, out_channels, (kernel_size, kernel_size), stride=(2, 1), padding=1,
                                dilation=(1, 2), groups=groups, bias=bias)

    def forward(self, x):
        return self.conv2d(x)


batch_size = 2
in_channels = 4
out_channels = 6
height = 9
width = 11


def get_inputs():
    return [torch.rand(batch_size, in_channels, height, width)]


def get_init_inputs():
    return [in_channels, out_channels, 3, 2, True]
