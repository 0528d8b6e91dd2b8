"""KernelBench level 2 problem 9: Linear (8192 -> 8192), minus 2, times 1.5, ReLU, on a (1024, 8192)
fp32 input (34 MB; the weight is 268 MB)."""

import torch
import torch.nn as nn


class Model(nn.Module):
    """Linear, subtract a constant, multiply by a constant, ReLU."""

    def __init__(self, in_features, out_features, subtract_value, multiply_value):
        super().__init__()
        self.linear = nn.Linear(in_features, out_features)
        self.subtract_value = subtract_value
        self.multiply_value = multiply_value

    def forward(self, x):
        x = self.linear(x)
        x = x - self.subtract_value
        x = x * self.multiply_value
        x = torch.relu(x)
        return x


batch_size = 1024
in_features = 8192
out_features = 8192
subtract_value = 2.0
multiply_value = 1.5


def get_inputs():
    return [torch.rand(batch_size, in_features)]


def get_init_inputs():
    return [in_features, out_features, subtract_value, multiply_value]
