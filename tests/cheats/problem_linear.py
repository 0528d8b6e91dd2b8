"""Tiny linear layer with a constructor argument: (4, 32) @ W(16, 32)^T + b."""

import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self, in_features: int, out_features: int) -> None:
        super().__init__()
        self.linear = nn.Linear(in_features, out_features)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.linear(x)


def get_inputs() -> list[torch.Tensor]:
    return [torch.randn(4, 32)]


def get_init_inputs() -> list[object]:
    return [32, 16]
