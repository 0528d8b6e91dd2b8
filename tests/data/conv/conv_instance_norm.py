"""A 3 x 3 convolution, then InstanceNorm (no affine), then a division by a number the module keeps: the
compiler leaves the convolution to cuDNN, and the normalisation takes each channel's mean away, so any rounding
of the convolution's (TF32's 1e-3) comes out scaled up. `self.divide_by` is lifted into the graph by some torch
versions and kept by the compiler, while the norm's momentum and eps are dropped again.
(32, 32, 128, 128) fp32 in, (32, 64, 126, 126) out."""

import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self, in_channels, out_channels, kernel_size, divide_by):
        super().__init__()
        self.conv = nn.Conv2d(in_channels, out_channels, kernel_size)
        self.norm = nn.InstanceNorm2d(out_channels)
        self.divide_by = divide_by

    def forward(self, x):
        return self.norm(self.conv(x)) / self.divide_by


batch_size = 32
in_channels = 32
out_channels = 64
height = width = 128


def get_inputs():
    return [torch.rand(batch_size, in_channels, height, width)]


def get_init_inputs():
    return [in_channels, out_channels, 3, 2.0]
