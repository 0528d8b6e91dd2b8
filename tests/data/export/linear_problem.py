"""A linear layer with a bias (state: linear.weight, linear.bias): y = x @ W.T + b."""

import torch
import torch.nn as nn

batch, in_features, out_features = 8, 32, 16


class Model(nn.Module):
    def __init__(self, in_features: int, out_features: int) -> None:
        super().__init__()
        self.linear = nn.Linear(in_features, out_features)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.linear(x)


def get_inputs():
    return [torch.randn(batch, in_features)]


def get_init_inputs():
    return [in_features, out_features]
