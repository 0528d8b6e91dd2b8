"""LayerNorm over the last two dims with elementwise affine, small (a move's tiny test problem)."""

import torch
import torch.nn as nn

batch, features, dim = 3, 5, 7


class Model(nn.Module):
    def __init__(self, normalized_shape: tuple) -> None:
        super().__init__()
        self.ln = nn.LayerNorm(normalized_shape=normalized_shape)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.ln(x)


def get_inputs():
    return [torch.randn(batch, features, dim) * 3 + 1]


def get_init_inputs():
    return [(features, dim)]
