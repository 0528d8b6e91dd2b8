"""KernelBench level 2 problem 33: Linear (8192 -> 8192), times a learned per-feature scale,
BatchNorm1d (training mode), on a (1024, 8192) fp32 input (34 MB; the weight is 268 MB)."""

import torch
import torch.nn as nn


class Model(nn.Module):
    """Linear, per-feature scale, BatchNorm1d."""

    def __init__(self, in_features, out_features, scale_shape, eps=1e-05, momentum=0.1):
        super().__init__()
        self.gemm = nn.Linear(in_features, out_features)
        self.scale = nn.Parameter(torch.randn(scale_shape))
        self.bn = nn.BatchNorm1d(out_features, eps=eps, momentum=momentum)

    def forward(self, x):
        x = self.gemm(x)
        x = x * self.scale
        x = self.bn(x)
        return x


batch_size = 1024
in_features = 8192
out_features = 8192
scale_shape = (out_features,)


def get_inputs():
    return [torch.rand(batch_size, in_features)]


def get_init_inputs():
    return [in_features, out_features, scale_shape]
