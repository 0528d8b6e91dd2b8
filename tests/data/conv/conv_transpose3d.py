"""A grouped, strided 3-D transposed convolution with output padding and a bias, then a tanh: the
compiler keeps the convolution in cuDNN (dynamic shapes), so the seed launches its own Triton
convolution. (4, 16, 16, 32, 32) fp32 in, (4, 32, 32, 64, 64) out."""

import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self, in_channels, out_channels, kernel_size, stride, padding, output_padding, groups):
        super().__init__()
        self.deconv = nn.ConvTranspose3d(in_channels, out_channels, kernel_size, stride=stride, padding=padding,
                                         output_padding=output_padding, groups=groups)

    def forward(self, x):
        return torch.tanh(self.deconv(x))


batch_size = 4
in_channels = 16
out_channels = 32
depth = 16
height = width = 32


def get_inputs():
    return [torch.rand(batch_size, in_channels, depth, height, width)]


def get_init_inputs():
    return [in_channels, out_channels, 3, 2, 1, 1, 2]
