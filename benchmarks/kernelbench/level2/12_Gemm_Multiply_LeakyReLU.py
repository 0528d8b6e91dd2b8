"""KernelBench level 2 problem 12: Linear (8192 -> 8192), times 2, LeakyReLU (slope 0.1), on a (1024,
8192) fp32 input (34 MB; the weight is 268 MB)."""

import torch
import torch.nn as nn


class Model(nn.Module):
    """Linear, multiply by a constant, LeakyReLU."""

    def __init__(self, in_features, out_features, multiplier, negative_slope):
        super().__init__()
        self.gemm = nn.Linear(in_features, out_features)
        self.multiplier = multiplier
        self.leaky_relu = nn.LeakyReLU(negative_slope)

    def forward(self, x):
        x = self.gemm(x)
        x = x * self.multiplier
        x = self.leaky_relu(x)
        return x


batch_size = 1024
in_features = 8192
out_features = 8192
multiplier = 2.0
negative_slope = 0.1


def get_inputs():
    return [torch.rand(batch_size, in_features)]


def get_init_inputs():
    return [in_features, out_features, multiplier, negative_slope]
