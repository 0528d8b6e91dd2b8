"""KernelBench level 1 problem 43: nn.MaxPool3d(3, stride 2, padding 1, dilation 3) over an fp32 (16, 32, 128, 128,
128) input (4.3 GB): the pooling family in 3-D."""

import torch
import torch.nn as nn


class Model(nn.Module):
    """3-D max pooling."""

    def __init__(self, kernel_size: int, stride: int = None, padding: int = 0, dilation: int = 1,
                 return_indices: bool = False, ceil_mode: bool = False):
        super().__init__()
        self.maxpool = nn.MaxPool3d(kernel_size=kernel_size, stride=stride, padding=padding, dilation=dilation,
                                    return_indices=return_indices, ceil_mode=ceil_mode)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.maxpool(x)


batch_size = 16
channels = 32
dim1 = 128
dim2 = 128
dim3 = 128
kernel_size = 3
stride = 2
padding = 1
dilation = 3


def get_inputs():
    x = torch.rand(batch_size, channels, dim1, dim2, dim3)
    return [x]


def get_init_inputs():
    return [kernel_size, stride, padding, dilation]
