"""KernelBench level 1 problem 44: AvgPool1d (kernel 8, stride 1, padding 4) over a (64, 128, 65536)
fp32 input (2.1 GB); the output is (64, 128, 65537)."""

import torch
import torch.nn as nn


class Model(nn.Module):
    """nn.AvgPool1d with the given window (padding counted in the average)."""

    def __init__(self, kernel_size: int, stride: int=1, padding: int=0):
        super(Model, self).__init__()
        self.avg_pool = nn.AvgPool1d(kernel_size=kernel_size, stride=stride, padding=padding)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.avg_pool(x)


batch_size = 64
in_channels = 128
input_length = 65536
kernel_size = 8
stride = 1
padding = 4


def get_inputs():
    x = torch.rand(batch_size, in_channels, input_length)
    return [x]


def get_init_inputs():
    return [kernel_size, stride, padding]
