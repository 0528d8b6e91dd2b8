"""KernelBench level 1 problem 40: LayerNorm over the last three dims (64, 256, 256) of a
(16, 64, 256, 256) fp32 input (268 MB): 16 rows of 4,194,304 elements each."""

import torch
import torch.nn as nn


class Model(nn.Module):
    """nn.LayerNorm with the given normalized_shape (elementwise affine, eps 1e-5)."""

    def __init__(self, normalized_shape: tuple):
        super(Model, self).__init__()
        self.ln = nn.LayerNorm(normalized_shape=normalized_shape)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.ln(x)


batch_size = 16
features = 64
dim1 = 256
dim2 = 256


def get_inputs():
    x = torch.rand(batch_size, features, dim1, dim2)
    return [x]


def get_init_inputs():
    return [(features, dim1, dim2)]
