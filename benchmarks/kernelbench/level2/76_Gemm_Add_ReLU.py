"""KernelBench level 2 problem 76: Linear without bias (8192 -> 8192), plus a learned bias, ReLU, on a
(1024, 8192) fp32 input (34 MB; the weight is 268 MB)."""

import torch
import torch.nn as nn


class Model(nn.Module):
    """Linear (no bias), add a bias parameter, ReLU."""

    def __init__(self, in_features, out_features, bias_shape):
        super().__init__()
        self.gemm = nn.Linear(in_features, out_features, bias=False)
        self.bias = nn.Parameter(torch.randn(bias_shape))

    def forward(self, x):
        x = self.gemm(x)
        x = x + self.bias
        x = torch.relu(x)
        return x


batch_size = 1024
in_features = 8192
out_features = 8192
bias_shape = (out_features,)


def get_inputs():
    return [torch.rand(batch_size, in_features)]


def get_init_inputs():
    return [in_features, out_features, bias_shape]
