"""KernelBench level 1 problem 33: BatchNorm2d (64 features, training mode: batch statistics) over a
(64, 64, 512, 512) fp32 input (4.3 GB)."""

import torch
import torch.nn as nn


class Model(nn.Module):
    """nn.BatchNorm2d; in training mode (the default) it normalises with the batch's statistics and
    updates the running ones."""

    def __init__(self, num_features: int):
        super(Model, self).__init__()
        self.bn = nn.BatchNorm2d(num_features=num_features)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.bn(x)


batch_size = 64
features = 64
dim1 = 512
dim2 = 512


def get_inputs():
    x = torch.rand(batch_size, features, dim1, dim2)
    return [x]


def get_init_inputs():
    return [features]
