"""KernelBench level 1 problem 35: GroupNorm (8 groups of 8 channels, affine) over a (112, 64, 512,
512) fp32 input (7.5 GB): 896 groups of 2,097,152 values each."""

import torch
import torch.nn as nn


class Model(nn.Module):
    """nn.GroupNorm with its affine weight and bias."""

    def __init__(self, num_features: int, num_groups: int):
        super(Model, self).__init__()
        self.gn = nn.GroupNorm(num_groups=num_groups, num_channels=num_features)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.gn(x)


batch_size = 112
features = 64
num_groups = 8
dim1 = 512
dim2 = 512


def get_inputs():
    x = torch.rand(batch_size, features, dim1, dim2)
    return [x]


def get_init_inputs():
    return [features, num_groups]
