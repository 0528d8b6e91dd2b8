"""A 1 x 1 2-D convolution with a bias (a small KernelBench-style level-1 problem, as 87's pointwise convolution)."""

import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self, in_channels, out_channels, bias=False):
        super().__init__()
        self.conv1d = nn.Conv2d(in_channels, out_channels, kernel_size=1, stride=1, padding=0, bias=bias)

    def forward(self, x):
        return self.conv1d(x)


batch_size = 2
in_channels = 24
out_channels = 40
height = 8
width = 9


def get_inputs():
    return [torch.rand(batch_size, in_channels, height, width)]


def get_init_inputs():
    return [in_channels, out_channels, True]
