"""A first layer's convolution: RGB volumes (3 channels) to 16 channels, 3 x 3 x 3, padded, then HardSwish and
the largest channel at each position. The compiler leaves the convolution to cuDNN; the seed's helper takes it
on its direct kernel (3 input and 16 output channels a group). (16, 3, 16, 64, 64) fp32 in, (16, 16, 64, 64) out."""

import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self, in_channels, out_channels, kernel_size):
        super().__init__()
        self.conv = nn.Conv3d(in_channels, out_channels, kernel_size, padding=1)

    def forward(self, x):
        return torch.nn.functional.hardswish(self.conv(x)).amax(dim=1)


batch_size = 16
in_channels = 3
out_channels = 16
depth, height, width = 16, 64, 64


def get_inputs():
    return [torch.rand(batch_size, in_channels, depth, height, width)]


def get_init_inputs():
    return [in_channels, out_channels, 3]
