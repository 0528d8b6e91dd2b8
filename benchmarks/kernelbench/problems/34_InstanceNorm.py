"""KernelBench level 1 problem 34: InstanceNorm2d over a (112, 64, 512, 512) fp32 input (7.5 GB):
7168 planes of 262,144 elements each."""

import torch
import torch.nn as nn


class Model(nn.Module):
    """nn.InstanceNorm2d (no affine, no running stats, eps 1e-5)."""

    def __init__(self, num_features: int):
        super(Model, self).__init__()
        self.inorm = nn.InstanceNorm2d(num_features=num_features)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.inorm(x)


batch_size = 112
features = 64
dim1 = 512
dim2 = 512


def get_inputs():
    x = torch.rand(batch_size, features, dim1, dim2)
    return [x]


def get_init_inputs():
    return [features]
