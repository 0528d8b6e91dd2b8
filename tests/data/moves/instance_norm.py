"""InstanceNorm2d without affine, small: each (batch, channel) plane standardised (a tiny test problem)."""

import torch
import torch.nn as nn

batch, features, height, width = 2, 3, 5, 7


class Model(nn.Module):
    def __init__(self, num_features: int) -> None:
        super().__init__()
        self.inorm = nn.InstanceNorm2d(num_features=num_features)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.inorm(x)


def get_inputs():
    return [torch.randn(batch, features, height, width) * 3 + 1]


def get_init_inputs():
    return [features]
