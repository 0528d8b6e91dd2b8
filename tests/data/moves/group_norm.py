"""GroupNorm of 6 channels in 3 groups with its per-channel affine, small (a move's tiny test problem)."""

import torch
import torch.nn as nn

batch, features, groups, height, width = 2, 6, 3, 4, 5


class Model(nn.Module):
    def __init__(self, num_features: int, num_groups: int) -> None:
        super().__init__()
        self.gn = nn.GroupNorm(num_groups=num_groups, num_channels=num_features)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.gn(x)


def get_inputs():
    return [torch.randn(batch, features, height, width) * 3 + 1]


def get_init_inputs():
    return [features, groups]
