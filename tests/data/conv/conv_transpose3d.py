"""A grouped, strided 3-D transposed convolution with output padding and a bias, then a ReLU: the
compiler keeps the convolution in cuDNN (dynamic shapes), so the seed launches its own Triton
convolution. (2, 8, 32, 32, 32) fp32 in, (2, 16, 64, 64, 64) out."""

import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self, in_channels, out_channels, kernel_size, stride, padding, output_padding, groups):
        super().__init__()
        self.deconv = nn.ConvTranspose3d(in_channels, out_channels, kernel_size, stride=stride, padding=padding,
                                         output_padding=output_padding, groups=groups)

    def forward(self, x):
        return torch.relu(self.deconv(x))


batch_size = 2
in_channels = 8
out_channels = 16
depth = height = width = 32


def get_inputs():
    return [torch.rand(batch_size, in_channels, depth, height, width)]


def get_init_inputs():
    return [in_channels, out_channels, 3, 2, 1, 1, 2]
