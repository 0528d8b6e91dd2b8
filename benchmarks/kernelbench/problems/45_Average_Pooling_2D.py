"""KernelBench level 1 problem 45: AvgPool2d (kernel 11, stride 11, no padding) over a (16, 64, 2048,
2048) fp32 input (17.2 GB); the output is (16, 64, 186, 186) (142 MB)."""

import torch
import torch.nn as nn


class Model(nn.Module):
    """nn.AvgPool2d with the given window (stride None: the kernel size)."""

    def __init__(self, kernel_size: int, stride: int=None, padding: int=0):
        super(Model, self).__init__()
        self.avg_pool = nn.AvgPool2d(kernel_size=kernel_size, stride=stride, padding=padding)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.avg_pool(x)


batch_size = 16
channels = 64
height = 2048
width = 2048
kernel_size = 11


def get_inputs():
    x = torch.rand(batch_size, channels, height, width)
    return [x]


def get_init_inputs():
    return [kernel_size]
