"""BatchNorm2d of 3 channels in training mode, small (a move's tiny test problem): planes of 35 values."""

import torch
import torch.nn as nn

batch, features, height, width = 2, 3, 5, 7


class Model(nn.Module):
    def __init__(self, num_features: int) -> None:
        super().__init__()
        self.bn = nn.BatchNorm2d(num_features)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.bn(x)


def get_inputs():
    return [torch.randn(batch, features, height, width) * 3 + 1]


def get_init_inputs():
    return [features]
