"""KernelBench level 1 problem 42: MaxPool2d (kernel 4, stride 1, padding 1, dilation 1) over a (32,
64, 512, 512) fp32 input (2.1 GB); the output is (32, 64, 511, 511)."""

import torch
import torch.nn as nn


class Model(nn.Module):
    """nn.MaxPool2d with the given window."""

    def __init__(self, kernel_size: int, stride: int, padding: int, dilation: int):
        super(Model, self).__init__()
        self.maxpool = nn.MaxPool2d(kernel_size=kernel_size, stride=stride, padding=padding, dilation=dilation)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.maxpool(x)


batch_size = 32
channels = 64
height = 512
width = 512
kernel_size = 4
stride = 1
padding = 1
dilation = 1


def get_inputs():
    x = torch.rand(batch_size, channels, height, width)
    return [x]


def get_init_inputs():
    return [kernel_size, stride, padding, dilation]
