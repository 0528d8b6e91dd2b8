"""KernelBench level 1 problem 41: MaxPool1d (kernel 8, stride 1, padding 4, dilation 3) over a
(64, 192, 65536) fp32 input (3.2 GB); the output is (64, 192, 65523)."""

import torch
import torch.nn as nn


class Model(nn.Module):
    """nn.MaxPool1d with the given window."""

    def __init__(self, kernel_size: int, stride: int = None, padding: int = 0, dilation: int = 1, return_indices: bool = False):
        super(Model, self).__init__()
        self.maxpool = nn.MaxPool1d(kernel_size=kernel_size, stride=stride, padding=padding, dilation=dilation, return_indices=return_indices)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.maxpool(x)


batch_size = 64
features = 192
sequence_length = 65536

kernel_size = 8
stride = 1
padding = 4
dilation = 3

return_indices = False


def get_inputs():
    x = torch.rand(batch_size, features, sequence_length)
    return [x]


def get_init_inputs():
    return [kernel_size, stride, padding, dilation, return_indices]
