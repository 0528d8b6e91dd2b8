"""KernelBench level 2 problem 1: Conv2d (64 -> 128 channels, 3 x 3), ReLU, plus a (128, 1, 1) bias, on
a (128, 64, 128, 128) fp32 input (537 MB); the output is (128, 128, 126, 126) (1.04 GB)."""

import torch
import torch.nn as nn


class Model(nn.Module):
    """Conv2d, ReLU, then a per-channel bias added."""

    def __init__(self, in_channels, out_channels, kernel_size, bias_shape):
        super().__init__()
        self.conv = nn.Conv2d(in_channels, out_channels, kernel_size)
        self.bias = nn.Parameter(torch.randn(bias_shape))

    def forward(self, x):
        x = self.conv(x)
        x = torch.relu(x)
        x = x + self.bias
        return x


batch_size = 128
in_channels = 64
out_channels = 128
height = width = 128
kernel_size = 3
bias_shape = (out_channels, 1, 1)


def get_inputs():
    return [torch.rand(batch_size, in_channels, height, width)]


def get_init_inputs():
    return [in_channels, out_channels, kernel_size, bias_shape]
