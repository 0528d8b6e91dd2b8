"""KernelBench level 2 problem 40: Linear (4096 -> 4096), y * 0.5 + y, on a (16384, 4096) fp32 input
(268 MB; the weight is 67 MB)."""

import torch
import torch.nn as nn


class Model(nn.Module):
    """Linear, then the result scaled and added to itself."""

    def __init__(self, in_features, out_features, scaling_factor):
        super().__init__()
        self.matmul = nn.Linear(in_features, out_features)
        self.scaling_factor = scaling_factor

    def forward(self, x):
        x = self.matmul(x)
        original_x = x.clone().detach()
        x = x * self.scaling_factor
        x = x + original_x
        return x


batch_size = 16384
in_features = 4096
out_features = 4096
scaling_factor = 0.5


def get_inputs():
    return [torch.rand(batch_size, in_features)]


def get_init_inputs():
    return [in_features, out_features, scaling_factor]
