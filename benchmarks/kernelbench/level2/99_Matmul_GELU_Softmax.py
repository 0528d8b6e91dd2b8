"""KernelBench level 2 problem 99: Linear (8192 -> 8192), exact GELU, softmax over the features, on a
(1024, 8192) fp32 input (34 MB; the weight is 268 MB)."""

import torch
import torch.nn as nn


class Model(nn.Module):
    """Linear, GELU, softmax over dim 1."""

    def __init__(self, in_features, out_features):
        super().__init__()
        self.linear = nn.Linear(in_features, out_features)

    def forward(self, x):
        x = self.linear(x)
        x = torch.nn.functional.gelu(x)
        x = torch.nn.functional.softmax(x, dim=1)
        return x


batch_size = 1024
in_features = 8192
out_features = 8192


def get_inputs():
    return [torch.rand(batch_size, in_features)]


def get_init_inputs():
    return [in_features, out_features]
