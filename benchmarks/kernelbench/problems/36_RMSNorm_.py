"""KernelBench level 1 problem 36: RMS normalization over dim 1 (the 64 features) of a
(112, 64, 512, 512) fp32 input (7.5 GB)."""

import torch
import torch.nn as nn


class Model(nn.Module):
    """x divided by the root mean square over the feature dimension (plus eps)."""

    def __init__(self, num_features: int, eps: float = 1e-5):
        super(Model, self).__init__()
        self.num_features = num_features
        self.eps = eps

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        rms = torch.sqrt(torch.mean(x ** 2, dim=1, keepdim=True) + self.eps)
        return x / rms


batch_size = 112
features = 64
dim1 = 512
dim2 = 512


def get_inputs():
    x = torch.rand(batch_size, features, dim1, dim2)
    return [x]


def get_init_inputs():
    return [features]
